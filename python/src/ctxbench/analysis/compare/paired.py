"""A/B in one run: B against A round by round, judged by the paired ratio.

When A and B are measured on alternate rounds of one run, each round holds
a figure of A and one of B taken moments apart, so what the host did in
that round (another job's compile, a slow spell) falls on both. The log
ratio of the round's two figures, d_k = log(B_k / A_k), cancels it; what is
left is the rounds' spread of d_k. Two sources of such runs:

* an axis of parameters the engine interleaves (``--interleave rounds``):
  A and B are two values of one parameter, e.g. ``seccomp=none`` and
  ``seccomp=profile``, every other parameter equal;
* ``run --ab-wrapper CMD``: each round runs the engine plain (``arm=A``)
  and under CMD (``arm=B``), one process each, the order alternating
  (AB, BA, AB...) so a drift within a round falls on both arms alike.

Either way a record's ``schedule.round_figures`` says which of its samples
each round took (round k is the same index for every variant of the run),
and each round is judged by its **fastest** kept sample, as measured (the
baseline not subtracted: under other work a baseline taken apart moves on
its own, and compare reads figures as measured too): other work only ever
adds time, so the fastest sample of a round is the one the other jobs
moved least, while a change
that costs every operation something (a filter, a wrapper's call) moves it
by that cost. (A change that costs only now and then, in the tail, is not
what this judges.) Where a record's samples cannot be told apart by round,
the rounds' medians stand in (``Paired.statistic`` says which). A round
whose ratio B_k / A_k lies more than ROUND_SLOWED (1.20) times away from
the rounds' median ratio, either way, had one arm slowed and not its twin
(a same-CPU switch that shared its CPU with another job for a whole round
runs two or three times slower): it is set aside and counted
(``Paired.set_aside``). A spell that slows both arms of a round alike, or a
change that slows every round of B alike, sets none aside.
Per pair of variants over its n paired rounds, the log ratios d_k judged
without assuming they are normal (a round the 1.20x rule keeps can still be
10-15 % off, and one such round widens a t interval of the mean for every
other round; method: Hodges-Lehmann with Wilcoxon's signed-rank interval):

    ratio    = exp(HL), HL the median of the Walsh averages (d_i + d_j) / 2, i <= j
    interval = exp(W_(k)), exp(W_(N+1-k)): the Walsh averages' k-th from either
               end, k from the exact null distribution of the signed-rank
               statistic (coverage at least 95 %; n >= 6)
    floor    = each end at least log(1 + q_A + q_B) from the log ratio, q an arm's
               timer resolution over the time one sample took: rounds whose
               figures are identical are not judged with certainty
    se       = the interval's log width / (2 t(0.975, n - 1))
    detectable slowdown = exp((t(0.975, n - 1) + t(0.80, n - 1)) * se) - 1

The ratio is oriented like compare's: above 1, B is slower (a rate's figure
is inverted). Judged at PCT: ``slower`` when the interval's low end lies
above 1 + PCT, ``not slower`` when its high end lies below it, otherwise
``inconclusive`` (the ratio, interval and detectable slowdown say why);
fewer than MIN_ROUNDS paired rounds is ``inconclusive`` too. The outcome of
the whole run is the gate's (``analysis.compare.gate``): failed when a pair is
slower, passed when none is, at least one is not slower and the
inconclusive ones are within the share allowed, inconclusive otherwise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxbench import stats
from ctxbench.analysis.compare.gate import INCONCLUSIVE, NOT_SLOWER, SLOWER, Gate
from ctxbench.analysis.compare.noise import GATE_POWER
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result

MIN_ROUNDS = (
    6  # paired rounds below which the signed-rank interval has no 95 % form (n = 6: 96.9 %)
)
# A round whose ratio B/A lies past this factor of the rounds' median ratio
# (either way) had one arm slowed and not the other (the factor by which the
# engine's host reference calls a sample slowed): it is set aside and counted.
ROUND_SLOWED = 1.20
ARM = "arm"  # the parameter `run --ab-wrapper` gives each record: A plain, B under the wrapper
WRAPPER_AXIS = (ARM, "A", "B")
# Each round's figure: its fastest kept sample, or (where the record's samples
# cannot be told apart by round) its median.
FASTEST, MEDIAN = "fastest", "median"
# Why a pair is inconclusive.
FEW_ROUNDS, NOT_PAIRED, NOISE = "few rounds", "not paired", "noise"


@dataclass(frozen=True)
class Axis:
    """What A and B are: NAME=A_VALUE against NAME=B_VALUE."""

    name: str
    a: str
    b: str


# Why a text is not an A/B axis (``AxisRefused.code``); views.compare.paired words them.
NOT_AN_AXIS, SAME_VALUE = "not an axis", "same value"


@dataclass(frozen=True)
class AxisRefused:
    """A text given as an axis that is not one: why (a code), and the text."""

    code: str
    text: str


def parse_axis(text: str) -> Axis | AxisRefused:
    """'seccomp=none:profile' as an Axis; otherwise why it is not one."""
    name, _, values = text.partition("=")
    a, _, b = values.partition(":")
    name, a, b = name.strip(), a.strip(), b.strip()
    if not name or not a or not b or ":" in b:
        return AxisRefused(NOT_AN_AXIS, text)
    if a == b:
        return AxisRefused(SAME_VALUE, text)
    return Axis(name, a, b)


def _baseline(record: Result) -> float:
    """What the record's ``corrected`` figures (and round_figures' medians) subtract."""
    baseline = record.get("baseline") if record.get("corrected") is not None else None
    return float(baseline["value"]) if baseline else 0.0


def round_figures(record: Result) -> dict[int, float]:
    """A record's median per round (schedule.round_figures), as measured (the
    entries' baseline added back): round -> median, where there is one."""
    entries = record.block("schedule").get("round_figures") or []
    value = _baseline(record)
    figures = {}
    for entry in entries:
        median = entry.get("median")
        if median is not None and median + value > 0 and math.isfinite(median):
            figures[int(entry["round"])] = float(median) + value
    return figures


