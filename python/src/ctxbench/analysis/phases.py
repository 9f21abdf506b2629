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
from typing import Any

from ctxbench import fmt

SCALING_RULE = (
    "each phase is its share of the median traced sample's time (chains laid end to end over "
    "it, on the events' clock) times the untraced median; the rest is what no chain covers"
)

# What each phase is, in words, for the phases a ping-pong shows.
PHASE_WORDS: dict[tuple[str, str], str] = {
    ("call entry", "waking"): "kernel entry and the call's own work up to the wake",
    ("waking", "wakeup"): "the wake-up: choosing a CPU and queueing the task",
    ("waking", "IPI entry"): "the wake-up until the target CPU takes the interrupt",
    ("wakeup", "IPI entry"): "the reschedule interrupt reaching the target CPU",
    ("IPI entry", "wakeup"): "in the interrupt, up to the queued wake-up",
    ("IPI entry", "IPI exit"): "the interrupt on the target CPU",
    ("wakeup", "IPI exit"): "the rest of the interrupt",
    ("IPI exit", "idle exit"): "the target CPU leaving idle",
    ("wakeup", "idle exit"): "the target CPU leaving idle",
    ("idle exit", "switch"): "from idle exit to the switch",
    ("IPI exit", "switch"): "after the interrupt, until the woken task is switched in",
    ("wakeup", "switch"): "until the woken task is switched in (the waker finishes and "
    "blocks, or other tasks run first)",
    ("poll wake", "wakeup"): "the polling idle CPU noticing the wake-up (no IPI)",
    ("waking", "poll wake"): "the wake-up of a polling idle CPU",
    ("switch", "call exit"): "the switch itself and the woken task's call returning",
    ("call exit", "next call"): "return to user mode, and user work up to the next call",
    ("call entry", "other task"): "the call until its CPU went to a task outside the variant "
    "(or idle)",
    ("wakeup", "other task"): "the waker finishing its call until the CPU went to a task "
    "outside the variant (or idle)",
    ("other task", "switch"): "tasks outside the variant (or idle) ran on the CPU first",
    ("wakeup", "call exit"): "woken before it slept: its call returning without a switch",
    ("between switches", "a task of the variant ran"): "hand-overs with no wake-up at all (the "
    "data or the futex word was there before the partner waited): no chain marks them, the "
    "variant's tasks ran on their CPUs",
    ("waking", "call exit"): "its call returning with no wake-up or switch-in recorded "
    "between (woken before it slept, or its CPU recorded nothing while idle: "
    "docs/tracing.md)",
    ("waking", "switch"): "the wake-up until the woken task is switched in (no wake-up event "
    "between)",
    ("waking", "other task"): "the waker's call until the CPU went to a task outside the "
    "variant (or idle)",
    ("call entry", "switch"): "a call that gives the CPU to a task already runnable",
    ("switch", "next call"): "the switch to a task preempted in user mode, and its user work "
    "up to its next call",
}


# Each phase's plain name, what an operator calls it; the event pair goes beside it.
PHASE_NAMES: dict[tuple[str, str], str] = {
    ("call entry", "waking"): "the call, up to the wake",
    ("waking", "wakeup"): "wake-up (choosing a CPU, queueing)",
    ("waking", "IPI entry"): "interrupt to the other CPU",
    ("wakeup", "IPI entry"): "interrupt to the other CPU",
    ("IPI entry", "wakeup"): "in the interrupt, to the wake-up",
    ("IPI entry", "IPI exit"): "the interrupt",
    ("wakeup", "IPI exit"): "end of the interrupt",
    ("IPI exit", "idle exit"): "idle exit",
    ("wakeup", "idle exit"): "idle exit",
    ("idle exit", "switch"): "after idle exit, to the switch",
    ("IPI exit", "switch"): "run-queue wait",
    ("wakeup", "switch"): "run-queue wait",
    ("poll wake", "wakeup"): "polling CPU notices the wake-up",
    ("waking", "poll wake"): "wake-up of a polling CPU",
    ("switch", "call exit"): "the switch, and the call returning",
    ("call exit", "next call"): "user mode, to the next call",
    ("call entry", "other task"): "the call, until another task ran",
    ("wakeup", "other task"): "the waker, until another task ran",
    ("other task", "switch"): "other tasks first",
    ("wakeup", "call exit"): "woken before it slept",
    ("between switches", "a task of the variant ran"): "hand-over with no wake-up",
    ("waking", "call exit"): "call returning, nothing recorded between",
    ("waking", "switch"): "wake-up to switch-in",
    ("waking", "other task"): "the waker, until another task ran",
    ("call entry", "switch"): "a call handing the CPU to a runnable task",
    ("switch", "next call"): "switch to a preempted task, its user work",
    ("waking", "idle exit"): "wake-up to idle exit",
    ("other task", "wakeup"): "other tasks first, to the wake-up",
    ("waking", "IPI exit"): "wake-up and interrupt to the other CPU",
    ("idle exit", "poll wake"): "idle exit, to the polling wake",
    ("poll wake", "switch"): "run-queue wait",
    ("IPI exit", "wakeup"): "after the interrupt, to the wake-up",
    ("idle exit", "IPI entry"): "idle exit, to the interrupt",
    ("poll wake", "idle exit"): "idle exit",
    ("idle exit", "wakeup"): "idle exit, to the wake-up",
}


