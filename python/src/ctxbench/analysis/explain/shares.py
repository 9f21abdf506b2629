"""Whether the difference of two figures of one run is a share of a switch.

The one rule for a part that is the difference of two records of one run
(the address-space switch, waking an idle CPU); where it is not a share, why
not, in words.

It holds only when the two intervals of the median do not overlap, neither
record is suspect for a reason that says it measured something else (every
reason but ``unstable``, whose spread the interval already carries) and, for
the idle share, a cpuidle driver is active (with none, holding the latency
request cannot change the idle path). ``ctxbench.analysis.explain.explanation`` applies it to
every such part; the summary's "Why", ``show``, ``explain`` and the report
read explain's parts, so they all say the same.
"""

from __future__ import annotations

from typing import Any

from ctxbench import units

OVERLAP = "overlap"  # their intervals of the median overlap
NO_IDLE_DRIVER = "no_idle_driver"  # idle share with no cpuidle driver active
SUSPECT = "suspect"  # a figure is suspect for a reason that says it measured something else
# The verdict reasons after which a figure still measures what it names: its
# interval of the median already carries the spread.
SPREAD_ONLY = frozenset({"unstable"})


def _interval(record: dict[str, Any], shift: float | None) -> tuple[float, float] | None:
    """The record's interval of the median, less SHIFT (its baseline) where given."""
    ci = (record.get("summary") or {}).get("median_ci") or {}
    if ci.get("low") is None or ci.get("high") is None:
        return None
    return float(ci["low"]) - (shift or 0.0), float(ci["high"]) - (shift or 0.0)


def _not_measuring(record: dict[str, Any]) -> list[str]:
    """The reason codes of a record's verdict that say it measured something else."""
    codes = dict.fromkeys(r["code"] for r in record.get("verdict", {}).get("reasons", []))
    return [code for code in codes if code not in SPREAD_ONLY]


def share_withheld(
    first: dict[str, Any],
    second: dict[str, Any],
    *,
    shifts: tuple[float | None, float | None] = (None, None),
    idle: bool = False,
) -> str | None:
    """Why the difference of two records of one run is not a share (OVERLAP,
    NO_IDLE_DRIVER, SUSPECT), or None when it holds. IDLE: the difference is
    idle=free less idle=held; SHIFTS: each figure's baseline, where the
    difference is of the figures less their baselines."""
    if idle and any(
        (rec.get("derived") or {}).get("cpuidle_driver") == "none" for rec in (first, second)
    ):
        return NO_IDLE_DRIVER
    if any(_not_measuring(rec) for rec in (first, second)):
        return SUSPECT
    a, b = _interval(first, shifts[0]), _interval(second, shifts[1])
    if a is None or b is None or (a[0] <= b[1] and b[0] <= a[1]):
        return OVERLAP
    return None


def _figure_text(label: str, record: dict[str, Any], value: float, shift: float | None) -> str:
    """'idle=free 26.27 µs (20.70–36.21 µs)': a figure with its interval."""
    ci = _interval(record, shift)
    inside = f" ({units.interval(ci[0], ci[1], 'ns')})" if ci else ""
    return f"{label} {units.value(value, 'ns')}{inside}"


def withheld_words(
    code: str,
    name: str,
    ns: float,
    sides: tuple[tuple[str, dict[str, Any], float], tuple[str, dict[str, Any], float]],
    shifts: tuple[float | None, float | None] = (None, None),
) -> str:
    """What is known of the withheld part NAME (NS: the difference), both
    figures with their intervals, and why it is not a share."""
    (label_a, rec_a, value_a), (label_b, rec_b, value_b) = sides
    known = (
        f"{_figure_text(label_a, rec_a, value_a, shifts[0])} against "
        f"{_figure_text(label_b, rec_b, value_b, shifts[1])}"
    )
    if code == NO_IDLE_DRIVER:
        return (
            f"{name}: {known}, but no cpuidle driver is active, so holding the latency "
            "request cannot change the idle path: the difference is noise here, not a share"
        )
    if code == SUSPECT:
        named = [
            f"{label} ({', '.join(code.replace('_', ' ') for code in _not_measuring(rec))})"
            for label, rec, _ in sides
            if _not_measuring(rec)
        ]
        return (
            f"{name}: {known}, but {' and '.join(named)} is suspect for a reason that "
            "says it measured something else, so their difference is not a share"
        )
    return (
        f"{name}: {known}: the intervals overlap, so their difference "
        f"({units.value(ns, 'ns')}) is within this run's noise, not a share"
    )
