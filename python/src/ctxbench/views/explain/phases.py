"""A traced pass in words: ``explain``'s traced block, ``show --trace``'s detail, the report's line.

From ``ctxbench.analysis.explain.phases``' views of a record's ``trace`` block: the
phases set against the untraced figure, their rule, and every phase's
distribution; the numbers are the analysis', only the words are here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxbench import units
from ctxbench.analysis.explain.phases import NOT_TILED, TracedPhase, TracedView
from ctxbench.analysis.typed import typed
from ctxbench.records.result import Result

SCALING_RULE = (
    "each phase is its share of the median traced sample's time (chains laid end to end over "
    "it, on the events' clock) times the untraced median; the rest is what no chain covers"
)
NOT_TILED_WHY = (
    "recorded by an engine whose traced pass did not lay its phases over the timed samples "
    "(no trace.tiling): run it again with this ctxbench to set them against the figure"
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


def phase_words(phase: TracedPhase) -> str:
    """What a phase is, in words ('' for a pair without them)."""
    source, _, target = phase.name.partition(" → ")
    return PHASE_WORDS.get((source, target), "")


def phase_name(phase: TracedPhase) -> str:
    """'run-queue wait (wakeup → switch)'."""
    source, _, target = phase.name.partition(" → ")
    return phase_label(source, target)


def _status(view: TracedView) -> str:
    """'not tiled: recorded by an engine ...', 'unsupported: <the engine's reason>'."""
    reason = NOT_TILED_WHY if view.status == NOT_TILED else view.reason
    return f"{view.status}: {reason}"


def _ns(value: float) -> str:
    """A time as ``show`` and ``explain`` print it (units.value)."""
    return units.value(value, "ns")


def render_traced(view: TracedView, idle_said: bool = False) -> list[str]:
    """Lines (indented two spaces) for one figure's traced pass. IDLE_SAID: the
    block states the idle share once elsewhere (``views.explain.explanation.idle_words``),
    the idle exit of these phases with it."""
    if view.status != "ok":
        return [f"  traced pass: {_status(view)}"]
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
        words = f": {phase_words(p)}" if phase_words(p) else ""
        seen = f"; median {_ns(p.median_ns)} in {p.count} switches" if p.median_ns else ""
        lines.append(
            f"    {_ns(p.ns):>10} {100 * p.share:5.0f}%  {phase_name(p)}{words} "
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
    if view.idle_exit_ns is not None and not idle_said:
        lines.append(
            f"    idle exit: {_ns(view.idle_exit_ns)} per switch in the phases ending at it "
            f"({view.idle_exit_switches} switches had one)"
        )
    if view.lost or view.ring_full:
        lines.append("    note: a ring buffer filled up; the switches after it were not followed")
    lines.append(f"    rule: {SCALING_RULE}")
    return lines


def render_trace_detail(results: Sequence[Result | Mapping[str, Any]]) -> str:
    """``ctxbench explain --trace``: every traced pass of a run in full, one
    block per switch figure: how it was recorded, the switches followed, and
    each phase's distribution (median with its interval, p90, count) beside
    its traced time per switch, its share of the samples and the events
    recorded inside it."""
    lines: list[str] = []
    for r in typed(results):
        block = r.block("trace")
        if not block:
            continue
        params = " ".join(f"{k}={v}" for k, v in sorted(r.params.items()))
        lines += ["", f"{r.probe} {params}"]
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
        return f"traced pass {_status(view)}"
    phases = " + ".join(f"{_ns(p.ns)} {phase_name(p)}" for p in view.phases)
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
