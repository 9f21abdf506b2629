"""Where a difference between two runs sits: each row's difference split into its parts.

``perf diff`` and pprof's ``-diff_base`` set a profile against a baseline
symbol by symbol; here the symbols are the parts ``ctxbench.explain`` builds
from one run's own figures (kernel entry/exit, the primitive's own work, the
address-space switch, waking an idle CPU, the rest), and, where both records
carry a traced pass, its phases. For one row (a variant of run A and its
match in run B, ``compare_runs``), each part of B less the same part of A is
that part's share of the row's difference. A part one side has by
definition and the other lacks (the address-space switch of a thread
variant, the idle share of an idle=held one) counts as zero there; a part
one run could not measure is named as not split.

Each part is a sum of coefficients times medians (``explain.Term``), so its
difference gets an interval by a percentile bootstrap: every record's samples
are resampled with replacement and every part recomputed from the resampled
medians, all parts of a replicate from the same draw (Efron & Tibshirani,
ch. 13, as ``stats.bootstrap_ratio_of_medians``). A baseline keeps only its
median and the median's distribution-free interval, so it is drawn from a
normal of that interval's width (stated as ``BASELINE_DRAW``). A traced
phase is its share of the traced sample times the untraced median; the share
is one traced pass's and is held fixed, so its interval covers the median's
sampling only. These are within-run intervals: they say whether a part moved
beyond its own samples' spread, not beyond run-to-run noise, which the row's
decision (``compare.decide``) already judges.

The environment keys that differ are ranked by the parts they act on
(``envparts``). Numbers and decisions; ``views.difference`` words them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxbench import stats
from ctxbench.analysis import envparts
from ctxbench.analysis.compare import FASTER, SLOWER, Comparison, Row
from ctxbench.analysis.compare_pairs import original
from ctxbench.analysis.explain import (
    BASELINE,
    REST,
    Explanation,
    Part,
    Term,
    bare_syscall,
    explain,
)
from ctxbench.analysis.phases import traced_view
from ctxbench.records.core import params_key
from ctxbench.store.schema import StoredRun

BASELINE_DRAW = (
    "a baseline keeps its median and that median's interval only: drawn from a normal of the "
    "interval's width"
)
CALL_WORK = "the call's own work"
KERNEL_ENTRY_PART = "kernel entry/exit"  # explain's part names
OWN_WORK_PART = "primitive's own work"
ADDRESS_SPACE_PART = "address-space switch"
TRACE_REST = "no chain covers it"
RESAMPLES = 2000


@dataclass(frozen=True)
class PartDifference:
    name: str
    group: str  # envparts group: what acts on it
    reference_ns: float  # 0 where the part is absent by definition
    other_ns: float
    difference_ns: float  # other - reference
    low_ns: float | None  # interval of the difference; None when it has no terms
    high_ns: float | None
    share: float | None  # of the row's difference; None when that is zero

    @property
    def moved(self) -> bool:
        """The interval of the difference excludes zero."""
        return self.low_ns is not None and (self.low_ns > 0 or (self.high_ns or 0) < 0)


@dataclass
class RowWhy:
    """One row of a comparison (run A's record against run B's), split."""

    probe: str
    params: dict[str, Any]  # run A's
    other_params: dict[str, Any]  # run B's (they differ where rows were paired)
    decision: str | None  # compare's: slower / faster / no difference
    reference_ns: float
    other_ns: float
    low_ns: float | None  # the row's difference, within-run interval
    high_ns: float | None
    parts: list[PartDifference] = field(default_factory=list)
    phases: list[PartDifference] = field(default_factory=list)  # both traced
    not_split: list[str] = field(default_factory=list)
    excluded: tuple[str, ...] = ()  # why compare leaves the row out of its summary

    @property
    def difference_ns(self) -> float:
        return self.other_ns - self.reference_ns

    @property
    def largest(self) -> PartDifference | None:
        """The part that carries most of the difference, in its direction."""
        return _largest(self.parts, self.difference_ns)

    @property
    def largest_phase(self) -> PartDifference | None:
        return _largest(self.phases, self.difference_ns)


@dataclass
class Why:
    """Run B against run A, row by row, and where the difference sits overall."""

    rows: list[RowWhy]
    env: list[envparts.KeyDifference]  # what differs, ranked by what it acts on
    groups: dict[str, int]  # per part group: the rows whose largest part is in it
    top_group: str | None
    top_keys: list[envparts.KeyDifference]  # the keys that act on top_group, best first
    not_split: list[str]  # rows that differ but have no parts, and why
    level: float = stats.DEFAULT_LEVEL
    every_row: bool = False  # no row differed: every row measured in both was split
    moved: bool = False  # the groups count rows whose largest part moved beyond its samples
    method: str = "percentile bootstrap of the parts' medians, within each run; " + BASELINE_DRAW


def _largest(parts: list[PartDifference], total: float) -> PartDifference | None:
    sign = 1.0 if total >= 0 else -1.0
    candidates = [p for p in parts if p.difference_ns * sign > 0]
    return max(candidates, key=lambda p: p.difference_ns * sign, default=None)


# ---- the parts of one record --------------------------------------------------------
def call_parts(record: dict[str, Any], bare: dict[str, Any] | None) -> list[Part]:
    """A system call's figure split like a switch's: kernel entry/exit (the bare
    trap, ``syscall.enosys``) and the call's own work (the rest); empty where
    the run has no bare trap or it measured higher than the call."""
    from ctxbench.analysis.explain import MEDIAN, term

    median = float(record["summary"]["median"])
    if record["probe"] == bare_syscall():
        return [Part("kernel entry/exit", median, bare_syscall(), [term(1.0, record, MEDIAN)])]
    if bare is None or not bare.get("summary"):
        return []
    entry = float(bare["summary"]["median"])
    if entry > median:
        return []
    return [
        Part("kernel entry/exit", entry, bare_syscall(), [term(1.0, bare)]),
        Part(
            CALL_WORK,
            median - entry,
            "the call less the bare trap",
            [term(1.0, record), term(-1.0, bare)],
        ),
    ]


class RunParts:
    """One run's records by variant key, and each record's parts (explain, once)."""

    def __init__(self, results: list[dict[str, Any]]):
        self.by_key = {(r["probe"], params_key(r.get("params", {}))): r for r in results}
        self._results = results
        self._explained: dict[tuple[str, str], Explanation] | None = None

    def explanation(self, record: dict[str, Any]) -> Explanation | None:
        if self._explained is None:
            self._explained = {
                (e.probe, params_key(e.params)): e for e in explain(self._results).explanations
            }
        return self._explained.get((record["probe"], params_key(record.get("params", {}))))

    def parts(self, record: dict[str, Any]) -> tuple[list[Part], list[str]]:
        """The record's parts, and what its explanation could not separate."""
        if record["probe"].endswith("_vdso"):
            return [], ["answered in the vDSO without entering the kernel: no kernel parts"]
        if record.get("family") == "syscall" and record.get("unit") == "ns":
            bare = next(
                (
                    r
                    for (probe, _), r in self.by_key.items()
                    if probe == bare_syscall() and r["verdict"]["status"] in ("ok", "suspect")
                ),
                None,
            )
            parts = call_parts(record, bare)
            return parts, [] if parts else [f"{bare_syscall()} was not measured beside it"]
        found = self.explanation(record)
        if found is None:
            return [], []
        return found.parts, [*found.not_separated, *found.not_explained]


