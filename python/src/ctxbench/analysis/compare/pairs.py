"""Rows that differ on purpose: B's variants paired with A's (``compare --pair``).

Run B's variant is paired with run A's when they differ only in the named
parameters (``compare A B --pair idle``). ``compare_runs`` matches rows on
every parameter, so a run measured with idle free and one with
``--hold-idle`` (idle=held) share no row, nor do a threads run and a
processes run. Pairing matches a variant of B with the variant of A whose
parameters are the same except the named ones, which must differ: A's
idle=free with B's idle=held. A variant with no such partner, or with more
than one (then which is meant is not known), stays unpaired: it is left out
of the comparison and named. The pairs are then compared like any rows
(noise, exclusions, decisions): B's paired records are given A's parameters
for the match and keep their own under ``ORIGINAL`` (``original``), so what
explains them (``difference_parts``) sees the variant that was measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxbench.analysis.compare.comparison import Comparison, summarize
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result, result_of
from ctxbench.records.runs import StoredRun

Params = Mapping[str, ParamValue]
ORIGINAL = "_ctxbench_paired_from"  # a paired copy's own record, never stored


@dataclass(frozen=True)
class Pairing:
    names: tuple[str, ...]
    runs: list[StoredRun]  # A's paired records, and B's renamed to them
    paired: int  # rows paired
    unpaired_reference: list[str]  # variants of A with no partner in B, in words
    unpaired_other: list[str]
    ambiguous: list[str]  # variants with more than one partner


def measured_as(result: Result) -> Result:
    """The result as measured (a paired copy's own, read into its type), or the result."""
    own = result.raw.get(ORIGINAL)
    return result if own is None else result_of(own)


def _rest(params: Params, names: tuple[str, ...]) -> str:
    return params_key({k: v for k, v in params.items() if k not in names})


def _differs(
    a: Mapping[str, ParamValue], b: Mapping[str, ParamValue], names: tuple[str, ...]
) -> bool:
    return any(str(a.get(name)) != str(b.get(name)) for name in names)


def unknown_names(runs: list[StoredRun], names: tuple[str, ...]) -> list[str]:
    """The named parameters that no variant of either run has."""
    seen = {name for run in runs for r in run.results for name in r.params}
    return [name for name in names if name not in seen]


def pair_runs(reference: StoredRun, other: StoredRun, names: tuple[str, ...]) -> Pairing:
    """B's variants renamed to their partners in A (see the module's text)."""
    from ctxbench.records.naming import variant_name

    def partners(result: Result, pool: Sequence[Result]) -> list[Result]:
        return [
            r
            for r in pool
            if r.probe == result.probe
            and _rest(r.params, names) == _rest(result.params, names)
            and _differs(r.params, result.params, names)
        ]

    # Pairing writes records (B's renamed copies of the records as written);
    # the paired runs read them into their types again (StoredRun.results).
    a_results, b_results = reference.results, other.results
    renamed: list[Mapping[str, Any]] = []  # B's records: a paired one's copy, or as written
    paired_a: set[int] = set()
    ambiguous: list[str] = []
    for b in b_results:
        candidates = partners(b, a_results)
        if len(candidates) == 1 and len(partners(candidates[0], b_results)) == 1:
            renamed.append({**b.raw, "params": dict(candidates[0].params), ORIGINAL: b.raw})
            paired_a.add(id(candidates[0]))
            continue
        if len(candidates) > 1:
            ambiguous.append(variant_name(b.probe, dict(b.params)))
        renamed.append(b.raw)  # unpaired
    # Only the pairs are compared; what has no partner is named beside them.
    unpaired_a = [variant_name(r.probe, dict(r.params)) for r in a_results if id(r) not in paired_a]
    unpaired_b = [
        variant_name(r["probe"], r.get("params", {})) for r in renamed if ORIGINAL not in r
    ]
    kept_a = [r.raw for r in a_results if id(r) in paired_a]
    kept_b = [r for r in renamed if ORIGINAL in r]
    return Pairing(
        names=names,
        runs=[
            replace(reference, records=replace(reference.records, results=kept_a)),
            replace(other, records=replace(other.records, results=kept_b)),
        ],
        paired=len(paired_a),
        unpaired_reference=unpaired_a,
        unpaired_other=unpaired_b,
        ambiguous=ambiguous,
    )


def waive_placement(comparison: Comparison, names: tuple[str, ...]) -> Comparison:
    """Paired on ``cpus``, the two sides ran on a different number of CPUs on
    purpose: that is the change compared, not a reason to leave the row out.
    Every other reason stays; the summaries are counted again."""
    if "cpus" not in names:
        return comparison
    rows = []
    for row in comparison.rows:
        cells = [row.cells[0]] + [
            replace(
                cell, excluded=tuple(w for w in cell.excluded if not w.startswith("placement:"))
            )
            for cell in row.cells[1:]
        ]
        rows.append(replace(row, cells=cells))
    return replace(
        comparison,
        rows=rows,
        summaries=[summarize(rows, index) for index in range(1, len(comparison.runs))],
    )
