"""The CI gate in words: a line per slower row, the inconclusive rows, the outcome.

Built from ``analysis.compare.gate``'s outcomes; printed after compare's tables, or
on stderr beside --json's data.
"""

from __future__ import annotations

import math

from ctxbench import units
from ctxbench.analysis.compare import noise
from ctxbench.analysis.compare.comparison import ONLY_ONE, Cell, Comparison
from ctxbench.analysis.compare.gate import (
    EXCLUDED,
    INCONCLUSIVE,
    NOT_COMPARED,
    NOT_REPEATED,
    NOT_SLOWER,
    SLOWER,
    UNSURE,
    Gate,
    GateRow,
)
from ctxbench.records.naming import variant_name
from ctxbench.views.compare.comparison import (
    SHORT_WORDS,
    excluded_words,
    noise_words,
    why_not_words,
)


def gate_lines(comparison: Comparison, judged: Gate, shown: int = 5) -> list[str]:
    """One line per slower row, then the inconclusive rows (SHOWN at most,
    then how many more), then the counts and the gate's outcome."""
    lines = []
    percent = f"{judged.percent:g}%"
    for verdict in judged.of(SLOWER):
        cell = verdict.cell
        assert cell.difference is not None and verdict.interval is not None
        low, high = verdict.interval
        ratio = units.factor(verdict.time_ratio or math.nan)
        words = (
            f"{units.run_letter(verdict.index)} ran {ratio}× "
            f"({units.factor(low)}–{units.factor(high)}) slower than {units.run_letter(0)}"
        )
        p = units.p_value(cell.difference.u_test.p_value) if cell.difference.u_test else None
        lines.append(
            f"slower by more than {percent}: {_name(verdict)}: {words}, "
            + (f"{p}, " if p else "")
            + noise_words(cell.noise)
            + (f"; {again_words(verdict, judged)}" if judged.confirmed_by else "")
        )
    for verdict in judged.of(NOT_SLOWER):
        if verdict.third is not None:  # slower once, then not slower twice
            lines.append(
                f"not slower by {percent} in two of three: {_name(verdict)}: "
                f"{ratio_words(verdict)} slower in {units.run_letter(verdict.index)}, "
                + again_words(verdict, judged)
            )
    inconclusive = judged.of(INCONCLUSIVE)
    for verdict in inconclusive[:shown]:
        lines.append(f"inconclusive at {percent}: {_name(verdict)}: {inconclusive_words(verdict)}")
    if len(inconclusive) > shown:
        lines.append(
            f"inconclusive at {percent}: and {len(inconclusive) - shown} more row(s) "
            "(--json lists every row with why)"
        )
    lines.append(outcome_line(judged))
    return lines


def _name(verdict: GateRow) -> str:
    name = variant_name(verdict.row.probe, verdict.row.params)
    return name if verdict.index == 1 else f"{name} (run {units.run_letter(verdict.index)})"


def not_judged_words(cell: Cell) -> str:
    """Why a cell has no decision to judge (only in one run, excluded, a note)."""
    if cell.decision == ONLY_ONE:
        return ONLY_ONE
    if cell.excluded:
        return "excluded: " + "; ".join(excluded_words(cell.excluded))
    why_not = why_not_words(cell.difference.why_not) if cell.difference else None
    return cell.note or why_not or "no ratio"


def gate_detail(verdict: GateRow) -> str | None:
    """What a row not compared says of why (``--json``'s ``detail``); None for the others."""
    return not_judged_words(verdict.cell) if verdict.why in (EXCLUDED, NOT_COMPARED) else None


def inconclusive_words(verdict: GateRow) -> str:
    """Why a row is inconclusive and what would decide it."""
    if verdict.why in (EXCLUDED, NOT_COMPARED):
        return f"not compared ({not_judged_words(verdict.cell)})"
    if verdict.why == NOT_REPEATED:
        return (
            f"{ratio_words(verdict)} slower in {units.run_letter(verdict.index)}, "
            f"{again_words(verdict, None)}: "
            + (
                "two runs in one slow spell of the host, or a change near the threshold"
                if verdict.again is not None and verdict.again.outcome == SLOWER
                else "one run's excursion or a change near the threshold"
            )
            + "; would decide it: "
            + ("another run" if verdict.third is None else "more runs, at a quieter moment")
        )
    cell = verdict.cell
    shown = ratio_words(verdict) + ", " if verdict.time_ratio is not None else ""
    if verdict.why == UNSURE:
        could = "not slower only on figures the machine vouches for"
    elif verdict.detectable is not None:
        could = f"could detect only {verdict.detectable:.0%} or more"
    else:
        could = "no detectable slowdown known"
    text = f"{shown}{could} ({SOURCE_WORDS[cell.noise.source] if cell.noise else '?'}"
    widened = widening_words(cell.noise, verdict.index)
    text += (f"; {widened}" if widened else "") + ")"
    decider = verdict.decider
    if decider is None:
        return text
    if decider.two_levels:
        return text + (
            "; this machine's runs of it sit at two levels, so no count of runs decides it: "
            "read it, do not gate on it"
        )
    ways = []
    if decider.quieter:
        ways.append("runs at a quieter moment")
    if decider.repeats is not None:
        ways.append(f"--repeat {decider.repeats} on both runs")
    if decider.earlier_runs is not None:
        ways.append(f"{decider.earlier_runs} earlier runs of this machine in the store")
    return text + ("; would decide it: " + " or ".join(ways) if ways else "")


