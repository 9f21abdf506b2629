"""Side-by-side comparison of stored runs, per probe variant, with a decision per row.

Results are matched on (probe, params). The first run is the reference; for
every other run, each matched variant gets the ratio of its figures
(other / reference) with an interval, judged against the row's run-to-run
noise (``ctxbench.analysis.compare.noise``: the runs' repeats, else the machine's history in
the store, else the within-run samples with a floor), and a decision:
slower or faster only when the whole interval lies beyond the minimum
effect (``min_effect``, 5% unless asked otherwise), else no difference.
The noise source of each row says what the decision rests on.

A comparison must not mislead, so a row is *marked* and left out of the
summary only when its two sides do not measure the same thing: the tasks of
a ``cpus=any`` variant (the scheduler places them) observed on a different
number of CPUs, a side whose tasks switched too few times per operation
(``too_few_switches``: not the operation), or, for a variant whose CPUs
the scheduler or the matrix chooses, runs allowed a different number of
CPUs. Any other ``suspect`` side is compared, its uncertainty widening the
row's noise (``noise.Widening``); run options (samples, --quick, retries,
repeats, rounds, seed) change how sure a figure is, never what it
measures, and never exclude a row. Unsupported or failed variants are
never compared. The summary per run counts slower / faster / no
difference / only in one run / excluded, and gives the geometric mean of
the time ratios over the comparable rows.

The environment diff is ``envdiff``; the CI gate of ``--fail-above`` is
``gate``; the JSON form of a comparison is ``export.comparison_dict``, its
words ``views.compare.comparison``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ctxbench import stats, units
from ctxbench.analysis.compare.noise import (
    CpuSpeed,
    HistoryFigures,
    HostState,
    Noise,
    cpu_speed,
    host_state,
    judge,
    run_cpu_loop,
)
from ctxbench.records import matrix
from ctxbench.records.envdiff import EnvDiff, env_diff
from ctxbench.records.environment import Environment
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.runs import StoredRun

COMPARABLE = ("ok", "suspect")
DEFAULT_MIN_EFFECT = 0.05
# Run options (env record) shown beside the runs: they change how sure a
# figure is (its samples, its batches, its noise source), not what it
# measures, so they never exclude a row.
MEASUREMENT_OPTIONS = ("quick", "samples", "min_time_s", "warmup_samples")
SHOWN_OPTIONS = (*MEASUREMENT_OPTIONS, "repeat")
# Placements whose CPUs the scheduler (any, none) or the matrix chooses: with
# a different number of CPUs allowed, they measure something else.
CHOSEN_PLACEMENTS = ("any", "matrix")
# Verdict reasons that say a figure is not the operation it names (a switch
# probe whose tasks did not switch as often as each operation should): the
# row measures something else. Every other suspect reason widens its noise.
NOT_THE_OPERATION = ("too_few_switches",)
SLOWER, FASTER, NO_DIFFERENCE, ONLY_ONE = "slower", "faster", "no difference", "only in one run"


# Why a row's two sides do not measure the same thing (``Exclusion.code``), with
# what each names; views.compare.comparison words them.
NOT_THE_OPERATION_SIDE = "not the operation"  # names: (the run,); codes: its NOT_THE_OPERATION
PLACEMENT = "placement"  # names: (reference, other); values: the CPUs each was observed on
CPU_COUNT = "cpu count"  # names: (reference, other); values: the CPUs each was allowed


@dataclass(frozen=True)
class Exclusion:
    """Why a cell is left out of the summary: a code, the runs it names and its figures."""

    code: str
    names: tuple[str, ...]
    values: tuple[int, ...] = ()
    codes: tuple[str, ...] = ()  # NOT_THE_OPERATION_SIDE: the verdict's codes that say so


@dataclass(frozen=True)
class Cell:
    """One run's side of a row."""

    result: Result | None  # None: the run has no such variant
    difference: stats.Difference | None  # vs the reference; None for it or when not comparable
    note: str | None  # why no comparison (missing, unsupported, failed)
    # Why this cell is left out of the summary (verdicts, placement, CPU count); empty: comparable.
    excluded: tuple[Exclusion, ...] = ()
    decision: str | None = None  # SLOWER, FASTER, NO_DIFFERENCE, ONLY_ONE; None for the reference
    noise: Noise | None = None  # what judged the difference; None without one

    @property
    def median(self) -> float | None:
        return None if self.result is None else self.result.median

    @property
    def status(self) -> str | None:
        return None if self.result is None else self.result.verdict.status


@dataclass(frozen=True)
class Row:
    probe: str
    family: str
    params: Mapping[str, ParamValue]
    unit: str
    cells: list[Cell]  # one per run, reference first


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
    params: Mapping[str, ParamValue]
    unit: str
    rows: list[ClassRow]