# ---- the bootstrap of a sum of medians ----------------------------------------------
Source = tuple[int, tuple[str, str], str]  # (run: 0 for A, 1 for B, record key, which figure)


class Resampler:
    """Replicates of every figure the parts use, all parts of one replicate from one draw."""

    def __init__(self, runs: list[RunParts], level: float, resamples: int = RESAMPLES):
        self.runs = runs
        self.level = level
        self.resamples = resamples
        self.rng = np.random.default_rng(0)
        self._drawn: dict[Source, np.ndarray | None] = {}

    def _draw(self, source: Source) -> np.ndarray | None:
        if source in self._drawn:
            return self._drawn[source]
        run, key, which = source
        record = self.runs[run].by_key.get(key)
        drawn = None
        if record is not None and which == BASELINE:
            summary = (record.get("baseline") or {}).get("summary") or {}
            ci = summary.get("median_ci")
            if ci and summary.get("median") is not None:
                from scipy.stats import norm

                width = float(ci["high"]) - float(ci["low"])
                sd = width / (2.0 * float(norm.ppf(0.5 + float(ci["level"]) / 2.0)))
                drawn = self.rng.normal(float(summary["median"]), sd, self.resamples)
        elif record is not None and record.get("samples"):
            samples = np.asarray(record["samples"], dtype=float)
            index = self.rng.integers(0, samples.size, size=(self.resamples, samples.size))
            drawn = np.median(samples[index], axis=1)
        self._drawn[source] = drawn
        return drawn

    def interval(self, signed_terms: list[tuple[int, Term]]) -> tuple[float, float] | None:
        """The interval of sum(coefficient x figure) over terms of runs A (0) and B (1)."""
        if not signed_terms:
            return None
        total = np.zeros(self.resamples)
        for run, (coefficient, key, which) in signed_terms:
            drawn = self._draw((run, key, which))
            if drawn is None:
                return None
            total += coefficient * drawn
        alpha = 1.0 - self.level
        low, high = np.quantile(total, [alpha / 2.0, 1.0 - alpha / 2.0])
        return float(low), float(high)