def again_words(verdict: GateRow, judged: Gate | None) -> str:
    """What the confirmation said of a row called slower: 'confirmed by its
    run again (1.31× (1.27–1.36), slower)' or 'not in its run again (1.02×
    (0.97–1.08), not slower)'."""
    again = verdict.again
    if again is None:
        return "not measured again" if judged is None or judged.confirmed_by else ""
    said = "confirmed by" if again.outcome == SLOWER else "not in"
    text = f"{said} its run again ({ratio_words(again)}, {again.outcome})"
    third = verdict.third
    if third is not None:
        text += f", its third run {ratio_words(third)}, {third.outcome}"
        if verdict.outcome != INCONCLUSIVE:
            agreeing = 1 if verdict.outcome == SLOWER else 0  # the first run called it slower
            agreeing += (again.outcome == verdict.outcome) + (third.outcome == verdict.outcome)
            text += f": {verdict.outcome} in {RUN_COUNT_WORDS[agreeing]} of three"
    return text


RUN_COUNT_WORDS = {2: "two", 3: "three"}


SOURCE_WORDS = SHORT_WORDS
CAUSE_WORDS = {
    noise.SUSPECT: "{run} suspect, its median unsure by {spread:.0%}",
    noise.SLOWED: "{run}'s host reference still ran {spread:.0%} slow",
    noise.HOST_SLOWED: "{run}'s host reference ran {spread:.0%} slow over the whole run",
    noise.TAKEN: "{run} ran with other work, which may have added up to {spread:.0%}",
    noise.CPU_SLOWED: (
        "{run}'s CPU ran slow over the whole run (its plain loop, which no change to the system "
        "touches, against this machine's earlier runs), so its figures may sit up to {spread:.0%} "
        "higher"
    ),
}


def widening_words(judged_by: noise.Noise | None, index: int = 1) -> str:
    """What widened a row's noise, e.g. 'A suspect, its samples spread 23%'."""
    if judged_by is None or not judged_by.widened:
        return ""
    return ", ".join(
        CAUSE_WORDS[w.cause].format(
            run=units.run_letter(0 if w.side == 0 else index), spread=math.expm1(w.spread)
        )
        for w in judged_by.widened
    )


def ratio_words(verdict: GateRow) -> str:
    """'1.96× (0.85–4.52)': the row's time ratio and its interval (above 1: slower)."""
    if verdict.time_ratio is None:
        return "no ratio"
    text = f"{units.factor(verdict.time_ratio)}×"
    if verdict.interval is not None:
        low, high = verdict.interval
        text += f" ({units.factor(low)}–{units.factor(high)})"
    return text


def outcome_line(judged: Gate) -> str:
    """'--fail-above 5: INCONCLUSIVE: 0 slower, 12 not slower (could detect
    2.1-4.8%, at 80% power), 2 inconclusive of 14 row(s); inconclusive:
    syscall.getppid 1.96× (0.85–4.52), syscall.read 1.01× (0.70–1.46)': each
    inconclusive row's ratio and interval, so that 'B is 2× but noisy' reads
    apart from 'A = B but noisy'; the rows not compared counted."""
    counts = judged.counts
    head = f"--fail-above {judged.percent:g}: {judged.outcome.upper()}"
    detectable = sorted(r.detectable for r in judged.of(NOT_SLOWER) if r.detectable is not None)
    could = (
        f" (could detect {detectable[0]:.1%}–{detectable[-1]:.1%}, at {judged.power:.0%} power)"
        if detectable
        else ""
    )
    text = (
        f"{head}: {counts[SLOWER]} slower, {counts[NOT_SLOWER]} not slower{could}, "
        f"{counts[INCONCLUSIVE]} inconclusive of {len(judged.rows)} row(s)"
    )
    if judged.allow_inconclusive:
        text += f" ({judged.allow_inconclusive:g}% may be inconclusive)"
    if judged.not_measured:
        text += f"; {len(judged.not_measured)} row(s) measured in neither run (unsupported)"
    if judged.confirmed_by:
        repeated = sum(1 for verdict in judged.of(SLOWER) if verdict.again is not None)
        not_repeated = sum(1 for verdict in judged.rows if verdict.why == NOT_REPEATED)
        text += f"; measured again ({judged.confirmed_by}): {repeated} slower again, "
        if judged.third_by:
            thirds = [verdict for verdict in judged.rows if verdict.third is not None]
            twice = sum(1 for verdict in thirds if verdict.outcome == SLOWER)
            passed = sum(1 for verdict in thirds if verdict.outcome == NOT_SLOWER)
            text += (
                f"{len(thirds)} measured a third time ({judged.third_by}): {twice} slower and "
                f"{passed} not slower by at least two of three, {not_repeated} not repeated"
            )
        else:
            text += f"{not_repeated} not repeated"
    if judged.outcome == INCONCLUSIVE and not counts[NOT_SLOWER]:
        text += "; no row was judged, so the gate cannot pass"
    inconclusive = judged.of(INCONCLUSIVE)
    ratios = [
        f"{_name(verdict)} {ratio_words(verdict)}"
        for verdict in inconclusive
        if verdict.why not in (EXCLUDED, NOT_COMPARED)
    ]
    if ratios:
        text += "; inconclusive: " + ", ".join(ratios)
    if len(ratios) < len(inconclusive):
        text += f"; {len(inconclusive) - len(ratios)} not compared"
    return text