def round_fastest(record: Result) -> dict[int, float] | None:
    """Each round's fastest kept sample (the largest, for a rate), as
    measured: round -> figure. The record's samples are its rounds' in
    order (each entry's ``n`` of them); None where they do not read so
    (their count, or a round's median less the baseline, disagrees with the
    entries)."""
    entries = record.block("schedule").get("round_figures") or []
    samples = record.samples
    if not entries or sum(int(e["n"]) for e in entries) != len(samples):
        return None
    value = _baseline(record)
    lower = stats.lower_is_better(record.unit)
    fastest, start = {}, 0
    for entry in entries:
        taken = samples[start : start + int(entry["n"])]
        start += int(entry["n"])
        if not taken:
            continue
        median = entry.get("median")
        if median is None or not math.isclose(
            statistics.median(taken) - value, median, rel_tol=1e-6, abs_tol=1e-9
        ):
            return None
        figure = min(taken) if lower else max(taken)
        if figure > 0 and math.isfinite(figure):
            fastest[int(entry["round"])] = figure
    return fastest


@dataclass(frozen=True)
class Paired:
    """One pair of variants, B's against A's, over their paired rounds."""

    probe: str
    params: dict[str, ParamValue]  # the variants' parameters, the axis left out
    unit: str
    statistic: str  # FASTEST or MEDIAN: each round's figure
    rounds: int  # paired rounds: both had a figure, neither ran slowed
    set_aside: int  # rounds both had a figure of, set aside: one of them ran slowed
    rounds_a: int  # rounds with a figure of A
    rounds_b: int
    ratio: float | None  # Hodges-Lehmann estimate of B/A over the rounds, >1: B slower
    low: float | None  # the interval, oriented like ratio
    high: float | None
    se: float | None  # standard error of the mean log ratio
    detectable: float | None  # the smallest slowdown it would catch at GATE_POWER (0.03: 3 %)
    level: float = stats.DEFAULT_LEVEL