# ---- one row ------------------------------------------------------------------------
def _absent_by_definition(name: str, params: dict[str, Any]) -> bool:
    """A part this variant cannot have: zero, not unmeasured."""
    if name == "address-space switch":
        return params.get("between") == "threads"
    if name == envparts.IDLE_PART:
        return params.get("idle") == "held" or params.get("cpus") != "cross"
    return False


def _negated(terms: list[Term]) -> list[Term]:
    return [(-c, k, w) for c, k, w in terms]


def split_row(
    reference: dict[str, Any],
    other: dict[str, Any],
    runs: list[RunParts],
    resampler: Resampler,
    decision: str | None = None,
) -> RowWhy:
    """Run A's record against run B's, part by part and phase by phase."""
    a_med, b_med = float(reference["summary"]["median"]), float(other["summary"]["median"])
    from ctxbench.analysis.explain import term

    total = resampler.interval([(1, term(1.0, other)), (0, term(-1.0, reference))])
    row = RowWhy(
        probe=reference["probe"],
        params=dict(reference.get("params", {})),
        other_params=dict(other.get("params", {})),
        decision=decision,
        reference_ns=a_med,
        other_ns=b_med,
        low_ns=total[0] if total else None,
        high_ns=total[1] if total else None,
    )
    (a_parts, a_missing), (b_parts, b_missing) = runs[0].parts(reference), runs[1].parts(other)
    if not a_parts and not b_parts:
        row.not_split.append(
            "no parts: " + ("; ".join(a_missing or b_missing) or "this probe has none")
        )
        return row
    a_parts, b_parts = _same_naming(a_parts, b_parts), _same_naming(b_parts, a_parts)
    a_by, b_by = {p.name: p for p in a_parts}, {p.name: p for p in b_parts}
    overrides = _cross_run_twin(reference, other, a_by, b_by, row)
    longer, shorter = (b_parts, a_parts) if len(b_parts) > len(a_parts) else (a_parts, b_parts)
    names = list(dict.fromkeys([*(p.name for p in longer), *(p.name for p in shorter)]))
    if REST in names:  # the rest last, as explain lists it
        names.append(names.pop(names.index(REST)))
    if overrides and ADDRESS_SPACE_PART not in names:
        names.insert(names.index(REST) if REST in names else len(names), ADDRESS_SPACE_PART)
    for name in names:
        a, b = a_by.get(name), b_by.get(name)
        if a is None and not _absent_by_definition(name, row.params):
            row.not_split.append(f"{name}: measured in B only")
            continue
        if b is None and not _absent_by_definition(name, row.other_params):
            row.not_split.append(f"{name}: measured in A only")
            continue
        signed = [(1, t) for t in (b.terms if b else [])] + [
            (0, t) for t in _negated(a.terms if a else [])
        ]
        has_terms = (a is None or a.terms) and (b is None or b.terms)
        if name in overrides:
            signed, has_terms = overrides[name], bool(overrides[name])
        interval = resampler.interval(signed) if has_terms else None
        row.parts.append(_difference(name, a.ns if a else 0.0, b.ns if b else 0.0, interval, row))
    row.phases = _phase_differences(reference, other, resampler, row)
    row.not_split += _missing_words(a_missing, b_missing, traced=bool(row.phases))
    return row


