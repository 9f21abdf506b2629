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

from collections.abc import Sequence
from dataclasses import dataclass

from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import probes_with

FILTERS = ("allow", "profile")
# The per-call reference: the first probe with the role seccomp:per_call
# (records.roles) the run measured under the filter.
MEASURED = ("ok", "suspect")


@dataclass
class FilterCost:
    probe: str
    params: dict[str, ParamValue]  # the variant's params, seccomp left out
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


def _measured(record: Result) -> bool:
    return record.verdict.measured and record.median is not None


def _interval(record: Result) -> tuple[float, float] | None:
    ci = (record.summary.median_ci if record.summary else None) or {}
    if ci.get("low") is None or ci.get("high") is None:
        return None
    return float(ci["low"]), float(ci["high"])


def _apart(a: Result, b: Result) -> bool | None:
    """Whether the two medians' confidence intervals are disjoint."""
    first, second = _interval(a), _interval(b)
    if first is None or second is None:
        return None
    return first[1] < second[0] or second[1] < first[0]


def _unfiltered_key(record: Result) -> tuple:
    return (
        record.probe,
        tuple(sorted((k, str(v)) for k, v in record.params.items() if k != "seccomp")),
    )


def filter_costs(results: Sequence[Result]) -> list[FilterCost]:
    """Every filtered system-call or switch figure of the run against its twin."""
    unfiltered = {
        _unfiltered_key(r): r for r in results if _measured(r) and r.params.get("seccomp") == "none"
    }
    costs: list[FilterCost] = []
    for r in results:
        mode = r.params.get("seccomp")
        family = r.family
        if mode not in FILTERS or family not in ("syscall", "switch") or r.unit != "ns":
            continue
        twin = unfiltered.get(_unfiltered_key(r))
        if twin is None or not _measured(r):
            continue
        median, base = r.median, twin.median
        assert median is not None and base is not None
        calls = 1.0 if family == "syscall" else r.block("derived").get("syscalls_per_op")
        statuses = {r.verdict.status, twin.verdict.status}
        costs.append(
            FilterCost(
                probe=r.probe,
                params={k: v for k, v in r.params.items() if k != "seccomp"},
                mode=str(mode),
                median_ns=median,
                unfiltered_ns=base,
                syscalls_per_op=float(calls) if calls is not None else None,
                per_op="system call" if family == "syscall" else "switch",
                cache=r.block("derived").get("seccomp_cache"),
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