def signed_rank_interval(
    logs: Sequence[float], level: float = stats.DEFAULT_LEVEL
) -> tuple[float, float, float] | None:
    """(estimate, low, high) of the centre of LOGS: the Hodges-Lehmann
    estimate (the median of the Walsh averages (d_i + d_j) / 2, i <= j) and
    the signed-rank interval from the Walsh averages' order statistics (its
    coverage at least LEVEL, from the exact null distribution of Wilcoxon's
    signed-rank statistic); None where n is too small for any interval at
    LEVEL (fewer than 6 values at 95 %)."""
    n = len(logs)
    if n < 2:
        return None
    walsh = sorted((logs[i] + logs[j]) / 2.0 for i in range(n) for j in range(i, n))
    # counts[s]: subsets of the ranks 1..n whose sum is s (the null distribution of T).
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for total, count in enumerate(counts):
            grown[total + rank] += count
        counts = grown
    alpha, whole, below, k = 1.0 - level, 2.0**n, 0, 0
    for total, count in enumerate(counts):
        below += count
        if 2.0 * below / whole > alpha:
            break
        k = total + 1  # P(T <= k - 1) is within alpha / 2
    if k == 0:
        return None
    return statistics.median(walsh), walsh[k - 1], walsh[len(walsh) - k]


def resolution_floor(record: Result) -> float:
    """The relative step of one round's figure: the timer's resolution over
    the time a sample took (ops_per_sample operations of the median's
    length); 0 where the record does not say."""
    resolution = record.block("timer").get("resolution_ns")
    ops = record.get("ops_per_sample")
    median = record.median
    if not resolution or not ops or not median or median <= 0:
        return 0.0
    per_op_ns = median if stats.lower_is_better(record.unit) else 1e9 / median
    return float(resolution) / (float(ops) * per_op_ns)


def paired_ratio(
    pairs: Sequence[tuple[float, float]],
    lower_is_better: bool = True,
    level: float = stats.DEFAULT_LEVEL,
    power: float = GATE_POWER,
    floor: float = 0.0,
) -> tuple[float, float, float, float, float | None] | None:
    """(ratio, low, high, se, detectable) of B over A from (A_k, B_k) pairs of
    positive figures, oriented so that above 1 means B is slower; None where
    the rounds are too few for an interval (``signed_rank_interval``). The
    interval reaches at least FLOOR (a log step: the figures' resolution)
    either side of the ratio, so identical rounds are not certainty; se is
    the standard error a t interval of that width over n - 1 degrees of
    freedom would have, and detectable the slowdown such a t test catches
    at POWER."""
    sign = 1.0 if lower_is_better else -1.0
    logs = [sign * (math.log(b) - math.log(a)) for a, b in pairs]
    found = signed_rank_interval(logs, level)
    if found is None:
        return None
    centre, low, high = found
    low, high = min(low, centre - floor), max(high, centre + floor)
    df = len(logs) - 1
    t_quantile = math.log(stats.t_log_interval(0.0, 1.0, df, level).high)
    se = (high - low) / (2.0 * t_quantile)
    detectable = math.expm1(stats.detectable_log_effect(se, df, level, power))
    return math.exp(centre), math.exp(low), math.exp(high), se, detectable


def pair_records(
    records: Iterable[Result], axis: Axis, level: float = stats.DEFAULT_LEVEL
) -> tuple[list[Paired], list[Result]]:
    """Every variant of A (axis = A's value) with its B twin (every other
    parameter equal): the paired figures; and the results of either arm left
    without a twin."""
    by_key: dict[tuple[str, str, str], Result] = {}
    for record in records:
        params = record.params
        value = params.get(axis.name)
        if value is None or str(value) not in (axis.a, axis.b):
            continue
        rest = {k: v for k, v in params.items() if k != axis.name}
        by_key[(str(value), record.probe, params_key(rest))] = record
    paired, alone = [], []
    for (value, probe, rest_key), record in by_key.items():
        twin_value = axis.b if value == axis.a else axis.a
        twin = by_key.get((twin_value, probe, rest_key))
        if twin is None:
            alone.append(record)
            continue
        if value != axis.a:
            continue
        paired.append(_paired(record, twin, axis, level))
    return paired, alone


