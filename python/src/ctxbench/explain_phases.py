"""The kernel's own account of a switch: the traced pass's phases.

A switch record made with ``ctxbench run --trace`` carries a ``trace`` block
(schema/record.schema.json): the variant ran again while the kernel's
tracepoints were recorded, and every switch between its tasks was followed
from the waker's call entry through waking, wake-up, interrupt, idle exit and
switch to the woken task's next call. This module turns that block into
lines under the figure that ``ctxbench explain`` shows.

The phases are measured under tracing, which slows them: each recorded event
costs time (``event_cost_ns``, measured in the same pass). The figures shown
are the engine's corrected ones: a phase's typical share of a switch (its
median x the share of switches that had it) less the cost of the events
recorded inside it. What the corrected phases do not cover of the untraced
median is shown as the rest the events cannot attribute; it is negative where
the correction left more than the untraced figure. Nothing here is estimated:
every number comes from the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxbench import fmt

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
    ("call entry", "switch"): "a call that gives the CPU to a task already runnable",
    ("switch", "next call"): "the switch to a task preempted in user mode, and its user work "
    "up to its next call",
}


# The marks from a waking to the switch-in, in the order they usually come.
WAKE_TO_SWITCH = ("waking", "IPI entry", "poll wake", "wakeup", "IPI exit", "idle exit", "switch")


@dataclass
class TracedPhase:
    name: str  # "from → to"
    words: str
    count: int
    median_ns: float
    typical_ns: float  # median x count / matched
    corrected_ns: float | None  # typical less the recorded events' cost
    events_per_switch: float


@dataclass
class TracedView:
    status: str
    reason: str | None = None
    phases: list[TracedPhase] = field(default_factory=list)
    matched: int = 0
    cross_cpu: int = 0
    direct: int = 0
    traced_median_ns: float | None = None
    untraced_median_ns: float | None = None
    overhead_ratio: float | None = None
    event_cost_ns: float | None = None
    corrected_sum_ns: float | None = None
    rest_ns: float | None = None  # untraced median less the corrected phases
    explained_share: float | None = None  # corrected phases / untraced median
    idle_exit_ns: float | None = None  # corrected phases that end at the idle exit
    idle_exit_switches: int = 0
    # corrected phases from the waking to the switch-in, when some switch had an
    # idle exit: the wake-up, the interrupt reaching the idle CPU (a halted
    # vCPU's exit to the host included), the idle exit and the way to the switch
    wake_to_switch_ns: float | None = None
    lost: int = 0
    ring_full: bool = False
    rule: str = ""


def traced_view(record: dict[str, Any]) -> TracedView | None:
    """The view of a record's trace block; None when the record has none."""
    block = record.get("trace")
    if not block:
        return None
    if block.get("status") != "ok":
        return TracedView(status=block.get("status", "?"), reason=block.get("reason"))
    switches = block.get("switches") or {}
    matched = int(switches.get("matched", 0))
    phases = [
        TracedPhase(
            name=f"{p['from']} → {p['to']}",
            words=PHASE_WORDS.get((p["from"], p["to"]), ""),
            count=int(p["count"]),
            median_ns=float(p["summary"]["median"]),
            typical_ns=float(p["typical_per_switch_ns"]),
            corrected_ns=p.get("corrected_per_switch_ns"),
            events_per_switch=float(p["events_per_switch"]),
        )
        for p in block.get("phases", [])
    ]
    untraced = (record.get("summary") or {}).get("median")
    traced = (block.get("traced_summary") or {}).get("median")
    corrected = block.get("corrected_per_switch_ns")
    idle = [p for p in phases if p.name.endswith("→ idle exit")]
    view = TracedView(
        status="ok",
        phases=phases,
        matched=matched,
        cross_cpu=int(switches.get("cross_cpu", 0)),
        direct=int(switches.get("direct", 0)),
        traced_median_ns=traced,
        untraced_median_ns=untraced,
        overhead_ratio=traced / untraced if traced and untraced else None,
        event_cost_ns=block.get("event_cost_ns"),
        corrected_sum_ns=corrected,
        lost=int(block.get("lost", 0)),
        ring_full=bool(block.get("ring_full", False)),
        rule=block.get("correction_rule", ""),
    )
    if corrected is not None and untraced:
        view.rest_ns = untraced - corrected
        view.explained_share = corrected / untraced
    if idle:
        view.idle_exit_ns = sum(
            p.corrected_ns if p.corrected_ns is not None else p.typical_ns for p in idle
        )
        view.idle_exit_switches = sum(p.count for p in idle)
        inside = [
            p
            for p in phases
            if p.name.split(" → ")[0] in WAKE_TO_SWITCH[:-1]
            and p.name.split(" → ")[1] in WAKE_TO_SWITCH[1:]
        ]
        view.wake_to_switch_ns = sum(
            p.corrected_ns if p.corrected_ns is not None else p.typical_ns for p in inside
        )
    return view


