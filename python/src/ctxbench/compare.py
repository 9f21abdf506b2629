"""Side-by-side comparison of stored runs: per probe variant and per environment.

Results are matched on (probe, params). The first run is the reference; for
every other run, each matched variant gets the ratio of medians
(other / reference) with a bootstrap confidence interval and a Mann-Whitney
U test on the raw per-operation samples (before baseline subtraction, the
figures the engine measured), and a decision: slower, faster, or no
difference (see ``ctxbench.stats``). A significant difference smaller than
the minimum effect (``min_effect``, 5% unless asked otherwise) is "no
meaningful difference": two runs on one machine differ by a few percent
and the U test sees it.

A comparison must not mislead, so a row is *marked* and left out of the
summary when its two sides do not measure the same thing: a verdict that is
not ``ok`` on either side, tasks observed on a different number of CPUs
(``cpus=any`` lets the scheduler choose), or run options that change the
figures (``--quick`` against a full run, samples, minimum batch time).
Unsupported or failed variants are never compared. The summary per run
counts slower / faster / no difference / only in one run / excluded, and
gives the geometric mean of the time ratios over the comparable rows.

The environment diff flattens each env record to dotted keys and lists the
keys whose values differ, the keys that explain differences first (kernel,
CPU, virtualization, mitigations, clocksource, frequency governor).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ctxbench import fmt, matrix, stats
from ctxbench.records import params_key, variant_name
from ctxbench.store import StoredRun

COMPARABLE = ("ok", "suspect")
DEFAULT_MIN_EFFECT = 0.05
# Run options (env record) that change what a figure is.
MEASUREMENT_OPTIONS = ("quick", "samples", "min_time_s", "warmup_samples")
SLOWER, FASTER, NO_DIFFERENCE, ONLY_ONE = "slower", "faster", "no difference", "only in one run"

# Keys that say why two machines differ, in the order a reader wants them.
ENV_PRIORITY = (
    "hostname",
    "arch",
    "cpu.model",
    "cpu.vendor",
    "cpu.logical",
    "kernel.release",
    "kernel.version",
    "kernel.cmdline",
    "virtualization",
    "mitigations",
    "clocksource",
    "frequency",
    "scheduler",
    "libc",
    "compiler",
    "build",
)
# Decimal numbers in the env are measurements (TSC period, timer overhead):
# run-to-run noise below this relative difference is not a difference.
FLOAT_TOLERANCE = 0.05
# Per-run bookkeeping, not environment.
ENV_SKIP = {"schema", "kind", "run_id", "started_at", "options", "notes"}


@dataclass(frozen=True)
class Cell:
    """One run's side of a row."""

    result: dict[str, Any] | None  # None: the run has no such variant
    difference: stats.Difference | None  # vs the reference; None for it or when not comparable
    note: str | None  # why no comparison (missing, unsupported, failed)
    # Why this cell is left out of the summary (verdicts, placement, options); empty: comparable.
    excluded: tuple[str, ...] = ()
    decision: str | None = None  # SLOWER, FASTER, NO_DIFFERENCE, ONLY_ONE; None for the reference

    @property
    def median(self) -> float | None:
        if self.result is None or not self.result.get("summary"):
            return None
        return float(self.result["summary"]["median"])

    @property
    def status(self) -> str | None:
        return None if self.result is None else self.result["verdict"]["status"]


@dataclass(frozen=True)
class Row:
    probe: str
    family: str
    params: dict[str, Any]
    unit: str
    cells: list[Cell]  # one per run, reference first


@dataclass(frozen=True)
class EnvDiff:
    keys: list[str]  # every key, ordered
    values: dict[str, list[str | None]]  # key -> one value per run (None: absent)
    differing: list[str]  # the keys whose values differ


@dataclass(frozen=True)
class Summary:
    """One run against the reference, over every row."""

    slower: int
    faster: int
    no_difference: int
    only_in_one: int
    excluded: int
    comparable: int  # rows in both runs, not excluded, with a ratio
    geometric_mean: float | None  # of the time ratios (>1: this run is slower) over those rows


@dataclass(frozen=True)
class ClassCell:
    """One run's side of a pair class: the median of the class's samples."""

    median: float | None
    cells: int  # cells of the class measured in this run
    difference: stats.Difference | None  # vs the reference run's class
    note: str | None  # why no comparison


