"""Plain-text formatting of figures, shared by the terminal tables and the report.

Times are shown with a unit chosen for readability (ns, µs, ms, s) and four
significant digits; counts (cycles, instructions) as numbers with the unit;
rates with k/M prefixes. A record's unit "msgs/s" (msgrate.pipe) counts
round trips, a message there and one back, and is shown and written in
the views' JSON as "round trips/s" (unit_name).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

ParamValue = str | int | float | bool  # records.result.ParamValue


class Result(Protocol):
    """What the functions here read of a result: ``records.result.Result``
    (units is the bottom layer and imports no records; it names the type by
    what it reads of it)."""

    @property
    def probe(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def params(self) -> Mapping[str, ParamValue]: ...
    @property
    def samples(self) -> Sequence[float]: ...
    @property
    def verdict(self) -> Any: ...  # records.result.Verdict
    @property
    def summary(self) -> Any: ...  # records.result.Summary | None
    @property
    def median(self) -> float | None: ...
    def block(self, name: str) -> Mapping[str, Any]: ...
    def get(self, name: str, default: Any = None) -> Any: ...


TIME_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
COUNT_UNITS = {"instructions": "instr", "cycles": "cycles"}
# The record's unit -> what the views call it: msgrate's "msgs/s" are round
# trips per second (one message each way), as the probe's op says.
UNIT_NAMES = {"msgs/s": "round trips/s"}


def unit_name(unit: str) -> str:
    """The unit as the views show it and write it in their JSON."""
    return UNIT_NAMES.get(unit, unit)


# C0 and C1 control characters (ESC starts terminal escape sequences), DEL,
# and the bidirectional overrides that reorder what a terminal shows. Tab
# and newline are layout, not commands, and stay.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """Text from a record, a label or a file made safe for a terminal:
    every control character becomes U+FFFD, so nothing it holds can move the
    cursor, retitle the window or clear the screen."""
    return _CONTROL.sub("\ufffd", text)


def styled(stream: Any, environ: Mapping[str, str] | None = None) -> bool:
    """Whether output to ``stream`` may carry colour and other terminal styling:
    only to a terminal, never with NO_COLOR set (https://no-color.org: any
    non-empty value) or TERM=dumb. The one place this is decided; the CLI's
    consoles follow it, so a pipe, a file or a log gets plain text."""
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR", "") != "" or environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


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
        for factor, name in (
            (1e6, "M round trips/s"),
            (1e3, "k round trips/s"),
            (1.0, "round trips/s"),
        ):
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


def median_ci_text(result: Result) -> str:
    """A result's confidence interval of the median as text ("—" without one)."""
    ci = result.summary.median_ci if result.summary is not None else None
    if not ci:
        return "—"
    return interval(ci["low"], ci["high"], result.unit)


def baseline(result: Result) -> str:
    base = result.block("baseline")
    if not base:
        return "—"
    return value(base["value"], base.get("unit", result.unit))


def corrected(result: Result) -> str:
    """The corrected figure: the median minus the baseline's median (the record's `corrected`)."""
    corrected = result.block("corrected")
    if not corrected:
        return "—"
    text = value(corrected["median"], result.unit)
    return text + " (≤0!)" if corrected.get("nonpositive") else text


def _per_op(result: Result) -> float | None:
    """The timer read's cost spread over one sample's operations (ns per operation)."""
    timer = result.block("timer")
    ops = result.get("ops_per_sample")
    if not timer.get("corrected") or timer.get("overhead_ns") is None or not ops:
        return None
    return float(timer["overhead_ns"]) / float(ops)


def _op_word(result: Result) -> str:
    return "switch" if result.family in ("switch", "uswitch") else "operation"


def timer(results: Iterable[Result]) -> list[str]:
    """The timer the figures of RESULTS were corrected for, in words, one line per
    timer: 'timer: rdtscp, 17.69 ns per read, subtracted once per sample: 0.0002 ns
    per switch' (one result), or over several: '... from 0.00005 ns per switch
    (uswitch.coroutine) to 0.06 ns per operation (create.fork_exec)'. Figures the
    engine did not correct are named as such."""
    groups: dict[tuple[str, float], list[tuple[float, Result]]] = {}
    uncorrected = []
    for result in results:
        if result.median is None:
            continue
        per_op = _per_op(result)
        timer_block = result.block("timer")
        if per_op is None:
            uncorrected.append(result.probe)
            continue
        key = (str(timer_block.get("source")), float(timer_block["overhead_ns"]))
        groups.setdefault(key, []).append((per_op, result))
    lines = []
    for (source, overhead), members in groups.items():
        head = f"timer: {source}, {value(overhead, 'ns')} per read, subtracted once per sample"
        members.sort(key=lambda item: item[0])
        (low, first), (high, last) = members[0], members[-1]
        if len(members) == 1 or low == high:
            lines.append(f"{head}: {_small(low)} per {_op_word(first)}")
        else:
            lines.append(
                f"{head} from each figure: {_small(low)} per {_op_word(first)} "
                f"({_end_name(first, last)}) to {_small(high)} per {_op_word(last)} "
                f"({_end_name(last, first)})"
            )
    if uncorrected:
        names = ", ".join(sorted(set(uncorrected))[:3])
        more = len(set(uncorrected)) - 3
        lines.append(f"timer not subtracted: {names}" + (f" and {more} more" if more > 0 else ""))
    return lines


