"""The CI gate of `compare --fail-above PCT`: every row `slower`, `not slower` or `inconclusive`.

Each row of each run against the reference gets one of three outcomes,
judged against the row's noise (``noise.judge``: repeats, the machine's
history, or the within-run samples with a floor; a suspect side or a host
that ran slowed widens it). With L = log(1 + PCT), d the log time ratio,
se its standard error and df its degrees of freedom:

1. ``slower`` when the whole interval lies above 1 + PCT (and above the
   floor): whatever the row's power, and whatever its sides' verdicts, a
   large regression is a regression (the interval already carries the
   row's noise and its widenings; it lies above 1, so it is significant).
2. ``inconclusive`` when the row's detectable slowdown (``noise.detectable``:
   the minimum detectable effect at the comparison's level and GATE_POWER,
   never below the floor) is above PCT: it could not have seen a slowdown
   of PCT, so passing it would be blind. So are rows that cannot be
   compared: excluded (they measure something else), in one run only, not
   measured (unsupported, failed) on one side, without a ratio.
3. Otherwise the row could see a slowdown of PCT: ``slower`` when d is over
   L - t(power, df) * se, the point a true slowdown of PCT passes with
   probability GATE_POWER (since the row's detectable slowdown is at most
   PCT, such a d is also significant at the one-sided (1 - level) / 2), and
   ``not slower`` below it. Within-run (no run-to-run spread known) only
   rule 1 can call a row slower.
4. A row whose noise was widened (a ``suspect`` side, a side whose host
   reference still ran slowed, a run whose reference ran slowed as a whole)
   and not slower by rule 3 is ``not slower`` only when the widenings,
   each counted by what it can do, still rule a slowdown of PCT out
   (``noise.slowdown_bound``, ``noise.pass_detectable``): interference only
   adds time, so the share of A's time the kernel saw others take is added
   to the ratio in full, B's is left out (it can only have made B look
   slower), and the other widenings (a suspect side's own uncertainty, a
   host reference slowed) stay noise; with that
   noise the row could see PCT, and the interval's upper end so counted
   lies below 1 + PCT (a one-sided test at (1 - level) / 2 rejects a
   slowdown of PCT, which rule 3's power alone does not say of a figure
   that is not the machine's usual). This holds whatever the row's
   detectable slowdown with every widening as noise (rule 2 is for the
   rest). Otherwise it is ``inconclusive``: a quieter moment would decide it.

5. With a confirmation (``confirm``: `compare --confirm` measured the rows
   called slower again, right after, or `--confirm-with RUN` names such a
   run), a row stays ``slower`` only when its confirmation against the
   same reference is ``slower`` too (or was not measured again); where it
   is not, the row is ``inconclusive`` (``not repeated``): one run's
   excursion, or a change close to the threshold, which a third run
   decides (rule 6). A real slowdown repeats; a single run in a slow spell
   of the host, or a row that sits at one of two levels, seldom does twice.
   The other rows keep the first run's outcome: only a failure is
   re-examined.
6. Two of three (``decide``): a row not repeated is measured a third time
   (`compare --confirm` does so at once; `--confirm-with` takes a second
   RUN). It is ``slower`` when the third run calls it slower (slower in two
   of three), ``not slower`` when the second and the third both call it
   not slower (not slower in two of three: the first was the excursion),
   and stays ``inconclusive`` (``not repeated``) otherwise. A true slowdown
   of PCT, called slower with probability GATE_POWER in each run, so stays
   slower with about 1 - (1 - GATE_POWER)**2 once called; a single run's
   excursion of probability p becomes a failure with about 2p once called.
7. A third look at a row slower twice: where a third run is taken, the
   rows slower in the first run and in its run again are measured in it
   too, and a row the third run calls ``not slower`` is ``inconclusive``
   (``not repeated``), not slower: two runs taken back to back can share
   one slow state of the host (a system call 1.17x and then 1.34x over
   its history, and 1.04x in the third run, on a 2-vCPU KVM guest), and a
   third run seldom shares it as well. A third run that calls it slower or
   cannot tell keeps it ``slower``. A true slowdown of PCT, called not
   slower with probability about 1 - GATE_POWER by one run, so stays
   slower once called with about GATE_POWER * GATE_POWER + (1 -
   GATE_POWER) * GATE_POWER (0.80 at GATE_POWER 0.8) instead of 0.96; one
   well past PCT, which no run calls not slower, loses nothing.

The gate fails when any row is slower; passes only when no row is slower,
at least one row is ``not slower`` and the share of inconclusive rows is
within ``allow_inconclusive`` (0 unless asked); and is otherwise
inconclusive. Rows unsupported (or failed) in every run were measured by
neither and are counted apart. An inconclusive row says what would decide
it (``Decider``): repeats, earlier runs of the machine, or a quieter moment.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ctxbench import stats
from ctxbench.analysis.compare import noise
from ctxbench.analysis.compare.comparison import (
    ONLY_ONE,
    Cell,
    Comparison,
    Row,
    time_interval,
    time_ratio,
)
from ctxbench.records.naming import params_key

SLOWER, NOT_SLOWER, INCONCLUSIVE = "slower", "not slower", "inconclusive"
OUTCOMES = (SLOWER, NOT_SLOWER, INCONCLUSIVE)
PASSED, FAILED = "passed", "failed"  # the gate's outcomes, with INCONCLUSIVE
# Why a row is inconclusive (``GateRow.why``).
NOISE, UNSURE, EXCLUDED, NOT_COMPARED = "noise", "unsure", "excluded", "not compared"
NOT_REPEATED = "not repeated"  # slower in one run, not in its confirmation
MAX_REPEATS = 20  # the most repeats a Decider proposes


@dataclass(frozen=True)
class Decider:
    """What would decide an inconclusive row: ``repeats`` (run --repeat N on
    both runs), ``earlier_runs`` (that many earlier runs of the machine in
    the store), ``quieter``: a run at a quieter moment (the row's noise was
    widened by a suspect side or a slowed host). None: that would not do."""

    repeats: int | None = None
    earlier_runs: int | None = None
    quieter: bool = False
    # The machine's history of the row sits at two levels: no count of runs
    # narrows that; the row is for reading, not for a gate.
    two_levels: bool = False


@dataclass(frozen=True)
class GateRow:
    """One row of one run against the reference, as the gate judged it."""

    row: Row
    index: int  # the run (1: B...)
    outcome: str  # SLOWER, NOT_SLOWER, INCONCLUSIVE
    time_ratio: float | None  # >1: slower
    detectable: float | None  # the smallest slowdown the row could detect (0.08: 8 %)
    # for INCONCLUSIVE: NOISE, UNSURE, EXCLUDED, NOT_COMPARED (the cell says why:
    # its exclusions, its note; views.compare.gate words them)
    why: str | None = None
    decider: Decider | None = None
    # The ratio's interval, oriented like time_ratio (low, high); None without one.
    interval: tuple[float, float] | None = None
    # Where the row was called slower and measured again (``confirm``): the
    # confirmation run's row against the same reference, as the gate judged it.
    again: GateRow | None = None
    # Where it was not slower again and measured a third time (``decide``).
    third: GateRow | None = None

    @property
    def cell(self) -> Cell:
        return self.row.cells[self.index]


@dataclass(frozen=True)
class Gate:
    """``compare --fail-above PCT``: every row's outcome and the gate's."""

    percent: float
    rows: list[GateRow]
    not_measured: list[GateRow]  # unsupported or failed in every run: not gate rows
    allow_inconclusive: float = 0.0  # percent of the rows that may be inconclusive
    power: float = noise.GATE_POWER
    level: float = stats.DEFAULT_LEVEL
    # The run that measured the slower rows again (``confirm``); None: none did.
    confirmed_by: str | None = None
    # The run that measured a third time the rows not repeated and those slower
    # twice (``decide``).
    third_by: str | None = None

    def of(self, outcome: str) -> list[GateRow]:
        return [row for row in self.rows if row.outcome == outcome]

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: len(self.of(outcome)) for outcome in OUTCOMES}

    @property
    def outcome(self) -> str:
        counts = self.counts
        if counts[SLOWER]:
            return FAILED
        if not counts[NOT_SLOWER]:
            return INCONCLUSIVE  # a gate over no judged row is never a pass
        if counts[INCONCLUSIVE] > self.allow_inconclusive / 100.0 * len(self.rows):
            return INCONCLUSIVE
        return PASSED

    @property
    def failed(self) -> bool:
        return self.outcome == FAILED


def gate(
    comparison: Comparison,
    percent: float,
    allow_inconclusive: float = 0.0,
    power: float = noise.GATE_POWER,
) -> Gate:
    """Judge every row of every run against the reference (the module's
    docstring gives the rules)."""
    if not math.isfinite(percent) or percent < 0:
        raise ValueError("the threshold must be a finite, non-negative percentage")
    if not 0 <= allow_inconclusive <= 100:
        raise ValueError("the share of inconclusive rows allowed must be 0-100 percent")
    rows, not_measured = [], []
    for row in comparison.rows:
        for index in range(1, len(row.cells)):
            judged = judge_row(row, index, percent, comparison.level, power)
            if _measured_by_neither(row, index):
                not_measured.append(judged)
            else:
                rows.append(judged)
    return Gate(percent, rows, not_measured, allow_inconclusive, power, comparison.level)


def confirm(first: Gate, again: Gate, run_id: str) -> Gate:
    """FIRST with its slower rows judged again by AGAIN, the gate of a run
    measured after it against the same reference (rule 5 of the module's
    docstring). RUN_ID names that run."""

    def judged(verdict: GateRow, second: GateRow) -> GateRow:
        if second.outcome == SLOWER:
            return replace(verdict, again=second)
        return replace(verdict, outcome=INCONCLUSIVE, why=NOT_REPEATED, again=second)

    rows = _judged_by(first, again, lambda verdict: verdict.outcome == SLOWER, judged)
    return replace(first, rows=rows, confirmed_by=run_id)


def decide(confirmed: Gate, third: Gate, run_id: str) -> Gate:
    """CONFIRMED (``confirm``'s gate) with its rows not repeated and its rows
    slower twice judged by THIRD, the gate of a third run against the same
    reference (rules 6 and 7 of the module's docstring). RUN_ID names it."""
    if confirmed.confirmed_by is None:
        raise ValueError("a third run decides a confirmed gate's rows not repeated")

    def judged(verdict: GateRow, last: GateRow) -> GateRow:
        if verdict.outcome == SLOWER:  # slower twice: the third may take it back
            if last.outcome == NOT_SLOWER:
                return replace(verdict, outcome=INCONCLUSIVE, why=NOT_REPEATED, third=last)
            return replace(verdict, third=last)
        if last.outcome == SLOWER:
            return replace(verdict, outcome=SLOWER, why=None, third=last)
        if verdict.again is not None and NOT_SLOWER == verdict.again.outcome == last.outcome:
            return replace(verdict, outcome=NOT_SLOWER, why=None, third=last)
        return replace(verdict, third=last)

    rows = _judged_by(confirmed, third, _looked_at_a_third_time, judged)
    return replace(confirmed, rows=rows, third_by=run_id)


def _looked_at_a_third_time(verdict: GateRow) -> bool:
    """A row not repeated, or one slower in the first run and in its run again."""
    slower_twice = (
        verdict.outcome == SLOWER and verdict.again is not None and verdict.again.outcome == SLOWER
    )
    return verdict.why == NOT_REPEATED or slower_twice


def _judged_by(
    earlier: Gate,
    later: Gate,
    looked_at: Callable[[GateRow], bool],
    judged: Callable[[GateRow, GateRow], GateRow],
) -> list[GateRow]:
    """EARLIER's rows, those LOOKED_AT judged with LATER's row of the same
    variant (a later run against the same reference, at the same threshold);
    a row LATER did not measure keeps its outcome."""
    if later.percent != earlier.percent:
        raise ValueError("a run measured again is judged at the first gate's threshold")
    by_variant = {_row_key(verdict): verdict for verdict in later.rows}
    rows = []
    for verdict in earlier.rows:
        second = by_variant.get(_row_key(verdict)) if looked_at(verdict) else None
        rows.append(verdict if second is None else judged(verdict, second))
    return rows


def slower_variants(judged: Gate) -> list[tuple[str, dict]]:
    """The (probe, params) of the rows JUDGED called slower: what a
    confirmation measures again."""
    return [(verdict.row.probe, verdict.row.params) for verdict in judged.of(SLOWER)]


def third_variants(confirmed: Gate) -> list[tuple[str, dict]]:
    """The (probe, params) of CONFIRMED's rows not repeated and of its rows
    slower twice: what a third run measures (rules 6 and 7)."""
    return [
        (verdict.row.probe, verdict.row.params)
        for verdict in confirmed.rows
        if _looked_at_a_third_time(verdict)
    ]


def _row_key(verdict: GateRow) -> tuple[str, str]:
    return verdict.row.probe, params_key(verdict.row.params)


def _measured_by_neither(row: Row, index: int) -> bool:
    return all(cell.status not in ("ok", "suspect") for cell in (row.cells[0], row.cells[index]))


def judged(cell: Cell) -> bool:
    """A cell has a decision to judge: in both runs, not excluded, compared."""
    return cell.decision not in (ONLY_ONE, None) and not cell.excluded


def judge_row(row: Row, index: int, percent: float, level: float, power: float) -> GateRow:
    cell = row.cells[index]
    ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
    interval = (
        time_interval(cell.difference.ratio, row.unit)
        if cell.difference and cell.difference.ratio
        else None
    )
    if not judged(cell):
        code = EXCLUDED if cell.excluded else NOT_COMPARED
        return GateRow(row, index, INCONCLUSIVE, ratio, None, code, interval=interval)
    difference, judged_by = cell.difference, cell.noise
    assert difference is not None and difference.ratio is not None and judged_by is not None
    assert interval is not None
    detectable = noise.detectable(judged_by, level, power)
    limit = math.log1p(percent / 100.0)
    low = interval[0]
    if low > 0 and math.log(low) > max(limit, judged_by.floor):
        return GateRow(row, index, SLOWER, ratio, detectable, interval=interval)
    sees = detectable is not None and math.log1p(detectable) <= limit
    if sees and judged_by.source != noise.WITHIN_RUN and ratio is not None and ratio > 0:
        from scipy import stats as scipy_stats

        line = limit - float(scipy_stats.t.ppf(power, judged_by.df)) * (judged_by.se or 0.0)
        if math.log(ratio) > line:
            return GateRow(row, index, SLOWER, ratio, detectable, interval=interval)
    if judged_by.widened and _passes_despite_widening(judged_by, ratio, limit, level, power):
        return GateRow(row, index, NOT_SLOWER, ratio, detectable, interval=interval)
    if not sees:
        decider = decide_by(judged_by, limit, level, power)
        return GateRow(
            row, index, INCONCLUSIVE, ratio, detectable, NOISE, decider=decider, interval=interval
        )
    if judged_by.widened:
        return GateRow(
            row,
            index,
            INCONCLUSIVE,
            ratio,
            detectable,
            UNSURE,
            decider=Decider(quieter=True),
            interval=interval,
        )
    return GateRow(row, index, NOT_SLOWER, ratio, detectable, interval=interval)


def _passes_despite_widening(
    judged_by: noise.Noise, ratio: float | None, limit: float, level: float, power: float
) -> bool:
    """Rule 4 (the module's docstring): a widened row's slowdown bound below
    LIMIT, and the noise that can hide a slowdown able to see LIMIT."""
    if ratio is None or ratio <= 0:
        return False
    bound = noise.slowdown_bound(judged_by, math.log(ratio), level)
    seen = noise.pass_detectable(judged_by, level, power)
    return bound is not None and seen is not None and bound < limit and math.log1p(seen) <= limit


def decide_by(judged_by: noise.Noise, limit: float, level: float, power: float) -> Decider:
    """What would bring the row's detectable slowdown to LIMIT (log) or below."""
    if judged_by.levels > 1:
        return Decider(quieter=bool(judged_by.widened), two_levels=True)
    if judged_by.widened:
        return Decider(quieter=True)
    if judged_by.source == noise.WITHIN_RUN or not judged_by.spread:
        # Nothing known of the run-to-run spread: the least that gives one.
        return Decider(repeats=noise.MIN_REPEATS, earlier_runs=noise.MIN_HISTORY_RUNS)
    spread = judged_by.spread
    # Repeats judge medians: a spread of p10s (history) says nothing of how
    # many repeats would do.
    repeats = (
        next(
            (
                n
                for n in range(noise.MIN_REPEATS, MAX_REPEATS + 1)
                if stats.detectable_log_effect(spread * math.sqrt(2.0 / n), 2 * n - 2, level, power)
                <= limit
            ),
            None,
        )
        if judged_by.statistic == noise.MEDIAN
        else None
    )
    earlier = None
    if judged_by.source == noise.HISTORY:
        earlier = next(
            (
                k
                for k in range(judged_by.n + 1, 4 * judged_by.n + 20)
                if stats.detectable_log_effect(spread * math.sqrt(2.0), k - 1, level, power)
                <= limit
            ),
            None,
        )
    return Decider(repeats=repeats, earlier_runs=earlier)