@dataclass(frozen=True)
class Judging:
    """How every cell of one comparison is judged: the test's settings, the
    machine's history per variant key (``machine_history.variant_figures``),
    and per run its host state, the CPUs it was allowed and its CPU's speed
    against the machine's history (``noise.cpu_speed``). ``judge_cell``
    judges a pair of results with it; ``compare_runs`` every row, and the key
    figures of ``analysis.summary.build`` a stand-in pair, so that every format
    renders cells judged one way."""

    alpha: float = stats.DEFAULT_ALPHA
    level: float = stats.DEFAULT_LEVEL
    resamples: int = stats.DEFAULT_RESAMPLES
    min_effect: float = DEFAULT_MIN_EFFECT
    history: Mapping[tuple[str, str], HistoryFigures] = field(default_factory=dict)
    hosts: Sequence[HostState | None] = ()
    cpu_counts: Sequence[int | None] = ()
    speeds: Sequence[CpuSpeed | None] = ()


@dataclass(frozen=True)
class Comparison:
    runs: list[StoredRun]
    rows: list[Row]
    env: EnvDiff
    level: float
    alpha: float
    min_effect: float = DEFAULT_MIN_EFFECT
    options: list[dict[str, object]] = field(default_factory=list)  # per run: SHOWN_OPTIONS
    summaries: list[Summary] = field(default_factory=list)  # per run after the reference
    matrices: list[MatrixComparison] = field(default_factory=list)
    judging: Judging | None = None  # how its cells were judged (``judge_cell``)

    def row(self, probe: str, params: Mapping[str, ParamValue]) -> Row | None:
        """The row of this variant (matched as the rows are: probe and params)."""
        key = (probe, params_key(params))
        return next((r for r in self.rows if (r.probe, params_key(r.params)) == key), None)


def judge_cell(
    judging: Judging,
    reference: Result | None,
    other: Result | None,
    index: int,
) -> Cell:
    """Run INDEX's side of a row against the reference's: the one place a
    pair of results gets its difference, noise, exclusions and decision. The
    history is that of the reference's variant."""
    note = _note(other) or (None if other is None else _note(reference))
    difference, judged_by = None, None
    hosts = list(judging.hosts) or [None] * (index + 1)
    cpus = list(judging.cpu_counts) or [None] * (index + 1)
    speeds = list(judging.speeds) or [None] * (index + 1)
    if note is None and reference is not None and other is not None:
        key = (reference.probe, params_key(reference.params))
        difference, judged_by = judge(
            reference,
            other,
            judging.history.get(key, ()),
            judging.alpha,
            judging.level,
            judging.resamples,
            hosts=(hosts[0], hosts[index]),
            speeds=(speeds[0], speeds[index]),
        )
    if reference is None or other is None:
        excluded: tuple[Exclusion, ...] = ()
        decision: str | None = ONLY_ONE
    else:
        excluded = exclusions(
            reference,
            other,
            (cpus[0], cpus[index]),
            units.run_letter(0),
            units.run_letter(index),
        )
        decision = decide(difference, reference.unit, judging.min_effect, judged_by)
    return Cell(
        result=other,
        difference=difference,
        note=note,
        excluded=excluded,
        decision=decision,
        noise=judged_by,
    )


