"""What a seccomp filter adds to a figure, from the figures of one run.

The engine's ``seccomp`` axis (none | allow | profile, docs/seccomp.md)
measures a system-call or switch variant again under a filter. Each filtered
figure is set against its ``seccomp=none`` twin (every other parameter equal)
in the same run: the difference is what the filter added per operation. For a
system call that is the filter's cost per call; for a switch that makes a known
number of system calls (``derived.syscalls_per_op``) it is divided per call,
and set beside what the run's own per-call cost under the same filter (a
``syscall.*`` figure, getppid first) would predict for that many calls.
Nothing is estimated: a figure without its twin is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxbench import units
from ctxbench.records.roles import probes_with

FILTERS = ("allow", "profile")
# The per-call reference: the first probe with the role seccomp:per_call
# (records.roles) the run measured under the filter.
MEASURED = ("ok", "suspect")


@dataclass
class FilterCost:
    probe: str
    params: dict[str, Any]  # the variant's params, seccomp left out
    mode: str  # allow | profile
    median_ns: float
    unfiltered_ns: float
    syscalls_per_op: float | None  # None: depends on timing (futex)
    per_op: str  # "system call" | "switch"
    cache: str | None  # the record's derived.seccomp_cache
    status: str  # the worse of the two records' verdicts
    # The two medians' confidence intervals do not overlap (None: a record has none).
    beyond_noise: bool | None = None
    expected_ns: float | None = None  # syscalls_per_op x the run's per-call cost under the filter
    expected_from: str | None = None  # the syscall probe that cost comes from

    @property
    def added_ns(self) -> float:
        return self.median_ns - self.unfiltered_ns

    @property
    def per_call_ns(self) -> float | None:
        if not self.syscalls_per_op:
            return None
        return self.added_ns / self.syscalls_per_op


def _median(record: dict[str, Any]) -> float | None:
    value = (record.get("summary") or {}).get("median")
    return float(value) if value is not None else None


def _measured(record: dict[str, Any]) -> bool:
    return record.get("verdict", {}).get("status") in MEASURED and _median(record) is not None


def _interval(record: dict[str, Any]) -> tuple[float, float] | None:
    ci = (record.get("summary") or {}).get("median_ci") or {}
    if ci.get("low") is None or ci.get("high") is None:
        return None
    return float(ci["low"]), float(ci["high"])


def _apart(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Whether the two medians' confidence intervals are disjoint."""
    first, second = _interval(a), _interval(b)
    if first is None or second is None:
        return None
    return first[1] < second[0] or second[1] < first[0]


def _unfiltered_key(record: dict[str, Any]) -> tuple:
    params = record.get("params", {})
    return (
        record["probe"],
        tuple(sorted((k, str(v)) for k, v in params.items() if k != "seccomp")),
    )


def filter_costs(results: list[dict[str, Any]]) -> list[FilterCost]:
    """Every filtered system-call or switch figure of the run against its twin."""
    unfiltered = {
        _unfiltered_key(r): r
        for r in results
        if _measured(r) and r.get("params", {}).get("seccomp") == "none"
    }
    costs: list[FilterCost] = []
    for r in results:
        mode = r.get("params", {}).get("seccomp")
        family = r.get("family")
        if mode not in FILTERS or family not in ("syscall", "switch") or r.get("unit") != "ns":
            continue
        twin = unfiltered.get(_unfiltered_key(r))
        if twin is None or not _measured(r):
            continue
        median, base = _median(r), _median(twin)
        assert median is not None and base is not None
        calls = 1.0 if family == "syscall" else r.get("derived", {}).get("syscalls_per_op")
        statuses = {r["verdict"]["status"], twin["verdict"]["status"]}
        costs.append(
            FilterCost(
                probe=r["probe"],
                params={k: v for k, v in r.get("params", {}).items() if k != "seccomp"},
                mode=mode,
                median_ns=median,
                unfiltered_ns=base,
                syscalls_per_op=float(calls) if calls is not None else None,
                per_op="system call" if family == "syscall" else "switch",
                cache=r.get("derived", {}).get("seccomp_cache"),
                status="suspect" if "suspect" in statuses else "ok",
                beyond_noise=_apart(r, twin),
            )
        )
    per_call = {}
    for probe in reversed(probes_with("seccomp:per_call")):
        for c in costs:
            if c.probe == probe:
                per_call[c.mode] = c
    for c in costs:
        reference = per_call.get(c.mode)
        if c.per_op == "switch" and c.syscalls_per_op and reference is not None:
            c.expected_ns = c.syscalls_per_op * reference.added_ns
            c.expected_from = reference.probe
    return costs


def _signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + units.value(abs(value), "ns")


def cost_lines(costs: list[FilterCost]) -> list[str]:
    """The section of ``ctxbench explain``: one line per filtered figure."""
    if not costs:
        return []
    lines = [
        "what a seccomp filter adds (each filtered figure against its seccomp=none twin in "
        "this run):"
    ]
    for c in costs:
        params = " ".join(f"{k}={v}" for k, v in sorted(c.params.items()))
        head = f"  {c.probe}{' ' + params if params else ''}, {c.mode}: "
        text = (
            f"{_signed(c.added_ns)} per {c.per_op} ({units.value(c.median_ns, 'ns')} against "
            f"{units.value(c.unfiltered_ns, 'ns')})"
        )
        if c.per_op == "switch":
            if c.syscalls_per_op is None:
                text += "; how many system calls a switch makes depends on timing here"
            else:
                calls = f"{c.syscalls_per_op:g}"
                text += f", {calls} system calls per switch: {_signed(c.per_call_ns or 0)} per call"
                if c.expected_ns is not None:
                    text += (
                        f"; {calls} calls at the filter's cost per call in {c.expected_from} "
                        f"would add {_signed(c.expected_ns)}"
                    )
        if c.beyond_noise is False:
            text += "; within this run's noise: the two medians' confidence intervals overlap"
        if c.status != "ok":
            text += " [suspect: see the records' verdicts]"
        lines.append(head + text)
        if c.cache:
            lines.append(f"    {c.cache}")
    return lines
