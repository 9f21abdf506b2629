"""The run-to-run noise that judges one row of a comparison: repeats > history > within-run.

A figure moves more between runs than its samples move within a run: a
run's batches share its process, its placement and the host's state for
those seconds, so their spread says little about the next run. Each row is
therefore judged against the best source of run-to-run spread there is:

1. ``repeats``: both runs were taken with ``run --repeat N`` (N >= 2): the
   pooled log spread of the repeats' medians of both runs, with sum(N - 1)
   degrees of freedom; the row compares the runs' medians.
2. ``history``: the store holds earlier runs of run A's machine
   (``machine_history``: host, CPU model, kernel, sandbox) with this
   variant, worth at least MIN_HISTORY_RUNS. Judged by history, a row
   compares the two runs' p10s (``p10``: the fastest tenth of each run's
   samples, ``stats.low_quantile``), not their medians: interference
   only adds time, and on a shared 2-vCPU guest it moved a quick run's
   median by a log spread of 0.10 run to run even with nothing else of ours
   running, its p10 by 0.01 (docs/accuracy.md, "Judged on the fastest
   tenth"). The history's figures are the earlier runs' p10s, and its spread the
   robust log spread of those
   (``stats.weighted_log_spread``: the weighted median
   absolute deviation, so one run in a slow spell does not make the spread
   of twenty), an ``ok`` figure counting as one run and a ``suspect`` one as
   SUSPECT_WEIGHT of a run; sum(w) - 1 degrees of freedom. A history at two
   levels (HISTORY_LEVEL_GAP: a Boost.Fiber yield whose runs sit at 53 or
   86 ns, some between) takes the weighted standard deviation instead:
   the robust spread would see one level only. A figure that carried
   interference (``carried_interference``: what the engine and the kernel
   said of it, or of most of its run: ``run_carried_interference``) is
   left out of the history when the clean figures alone are
   worth MIN_HISTORY_RUNS, so a loaded spell in the store does not widen
   the row's noise for ever; the row counts what was left out
   (``Noise.left_out``), or, where the clean ones are too few, the
   interfered figures it rests on (``Noise.interfered``).
3. ``within-run``: only the samples of the two runs: the bootstrap interval
   of the ratio of medians and the U test (``stats.compare_samples``), and
   a floor: a difference smaller than WITHIN_RUN_FLOOR (in log terms) is
   never called meaningful from the samples alone. Widened (below), each end
   of the bootstrap interval moves out from the ratio (in log terms) by the
   factor its standard error grows when the widenings are added.

Between runs (1 and 2) the standard error of the log ratio is the spread
times sqrt(1/n_A + 1/n_B), widened (added in quadrature, Welch-Satterthwaite
degrees of freedom) by what says this pair of figures moved more than the
machine's usual (``Widening``): a ``suspect`` side's own uncertainty (the
standard error of its median from the IQR of its samples' logs; and, when
the kernel's counters saw other work take a share of its kept samples'
time, -log(1 - share)), a side whose host reference still ran slowed
(the log of its reference's ratio to its best), and a run whose host reference ran slowed as a whole
(``HostState``: the median over its variants over the reference's slowed
ratio): that run is not compared as if the host had been the same. The
interval is a t interval of the log ratio.

Each noise also gives the smallest slowdown it could detect
(``detectable``: the minimum detectable effect at the comparison's level
and GATE_POWER; never below the floor). The decision rules are
``compare.decide`` (the table) and ``gate`` (--fail-above); this module only
says which interval, which standard error and which floor.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ctxbench import stats
from ctxbench.records.result import Result

REPEATS, HISTORY, WITHIN_RUN = "repeats", "history", "within-run"
SOURCES = (REPEATS, HISTORY, WITHIN_RUN)
# 0.20 in log terms (a factor of e^0.20 = 1.22): identical quick runs on the
# quiet 2-vCPU KVM guest moved a variant's median by at most 0.078 (330 row
# pairs), and loaded hours there moved them up to 20 %; docs/accuracy.md
# ("The floor") has the figures and the command. Change it only with new ones.
WITHIN_RUN_FLOOR = 0.20
MIN_HISTORY_RUNS = 3  # earlier runs (suspect ones counted by SUSPECT_WEIGHT)
# A history at two levels: sorted, its HISTORY_LEVEL_RUNS-th highest figure
# more than HISTORY_LEVEL_GAP above its HISTORY_LEVEL_RUNS-th lowest
# (``stats.two_levels``). Its spread is then the plain standard deviation,
# not the robust one. 1.4: a Boost.Fiber yield's upper level sat 1.45-1.6x
# above its lower one in the quick runs of docs/notes/2026-11-28-third-look.md
# (2-vCPU KVM guest), and a history at 52 and 78 ns (1.50x) slipped under 1.5.
HISTORY_LEVEL_GAP = 1.4
HISTORY_LEVEL_RUNS = 2
MIN_REPEATS = 2
# A suspect figure of the machine's history: it shows the spread the machine
# has, but its own figure is less sure, so it counts as half a run.
SUSPECT_WEIGHT = 0.5
# The power at which a row states its detectable slowdown and at which the
# gate calls a row `not slower` (the convention of A/B testing: 80 %).
GATE_POWER = 0.80

# What a row compares (``Noise.statistic``): each run's p10 (history) or
# median (repeats, within-run).
P10, MEDIAN = "p10", "median"
WIDENED_METHOD = "bootstrap of the ratio of medians, widened by the suspect or slowed sides"
# Why a row judged here is not significant (``stats.NotSignificant.code``,
# beside stats's own codes); views.compare.comparison words them.
WIDENED_INCLUDES_ONE = "widened includes 1"  # values: (level,)
NOT_POSITIVE = "not positive"  # the ratio is undefined: a figure is not positive
NOISE_INCLUDES_ONE = "noise includes 1"  # values: (level,); source: the noise's
# What widened a row's noise (``Widening.cause``).
SUSPECT, SLOWED, HOST_SLOWED, TAKEN = "suspect", "slowed", "host slowed", "cpu taken"
CPU_SLOWED = "cpu slowed"

# A run's CPU is slowed as a whole when its plain loop (``derived.cpu_loop_ns``,
# the fastest of the loop's timings before each kept sample; the median over
# the run's variants) ran over this factor of the machine's history's median,
# or over three of the history's robust log spreads, whichever is larger. On
# this project's 2-vCPU KVM guest under a CI runner's load mix, eight history
# runs' loops sat within 0.2 % of their median; the two runs of a pair that
# sat in a slow state of the host (same-CPU switches 17-23 % up, no sample
# the kernel's counters flagged) had theirs 1.0 and 1.2 % up: the loop, in
# registers, moves far less than the kernel paths do
# (docs/notes/2026-11-28-gate-mix.md).
CPU_SLOWED_FLOOR = 1.01
CPU_SLOWED_SPREADS = 3.0
# How far the kernel paths may have moved with it: that run's same-CPU
# switches moved 17-23 times as far as its loop (23 % against 1.2 %), so a
# slowed run's rows are widened by this many times the log of its loop's ratio.
CPU_SLOWED_REACH = 20.0


@dataclass(frozen=True)
class Widening:
    """A log spread added to a row's run-to-run noise: ``side`` 0 is the
    reference run, 1 the other; ``cause`` SUSPECT (the standard error of the
    side's median from its own samples' robust spread), SLOWED (its host
    reference still ran slowed: the log of the reference's ratio to its
    best), HOST_SLOWED (the run's reference ran slowed as a whole: the log
    of its median ratio) or CPU_SLOWED (the run's plain loop ran slowed
    against the machine's history: the log of its ratio)."""

    side: int
    cause: str
    spread: float
    df: float = math.inf  # of the spread: samples - 1 for SUSPECT


@dataclass(frozen=True)
class HostState:
    """A run's host reference over all its variants: the median of each
    variant's kept reference time over the best (``interference``), the
    engine's slowed ratio, how many variants had a reference and how many
    were still slowed. ``slowed_as_a_whole``: the median over the run is
    itself over the slowed ratio."""

    reference_ratio: float
    slowed_ratio: float
    variants: int
    slowed: int

    @property
    def slowed_as_a_whole(self) -> bool:
        return self.reference_ratio > self.slowed_ratio


@dataclass(frozen=True)
class Noise:
    """What judged a row: the source, its log spread and how many figures (or
    samples, within-run) it rests on; ``floor`` is the smallest log difference
    that may be called meaningful (0 except within-run); ``se`` the standard
    error of the log ratio with ``df`` degrees of freedom, widenings included."""

    source: str
    # log spread: of a run's figure (repeats, history), of the samples (within-run)
    spread: float | None
    n: int  # repeats of both runs, earlier runs, or samples of both runs
    floor: float = 0.0
    se: float | None = None
    df: float = math.inf
    widened: tuple[Widening, ...] = ()
    levels: int = 1  # 2: the history sat at two levels (HISTORY_LEVEL_GAP)
    # history: earlier figures that carried interference, left out (the clean
    # ones sufficed), and those it rests on (they did not)
    left_out: int = 0
    interfered: int = 0
    # Between runs: the source's own standard error of the log ratio and its
    # degrees of freedom, before the widenings (``slowdown_bound``).
    base_se: float | None = None
    base_df: float = math.inf
    statistic: str = MEDIAN  # what the row compares: P10 or MEDIAN

    @property
    def floor_effect(self) -> float:
        """The floor as a relative effect (0.22 for a log floor of 0.20)."""
        return math.expm1(self.floor)


def detectable(
    noise: Noise | None, level: float = stats.DEFAULT_LEVEL, power: float = GATE_POWER
) -> float | None:
    """The smallest slowdown (relative: 0.08 for 8 %) this noise could
    detect with probability POWER by a one-sided test at (1 - level) / 2:
    the minimum detectable effect of its standard error, never below the
    floor. None without a standard error."""
    if noise is None or noise.se is None:
        return None
    log_effect = stats.detectable_log_effect(noise.se, noise.df, level, power)
    return math.expm1(max(noise.floor, log_effect))


# Widenings that say by how much a figure may have been inflated, never
# deflated: the kernel saw other work take that share of its samples' time,
# and interference only adds time. A host reference that ran slowed (SLOWED,
# HOST_SLOWED) says the host was not the same, not by how much each figure
# moved, so it stays noise with a suspect side's own uncertainty (SUSPECT).
INFLATING = (TAKEN,)


def _pass_parts(noise: Noise) -> tuple[float, float] | None:
    """The standard error and degrees of freedom of the log ratio that can
    hide a slowdown: the source's own and every widening but the INFLATING
    ones, which are biases, not noise (``slowdown_bound``). None within-run
    or without a source's own."""
    if noise.source == WITHIN_RUN or noise.base_se is None:
        return None
    parts = [(noise.base_se, noise.base_df)] + [
        (w.spread, w.df) for w in noise.widened if w.cause not in INFLATING
    ]
    se = math.sqrt(sum(part**2 for part, _ in parts))
    return se, (stats.satterthwaite_df(parts) if len(parts) > 1 else noise.base_df)


def slowdown_bound(
    noise: Noise | None, log_ratio: float, level: float = stats.DEFAULT_LEVEL
) -> float | None:
    """The largest log slowdown of B against A (time) that a one-sided test at
    (1 - level) / 2 allows, counting each widening by what it can do:
    interference only adds time, so the share of the reference's (A's) time
    that others took (INFLATING) is added in full to the ratio, B's is
    dropped (it can only have made B look slower), and the other widenings
    stay noise on both sides. Between runs only (the within-run interval
    does not know the run-to-run spread); None without one."""
    parts = None if noise is None else _pass_parts(noise)
    if noise is None or parts is None:
        return None
    bias = sum(w.spread for w in noise.widened if w.side == 0 and w.cause in INFLATING)
    se, df = parts
    return math.log(stats.t_log_interval(log_ratio + bias, se, df, level).high)


def pass_detectable(
    noise: Noise | None, level: float = stats.DEFAULT_LEVEL, power: float = GATE_POWER
) -> float | None:
    """The smallest slowdown the noise that can hide one (``_pass_parts``)
    would detect with probability POWER: what a widened row could see, its
    inflating widenings set apart as biases. None within-run."""
    parts = None if noise is None else _pass_parts(noise)
    if parts is None:
        return None
    return math.expm1(stats.detectable_log_effect(parts[0], parts[1], level, power))


def figure(result: Result) -> float | None:
    """A result's median (what repeats and within-run judge)."""
    return result.median


def p10(result: Result) -> float | None:
    """A result's p10 (what the history judges): ``stats.low_quantile`` of
    its kept samples; None where it keeps too few."""
    return stats.low_quantile(list(result.samples), result.unit)


def repeat_figures(result: Result) -> list[float]:
    """The figure of each repeat of a ``run --repeat`` record (empty without repeats)."""
    block = result.block("repeats")
    return [float(each["median"]) for each in block.get("runs", []) if each.get("median")]


def history_weight(result: Result) -> float:
    """How much an earlier run's figure counts in the machine's history."""
    return 1.0 if result.verdict.status == "ok" else SUSPECT_WEIGHT


def carried_interference(result: Result) -> bool:
    """Whether a figure carried interference the engine could not clear, by
    what its record says: the verdict's ``interference`` reason (the kernel
    saw over its limit of kept samples interfered with), or its host
    reference still slowed, or as many samples set aside as kept (the
    engine's ``interference.slowed``)."""
    if result.verdict.has("interference"):
        return True
    return bool(result.block("interference").get("slowed"))


def run_carried_interference(results: Sequence[Result]) -> bool:
    """Whether a whole run carried interference: its host reference ran
    slowed as a whole, or more than half of its measured figures carried
    interference (``carried_interference``): the run sat in a loaded spell,
    not a spell in the run, so its other figures are not the machine's usual
    either (a run moves as a whole)."""
    host = host_state(results)
    if host is not None and host.slowed_as_a_whole:
        return True
    measured = [r for r in results if r.verdict.measured]
    flagged = sum(1 for r in measured if carried_interference(r))
    return 2 * flagged > len(measured)


def host_state(results: Sequence[Result]) -> HostState | None:
    """The run's host reference over its variants (None: no variant had one)."""
    ratios, slowed, slowed_ratio = [], 0, None
    for result in results:
        block = result.block("interference")
        attempts = block.get("attempts") or []
        kept = block.get("kept")
        if not isinstance(kept, int) or not 0 <= kept < len(attempts):
            continue
        ratio = attempts[kept].get("reference_ratio")
        if not isinstance(ratio, (int, float)) or ratio <= 0:
            continue
        ratios.append(float(ratio))
        slowed += bool(block.get("slowed"))
        slowed_ratio = float(block.get("slowed_ratio") or 1.2)
    if not ratios:
        return None
    return HostState(stats.median(ratios), slowed_ratio, len(ratios), slowed)


def side_widenings(result: Result, side: int) -> list[Widening]:
    """What makes one side's figure less sure than the machine's usual: its
    verdict (suspect: its own sample spread) and a reference still slowed."""
    widened = []
    samples = list(result.samples)
    if result.verdict.status == "suspect":
        spread = stats.sample_log_spread(samples)
        if spread:
            # The standard error of the side's median from its samples' robust
            # spread (sqrt(pi/2) * sigma / sqrt(n), normal asymptotics).
            se = math.sqrt(math.pi / 2.0) * spread / math.sqrt(len(samples))
            widened.append(Widening(side, SUSPECT, se, len(samples) - 1.0))
    taken = (result.block("counters").get("kept") or {}).get("other_share")
    suspect = result.verdict.status == "suspect"
    if suspect and isinstance(taken, (int, float)) and 0.0 < taken < 1.0:
        # The kernel saw others take this share of the kept samples' time:
        # the figure may be inflated by up to 1 / (1 - share).
        widened.append(Widening(side, TAKEN, -math.log1p(-taken)))
    block = result.block("interference")
    attempts = block.get("attempts") or []
    kept = block.get("kept")
    if block.get("slowed") and isinstance(kept, int) and 0 <= kept < len(attempts):
        ratio = attempts[kept].get("reference_ratio")
        if isinstance(ratio, (int, float)) and ratio > 1.0:
            widened.append(Widening(side, SLOWED, math.log(ratio)))
    return widened


@dataclass(frozen=True)
class CpuSpeed:
    """A run's plain loop against the machine's history: its time over the
    history's median (above 1: the CPU ran slower), the factor past which it
    counts as slowed, and how many earlier runs that rests on."""

    ratio: float
    limit: float
    runs: int

    @property
    def slowed(self) -> bool:
        return self.ratio > self.limit


def run_cpu_loop(results: Sequence[Result]) -> float | None:
    """A run's plain loop: the median over its variants of ``derived.cpu_loop_ns``
    (None where no variant has one: older runs, or none measured)."""
    loops = [
        float(value)
        for result in results
        if isinstance(value := result.block("derived").get("cpu_loop_ns"), (int, float))
        and value > 0
    ]
    return float(stats.median(loops) or 0.0) if loops else None


def cpu_speed(loop: float | None, history: Sequence[float]) -> CpuSpeed | None:
    """LOOP (``run_cpu_loop``) against the machine's earlier runs' loops; None
    without a loop or with fewer than MIN_HISTORY earlier ones."""
    earlier = [value for value in history if value > 0]
    if loop is None or loop <= 0 or len(earlier) < MIN_HISTORY_RUNS:
        return None
    spread = stats.sample_log_spread(earlier) or 0.0
    limit = max(CPU_SLOWED_FLOOR, math.exp(CPU_SLOWED_SPREADS * spread))
    middle = stats.median(earlier) or loop
    return CpuSpeed(loop / middle, limit, len(earlier))


def cpu_widenings(speeds: Sequence[CpuSpeed | None]) -> list[Widening]:
    """A run whose CPU ran slowed as a whole widens its rows by
    CPU_SLOWED_REACH times the log of its loop's ratio: every figure of it
    may sit higher by far more than the loop moved, so a row is not called
    slower (or not slower) on that run's figure unless the difference is
    larger than that."""
    return [
        Widening(side, CPU_SLOWED, CPU_SLOWED_REACH * math.log(speed.ratio))
        for side, speed in enumerate(speeds)
        if speed is not None and speed.slowed
    ]


def host_widenings(hosts: Sequence[HostState | None]) -> list[Widening]:
    return [
        Widening(side, HOST_SLOWED, math.log(host.reference_ratio))
        for side, host in enumerate(hosts)
        if host is not None and host.slowed_as_a_whole
    ]


# The machine's earlier figures of a variant: plain figures, (figure, weight)
# pairs, or (figure, weight, interfered) with ``carried_interference``.
HistoryFigures = (
    Sequence[float] | Sequence[tuple[float, float]] | Sequence[tuple[float, float, bool]]
)


@dataclass(frozen=True)
class History:
    """The figures a history judges by: its spread, how many runs it has, its
    levels (1 or 2), and the figures that carried interference, left out or
    kept (``Noise.left_out``, ``Noise.interfered``)."""

    spread: stats.PooledSpread | None
    runs: int
    levels: int = 1
    left_out: int = 0
    interfered: int = 0


def _history_spread(history: HistoryFigures) -> History:
    """The weighted log spread of the history, the interfered figures left out
    where the clean ones are worth MIN_HISTORY_RUNS (see the module's text)."""
    entries = []
    for h in history:
        if isinstance(h, (int, float)):
            entries.append((float(h), 1.0, False))
        else:
            entries.append((h[0], h[1], bool(h[2]) if len(h) > 2 else False))
    clean = [e for e in entries if not e[2]]
    left_out = 0
    if len(clean) < len(entries) and sum(w for _, w, _ in clean) >= MIN_HISTORY_RUNS:
        left_out, entries = len(entries) - len(clean), clean
    interfered = sum(1 for e in entries if e[2])
    if sum(w for _, w, _ in entries) < MIN_HISTORY_RUNS:
        return History(None, len(entries), 1, left_out, interfered)
    figures, weights = [f for f, _, _ in entries], [w for _, w, _ in entries]
    if stats.two_levels(figures, HISTORY_LEVEL_GAP, HISTORY_LEVEL_RUNS):
        # Two levels (a cross-CPU wake-up that finds the other CPU awake in
        # some runs and idle in others): the robust spread would measure one
        # level alone and call a run at the other a change.
        spread = stats.weighted_log_sd(figures, weights)
        return History(spread, len(entries), 2, left_out, interfered)
    spread = stats.weighted_log_spread(figures, weights)
    return History(spread, len(entries), 1, left_out, interfered)


def judge(
    reference: Result,
    other: Result,
    history: HistoryFigures = (),
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
    resamples: int = stats.DEFAULT_RESAMPLES,
    hosts: Sequence[HostState | None] = (None, None),
    speeds: Sequence[CpuSpeed | None] = (None, None),
) -> tuple[stats.Difference, Noise]:
    """The difference between two results of one variant, judged by the best
    noise source there is (the module's docstring gives the order).
    ``history``: the machine's earlier figures, or (figure, weight) pairs;
    ``hosts``: the two runs' host states (``host_state``); ``speeds``: their
    CPUs against the machine's history (``cpu_speed``)."""
    a, b = figure(reference), figure(other)
    repeats_a, repeats_b = repeat_figures(reference), repeat_figures(other)
    base: tuple[str, stats.PooledSpread, int, float] | None = None
    past = History(None, 0)
    if a and b and len(repeats_a) >= MIN_REPEATS and len(repeats_b) >= MIN_REPEATS:
        pooled = stats.pooled_log_spread([repeats_a, repeats_b])
        if pooled is not None:
            factor = math.sqrt(1.0 / len(repeats_a) + 1.0 / len(repeats_b))
            base = (REPEATS, pooled, len(repeats_a) + len(repeats_b), factor)
    if base is None and a and b:
        past = _history_spread(history)
        low = p10(reference), p10(other)
        if past.spread is not None and low[0] and low[1]:
            base = (HISTORY, past.spread, past.runs, math.sqrt(2.0))
            a, b = low
    if base is not None and a and b and a > 0 and b > 0:
        source, pooled, n, factor = base
        widened = tuple(
            side_widenings(reference, 0)
            + side_widenings(other, 1)
            + host_widenings(hosts)
            + cpu_widenings(speeds)
        )
        parts = [(pooled.spread * factor, pooled.df)] + [(w.spread, w.df) for w in widened]
        se = math.sqrt(sum(part**2 for part, _ in parts))
        df = stats.satterthwaite_df(parts) if widened else float(pooled.df)
        interval = stats.t_log_interval(math.log(b / a), se, df, level)
        by_history = source == HISTORY
        noise = Noise(
            source,
            pooled.spread,
            n,
            se=se,
            df=df,
            widened=widened,
            levels=past.levels if by_history else 1,
            left_out=past.left_out if by_history else 0,
            interfered=past.interfered if by_history else 0,
            base_se=pooled.spread * factor,
            base_df=float(pooled.df),
            statistic=P10 if by_history else MEDIAN,
        )
        return _between_runs(a, b, interval, level, noise), noise
    return _judge_within_run(reference, other, alpha, level, resamples, hosts, speeds)


def _judge_within_run(
    reference: Result,
    other: Result,
    alpha: float,
    level: float,
    resamples: int,
    hosts: Sequence[HostState | None],
    speeds: Sequence[CpuSpeed | None],
) -> tuple[stats.Difference, Noise]:
    """``judge`` where neither repeats nor the history can judge: the two
    runs' samples, the bootstrap's interval widened where a side asks for it."""
    samples_a, samples_b = list(reference.samples), list(other.samples)
    pooled = stats.pooled_log_spread([samples_a, samples_b])
    difference = stats.compare_samples(samples_a, samples_b, alpha, level, resamples)
    se, widened = None, ()
    if difference.ratio is not None and difference.ratio.low > 0 and difference.ratio.ratio > 0:
        z = stats.normal_quantile(0.5 + level / 2.0)
        se = (math.log(difference.ratio.high) - math.log(difference.ratio.low)) / (2.0 * z)
        widened = tuple(
            side_widenings(reference, 0)
            + side_widenings(other, 1)
            + host_widenings(hosts)
            + cpu_widenings(speeds)
        )
        if widened and se > 0:
            # The bootstrap's spread and the widenings in quadrature: each end
            # of the bootstrap interval moved out from the ratio, in log terms,
            # by the factor the standard error grew.
            wider = math.sqrt(se**2 + sum(w.spread**2 for w in widened))
            ratio = difference.ratio
            stretch = wider / se
            interval = dataclasses.replace(
                ratio,
                low=ratio.ratio * (ratio.low / ratio.ratio) ** stretch,
                high=ratio.ratio * (ratio.high / ratio.ratio) ** stretch,
                method=WIDENED_METHOD,
            )
            se = wider
            wide_enough = interval.excludes_one()
            difference = dataclasses.replace(
                difference,
                ratio=interval,
                significant=difference.significant and wide_enough,
                why_not=difference.why_not
                or (None if wide_enough else stats.NotSignificant(WIDENED_INCLUDES_ONE, (level,))),
            )
    noise = Noise(
        WITHIN_RUN,
        pooled.spread if pooled else None,
        len(samples_a) + len(samples_b),
        floor=WITHIN_RUN_FLOOR,
        se=se,
        widened=widened,
    )
    return difference, noise


def _between_runs(
    a: float, b: float, interval: stats.RatioInterval | None, level: float, noise: Noise
) -> stats.Difference:
    if interval is None:
        significant, why = False, stats.NotSignificant(NOT_POSITIVE)
    elif interval.excludes_one():
        significant, why = True, None
    else:
        significant, why = False, stats.NotSignificant(NOISE_INCLUDES_ONE, (level,), noise.source)
    return stats.Difference(
        reference_median=a,
        other_median=b,
        ratio=interval,
        u_test=None,
        significant=significant,
        why_not=why,
    )


def within_run() -> Noise:
    """The noise of a comparison of pooled samples alone (e.g. a matrix's pair class)."""
    return Noise(WITHIN_RUN, None, 0, floor=WITHIN_RUN_FLOOR)
