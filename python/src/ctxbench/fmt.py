"""Plain-text formatting of figures, shared by the terminal tables and the report.

Times are shown with a unit chosen for readability (ns, µs, ms, s) and four
significant digits; counts (cycles, instructions) as numbers with the unit;
rates with k/M prefixes.
"""

from __future__ import annotations

import math
from typing import Any

from ctxbench.records import params_text

TIME_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
COUNT_UNITS = {"instructions": "instr", "cycles": "cycles"}


def number(value: float, digits: int = 4) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def value(amount: float | None, unit: str) -> str:
    if amount is None:
        return "—"
    if unit == "ns":
        for factor, name in TIME_SCALES:
            if abs(amount) >= factor or factor == 1.0:
                return f"{number(amount / factor)} {name}"
    if unit == "msgs/s":
        for factor, name in ((1e6, "M/s"), (1e3, "k/s"), (1.0, "/s")):
            if abs(amount) >= factor or factor == 1.0:
                return f"{number(amount / factor)} {name}"
    short = COUNT_UNITS.get(unit, unit)
    if unit in COUNT_UNITS and float(amount).is_integer():
        return f"{int(amount):,} {short}"  # counted, not measured: no decimals to invent
    return f"{number(amount)} {short}"


def interval(low: float | None, high: float | None, unit: str) -> str:
    """'1.201–3.323 µs' when both ends share a scale, else '980.0 ns–1.020 µs'."""
    if low is None or high is None:
        return "—"
    low_text, high_text = value(low, unit), value(high, unit)
    low_number, _, low_unit = low_text.partition(" ")
    high_number, _, high_unit = high_text.partition(" ")
    if low_unit == high_unit:
        return f"{low_number}–{high_number} {high_unit}"
    return f"{low_text}–{high_text}"


def median_ci(result: dict[str, Any]) -> str:
    summary = result.get("summary") or {}
    ci = summary.get("median_ci")
    if not ci:
        return "—"
    return interval(ci["low"], ci["high"], result["unit"])


def baseline(result: dict[str, Any]) -> str:
    base = result.get("baseline")
    if not base:
        return "—"
    return value(base["value"], base.get("unit", result["unit"]))


def net(result: dict[str, Any]) -> str:
    corrected = result.get("corrected")
    if not corrected:
        return "—"
    text = value(corrected["median"], result["unit"])
    return text + " (≤0!)" if corrected.get("nonpositive") else text


def verdict(result: dict[str, Any]) -> str:
    status = result["verdict"]["status"]
    codes = sorted({reason["code"] for reason in result["verdict"]["reasons"]})
    return f"{status}: {', '.join(codes)}" if codes else status


def verdict_detail(result: dict[str, Any]) -> str:
    return "; ".join(reason["detail"] for reason in result["verdict"]["reasons"])


def params(params_: dict[str, Any]) -> str:
    return params_text(params_) or "—"


def ratio(low: float, point: float, high: float) -> str:
    return f"{point:#.3g}× [{low:#.3g}, {high:#.3g}]"


def run_letter(index: int) -> str:
    """The letter that names the index-th run of a comparison (A, B, ... then R26, R27...)."""
    return chr(ord("A") + index) if index < 26 else f"R{index}"