def _paired(a: Result, b: Result, axis: Axis, level: float) -> Paired:
    figures_a, figures_b = round_fastest(a), round_fastest(b)
    statistic = FASTEST
    if figures_a is None or figures_b is None:
        figures_a, figures_b, statistic = round_figures(a), round_figures(b), MEDIAN
    unit = a.unit
    common = sorted(set(figures_a) & set(figures_b))
    clean = clean_rounds(figures_a, figures_b, common)
    pairs = [(figures_a[k], figures_b[k]) for k in clean]
    floor = math.log1p(resolution_floor(a) + resolution_floor(b))
    found = paired_ratio(pairs, stats.lower_is_better(unit), level, floor=floor)
    ratio = low = high = se = detectable = None
    if found is not None:
        ratio, low, high, se, detectable = found
    params = {k: v for k, v in a.params.items() if k != axis.name}
    return Paired(
        a.probe,
        params,
        unit,
        statistic,
        len(pairs),
        len(common) - len(clean),
        len(figures_a),
        len(figures_b),
        ratio,
        low,
        high,
        se,
        detectable,
        level,
    )


def clean_rounds(
    figures_a: dict[int, float], figures_b: dict[int, float], rounds: Sequence[int]
) -> list[int]:
    """ROUNDS whose log ratio log(B_k / A_k) lies within log(ROUND_SLOWED) of
    the rounds' median log ratio: the others had one arm slowed and not its
    twin. A change that moves every round of B alike, or a spell that moves
    both arms of a round alike, sets none aside."""
    if not rounds:
        return []
    logs = {k: math.log(figures_b[k]) - math.log(figures_a[k]) for k in rounds}
    middle = statistics.median(logs.values())
    limit = math.log(ROUND_SLOWED)
    return [k for k in rounds if abs(logs[k] - middle) <= limit]


@dataclass(frozen=True)
class PairedVerdict:
    paired: Paired
    outcome: str  # SLOWER, NOT_SLOWER, INCONCLUSIVE
    why: str | None = None  # for INCONCLUSIVE: FEW_ROUNDS, NOISE


@dataclass(frozen=True)
class PairedGate:
    """``compare RUN --ab AXIS --fail-above PCT``: every pair's outcome and the
    run's, by the gate's own rule (``analysis.compare.gate.Gate``)."""

    axis: Axis
    percent: float
    rows: list[PairedVerdict]
    alone: list[Result]  # results of one arm without a twin: not judged
    allow_inconclusive: float = 0.0
    power: float = GATE_POWER

    of = Gate.of
    counts = Gate.counts
    outcome = Gate.outcome


def judge(paired: Paired, percent: float, min_rounds: int = MIN_ROUNDS) -> PairedVerdict:
    """One pair at PCT (the module's docstring gives the rules)."""
    if paired.rounds < min_rounds or paired.low is None or paired.high is None:
        return PairedVerdict(paired, INCONCLUSIVE, FEW_ROUNDS)
    limit = 1.0 + percent / 100.0
    if paired.low > limit:
        return PairedVerdict(paired, SLOWER)
    if paired.high < limit:
        return PairedVerdict(paired, NOT_SLOWER)
    return PairedVerdict(paired, INCONCLUSIVE, NOISE)


def paired_gate(
    records: Iterable[Result],
    axis: Axis,
    percent: float,
    allow_inconclusive: float = 0.0,
    min_rounds: int = MIN_ROUNDS,
) -> PairedGate:
    """Pair the records on AXIS and judge every pair at PERCENT."""
    if not math.isfinite(percent) or percent < 0:
        raise ValueError("the threshold must be a finite, non-negative percentage")
    paired, alone = pair_records(records, axis)
    verdicts = [judge(each, percent, min_rounds) for each in paired]
    return PairedGate(axis, percent, verdicts, alone, allow_inconclusive)


def axes_of(records: Iterable[Result]) -> dict[str, list[str]]:
    """Each parameter with more than one value among the results, its values
    in order of first appearance (to name what --ab could pair)."""
    values: dict[str, list[str]] = {}
    for record in records:
        for name, value in record.params.items():
            seen = values.setdefault(name, [])
            if str(value) not in seen:
                seen.append(str(value))
    return {name: seen for name, seen in values.items() if len(seen) > 1}