def _end_name(result: Result, other: Result) -> str:
    """One end of the timer line, named so the two ends differ: the probe,
    and where both ends are variants of one probe, the parameters in which
    they differ ('switch.pipe cpus=cross')."""
    if result.probe != other.probe:
        return result.probe
    params, others = result.params, other.params
    differ = [f"{k}={params[k]}" for k in sorted(params) if params[k] != others.get(k)]
    return " ".join([result.probe, *differ])


def _small(ns: float) -> str:
    """A tiny time with two significant digits, never in e-notation: '0.0000042 ns',
    '0.053 ns'; from 1 ns up as ``value`` writes it."""
    if ns >= 1 or ns <= 0:
        return value(ns, "ns")
    decimals = 1 - math.floor(math.log10(ns))
    return f"{ns:.{decimals}f} ns"


def set_aside_count(result: Result) -> tuple[int, int] | None:
    """(set aside, taken in all) of the samples set aside as host interference;
    None when none were. Records that keep only the count (the interference
    block's kept attempt) give that count."""
    kept = len(result.samples)
    count = len(result.block("set_aside").get("samples") or [])
    if not count:
        count = int(_kept_attempt(result).get("set_aside") or 0)
    return (count, kept + count) if count else None


def _kept_attempt(result: Result) -> Mapping[str, Any]:
    """The interference block's attempt the result kept, as written; empty if none."""
    interference = result.block("interference")
    attempts = interference.get("attempts") or []
    index = interference.get("kept", 0)
    return attempts[index] if 0 <= index < len(attempts) else {}


def set_aside(result: Result, with_figure: bool = False) -> str | None:
    """Samples set aside as host interference, in words: '4 of 30 samples set
    aside as host interference; 1.31 µs with them' (``with_figure``: '1.10 µs,
    4 of 30 ...'); None when none were. Records that keep only the count (the
    interference block's kept attempt) give the count and the set-aside median."""
    counted = set_aside_count(result)
    if counted is None:
        return None
    count, total = counted
    unit = result.unit
    block = result.block("set_aside")
    tail = ""
    if block.get("samples"):
        with_them = (block.get("summary_with_them") or {}).get("median")
        tail = f"; {value(with_them, unit)} with them" if with_them is not None else ""
    elif _kept_attempt(result).get("set_aside_median") is not None:
        tail = f" (their median {value(_kept_attempt(result)['set_aside_median'], unit)})"
    figure = result.median
    head = f"{value(figure, unit)}, " if with_figure and figure is not None else ""
    return f"{head}{count} of {total} samples set aside as host interference{tail}"


def verdict(result: Result) -> str:
    status = result.verdict.status
    codes = sorted(set(result.verdict.codes))
    return f"{status}: {', '.join(codes)}" if codes else status


def verdict_detail(result: Result) -> str:
    return "; ".join(reason.detail for reason in result.verdict.reasons)


def param_value(value: Any) -> str:
    """A parameter's value as a record names it: true/false, 2 for 2.0."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # JSON numbers: 2.0 processes are 2
    return str(value)


def params_text(params: Mapping[str, ParamValue]) -> str:
    """'between=threads cpus=same': parameters sorted by name, the stable text
    a variant's name is made of."""
    return " ".join(f"{k}={param_value(v)}" for k, v in sorted(params.items()))


def params(params_: Mapping[str, ParamValue]) -> str:
    return params_text(params_) or "—"


def param(params_: Mapping[str, ParamValue], name: str) -> str:
    """One parameter's value, '—' when the variant has no such parameter."""
    return param_value(params_[name]) if name in params_ else "—"


def run_options(options: Mapping[str, Any]) -> str:
    """'quick, 10 samples, batches >= 2 ms, 1 warm-up'; '?' when the run did not say."""
    if not options:
        return "?"
    parts = []
    if "quick" in options:
        parts.append("quick" if options["quick"] else "full")
    if "samples" in options:
        parts.append(f"{options['samples']} samples")
    if "min_time_s" in options:
        parts.append(f"batches >= {value(float(options['min_time_s']) * 1e9, 'ns')}")
    if "warmup_samples" in options:
        parts.append(f"{options['warmup_samples']} warm-up")
    if options.get("repeat", 1) > 1:
        parts.append(f"{options['repeat']} repeats")
    return ", ".join(parts)


def p_value(p: float) -> str:
    """'p = 0.031', 'p < 1e-6' (a p-value never prints as 0)."""
    return "p < 1e-6" if p < 1e-6 else f"p = {p:.2g}"


def factor(value: float) -> str:
    """Three significant digits, never a bare trailing point: '1.88', '117', '1.67e+03'."""
    return f"{value:#.3g}".removesuffix(".")


def ratio(low: float, point: float, high: float) -> str:
    return f"{factor(point)}× [{factor(low)}, {factor(high)}]"


def ratio_interval(interval: Any) -> str:
    """A ratio with its interval in words: '29.1× (CI 10.2–32.9×)'; '' for None
    (INTERVAL: a stats.RatioInterval)."""
    if interval is None:
        return ""
    low, point, high = (number(x, 3) for x in (interval.low, interval.ratio, interval.high))
    return f"{point}× (CI {low}–{high}×)"


def run_letter(index: int) -> str:
    """The letter that names the index-th run of a comparison (A, B, ... then R26, R27...)."""
    return chr(ord("A") + index) if index < 26 else f"R{index}"
