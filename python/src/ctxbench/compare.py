"""Side-by-side comparison of stored runs: per probe variant and per environment.

Results are matched on (probe, params). The first run is the reference; for
every other run, each matched variant gets the ratio of medians
(other / reference) with a bootstrap confidence interval and a Mann-Whitney
U test on the raw per-operation samples (before baseline subtraction, the
figures the engine measured), and a decision: faster, slower, or "not
significant" (see ``ctxbench.stats``). Variants that are unsupported or
failed on a side are shown as such, never compared.

The environment diff flattens each env record to dotted keys and lists the
keys whose values differ, the keys that explain differences first (kernel,
CPU, virtualization, mitigations, clocksource, frequency governor).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ctxbench import matrix, stats
from ctxbench.records import params_key
from ctxbench.store import StoredRun

COMPARABLE = ("ok", "suspect")

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
    matrices: list[MatrixComparison] = field(default_factory=list)


def compare_runs(
    runs: list[StoredRun],
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> Comparison:
    if len(runs) < 2:
        raise ValueError("a comparison needs at least two runs")
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
        for by_key in indexed[1:]:
            other = by_key.get(key)
            note = _note(other) or (None if other is None else _note(reference))
            difference = None
            if note is None and reference is not None and other is not None:
                difference = stats.compare_samples(
                    reference["samples"], other["samples"], alpha, level, resamples
                )
            cells.append(Cell(result=other, difference=difference, note=note))
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
        matrices=compare_matrices(rows, alpha, level, resamples),
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


def describe(difference: stats.Difference | None, unit: str) -> str:
    """A difference in words: '1.82x slower', '0.55x (faster)', 'not significant'."""
    if difference is None or difference.ratio is None:
        return "no ratio"
    if not difference.significant:
        return "not significant"
    ratio = difference.ratio.ratio
    higher = ratio > 1.0
    if stats.lower_is_better(unit):
        word = "slower" if higher else "faster"
    else:
        word = "faster" if higher else "slower"
    factor = ratio if higher else 1.0 / ratio
    return f"{factor:#.3g}× {word}"


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