@dataclass(frozen=True)
class ClassRow:
    pair_class: str
    cells: list[ClassCell]  # one per run, reference first


@dataclass(frozen=True)
class MatrixComparison:
    """A matrix probe variant in the runs, compared class by class (SMT sibling,
    same LLC...): the samples of all the class's cells, pooled, per run."""

    probe: str
    params: dict[str, Any]
    unit: str
    rows: list[ClassRow]


@dataclass(frozen=True)
class Comparison:
    runs: list[StoredRun]
    rows: list[Row]
    env: EnvDiff
    level: float
    alpha: float
    min_effect: float = DEFAULT_MIN_EFFECT
    options: list[dict[str, Any]] = field(default_factory=list)  # per run: MEASUREMENT_OPTIONS
    summaries: list[Summary] = field(default_factory=list)  # per run after the reference
    matrices: list[MatrixComparison] = field(default_factory=list)


def compare_runs(
    runs: list[StoredRun],
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
    resamples: int = stats.DEFAULT_RESAMPLES,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> Comparison:
    if len(runs) < 2:
        raise ValueError("a comparison needs at least two runs")
    if min_effect < 0:
        raise ValueError("the minimum effect cannot be negative")
    options = [run_options(run.env) for run in runs]
    indexed: list[dict[tuple[str, str], dict[str, Any]]] = []
    order: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        by_key = {}
        for result in run.results:
            key = (result["probe"], params_key(result["params"]))
            by_key[key] = result
            order.setdefault(key, result)
        indexed.append(by_key)

    rows = []
    for key, first_seen in order.items():
        reference = indexed[0].get(key)
        cells = [Cell(result=reference, difference=None, note=_note(reference))]
        for index, by_key in enumerate(indexed[1:], start=1):
            other = by_key.get(key)
            note = _note(other) or (None if other is None else _note(reference))
            difference = None
            if note is None and reference is not None and other is not None:
                difference = stats.compare_samples(
                    reference["samples"], other["samples"], alpha, level, resamples
                )
            if reference is None or other is None:
                excluded: tuple[str, ...] = ()
                decision = ONLY_ONE
            else:
                excluded = exclusions(
                    reference,
                    other,
                    options[0],
                    options[index],
                    fmt.run_letter(0),
                    fmt.run_letter(index),
                )
                decision = decide(difference, first_seen["unit"], min_effect)
            cells.append(
                Cell(
                    result=other,
                    difference=difference,
                    note=note,
                    excluded=excluded,
                    decision=decision,
                )
            )
        rows.append(
            Row(
                probe=first_seen["probe"],
                family=first_seen["family"],
                params=first_seen["params"],
                unit=first_seen["unit"],
                cells=cells,
            )
        )
    return Comparison(
        runs=runs,
        rows=rows,
        env=env_diff([run.env for run in runs]),
        level=level,
        alpha=alpha,
        min_effect=min_effect,
        options=options,
        summaries=[summarize(rows, index) for index in range(1, len(runs))],
        matrices=compare_matrices(rows, alpha, level, resamples),
    )


def run_options(env: dict[str, Any]) -> dict[str, Any]:
    """The options of a run that change its figures (absent ones are unknown)."""
    options = env.get("options") or {}
    return {name: options[name] for name in MEASUREMENT_OPTIONS if name in options}


def observed_placement(result: dict[str, Any]) -> str | None:
    """Where the tasks actually ran, as a class: 'one CPU' or 'N CPUs'."""
    placement = result.get("placement") or {}
    seen = [
        cpu
        for cpu in [
            *(placement.get("observed_start") or []),
            *(placement.get("observed_end") or []),
        ]
        if isinstance(cpu, int) and cpu >= 0
    ]
    if not seen:
        return None
    distinct = len(set(seen))
    return "one CPU" if distinct == 1 else f"{distinct} CPUs"


def exclusions(
    reference: dict[str, Any],
    other: dict[str, Any],
    reference_options: dict[str, Any],
    other_options: dict[str, Any],
    reference_name: str = "A",
    other_name: str = "B",
) -> tuple[str, ...]:
    """Why two results of one variant do not measure the same thing; empty when they do."""
    why = []
    for name, result in ((reference_name, reference), (other_name, other)):
        verdict = result["verdict"]
        if verdict["status"] != "ok":
            codes = ", ".join(sorted({reason["code"] for reason in verdict["reasons"]}))
            why.append(f"{name} {verdict['status']}" + (f" ({codes})" if codes else ""))
    placements = observed_placement(reference), observed_placement(other)
    if None not in placements and placements[0] != placements[1]:
        why.append(
            f"placement: {reference_name} ran on {placements[0]}, {other_name} on {placements[1]}"
        )
    differing = [
        f"{name} {_option_text(reference_options[name])} vs {_option_text(other_options[name])}"
        for name in MEASUREMENT_OPTIONS
        if name in reference_options
        and name in other_options
        and reference_options[name] != other_options[name]
    ]
    if differing:
        why.append("options: " + ", ".join(differing))
    return tuple(why)


def _option_text(value: Any) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def time_ratio(difference: stats.Difference, unit: str) -> float | None:
    """The ratio oriented so that above 1 means the other run is slower."""
    if difference.ratio is None:
        return None
    ratio = difference.ratio.ratio
    return ratio if stats.lower_is_better(unit) else 1.0 / ratio


def decide(difference: stats.Difference | None, unit: str, min_effect: float) -> str | None:
    """SLOWER, FASTER or NO_DIFFERENCE; None when there is nothing to decide on."""
    if difference is None or difference.ratio is None:
        return None
    if not difference.significant:
        return NO_DIFFERENCE
    ratio = time_ratio(difference, unit)
    if ratio is None or 1.0 / (1.0 + min_effect) <= ratio <= 1.0 + min_effect:
        return NO_DIFFERENCE
    return SLOWER if ratio > 1.0 else FASTER


def summarize(rows: list[Row], index: int) -> Summary:
    """Run ``index`` against the reference, every row counted once."""
    counts = {SLOWER: 0, FASTER: 0, NO_DIFFERENCE: 0, ONLY_ONE: 0}
    excluded = 0
    logs = []
    for row in rows:
        cell = row.cells[index]
        if cell.decision == ONLY_ONE:
            counts[ONLY_ONE] += 1
        elif cell.excluded or cell.decision is None:
            excluded += 1
        else:
            counts[cell.decision] += 1
            ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
            if ratio is not None and ratio > 0:
                logs.append(math.log(ratio))
    return Summary(
        slower=counts[SLOWER],
        faster=counts[FASTER],
        no_difference=counts[NO_DIFFERENCE],
        only_in_one=counts[ONLY_ONE],
        excluded=excluded,
        comparable=len(logs),
        geometric_mean=math.exp(sum(logs) / len(logs)) if logs else None,
    )


def summary_line(summary: Summary, name: str = "B", reference_name: str = "A") -> str:
    """'B vs A: 2 slower, 1 faster, 5 no meaningful difference, 3 only in one run,
    4 excluded; over 8 comparable rows B ran 1.23x slower than A (geometric mean)'."""
    head = (
        f"{name} vs {reference_name}: {summary.slower} slower, {summary.faster} faster, "
        f"{summary.no_difference} no meaningful difference, {summary.only_in_one} only in one run, "
        f"{summary.excluded} excluded (verdict, placement or options differ)"
    )
    mean = summary.geometric_mean
    if mean is None:
        return head + "; no comparable rows"
    if mean >= 1.0:
        factor, word = mean, "slower"
    else:
        factor, word = 1.0 / mean, "faster"
    return (
        head
        + f"; over {summary.comparable} comparable rows {name} ran {fmt.factor(factor)}× {word} "
        f"than {reference_name} (geometric mean)"
    )


def compare_matrices(
    rows: list[Row], alpha: float, level: float, resamples: int
) -> list[MatrixComparison]:
    """Per matrix variant present in more than one run: each class's pooled
    samples, compared with the reference run's like any variant's samples."""
    compared = []
    for row in rows:
        results = [cell.result for cell in row.cells]
        with_matrix = [r for r in results if r is not None and matrix.has_matrix(r)]
        if len(with_matrix) < 2:
            continue
        present = {k["class"] for r in with_matrix for k in matrix.classes(r)}
        class_rows = []
        for pair_class in (c for c in matrix.CLASS_ORDER if c in present):
            pooled = [
                matrix.class_samples(r, pair_class)
                if r is not None and matrix.has_matrix(r)
                else []
                for r in results
            ]
            cells = []
            for index, (result, samples) in enumerate(zip(results, pooled, strict=True)):
                note = None
                if result is None or not matrix.has_matrix(result):
                    note = "no matrix in this run"
                elif not samples:
                    note = "no cell of this class"
                difference = None
                if index > 0 and note is None and pooled[0]:
                    difference = stats.compare_samples(pooled[0], samples, alpha, level, resamples)
                count = sum(
                    1
                    for cell in (result or {}).get("matrix", {}).get("cells", [])
                    if cell["class"] == pair_class
                )
                cells.append(ClassCell(stats.median(samples), count, difference, note))
            class_rows.append(ClassRow(pair_class, cells))
        compared.append(MatrixComparison(row.probe, row.params, row.unit, class_rows))
    return compared


def _note(result: dict[str, Any] | None) -> str | None:
    if result is None:
        return "not in this run"
    status = result["verdict"]["status"]
    if status not in COMPARABLE:
        return status
    if not result.get("samples"):
        return "no samples"
    return None


def describe(
    difference: stats.Difference | None,
    unit: str,
    min_effect: float = DEFAULT_MIN_EFFECT,
    name: str = "B",
    reference_name: str = "A",
) -> str:
    """A difference in words: 'B ran 2.19× (2.17–2.21) slower than A', 'not
    significant', 'no meaningful difference (1.02×, under 5%)'."""
    decision = decide(difference, unit, min_effect)
    if difference is None or difference.ratio is None or decision is None:
        return "no ratio"
    if not difference.significant:
        return "not significant"
    interval = difference.ratio
    if decision == NO_DIFFERENCE:
        return f"no meaningful difference ({fmt.factor(interval.ratio)}×, under {min_effect:.0%})"
    # The factor is >= 1 and the interval is turned with it.
    if interval.ratio > 1.0:
        factor, low, high = interval.ratio, interval.low, interval.high
    else:
        factor, low, high = 1.0 / interval.ratio, 1.0 / interval.high, 1.0 / interval.low
    return (
        f"{name} ran {fmt.factor(factor)}× ({fmt.factor(low)}–{fmt.factor(high)}) "
        f"{decision} than {reference_name}"
    )


def summary_lines(comparison: Comparison) -> list[str]:
    """One line per run against A: counts, and the geometric mean over comparable rows."""
    lines = [
        summary_line(summary, fmt.run_letter(index), fmt.run_letter(0))
        for index, summary in enumerate(comparison.summaries, start=1)
    ]
    differing = [
        name
        for name in MEASUREMENT_OPTIONS
        if all(name in options for options in comparison.options)
        and len({repr(options[name]) for options in comparison.options}) > 1
    ]
    if differing:
        lines.append(
            "run options differ ("
            + ", ".join(differing)
            + "): every row is excluded; compare runs taken with the same options"
        )
    return lines


# ---- environment -----------------------------------------------------------
def flatten_env(env: dict[str, Any]) -> dict[str, str]:
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for name, inner in value.items():
                walk(f"{prefix}.{name}" if prefix else str(name), inner)
        elif (
            isinstance(value, list) and value and all(not isinstance(v, dict | list) for v in value)
        ):
            flat[prefix] = ", ".join(_scalar(v) for v in value)
        elif isinstance(value, dict | list):
            flat[prefix] = json.dumps(value, sort_keys=True) if value else "(none)"
        else:
            flat[prefix] = _scalar(value)

    for name, value in env.items():
        if name not in ENV_SKIP:
            walk(name, value)
    return flat


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _priority(key: str) -> tuple[int, str]:
    for rank, prefix in enumerate(ENV_PRIORITY):
        if key == prefix or key.startswith(prefix + "."):
            return rank, key
    return len(ENV_PRIORITY), key


def _same(values: list[str | None]) -> bool:
    """Equal values; measured decimals (timer overhead...) within FLOAT_TOLERANCE."""
    if len(set(values)) <= 1:
        return True
    if any(v is None or "." not in v for v in values):
        return False
    try:
        numbers = [float(v) for v in values if v is not None]
    except ValueError:
        return False
    largest = max(abs(n) for n in numbers)
    return max(numbers) - min(numbers) <= FLOAT_TOLERANCE * largest


def env_diff(envs: list[dict[str, Any]]) -> EnvDiff:
    flats = [flatten_env(env) for env in envs]
    keys = sorted({key for flat in flats for key in flat}, key=_priority)
    values = {key: [flat.get(key) for flat in flats] for key in keys}
    differing = [key for key in keys if not _same(values[key])]
    return EnvDiff(keys=keys, values=values, differing=differing)


# ---- CI gate: --fail-above ---------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """A row of one run against the reference, seen by the CI gate."""

    row: Row
    index: int  # the run (1: B...)
    time_ratio: float | None  # >1: slower


@dataclass(frozen=True)
class Gate:
    """``compare --fail-above PCT``: the rows whose run got slower than the
    reference by more than PCT and significantly (``decide`` with PCT as the
    minimum effect), and the rows that were not judged at all."""

    percent: float
    regressions: list[Verdict]
    not_judged: list[tuple[Verdict, str]]  # and why, in words

    @property
    def failed(self) -> bool:
        return bool(self.regressions)


def gate(comparison: Comparison, percent: float) -> Gate:
    """Judge every comparable row of every run against the reference. A row
    that is excluded (verdict, placement, options), only in one run or
    without a ratio is never a regression: it is listed as not judged."""
    if not math.isfinite(percent) or percent < 0:
        raise ValueError("the threshold must be a finite, non-negative percentage")
    regressions, not_judged = [], []
    for row in comparison.rows:
        for index, cell in enumerate(row.cells[1:], start=1):
            ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
            verdict = Verdict(row, index, ratio)
            why = _not_judged(cell)
            if why is not None:
                not_judged.append((verdict, why))
            elif decide(cell.difference, row.unit, percent / 100.0) == SLOWER:
                regressions.append(verdict)
    return Gate(percent, regressions, not_judged)


def _not_judged(cell: Cell) -> str | None:
    if cell.decision == ONLY_ONE:
        return ONLY_ONE
    if cell.excluded:
        return "excluded: " + "; ".join(cell.excluded)
    if cell.decision is None:
        return cell.note or (cell.difference.why_not if cell.difference else None) or "no ratio"
    return None


def gate_lines(comparison: Comparison, judged: Gate, shown: int = 5) -> list[str]:
    """The gate's outcome: one line per regression, naming the probe variant,
    then one line for the rows that were not judged, then the conclusion."""
    lines = []
    for verdict in judged.regressions:
        cell = verdict.row.cells[verdict.index]
        words = describe(
            cell.difference,
            verdict.row.unit,
            judged.percent / 100.0,
            fmt.run_letter(verdict.index),
            fmt.run_letter(0),
        )
        p = fmt.p_value(cell.difference.u_test.p_value) if cell.difference.u_test else ""
        lines.append(
            f"slower by more than {judged.percent:g}%: "
            f"{variant_name(verdict.row.probe, verdict.row.params)}: {words}, {p}"
        )
    if judged.not_judged:
        names = [
            f"{variant_name(v.row.probe, v.row.params)} ({why})" for v, why in judged.not_judged
        ]
        more = f"; and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(
            f"not judged by --fail-above: {len(names)} row(s) "
            f"(only comparable rows can fail): {'; '.join(names[:shown])}{more}"
        )
    judged_rows = sum(len(row.cells) - 1 for row in comparison.rows) - len(judged.not_judged)
    if judged.failed:
        lines.append(
            f"--fail-above {judged.percent:g}: FAILED, {len(judged.regressions)} of "
            f"{judged_rows} judged row(s) got significantly slower by more than "
            f"{judged.percent:g}%"
        )
    else:
        lines.append(
            f"--fail-above {judged.percent:g}: passed, none of {judged_rows} judged row(s) "
            f"got significantly slower by more than {judged.percent:g}%"
        )
    return lines


