"""The seed questions' answers in words.

From ``ctxbench.analysis.summary.answers``: one short paragraph each, figures first,
then the ratios with their intervals, then what the run lacks and the
command that measures it. ``show``, ``run``
and the report print them before anything else."""

from __future__ import annotations

from ctxbench import units
from ctxbench.analysis.summary.answers import Answer, Ratio
from ctxbench.analysis.summary.data import Point


def _figure(label: str, point: Point) -> str:
    text = f"{label} {units.value(point.median, point.unit)}"
    return text if point.status == "ok" else f"{text} ({point.status})"


def _ratio(r: Ratio) -> str:
    times = units.ratio_interval(r.interval) or f"{units.number(r.value, 3)}×"
    return f"{r.figure} / {r.against} = {times}"


def sentences(answer: Answer) -> list[str]:
    """'Fibers, coroutines or threads: C++20 coroutine transfer 3.465 ns; ...'
    then 'futex hand-off ... / Boost.Fiber yield: 23.3× (CI 22.9–23.8×); ...'
    and, where the run lacks figures, 'not measured: ...'."""
    lines = [f"{answer.title}: " + "; ".join(_figure(label, p) for label, p in answer.figures)]
    if answer.ratios:
        lines.append("; ".join(_ratio(r) for r in answer.ratios))
    if answer.missing:
        lines.append(f"not measured: {', '.join(answer.missing)} (`ctxbench run {answer.command}`)")
    return lines
