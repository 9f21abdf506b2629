"""The kernel's own account of a switch: the traced pass's phases.

A switch record made with ``ctxbench run --trace`` carries a ``trace`` block
(schema/record.schema.json): the variant ran again while the kernel's
tracepoints were recorded, and every switch between its tasks was followed
from the waker's call entry through waking, wake-up, interrupt, idle exit and
switch to the woken task's next call, which starts the next switch. The
engine lays those chains over the traced run's median timed sample
(``tiling``): each instant of it belongs to one phase of one chain, or to
none.

The rule that sets them against the untraced figure, here and only here: a
phase is its share of the median traced sample's time times the untraced
median (the same as its traced time per switch scaled by untraced / traced:
both figures are medians of samples). The shares sum to at most 1, so no
phase is negative or above the figure, and the rest, the untraced median
less the scaled phases, is the tiled time that no chain covers: switches the
events did not let the engine follow, lost events, gaps. The scaling
assumes tracing slowed every phase in the same proportion; it slows those
with more events more (``events_per_switch``), so their share is somewhat
overstated. Nothing here is estimated: every number comes from the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench.records.result import Result

NOT_TILED = "not tiled"  # a traced pass recorded before the engine tiled the samples

# The marks from a waking to the switch-in, in the order they usually come.
WAKE_TO_SWITCH = ("waking", "IPI entry", "poll wake", "wakeup", "IPI exit", "idle exit", "switch")


@dataclass
class TracedPhase:
    name: str  # "from → to" (views.explain.phases names it in words)
    share: float  # of the tiled (median) traced sample's time (0..1)
    traced_ns: float  # per switch as measured under tracing
    ns: float  # share x the untraced median
    count: int = 0  # switches that had it (0: only in chains without a switch)
    median_ns: float | None = None  # its median duration where it occurred
    events_per_switch: float | None = None


@dataclass
class IdleComparison:
    """The idle target's cost two ways, for an idle=free cross-CPU figure:
    the events' waking → switch-in per switch with idle free less with idle
    held, as measured under tracing, against idle=free − idle=held of the
    untraced medians, whose interval comes from the two medians' intervals.
    Not scaled: scaled by each figure's own median, the two would agree by
    construction wherever the waking → switch-in is most of both figures."""

    events_ns: float  # free's waking → switch-in less held's, traced
    free_ns: float
    held_ns: float
    subtraction_ns: float
    low_ns: float | None
    high_ns: float | None
    # events_ns inside [low, high]; None where that cannot tell agreement from
    # ignorance: no interval, or one that spans zero (it holds any small figure)
    agree: bool | None


@dataclass
class TracedView:
    status: str
    reason: str | None = None
    phases: list[TracedPhase] = field(default_factory=list)
    matched: int = 0
    cross_cpu: int = 0
    direct: int = 0
    without_switch: int = 0
    traced_median_ns: float | None = None
    traced_tiled_ns: float | None = None  # the tiled (median) samples' time / their switches
    untraced_median_ns: float | None = None
    overhead_ratio: float | None = None  # traced median / untraced median
    scale: float | None = None  # untraced median / traced_tiled_ns
    covered_share: float = 0.0  # the phases' shares summed (0..1)
    rest_ns: float | None = None  # untraced median less the scaled phases
    overlap_ns: float = 0.0
    idle_exit_ns: float | None = None  # scaled phases that end at the idle exit
    idle_exit_switches: int = 0
    # scaled phases from the waking to the switch-in: the wake-up, the interrupt
    # reaching the target CPU (a halted vCPU's exit to the host included), its
    # idle exit and the way to the switch
    wake_to_switch_ns: float | None = None
    idle: IdleComparison | None = None  # set by explain for idle=free cross-CPU figures
    idle_events: bool = True  # power:cpu_idle was recorded (idle exits can be seen)
    lost: int = 0
    ring_full: bool = False


def traced_view(record: Result) -> TracedView | None:
    """The view of a record's trace block; None when the record has none."""
    block = record.block("trace")
    if not block:
        return None
    if block.get("status") != "ok":
        return TracedView(status=block.get("status", "?"), reason=block.get("reason"))
    tiling = block.get("tiling")
    if not tiling:
        return TracedView(status=NOT_TILED)  # views.explain.phases says why
    switches = block.get("switches") or {}
    assert record.summary is not None  # a traced pass runs beside a measured one
    untraced = float(record.summary.median)
    stats = {(p["from"], p["to"]): p for p in block.get("phases", [])}
    matched = int(switches.get("matched", 0))
    phases = []
    for t in tiling["phases"]:
        key = (t["from"], t["to"])
        stat = stats.get(key)
        phases.append(
            TracedPhase(
                name=f"{t['from']} → {t['to']}",
                share=float(t["share"]),
                traced_ns=float(t["per_switch_ns"]),
                ns=float(t["share"]) * untraced,
                count=int(stat["count"]) if stat else 0,
                median_ns=float(stat["summary"]["median"]) if stat else None,
                events_per_switch=float(stat["events_per_switch"]) if stat else None,
            )
        )
    traced = (block.get("traced_summary") or {}).get("median")
    mean = float(tiling["traced_per_switch_ns"])
    covered = float(tiling["covered_share"])
    view = TracedView(
        status="ok",
        phases=phases,
        matched=matched,
        cross_cpu=int(switches.get("cross_cpu", 0)),
        direct=int(switches.get("direct", 0)),
        without_switch=int(switches.get("without_switch", 0)),
        traced_median_ns=traced,
        traced_tiled_ns=mean,
        untraced_median_ns=untraced,
        overhead_ratio=traced / untraced if traced and untraced else None,
        scale=untraced / mean if mean > 0 else None,
        covered_share=covered,
        # = the untraced median less the phases (their shares sum to covered_share)
        rest_ns=untraced * (1 - covered),
        overlap_ns=float(tiling["overlap_ns"]),
        lost=int(block.get("lost", 0)),
        ring_full=bool(block.get("ring_full", False)),
        idle_events=not any("cpu_idle" in str(e) for e in block.get("missing_events") or []),
    )
    idle = [p for p in phases if p.name.endswith("→ idle exit")]
    if idle:
        view.idle_exit_ns = sum(p.ns for p in idle)
        view.idle_exit_switches = sum(p.count for p in idle)
    view.wake_to_switch_ns = wake_to_switch(phases)
    return view