def compare_runs(
    runs: list[StoredRun],
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
    resamples: int = stats.DEFAULT_RESAMPLES,
    min_effect: float = DEFAULT_MIN_EFFECT,
    history: Mapping[tuple[str, str], HistoryFigures] | None = None,
    loop_history: Sequence[float] = (),
) -> Comparison:
    """Every variant of the runs, matched, each other run against the first.
    ``history``: per variant key, the figures of the store's earlier runs of
    the runs' machine (``machine_history.variant_figures``), for rows
    without repeats; ``loop_history``: those runs' plain loops
    (``machine_history.loop_history``), for each run's CPU speed. Every
    format (the key figures, --all, --json, the gate) renders the
    comparison this returns."""
    if len(runs) < 2:
        raise ValueError("a comparison needs at least two runs")
    if min_effect < 0:
        raise ValueError("the minimum effect cannot be negative")
    judging = Judging(
        alpha=alpha,
        level=level,
        resamples=resamples,
        min_effect=min_effect,
        history=history or {},
        hosts=[host_state(run.results) for run in runs],
        cpu_counts=[allowed_cpus(run.env) for run in runs],
        speeds=[cpu_speed(run_cpu_loop(run.results), loop_history) for run in runs],
    )
    indexed: list[dict[tuple[str, str], Result]] = []
    order: dict[tuple[str, str], Result] = {}
    for run in runs:
        by_key = {}
        for result in run.results:
            key = (result.probe, params_key(result.params))
            by_key[key] = result
            order.setdefault(key, result)
        indexed.append(by_key)

    rows = []
    for key, first_seen in order.items():
        reference = indexed[0].get(key)
        cells = [Cell(result=reference, difference=None, note=_note(reference))]
        cells += [
            judge_cell(judging, reference, by_key.get(key), index)
            for index, by_key in enumerate(indexed[1:], start=1)
        ]
        rows.append(
            Row(
                probe=first_seen.probe,
                family=first_seen.family,
                params=first_seen.params,
                unit=first_seen.unit,
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
        options=[run_options(run.env) for run in runs],
        summaries=[summarize(rows, index) for index in range(1, len(runs))],
        matrices=compare_matrices(rows, alpha, level, resamples),
        judging=judging,
    )


def run_options(env: Environment) -> dict[str, object]:
    """The options of a run that change its figures, and its repeats (absent ones are unknown)."""
    return {name: env.options[name] for name in SHOWN_OPTIONS if name in env.options}


def observed_cpus(result: Result) -> int | None:
    """On how many distinct CPUs the tasks were observed; None: not observed."""
    placement = result.block("placement")
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
    return len(set(seen))


def allowed_cpus(env: Environment) -> int | None:
    """How many CPUs the run was allowed (env cpu.allowed), None if unknown."""
    return len(env.cpu_allowed) or None


def exclusions(
    reference: Result,
    other: Result,
    cpu_counts: tuple[int | None, int | None] = (None, None),
    reference_name: str = "A",
    other_name: str = "B",
) -> tuple[Exclusion, ...]:
    """Why two results of one variant do not measure the same thing; empty
    when they do. Run options are never a reason, nor a suspect verdict,
    except one that says the operation did not switch as it should
    (NOT_THE_OPERATION: fewer switches per operation than it makes)."""
    why = []
    for name, result in ((reference_name, reference), (other_name, other)):
        codes = set(result.verdict.codes) & set(NOT_THE_OPERATION)
        if codes:
            why.append(Exclusion(NOT_THE_OPERATION_SIDE, (name,), codes=tuple(sorted(codes))))
    names = (reference_name, other_name)
    requested = reference.block("placement").get("requested")
    placements = observed_cpus(reference), observed_cpus(other)
    if requested == "any" and None not in placements and placements[0] != placements[1]:
        why.append(Exclusion(PLACEMENT, names, _known(placements)))
    if requested in CHOSEN_PLACEMENTS and None not in cpu_counts and cpu_counts[0] != cpu_counts[1]:
        why.append(Exclusion(CPU_COUNT, names, _known(cpu_counts)))
    return tuple(why)


def _known(pair: tuple[int | None, int | None]) -> tuple[int, ...]:
    return tuple(value for value in pair if value is not None)


def time_ratio(difference: stats.Difference, unit: str) -> float | None:
    """The ratio oriented so that above 1 means the other run is slower."""
    if difference.ratio is None:
        return None
    ratio = difference.ratio.ratio
    return ratio if stats.lower_is_better(unit) else 1.0 / ratio


def time_interval(interval: stats.RatioInterval, unit: str) -> tuple[float, float]:
    """The interval's ends oriented like ``time_ratio`` (above 1: slower)."""
    if stats.lower_is_better(unit):
        return interval.low, interval.high
    return (
        1.0 / interval.high if interval.high else math.inf,
        1.0 / interval.low if interval.low else math.inf,
    )


def effect_needed(min_effect: float, judged_by: Noise | None) -> float:
    """The relative effect the whole interval must exceed: the minimum effect,
    or the within-run floor where that is larger."""
    return max(min_effect, judged_by.floor_effect if judged_by else 0.0)


def decide(
    difference: stats.Difference | None,
    unit: str,
    min_effect: float,
    judged_by: Noise | None = None,
) -> str | None:
    """SLOWER or FASTER when the difference is significant and its whole
    interval lies beyond 1 + the effect needed (``effect_needed``), else
    NO_DIFFERENCE; None when there is nothing to decide on."""
    if difference is None or difference.ratio is None:
        return None
    if not difference.significant:
        return NO_DIFFERENCE
    low, high = time_interval(difference.ratio, unit)
    effect = effect_needed(min_effect, judged_by)
    if low > 1.0 + effect:
        return SLOWER
    if high < 1.0 / (1.0 + effect):
        return FASTER
    return NO_DIFFERENCE


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


def _note(result: Result | None) -> str | None:
    if result is None:
        return "not in this run"
    status = result.verdict.status
    if status not in COMPARABLE:
        return status
    if not result.samples:
        return "no samples"
    return None