def _cross_run_twin(
    reference: dict[str, Any],
    other: dict[str, Any],
    a_by: dict[str, Part],
    b_by: dict[str, Part],
    row: RowWhy,
) -> dict[str, list[tuple[int, Term]]]:
    """Paired threads against processes (``compare --pair between``), where the
    processes side's own run gives no address-space switch (no thread twin
    there, or its two figures not apart): the other run's thread variant is its
    twin, so the part is corrected(processes) less corrected(threads) across
    the pair, run-to-run noise included, and that side's rest gives it up.
    Adds the parts to A_BY / B_BY and returns the signed terms of both
    differences; empty where it does not apply."""
    from ctxbench.analysis.explain import term

    kinds = (row.params.get("between"), row.other_params.get("between"))
    if set(kinds) != {"threads", "processes"}:
        return {}
    side = 1 if kinds[1] == "processes" else 0
    parts = b_by if side else a_by
    if ADDRESS_SPACE_PART in parts or REST not in parts or REST not in (a_by if side else b_by):
        return {}
    runs = ((0, reference), (1, other))
    signs = {side: 1.0, 1 - side: -1.0}

    def corrected(run: int, record: dict[str, Any], sign: float) -> list[tuple[int, Term]]:
        terms = [(run, term(sign, record))]
        if (record.get("baseline") or {}).get("summary"):
            terms.append((run, term(-sign, record, BASELINE)))
        return terms

    def corrected_ns(record: dict[str, Any]) -> float:
        summary = (record.get("baseline") or {}).get("summary") or {}
        return float(record["summary"]["median"]) - float(summary.get("median") or 0.0)

    # The part on the processes side: + corrected(processes) - corrected(threads).
    part_terms = [t for run, record in runs for t in corrected(run, record, signs[run])]
    ns = corrected_ns(runs[side][1]) - corrected_ns(runs[1 - side][1])
    rest = parts[REST]
    a_rest, b_rest = a_by[REST].terms, b_by[REST].terms
    parts[ADDRESS_SPACE_PART] = Part(ADDRESS_SPACE_PART, ns, "across the pair", [])
    parts[REST] = Part(REST, rest.ns - ns, rest.source, [])
    # B less A of each: the address-space part sits on the processes side.
    part_sign = 1.0 if side else -1.0
    address = [(run, (part_sign * c, k, w)) for run, (c, k, w) in part_terms]
    rest_terms = (
        [(1, t) for t in b_rest] + [(0, t) for t in _negated(a_rest)] if a_rest and b_rest else []
    )
    if rest_terms:  # the processes side's rest gave up the part: B less A loses it too
        rest_terms += [(r, (-c, k, w)) for r, (c, k, w) in address]
    row.not_split.append(
        "address-space switch: taken across the pair (the processes variant of one run against "
        "the threads variant of the other: their run-to-run noise is in it), as the processes "
        "run did not measure it apart"
    )
    return {ADDRESS_SPACE_PART: address, REST: rest_terms}


def _same_naming(parts: list[Part], other: list[Part]) -> list[Part]:
    """Where the other run could not price kernel entry/exit (no bare system
    call), this run's entry/exit and own work are set against the other's own
    work with its system calls included: their sum, under that name."""
    names = {p.name for p in parts}
    merged = f"{OWN_WORK_PART}, its system calls included"
    if merged not in {p.name for p in other} or not {KERNEL_ENTRY_PART, OWN_WORK_PART} <= names:
        return parts
    entry = next(p for p in parts if p.name == KERNEL_ENTRY_PART)
    own = next(p for p in parts if p.name == OWN_WORK_PART)
    together = Part(
        merged, entry.ns + own.ns, f"{entry.source}; {own.source}", [*entry.terms, *own.terms]
    )
    kept = [p for p in parts if p.name not in (KERNEL_ENTRY_PART, OWN_WORK_PART)]
    return [together, *kept]