def wake_to_switch(phases: list[TracedPhase], *, traced: bool = False) -> float:
    """The phases between the waking and the switch-in, scaled (or as traced)."""
    return sum(
        p.traced_ns if traced else p.ns
        for p in phases
        if p.name.split(" → ")[0] in WAKE_TO_SWITCH[:-1]
        and p.name.split(" → ")[1] in WAKE_TO_SWITCH[1:]
    )


def compare_idle(free: Result, held: Result, free_view: TracedView | None) -> IdleComparison | None:
    """The idle target's cost from the events of an idle=free record and its
    idle=held twin, against the difference of their untraced medians; None
    unless both have tiled phases."""
    held_view = traced_view(held)
    if free_view is None or free_view.status != "ok" or not held_view or held_view.status != "ok":
        return None
    free_ns = wake_to_switch(free_view.phases, traced=True)
    held_ns = wake_to_switch(held_view.phases, traced=True)
    free_summary, held_summary = free.summary, held.summary
    assert free_summary is not None and held_summary is not None  # both traced: measured
    subtraction = float(free_summary.median) - float(held_summary.median)
    free_ci, held_ci = free_summary.median_ci, held_summary.median_ci
    low = high = None
    if free_ci and held_ci:
        low = float(free_ci["low"]) - float(held_ci["high"])
        high = float(free_ci["high"]) - float(held_ci["low"])
    events = free_ns - held_ns
    narrow = low is not None and high is not None and (low > 0 or high < 0)
    agree = (low <= events <= high) if narrow else None
    return IdleComparison(events, free_ns, held_ns, subtraction, low, high, agree)


def measured_placement(record: Result) -> str | None:
    """Where a two-task switch figure's tasks really ran: 'same' or 'cross'
    CPU. From the traced pass's switches when it followed any (most of them
    across CPUs or not), else from the CPUs the tasks were seen on at the
    start and end of the measurement; None when the record cannot say (one
    task, or the two sightings disagree)."""
    trace = record.block("trace")
    switches = trace.get("switches") or {}
    if trace.get("status") == "ok" and switches.get("matched"):
        return "cross" if 2 * switches["cross_cpu"] > switches["matched"] else "same"
    placement = record.block("placement")
    seen = [placement.get("observed_start") or [], placement.get("observed_end") or []]
    if any(len(cpus) != 2 or min(cpus) < 0 for cpus in seen):
        return None
    kinds = {"same" if cpus[0] == cpus[1] else "cross" for cpus in seen}
    return kinds.pop() if len(kinds) == 1 else None
