"""Whether the difference of two figures of one run is a share of a switch.

The one rule for a part that is the difference of two records of one run
(the address-space switch, waking an idle CPU, a step of a user-level
chain); where it is not a share, why not.

It holds only when the two intervals of the median do not overlap, neither
record is suspect for a reason that says it measured something else (every
reason but ``unstable``, whose spread the interval already carries) and, for
the idle share, a cpuidle driver is active (with none, holding the latency
request cannot change the idle path). ``ctxbench.analysis.explain.explanation`` applies it to
every such part; the summary's "Why", ``show``, ``explain`` and the report
read explain's parts, so they all say the same. Where it is not a share it
returns why (a code) and the two figures (``Withheld``); views.explain.explanation words
them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxbench.records.result import Result

OVERLAP = "overlap"  # their intervals of the median overlap
NO_IDLE_DRIVER = "no_idle_driver"  # idle share with no cpuidle driver active
SUSPECT = "suspect"  # a figure is suspect for a reason that says it measured something else
# The verdict reasons after which a figure still measures what it names: its
# interval of the median already carries the spread.
SPREAD_ONLY = frozenset({"unstable"})


def _interval(record: Result, shift: float | None) -> tuple[float, float] | None:
    """The record's interval of the median, less SHIFT (its baseline) where given."""
    ci = (record.summary.median_ci if record.summary else None) or {}
    if ci.get("low") is None or ci.get("high") is None:
        return None
    return float(ci["low"]) - (shift or 0.0), float(ci["high"]) - (shift or 0.0)


def _not_measuring(record: Result) -> list[str]:
    """The reason codes of a record's verdict that say it measured something else."""
    codes = dict.fromkeys(record.verdict.codes)
    return [code for code in codes if code not in SPREAD_ONLY]


def share_withheld(
    first: Result,
    second: Result,
    *,
    shifts: tuple[float | None, float | None] = (None, None),
    idle: bool = False,
) -> str | None:
    """Why the difference of two records of one run is not a share (OVERLAP,
    NO_IDLE_DRIVER, SUSPECT), or None when it holds. IDLE: the difference is
    idle=free less idle=held; SHIFTS: each figure's baseline, where the
    difference is of the figures less their baselines."""
    if idle and any(
        rec.block("derived").get("cpuidle_driver") == "none" for rec in (first, second)
    ):
        return NO_IDLE_DRIVER
    if any(_not_measuring(rec) for rec in (first, second)):
        return SUSPECT
    a, b = _interval(first, shifts[0]), _interval(second, shifts[1])
    if a is None or b is None or (a[0] <= b[1] and b[0] <= a[1]):
        return OVERLAP
    return None


@dataclass(frozen=True)
class Figure:
    """One side of a withheld difference: its label, median and interval."""

    label: str  # 'idle=free', 'corrected between=processes'
    ns: float
    low: float | None  # its interval of the median, less its baseline where it is
    high: float | None
    not_measuring: tuple[str, ...]  # its reason codes that say it measured something else


@dataclass(frozen=True)
class Withheld:
    """A difference of two figures that is not a share (OVERLAP, NO_IDLE_DRIVER,
    SUSPECT), with the two figures; views.explain.explanation words it."""

    code: str
    part: str  # the part's name
    ns: float  # the difference
    figures: tuple[Figure, Figure]


def withheld(
    code: str,
    name: str,
    ns: float,
    sides: tuple[tuple[str, Result, float], tuple[str, Result, float]],
    shifts: tuple[float | None, float | None] = (None, None),
) -> Withheld:
    """The withheld part NAME (NS: the difference), both figures (SIDES:
    label, record, figure; SHIFTS: each one's baseline) with their intervals."""
    figures = []
    for (label, record, value), shift in zip(sides, shifts, strict=True):
        ci = _interval(record, shift)
        low, high = ci if ci else (None, None)
        figures.append(Figure(label, value, low, high, tuple(_not_measuring(record))))
    return Withheld(code, name, ns, (figures[0], figures[1]))