def phase_label(source: str, target: str) -> str:
    """'run-queue wait (wakeup → switch)': the plain name, the event pair beside it."""
    pair = f"{source} → {target}"
    plain = PHASE_NAMES.get((source, target))
    return f"{plain} ({pair})" if plain else pair


# The marks from a waking to the switch-in, in the order they usually come.
WAKE_TO_SWITCH = ("waking", "IPI entry", "poll wake", "wakeup", "IPI exit", "idle exit", "switch")


@dataclass
class TracedPhase:
    name: str  # "from → to"
    label: str  # phase_label: the plain name, the event pair beside it
    words: str
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
    agree: bool | None  # events_ns inside [low, high]; None without the intervals


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
    lost: int = 0
    ring_full: bool = False
    rule: str = SCALING_RULE


def traced_view(record: dict[str, Any]) -> TracedView | None:
    """The view of a record's trace block; None when the record has none."""
    block = record.get("trace")
    if not block:
        return None
    if block.get("status") != "ok":
        return TracedView(status=block.get("status", "?"), reason=block.get("reason"))
    tiling = block.get("tiling")
    if not tiling:
        return TracedView(
            status="not tiled",
            reason="recorded by an engine whose traced pass did not lay its phases over the "
            "timed samples (no trace.tiling): run it again with this ctxbench to set them "
            "against the figure",
        )
    switches = block.get("switches") or {}
    untraced = float((record.get("summary") or {})["median"])
    stats = {(p["from"], p["to"]): p for p in block.get("phases", [])}
    matched = int(switches.get("matched", 0))
    phases = []
    for t in tiling["phases"]:
        key = (t["from"], t["to"])
        stat = stats.get(key)
        phases.append(
            TracedPhase(
                name=f"{t['from']} → {t['to']}",
                label=phase_label(t["from"], t["to"]),
                words=PHASE_WORDS.get(key, ""),
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


def compare_idle(
    free: dict[str, Any], held: dict[str, Any], free_view: TracedView | None
) -> IdleComparison | None:
    """The idle target's cost from the events of an idle=free record and its
    idle=held twin, against the difference of their untraced medians; None
    unless both have tiled phases."""
    held_view = traced_view(held)
    if free_view is None or free_view.status != "ok" or not held_view or held_view.status != "ok":
        return None
    free_ns = wake_to_switch(free_view.phases, traced=True)
    held_ns = wake_to_switch(held_view.phases, traced=True)
    free_summary, held_summary = free["summary"], held["summary"]
    subtraction = float(free_summary["median"]) - float(held_summary["median"])
    free_ci, held_ci = free_summary.get("median_ci"), held_summary.get("median_ci")
    low = high = None
    if free_ci and held_ci:
        low = float(free_ci["low"]) - float(held_ci["high"])
        high = float(free_ci["high"]) - float(held_ci["low"])
    events = free_ns - held_ns
    agree = low <= events <= high if low is not None and high is not None else None
    return IdleComparison(events, free_ns, held_ns, subtraction, low, high, agree)


def _ns(value: float) -> str:
    """A time as ``show`` and ``explain`` print it (fmt.value)."""
    return fmt.value(value, "ns")


def render_traced(view: TracedView, idle_difference_ns: float | None = None) -> list[str]:
    """Lines (indented two spaces) for one figure's traced pass."""
    if view.status != "ok":
        return [f"  traced pass: {view.status}: {view.reason}"]
    head = f"  traced pass, from the kernel's events ({view.matched} switches followed"
    if view.cross_cpu:
        head += f", {view.cross_cpu} across CPUs"
    if view.without_switch:
        head += f"; {view.without_switch} woken before they slept"
    lines = [head + "):"]
    base = view.untraced_median_ns or 0.0
    if view.traced_median_ns is not None and view.overhead_ratio is not None:
        lines.append(
            f"    traced figure {_ns(view.traced_median_ns)} against the untraced {_ns(base)} "
            f"({view.overhead_ratio:.2f}x): the median traced sample's phases, scaled by "
            f"untraced / traced = {view.scale or 0:.3g}"
        )
    for p in view.phases:
        words = f": {p.words}" if p.words else ""
        seen = f"; median {_ns(p.median_ns)} in {p.count} switches" if p.median_ns else ""
        lines.append(
            f"    {_ns(p.ns):>10} {100 * p.share:5.0f}%  {p.label}{words} "
            f"(traced {_ns(p.traced_ns)} per switch{seen})"
        )
    if view.rest_ns is not None and base:
        lines.append(
            f"    {_ns(view.rest_ns):>10} {100 * view.rest_ns / base:5.0f}%  "
            "not attributed by the events: the median traced sample's time no switch's chain covers"
        )
        lines.append(
            f"    the phases explain {100 * view.covered_share:.0f}% of the untraced figure"
        )
    if view.overlap_ns:
        lines.append(
            f"    note: chains overlapped for {_ns(view.overlap_ns)} of the tiled time, "
            "counted once"
        )
    if view.idle_exit_ns is not None:
        lines.append(
            f"    idle exit: {_ns(view.idle_exit_ns)} per switch in the phases ending at it "
            f"({view.idle_exit_switches} switches had one)"
        )
    elif view.idle is not None:
        lines.append(
            "    idle exit: none in the traced switches (no power:cpu_idle exit between a waking "
            "and its switch-in: the target CPU was not idle)"
        )
    if view.idle is not None:
        lines.append("    " + idle_text(view.idle))
    elif idle_difference_ns is not None:
        lines.append(
            f"    idle=free - idle=held measured {_ns(idle_difference_ns)}; the idle=held "
            "figure has no tiled traced pass to set the events beside it"
        )
    if view.lost or view.ring_full:
        lines.append("    note: a ring buffer filled up; the switches after it were not followed")
    lines.append(f"    rule: {view.rule}")
    return lines


def idle_text(c: IdleComparison) -> str:
    """The idle target's cost from the events beside idle=free − idle=held."""
    text = (
        f"waking an idle CPU, from the events (as traced): waking → switch-in "
        f"{_ns(c.free_ns)} per switch with idle free, {_ns(c.held_ns)} with idle held, "
        f"difference {_ns(c.events_ns)}; idle=free - idle=held measured {_ns(c.subtraction_ns)}"
    )
    if c.low_ns is None or c.high_ns is None:
        return text + " (no interval to judge agreement)"
    verdict = "they agree" if c.agree else "they disagree"
    return f"{text} ({_ns(c.low_ns)}..{_ns(c.high_ns)} from the two medians' intervals): {verdict}"


def render_trace_detail(results: list[dict[str, Any]]) -> str:
    """``ctxbench explain --trace``: every traced pass of a run in full, one
    block per switch figure: how it was recorded, the switches followed, and
    each phase's distribution (median with its interval, p90, count) beside
    its traced time per switch, its share of the samples and the events
    recorded inside it."""
    lines: list[str] = []
    for r in results:
        block = r.get("trace")
        if not block:
            continue
        params = " ".join(f"{k}={v}" for k, v in sorted((r.get("params") or {}).items()))
        lines += ["", f"{r['probe']} {params}"]
        if block.get("status") != "ok":
            lines.append(f"  traced pass {block.get('status')}: {block.get('reason')}")
            continue
        sw = block["switches"]
        lines.append(
            f"  recorded on CPUs {', '.join(map(str, block.get('cpus', [])))} from "
            f"{block.get('tracefs', '?')}: {block.get('recorded', 0)} events, "
            f"{block.get('lost', 0)} lost; {sw['tasks']} tasks, {sw['woken']} wake-ups, "
            f"{sw['matched']} switches followed ({sw['direct']} without a wake-up, "
            f"{sw['cross_cpu']} across CPUs, {sw['without_switch']} woken before they slept)"
        )
        if block.get("missing_events"):
            lines.append(f"  not on this kernel: {', '.join(block['missing_events'])}")
        tiling = block.get("tiling")
        if not tiling:
            lines.append("  (recorded before the tiling: no shares of the samples' time)")
            continue
        lines.append(
            f"  tiled: the median {tiling['batches']} of {tiling['samples']} traced samples, "
            f"{tiling['switches']:.0f} switches, {_ns(tiling['traced_per_switch_ns'])} per "
            f"switch; the chains cover {100 * tiling['covered_share']:.1f}% of their time"
        )
        lines.append(
            f"  {'phase':<60} {'n':>6} {'median':>10} {'95% CI':>21} {'p90':>10} "
            f"{'events':>6} {'traced':>10} {'share':>6}"
        )
        stats = {(p["from"], p["to"]): p for p in block["phases"]}
        # every phase seen, the tiled ones with their traced time and share
        tiled = {(t["from"], t["to"]): t for t in tiling["phases"]}
        missing = {"per_switch_ns": 0.0, "share": 0.0}
        keys = list(tiled) + [k for k in stats if k not in tiled]
        for key in keys:
            t = {"from": key[0], "to": key[1], **tiled.get(key, missing)}
            p = stats.get((t["from"], t["to"]))
            name = phase_label(t["from"], t["to"])
            if p:
                s = p["summary"]
                ci = s.get("median_ci")
                ci_text = f"{_ns(ci['low'])}..{_ns(ci['high'])}" if ci else "-"
                seen = (
                    f"{p['count']:>6} {_ns(s['median']):>10} {ci_text:>21} {_ns(s['p90']):>10} "
                    f"{p['events_per_switch']:>6.2f}"
                )
            else:
                seen = f"{'-':>6} {'-':>10} {'-':>21} {'-':>10} {'-':>6}"
            lines.append(
                f"  {name:<60} {seen} {_ns(t['per_switch_ns']):>10} {100 * t['share']:5.1f}%"
            )
        if block.get("period"):
            lines.append(
                f"  period (call entry → next call): median {_ns(block['period']['median'])} "
                f"over {block['period']['n']} switches"
            )
        lines.append(f"  rule: {tiling['rule']}")
    if not lines:
        return (
            "this run has no traced pass: run the switch probes with `ctxbench run --trace` "
            "(as root, with tracefs)\n"
        )
    return "\n".join(lines[1:]) + "\n"


def traced_line(view: TracedView) -> str:
    """One line for a table cell (the HTML report): the phases in order and
    what they leave of the untraced median."""
    if view.status != "ok":
        return f"traced pass {view.status}: {view.reason}"
    phases = " + ".join(f"{_ns(p.ns)} {p.label}" for p in view.phases)
    text = f"kernel events ({view.matched} switches followed): {phases}"
    if view.rest_ns is not None:
        text += (
            f"; not attributed {_ns(view.rest_ns)} (the phases explain "
            f"{100 * view.covered_share:.0f}% of the untraced median)"
        )
    if view.overhead_ratio is not None and view.traced_median_ns is not None:
        text += (
            f"; traced figure {_ns(view.traced_median_ns)} ({view.overhead_ratio:.2f}x), "
            "phases scaled by untraced / traced"
        )
    return text


def measured_placement(record: dict[str, Any]) -> str | None:
    """Where a two-task switch figure's tasks really ran: 'same' or 'cross'
    CPU. From the traced pass's switches when it followed any (most of them
    across CPUs or not), else from the CPUs the tasks were seen on at the
    start and end of the measurement; None when the record cannot say (one
    task, or the two sightings disagree)."""
    trace = record.get("trace") or {}
    switches = trace.get("switches") or {}
    if trace.get("status") == "ok" and switches.get("matched"):
        return "cross" if 2 * switches["cross_cpu"] > switches["matched"] else "same"
    placement = record.get("placement") or {}
    seen = [placement.get("observed_start") or [], placement.get("observed_end") or []]
    if any(len(cpus) != 2 or min(cpus) < 0 for cpus in seen):
        return None
    kinds = {"same" if cpus[0] == cpus[1] else "cross" for cpus in seen}
    return kinds.pop() if len(kinds) == 1 else None