def _missing_words(a_missing: list[str], b_missing: list[str], traced: bool) -> list[str]:
    """What the two explanations could not separate, each said once: a line
    both runs give is 'A and B'; the rest's phases only when neither run has them."""
    words = []
    for text in dict.fromkeys([*a_missing, *b_missing]):
        if text.startswith("inside the rest:"):
            continue
        sides = " and ".join(
            side for side, missing in (("A", a_missing), ("B", b_missing)) if text in missing
        )
        words.append(f"{sides}: {text}")
    inside = any(t.startswith("inside the rest:") for t in [*a_missing, *b_missing])
    if inside and not traced:
        words.append(
            "the rest is not split into the wake-up and the switch: both runs need a traced "
            "pass (ctxbench run --trace)"
        )
    return words


def _difference(
    name: str, a_ns: float, b_ns: float, interval: tuple[float, float] | None, row: RowWhy
) -> PartDifference:
    total = row.difference_ns
    return PartDifference(
        name=name,
        group=envparts.group_of(name),
        reference_ns=a_ns,
        other_ns=b_ns,
        difference_ns=b_ns - a_ns,
        low_ns=interval[0] if interval else None,
        high_ns=interval[1] if interval else None,
        share=(b_ns - a_ns) / total if total else None,
    )


def _phase_differences(
    reference: dict[str, Any], other: dict[str, Any], resampler: Resampler, row: RowWhy
) -> list[PartDifference]:
    """Both records traced and tiled: each phase's scaled time, B less A (a phase
    one pass never saw is zero there), and the time no chain covers."""
    from ctxbench.analysis.explain import term

    views = traced_view(reference), traced_view(other)
    if any(view is None or view.status != "ok" for view in views):
        if any(view is not None for view in views):
            row.not_split.append(
                "phases: "
                + ("only one run was traced" if None in views else "a traced pass failed")
            )
        return []
    a_view, b_view = views
    assert a_view is not None and b_view is not None
    a_by = {p.name: p for p in a_view.phases}
    b_by = {p.name: p for p in b_view.phases}
    out = []
    for name in dict.fromkeys([*a_by, *b_by]):
        a, b = a_by.get(name), b_by.get(name)
        signed = []
        if b is not None:
            signed.append((1, term(b.share, other)))
        if a is not None:
            signed.append((0, term(-a.share, reference)))
        out.append(
            _difference(
                name, a.ns if a else 0.0, b.ns if b else 0.0, resampler.interval(signed), row
            )
        )
    a_rest, b_rest = 1.0 - a_view.covered_share, 1.0 - b_view.covered_share
    if a_rest == 0.0 and b_rest == 0.0:
        return out  # the chains cover both traced samples whole
    interval = resampler.interval([(1, term(b_rest, other)), (0, term(-a_rest, reference))])
    out.append(_difference(TRACE_REST, a_view.rest_ns or 0.0, b_view.rest_ns or 0.0, interval, row))
    return out


