"""The CI gate of `compare --fail-above PCT`: regressions beyond PCT, and rows not judged.

A row is a regression only when the comparison decided it is slower with
PCT as the minimum effect (``compare.decide``: the whole interval of the
time ratio above 1 + PCT, judged against the row's noise source). Rows that
are excluded, only in one run or without a ratio are never regressions:
they are listed as not judged, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ctxbench import fmt, noise
from ctxbench.compare import ONLY_ONE, SLOWER, Cell, Comparison, Row, decide, describe, time_ratio
from ctxbench.records import variant_name


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
            why = not_judged_reason(cell)
            if why is not None:
                not_judged.append((verdict, why))
            elif decide(cell.difference, row.unit, percent / 100.0, cell.noise) == SLOWER:
                regressions.append(verdict)
    return Gate(percent, regressions, not_judged)


def not_judged_reason(cell: Cell) -> str | None:
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
            cell.noise,
        )
        p = fmt.p_value(cell.difference.u_test.p_value) if cell.difference.u_test else None
        lines.append(
            f"slower by more than {judged.percent:g}%: "
            f"{variant_name(verdict.row.probe, verdict.row.params)}: {words}, "
            + (f"{p}, " if p else "")
            + noise.words(cell.noise)
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