def _ns(value: float) -> str:
    """A time as ``show`` and ``explain`` print it (fmt.value)."""
    return fmt.value(value, "ns")


def render_traced(view: TracedView, idle_difference_ns: float | None = None) -> list[str]:
    """Lines (indented two spaces) for one figure's traced pass."""
    if view.status != "ok":
        return [f"  traced pass: {view.status}: {view.reason}"]
    lines = []
    head = f"  traced pass, from the kernel's events ({view.matched} switches followed"
    if view.cross_cpu:
        head += f", {view.cross_cpu} across CPUs"
    head += "):"
    lines.append(head)
    if view.traced_median_ns is not None and view.untraced_median_ns:
        lines.append(
            f"    traced figure {_ns(view.traced_median_ns)} against the untraced "
            f"{_ns(view.untraced_median_ns)} ({view.overhead_ratio:.2f}x); one recorded event "
            f"costs {_ns(view.event_cost_ns or 0)}"
        )
    base = view.untraced_median_ns or 0
    for p in view.phases:
        shown = p.corrected_ns if p.corrected_ns is not None else p.typical_ns
        share = 100 * shown / base if base else 0
        words = f": {p.words}" if p.words else ""
        lines.append(
            f"    {_ns(shown):>10} {share:5.0f}%  {p.name}{words} "
            f"(median {_ns(p.median_ns)} in {p.count} switches)"
        )
    if view.rest_ns is not None and base:
        lines.append(
            f"    {_ns(view.rest_ns):>10} {100 * view.rest_ns / base:5.0f}%  "
            "not attributed by the events: the untraced median less the phases above"
        )
        share = 100 * (view.explained_share or 0)
        lines.append(f"    the phases explain {share:.0f}% of the untraced figure")
    if view.idle_exit_ns is not None:
        text = (
            f"    idle exit: {_ns(view.idle_exit_ns)} per switch in the phases ending at it "
            f"({view.idle_exit_switches} switches had one)"
        )
        lines.append(text)
        text = (
            f"    from the waking to the switch-in: {_ns(view.wake_to_switch_ns or 0)} per switch "
            "(the interrupt reaching the idle CPU and its idle exit included)"
        )
        if idle_difference_ns is not None:
            text += f"; idle=free - idle=held measured {_ns(idle_difference_ns)}"
        lines.append(text)
    elif idle_difference_ns is not None:
        lines.append(
            "    idle exit: no switch of the traced pass woke an idle CPU (power:cpu_idle showed "
            f"no exit before a switch-in); idle=free - idle=held measured {_ns(idle_difference_ns)}"
        )
    if view.lost or view.ring_full:
        lines.append("    note: a ring buffer filled up; the switches after it were not followed")
    lines.append(
        "    rule: each phase is its median x the share of switches that had it, less the cost "
        "of the events recorded inside it"
    )
    return lines


def render_trace_detail(results: list[dict[str, Any]]) -> str:
    """``ctxbench explain --trace``: every traced pass of a run in full, one
    block per switch figure: how it was recorded, the switches followed, and
    each phase's distribution (median with its interval, p90, count) beside
    its typical, event and corrected figures per switch."""
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
        lines.append(
            f"  {'phase':<28} {'n':>6} {'median':>10} {'95% CI':>21} {'p90':>10} "
            f"{'typical':>10} {'events':>6} {'corrected':>10}"
        )
        for p in block["phases"]:
            s = p["summary"]
            ci = s.get("median_ci")
            ci_text = f"{_ns(ci['low'])}..{_ns(ci['high'])}" if ci else "-"
            corrected = p.get("corrected_per_switch_ns")
            lines.append(
                f"  {p['from'] + ' → ' + p['to']:<28} {p['count']:>6} {_ns(s['median']):>10} "
                f"{ci_text:>21} {_ns(s['p90']):>10} {_ns(p['typical_per_switch_ns']):>10} "
                f"{p['events_per_switch']:>6.2f} "
                f"{_ns(corrected) if corrected is not None else '-':>10}"
            )
        if block.get("period"):
            lines.append(
                f"  period (call entry → next call): median {_ns(block['period']['median'])} "
                f"over {block['period']['n']} switches"
            )
        lines.append(f"  rule: {block.get('correction_rule', '')}")
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
    phases = " + ".join(
        f"{_ns(p.corrected_ns if p.corrected_ns is not None else p.typical_ns)} {p.name}"
        for p in view.phases
    )
    text = f"kernel events ({view.matched} switches followed): {phases}"
    if view.rest_ns is not None and view.explained_share is not None:
        text += (
            f"; not attributed {_ns(view.rest_ns)} (the phases explain "
            f"{100 * view.explained_share:.0f}% of the untraced median)"
        )
    if view.overhead_ratio is not None and view.traced_median_ns is not None:
        text += f"; traced figure {_ns(view.traced_median_ns)} ({view.overhead_ratio:.2f}x)"
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