# ---- machine-readable: compare --json ----------------------------------------
JSON_SCHEMA_VERSION = 1


def _finite(value: float | None) -> float | None:
    """A number JSON can carry (no NaN or infinity), else None."""
    return value if value is not None and math.isfinite(value) else None


def _difference_dict(difference: stats.Difference | None) -> dict[str, Any]:
    ratio = difference.ratio if difference else None
    u_test = difference.u_test if difference else None
    return {
        "ratio": None
        if ratio is None
        else {
            "value": _finite(ratio.ratio),
            "low": _finite(ratio.low),
            "high": _finite(ratio.high),
            "level": ratio.level,
            "method": ratio.method,
        },
        "p_value": None if u_test is None else _finite(u_test.p_value),
        "significant": bool(difference and difference.significant),
        "why_not_significant": difference.why_not if difference else None,
    }


def as_dict(comparison: Comparison, judged: Gate | None = None) -> dict[str, Any]:
    """The comparison as plain data (schema/compare.schema.json): one row per
    probe variant and run against the reference, the summary counts, the
    environment differences and, when asked, the --fail-above outcome."""
    reference = fmt.run_letter(0)
    runs = [
        {
            "name": fmt.run_letter(index),
            "run_id": run.run_id,
            "label": run.info.label,
            "machine": run.info.machine,
            "started_at": run.info.started_at,
            "options": comparison.options[index] if index < len(comparison.options) else {},
        }
        for index, run in enumerate(comparison.runs)
    ]
    rows = []
    for row in comparison.rows:
        base = row.cells[0]
        for index, cell in enumerate(row.cells[1:], start=1):
            ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
            rows.append(
                {
                    "probe": row.probe,
                    "family": row.family,
                    "params": row.params,
                    "variant": variant_name(row.probe, row.params),
                    "unit": row.unit,
                    "run": fmt.run_letter(index),
                    "reference": reference,
                    "reference_median": _finite(base.median),
                    "median": _finite(cell.median),
                    "reference_status": base.status,
                    "status": cell.status,
                    **_difference_dict(cell.difference),
                    "time_ratio": _finite(ratio),
                    "decision": cell.decision,
                    "note": cell.note,
                    "excluded": list(cell.excluded),
                    "judged": _not_judged(cell) is None,
                }
            )
    summaries = [
        {
            "run": fmt.run_letter(index),
            "reference": reference,
            "slower": summary.slower,
            "faster": summary.faster,
            "no_difference": summary.no_difference,
            "only_in_one_run": summary.only_in_one,
            "excluded": summary.excluded,
            "comparable": summary.comparable,
            "geometric_mean": _finite(summary.geometric_mean),
            "line": summary_line(summary, fmt.run_letter(index), reference),
        }
        for index, summary in enumerate(comparison.summaries, start=1)
    ]
    data: dict[str, Any] = {
        "schema": JSON_SCHEMA_VERSION,
        "kind": "comparison",
        "alpha": comparison.alpha,
        "level": comparison.level,
        "min_effect": comparison.min_effect,
        "runs": runs,
        "rows": rows,
        "summaries": summaries,
        "notes": summary_lines(comparison)[len(summaries) :],
        "environment": {
            "keys_compared": len(comparison.env.keys),
            "differing": [
                {"key": key, "values": comparison.env.values[key]}
                for key in comparison.env.differing
            ],
        },
        "matrices": [_matrix_dict(m) for m in comparison.matrices],
    }
    if judged is not None:
        data["fail_above"] = {
            "percent": judged.percent,
            "failed": judged.failed,
            "regressions": [
                {"variant": variant_name(v.row.probe, v.row.params), "run": fmt.run_letter(v.index),
                 "time_ratio": _finite(v.time_ratio)}
                for v in judged.regressions
            ],
            "not_judged": [
                {"variant": variant_name(v.row.probe, v.row.params), "run": fmt.run_letter(v.index),
                 "why": why}
                for v, why in judged.not_judged
            ],
        }  # fmt: skip
    return data


def _matrix_dict(compared: MatrixComparison) -> dict[str, Any]:
    return {
        "probe": compared.probe,
        "params": compared.params,
        "unit": compared.unit,
        "classes": [
            {
                "class": row.pair_class,
                "runs": [
                    {
                        "run": fmt.run_letter(index),
                        "median": _finite(cell.median),
                        "cells": cell.cells,
                        "note": cell.note,
                        **_difference_dict(cell.difference),
                    }
                    for index, cell in enumerate(row.cells)
                ],
            }
            for row in compared.rows
        ],
    }