# ---- a whole comparison -------------------------------------------------------------
def why(
    comparison: Comparison,
    index: int = 1,
    every_row: bool = False,
    measured: list[StoredRun] | None = None,
) -> Why:
    """Run ``index`` of the comparison against run A: every row that differs
    (compare's decision slower or faster, not excluded; with ``every_row``, or
    when no row differs, every row measured in both runs, excluded ones marked),
    split, and the environment keys ranked by the parts that moved.
    ``measured``: the runs as stored, where the comparison holds only some of
    their records (``compare_pairs``): parts come from every record of a run."""
    whole = measured or comparison.runs
    runs = [
        RunParts([original(r) for r in whole[0].results]),
        RunParts([original(r) for r in whole[index].results]),
    ]
    resampler = Resampler(runs, comparison.level)
    pairs = [(row, _pair(row, index)) for row in comparison.rows]
    measured = [(row, pair) for row, pair in pairs if pair is not None]
    differing = [
        (row, pair)
        for row, pair in measured
        if pair[2] in (SLOWER, FASTER) and not row.cells[index].excluded
    ]
    every_row = every_row or not differing
    rows, unsplit = [], []
    for row, (reference, other, decision) in measured if every_row else differing:
        split = split_row(reference, other, runs, resampler, decision)
        split.excluded = row.cells[index].excluded
        if split.parts:
            rows.append(split)
        else:
            unsplit.append(f"{row.probe}: " + "; ".join(split.not_split))
    # Where it sits: per row, its largest part (its largest phase where the
    # parts give none); a row counts only where that part moved beyond its
    # samples, unless no row's did.
    largest = [
        (split.largest_phase if split.phases and not split.largest else split.largest)
        for split in rows
    ]
    moved = [part for part in largest if part is not None and part.moved]
    groups: dict[str, int] = {}
    for part in moved or [part for part in largest if part is not None]:
        groups[part.group] = groups.get(part.group, 0) + 1
    top_group = max(groups, key=lambda g: groups[g], default=None)
    env = envparts.ranked(comparison.env, index, rows, top_group)
    top_keys = [key for key in env if top_group is not None and key.acts_on(top_group)]
    return Why(
        rows,
        env,
        groups,
        top_group,
        top_keys,
        unsplit,
        comparison.level,
        every_row=every_row,
        moved=bool(moved),
    )


def _pair(row: Row, index: int) -> tuple[dict[str, Any], dict[str, Any], str | None] | None:
    reference, cell = row.cells[0].result, row.cells[index]
    other = None if cell.result is None else original(cell.result)
    if reference is None or other is None or cell.note:
        return None
    if not reference.get("summary") or not other.get("summary"):
        return None
    if not math.isfinite(float(reference["summary"]["median"])):
        return None
    return reference, other, cell.decision


def why_dict(result: Why | None, pairing: Any = None) -> dict[str, Any]:
    """The JSON form (schema/compare.schema.json: ``why`` and ``pairing``)."""
    out: dict[str, Any] = {}
    if pairing is not None:
        out["pairing"] = {
            "parameters": list(pairing.names),
            "paired": pairing.paired,
            "unpaired_reference": pairing.unpaired_reference,
            "unpaired_other": pairing.unpaired_other,
            "ambiguous": pairing.ambiguous,
            "pairs": [
                {
                    "probe": record["probe"],
                    "params": record.get("params", {}),
                    "other_params": original(record).get("params", {}),
                }
                for record in pairing.runs[1].results
            ],
        }
    if result is not None:

        def part(p: PartDifference) -> dict[str, Any]:
            return {
                "name": p.name,
                "group": p.group,
                "reference_ns": p.reference_ns,
                "other_ns": p.other_ns,
                "difference_ns": p.difference_ns,
                "low_ns": p.low_ns,
                "high_ns": p.high_ns,
                "share": p.share,
                "moved": p.moved,
            }

        out["why"] = {
            "method": result.method,
            "level": result.level,
            "top_group": result.top_group,
            "groups": result.groups,
            "top_keys": [k.key for k in result.top_keys],
            "environment": [
                {"key": k.key, "values": list(k.values), "acts_on": list(k.groups)}
                for k in result.env
            ],
            "not_split": result.not_split,
            "every_row": result.every_row,
            "moved": result.moved,
            "rows": [
                {
                    "probe": row.probe,
                    "params": row.params,
                    "other_params": row.other_params,
                    "decision": row.decision,
                    "reference_ns": row.reference_ns,
                    "other_ns": row.other_ns,
                    "difference_ns": row.difference_ns,
                    "low_ns": row.low_ns,
                    "high_ns": row.high_ns,
                    "largest": row.largest.name if row.largest else None,
                    "parts": [part(p) for p in row.parts],
                    "phases": [part(p) for p in row.phases],
                    "not_split": row.not_split,
                    "excluded": list(row.excluded),
                }
                for row in result.rows
            ],
        }
    return out
