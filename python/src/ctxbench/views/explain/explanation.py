"""What ``ctxbench explain`` prints of a run's decompositions, in words.

From ``ctxbench.analysis.explain.explanation``: the figures a reader asked for (probe globs,
family names, params), the headline switches first, each part with its share
of the median, and what the run could not separate or explain.

A part's share is printed only for parts that are a share (``explain`` keeps
every standing part between 0 and the median); the differences that came out
the wrong way are words under ``not explained``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from ctxbench import units
from ctxbench.analysis.explain import explanation as explain_codes
from ctxbench.analysis.explain import user_switch
from ctxbench.analysis.explain.explanation import (
    IDLE_AGREE,
    IDLE_DISAGREE,
    IDLE_EVENTS,
    IDLE_NOT_IDLE,
    IDLE_PART,
    IDLE_SHARE,
    REST,
    Explained,
    Explanation,
    IdleFinding,
    Missing,
    NotExplained,
    Part,
    SlowedNote,
    Source,
    Unexplained,
    bare_syscall,
    explain,
)
from ctxbench.analysis.explain.seccomp_cost import FilterCost
from ctxbench.analysis.explain.shares import NO_IDLE_DRIVER, SUSPECT, Figure, Withheld
from ctxbench.analysis.explain.user_switch import ChainFigure, ChainGap
from ctxbench.errors import BadInput
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import probe_with
from ctxbench.records.strict_json import JsonObject
from ctxbench.riscv.answer import is_lab_run, lab_dict
from ctxbench.riscv.catalog import CALLS
from ctxbench.riscv.report import explain_lines
from ctxbench.units import param_value
from ctxbench.views.explain.phases import render_traced

# What a run could not separate, per explain's Missing code (TRACE_HINT added where
# no traced pass was tried).
MISSING_WORDS = {
    explain_codes.ENTRY_TIMING: "how many system calls one switch makes depends on timing with "
    "this primitive, so it is not priced separately",
    explain_codes.NO_BARE: "{detail} was not measured in this run",
    explain_codes.NO_BASELINE: "this probe has no baseline",
    explain_codes.RING_PROCESSES: "the ring runs processes only, no thread twin",
    explain_codes.NO_THREAD_TWIN: "no between=threads twin measured in this run",
    explain_codes.NO_HELD: "idle=held was not measured (needs write access to "
    "/dev/cpu_dma_latency: run as root, or with --hold-idle)",
    explain_codes.FEW_SIZES: "fewer than two working-set sizes measured for this ring",
    explain_codes.REST_INSIDE: "the wake-up (enqueue, and for cross-CPU an IPI) and the switch "
    "itself (picking the next task, saving and loading register state) are not separated by "
    "this run",
}


# Why a user-level switch, or a step of its chain, is not split (user_switch's codes).
CHAIN_WORDS = {
    user_switch.FLOOR_WHOLE: "the own asm switch is the floor: the callee-saved registers and "
    "the stack pointer saved and restored, nothing smaller measured apart",
    user_switch.COMPILED: "a C++20 coroutine's transfer is compiled into the coroutines' code: "
    "no save/restore of its own is measured apart, so it is not split",
    user_switch.NO_SMALLER: "no smaller figure of this switch is measured apart",
    user_switch.NOTHING_BELOW: "no smaller figure of its chain was measured in this run, so no "
    "step of it is separated",
}


def chain_words(gap: ChainGap) -> str:
    """What of a user-level chain cannot be split, and why."""
    if gap.code == user_switch.NOT_MEASURED:
        return f"{gap.step}: {units.params(dict(gap.params))} of {gap.probe} not measured here"
    return CHAIN_WORDS[gap.code]


def chain_figures_words(figures: Sequence[ChainFigure]) -> str:
    """'uswitch.boost_context api=fiber (55 ns) - uswitch.asm ... (12 ns)'."""
    return " - ".join(
        f"{user_switch.variant_label(f.probe, dict(f.params))} ({time_text(f.ns)})" for f in figures
    )


def missing_reason(m: Missing) -> str:
    """Why the run could not separate M's part, without the part's name."""
    if m.code == explain_codes.CHAIN:
        assert m.gap is not None
        return chain_words(m.gap)
    words = MISSING_WORDS[m.code].format(detail=m.detail)
    if m.code == explain_codes.REST_INSIDE and m.detail == explain_codes.TRACE_HINT:
        words += " (ctxbench run --trace separates them)"
    return words


def note_words(n: SlowedNote) -> str:
    """'host interference: switch.pipe ... was measured while ...'."""
    return (
        f"host interference: {n.probe} {n.params} was measured while the reference system "
        f"calls ran {n.reference_ratio:.2f}x their best (after {n.attempts} attempt(s)); parts "
        "built from it carry that slowdown"
    )


def unexplained_words(u: Unexplained) -> str:
    """'switch.pipe cpus=cross: unsupported, no figure'."""
    return f"{u.probe} {u.params}: {u.status}, no figure"


def missing_words(m: Missing) -> str:
    """'kernel entry/exit: syscall.enosys was not measured in this run'."""
    return f"{m.part}: {missing_reason(m)}" if m.part else missing_reason(m)


# ---- choosing what to show ------------------------------------------------------------
# The headline switches, in this order, of the probe with the role
# explain:headline (records.roles): a thread switch on one CPU, the same
# across CPUs, and processes on one CPU. Each matches the default variant
# (policy normal, else batch or absent; idle free or absent).
HEADLINE: tuple[dict[str, str], ...] = (
    {"between": "threads", "cpus": "same"},
    {"between": "threads", "cpus": "cross"},
    {"between": "processes", "cpus": "same"},
)


def time_text(value: float) -> str:
    """A time as ``show`` prints it: '926.9 ns', '2.196 µs' (units.value)."""
    return units.value(value, "ns")


def source_words(s: Source) -> str:
    """How a part was computed (explain's Source), in words."""
    code, v = s.code, s.values
    if code == explain_codes.CALLS_PRICED:
        plural = "" if v[0] == 1 else "s"
        return f"{param_value(v[0])} system call{plural} x {time_text(v[1])} ({s.name})"
    if code == explain_codes.WHOLE_BASELINE:
        return s.name
    if code == explain_codes.BASELINE_LESS_ENTRY:
        return f"the baseline ({time_text(v[0])}, {s.name}) less the kernel entry/exit"
    if code == explain_codes.PROCESSES_LESS_THREADS:
        held = " (both with idle=held)" if s.held else ""
        return (
            f"corrected between=processes ({time_text(v[0])}) - between=threads "
            f"({time_text(v[1])}){held}"
        )
    if code == explain_codes.FREE_LESS_HELD:
        return f"idle=free ({time_text(v[0])}) - idle=held ({time_text(v[1])})"
    if code == explain_codes.RING_SLOPE:
        return (
            f"{v[0]:.2f} ns/KiB (slope of corrected over size_kib, {int(v[1])} sizes) "
            f"x {param_value(v[2])} KiB"
        )
    if code == explain_codes.MEDIAN_LESS_PARTS:
        return "the measured median less every part above"
    if code == explain_codes.WHOLE_MEDIAN:
        return "the whole measured median: no part of it is measured apart here"
    if code == explain_codes.JOINED:
        return "; ".join(source_words(joined) for joined in s.joined)
    if code == explain_codes.CHAIN_STEP:
        return chain_figures_words(s.figures)
    assert s.gap is not None  # CHAIN_WHOLE
    return chain_words(s.gap)


def _below_zero_words(s: Source, ns: float) -> str:
    """Why a part built from S came out below zero: which two figures disagree."""
    v = s.values
    if s.code == explain_codes.BASELINE_LESS_ENTRY:
        return (
            f"the kernel entry/exit priced above ({time_text(v[1])}) measured higher than the "
            f"baseline that makes those calls ({time_text(v[0])}, {s.name})"
        )
    if s.code == explain_codes.PROCESSES_LESS_THREADS:
        held = " (both with idle=held)" if s.held else ""
        return (
            f"between=threads ({time_text(v[1])}, corrected) measured higher than "
            f"between=processes ({time_text(v[0])}){held}: the address-space share is "
            "within this run's noise"
        )
    if s.code == explain_codes.FREE_LESS_HELD:
        return (
            f"idle=held ({time_text(v[1])}) measured higher than idle=free "
            f"({time_text(v[0])}): holding the CPUs out of deep idle saved nothing "
            "measurable here"
        )
    return f"it comes out at {time_text(ns)} ({source_words(s)})"


def not_explained_words(n: NotExplained) -> str:
    """A part that is not a share (explain's NotExplained), in words."""
    code, v = n.code, n.values
    if code == explain_codes.NO_IDLE_EXIT:
        return (
            f"{n.part}: idle=free - idle=held is {time_text(v[0])}, but no idle exit came "
            f"between a waking and its switch-in in the {int(v[1])} switches traced: the "
            "target CPU was not idle, so it is not a share"
        )
    if code == explain_codes.BELOW_ZERO_PART:
        assert n.source is not None
        return f"{n.part}: {_below_zero_words(n.source, v[0])}"
    if code == explain_codes.ABOVE_MEDIAN:
        assert n.source is not None
        why = (
            ": the kernel counted too few switches, so this figure is mostly the "
            "primitive's own calls, not a switch"
            if n.too_few
            else ": the two were measured apart, and their noise does not cancel"
        )
        return (
            f"{n.part}: {time_text(v[0])} ({source_words(n.source)}) measured higher than the "
            f"whole figure ({time_text(v[1])}){why}"
        )
    if code == explain_codes.UNLIKE_PLACEMENT:
        return (
            f"{n.part}: between=processes ran on {n.names[0]} CPUs and its "
            f"between=threads twin on {n.names[1]} CPUs (as measured: the traced pass's "
            "switches, or the CPUs the tasks were seen on), so their difference is the "
            "placement's as much as the address space's, and it is not a part"
        )
    if code == explain_codes.PARTS_EXCEED:
        return (
            f"the parts above add up to {time_text(v[0])}, more than the measured "
            f"median ({time_text(v[1])}): they come from other variants of this run, "
            "whose noise adds up, so nothing is left for the scheduler"
        )
    assert n.withheld is not None  # WITHHELD
    return withheld_words(n.withheld)


def _figure_text(f: Figure) -> str:
    """'idle=free 26.27 µs (20.70–36.21 µs)': a figure with its interval."""
    inside = f" ({units.interval(f.low, f.high, 'ns')})" if f.low is not None else ""
    return f"{f.label} {units.value(f.ns, 'ns')}{inside}"


def withheld_words(w: Withheld) -> str:
    """What is known of a withheld part, both figures with their intervals,
    and why it is not a share."""
    known = f"{_figure_text(w.figures[0])} against {_figure_text(w.figures[1])}"
    if w.code == NO_IDLE_DRIVER:
        return (
            f"{w.part}: {known}, but no cpuidle driver is active, so holding the latency "
            "request cannot change the idle path: the difference is noise here, not a share"
        )
    if w.code == SUSPECT:
        named = [
            f"{f.label} ({', '.join(code.replace('_', ' ') for code in f.not_measuring)})"
            for f in w.figures
            if f.not_measuring
        ]
        return (
            f"{w.part}: {known}, but {' and '.join(named)} is suspect for a reason that "
            "says it measured something else, so their difference is not a share"
        )
    return (
        f"{w.part}: {known}: the intervals overlap, so their difference "
        f"({units.value(w.ns, 'ns')}) is within this run's noise, not a share"
    )


def explained_dict(explained: Explained) -> JsonObject:
    """EXPLAINED as JSON data, every part's source and what is not explained in words."""
    out = asdict(explained)
    for e, d in zip(explained.explanations, out["explanations"], strict=True):
        d["total_ns"] = e.total_ns
        for part, data in zip(e.parts, d["parts"], strict=True):
            data["source"] = source_words(part.source)
            del data["terms"]
        d["not_explained"] = [not_explained_words(n) for n in e.not_explained]
        d["not_separated"] = [_missing_dict(m) for m in e.not_separated]
    for c, d in zip(explained.seccomp, out["seccomp"], strict=True):
        d["added_ns"], d["per_call_ns"] = c.added_ns, c.per_call_ns
    return out


def _missing_dict(m: Missing) -> dict[str, str]:
    """A part not separated as JSON: its name, code and detail (a chain's words)."""
    detail = missing_reason(m) if m.code == explain_codes.CHAIN else m.detail
    return {"part": m.part, "code": m.code, "detail": detail}


_DEFAULTS = {
    "policy": ("normal", "batch", None),
    "idle": ("free", None),
    "seccomp": ("none", None),
}


def _default_rank(e: Explanation) -> tuple[int, ...] | None:
    """How close a figure is to the default variant (lower is closer), or None."""
    rank = []
    for knob, accepted in _DEFAULTS.items():
        if e.params.get(knob) not in accepted:
            return None
        rank.append(accepted.index(e.params.get(knob)))
    return tuple(rank)


def headline(explanations: Sequence[Explanation]) -> list[Explanation]:
    """The headline switches this run explains, in HEADLINE's order: per slot,
    the variant closest to the default."""
    found = []
    probe = probe_with("explain:headline")
    for params in HEADLINE:
        candidates = [
            (rank, e)
            for e in explanations
            if e.probe == probe
            and all(e.params.get(k) == v for k, v in params.items())
            and (rank := _default_rank(e)) is not None
        ]
        if candidates:
            found.append(min(candidates, key=lambda pair: pair[0])[1])
    return found


def _matches(
    probe: str, values: Mapping[str, ParamValue], patterns: Sequence[str], params: dict[str, str]
) -> bool:
    """A figure of PROBE with params VALUES against the globs and --param choices."""
    if patterns and not any(
        fnmatch.fnmatchcase(probe, p) or probe.split(".")[0] == p for p in patterns
    ):
        return False
    return all(param_value(values.get(k)) == v for k, v in params.items())


def narrow_costs(
    explained: Explained, patterns: Sequence[str] = (), params: dict[str, str] | None = None
) -> list[FilterCost]:
    """The seccomp figures (seccomp_cost) the globs and params name; all without."""
    return [
        c
        for c in explained.seccomp
        if _matches(c.probe, {**c.params, "seccomp": c.mode}, patterns, params or {})
    ]


def narrow(
    explained: Explained,
    patterns: Sequence[str] = (),
    params: dict[str, str] | None = None,
    show_all: bool = False,
) -> tuple[list[Explanation], int]:
    """The figures to print, headline switches first, and how many more there
    are. PATTERNS (probe globs or family names) and PARAMS (name -> value)
    narrow to the matching figures, all of them; with neither, only the
    headline ones unless SHOW_ALL (else every figure, if none is a headline)."""
    chosen = [
        e for e in explained.explanations if _matches(e.probe, e.params, patterns, params or {})
    ]
    first = headline(chosen)
    ranked = first + [e for e in chosen if not any(e is h for h in first)]
    if patterns or params or show_all or not first:
        return ranked, 0
    return first, len(ranked) - len(first)


# ---- views -------------------------------------------------------------------------------
def share_text(part: Part, median: float) -> str:
    """'  31%': a part's share of the median (parts are between 0 and the median)."""
    return f"{100 * part.ns / median:5.0f}%" if median > 0 else "     -"


def _signed(ns: float) -> str:
    return ("+" if ns >= 0 else "−") + time_text(abs(ns))


def _subtraction(f: IdleFinding) -> str:
    """'idle=free − idle=held +4.107 µs (−12.31 µs to +45.24 µs)'."""
    interval = (
        f" ({_signed(f.low_ns)} to {_signed(f.high_ns)})"
        if f.low_ns is not None and f.high_ns is not None
        else ""
    )
    return f"idle=free − idle=held {_signed(f.difference_ns)}{interval}"


def _events(f: IdleFinding) -> str:
    """'3 of 9016 switches traced had an idle exit (1.2 µs per switch in its phases)'."""
    if f.switches is None:
        return "no traced pass to check it (ctxbench run --trace)"
    if f.exits is None:
        return "the traced pass recorded no idle events (power:cpu_idle) to check it"
    per = f" ({time_text(f.exit_ns)} per switch in the phases ending at it)" if f.exit_ns else ""
    return f"{f.exits} of the {f.switches} switches traced had an idle exit{per}"


def idle_words(f: IdleFinding, withheld: str | None) -> str:
    """The idle share stated once: both methods, and which one this block trusts
    and why (``explain.IdleFinding``). WITHHELD: explain's words for why the
    subtraction is not a share, where it is not."""
    events = _events(f)
    if f.verdict == IDLE_SHARE:
        return f"; {events}"
    if f.verdict == IDLE_AGREE:
        return (
            f"; the kernel's events agree: waking → switch-in {time_text(f.events_ns or 0.0)} "
            f"longer with idle free (as traced), inside {_subtraction(f)}'s interval; {events}"
        )
    if f.verdict == IDLE_DISAGREE:
        return (
            f"; the kernel's events put waking → switch-in {_signed(f.events_ns or 0.0)} apart "
            "(as traced), outside its interval: trusted here is the subtraction, whose two "
            f"figures were measured untraced; {events}"
        )
    if f.verdict == IDLE_NOT_IDLE:
        said = "spans zero and cannot say" if f.spans_zero else "is not an idle exit"
        return (
            f"{IDLE_PART}: none in this figure, by the kernel's events (trusted: they see the "
            f"idle exit itself): {events}, so the target CPU was not idle; {_subtraction(f)} "
            f"{said}"
        )
    if f.verdict == IDLE_EVENTS:
        return (
            f"{IDLE_PART}: by the kernel's events (trusted), {events}; the subtraction cannot "
            f"say: {withheld or _subtraction(f)}"
        )
    return f"{withheld or IDLE_PART + ': ' + _subtraction(f)}; {events}"


def explanation_lines(e: Explanation) -> list[str]:
    flag = "" if e.status == "ok" else f"  [{e.status}]"
    lines = [f"{e.variant}: {time_text(e.median_ns)} per switch{flag}"]
    # What the rest holds unseparated is said on the rest's own line, once.
    inside = [m for m in e.not_separated if m.code == explain_codes.REST_INSIDE]
    for p in e.parts:
        idle = idle_words(e.idle, None) if p.name == IDLE_PART and e.idle else ""
        source = source_words(p.source) + idle
        if p.name == REST and inside:
            source += "; " + "; ".join(missing_reason(m) for m in inside)
        lines.append(f"  {time_text(p.ns):>10} {share_text(p, e.median_ns)}  {p.name}: {source}")
    said = [not_explained_words(n) for n in e.not_explained]
    for words in said:
        if e.idle is not None and words.startswith(IDLE_PART + ":"):
            words = idle_words(e.idle, words)
        lines.append(f"  not explained: {words}")
    if (
        e.idle is not None
        and e.idle.withheld is not None
        and not any(w.startswith(IDLE_PART + ":") for w in said)
    ):
        lines.append(f"  not explained: {idle_words(e.idle, None)}")
    if e.switches_per_round_trip:
        k = e.switches_per_round_trip
        lines.append(
            f"  per round trip the kernel counted {k['voluntary']:.2f} voluntary switches "
            f"(sleeps) and {k['involuntary']:.2f} involuntary (preemptions)"
        )
    if e.traced:
        lines += render_traced(e.traced, idle_said=e.idle is not None)
    lines += [f"  note: {note_words(note)}" for note in e.notes]
    rest_shown = any(p.name == REST for p in e.parts)
    lines += [
        f"  not separated: {missing_words(m)}"
        for m in e.not_separated
        if not (rest_shown and m.code == explain_codes.REST_INSIDE)
    ]
    return lines


def render_text(
    explained: Explained,
    shown: list[Explanation] | None = None,
    more: int = 0,
    costs: list[FilterCost] | None = None,
) -> str:
    """The decomposition in words, one block per switch figure (SHOWN: those
    of ``narrow``, MORE: how many it left out), then what a seccomp filter
    adds (COSTS: those of ``narrow_costs``; None: all, unless SHOWN narrows)."""
    shown = explained.explanations if shown is None else shown
    narrowed = shown is not explained.explanations
    if costs is None:
        costs = [] if narrowed else explained.seccomp
    lines: list[str] = []
    if explained.run_id:
        lines.append(f"# where the time goes, run {explained.run_id}")
    if explained.bare_syscall_ns is not None:
        lines.append(
            f"# a bare system call ({bare_syscall()}) costs "
            f"{time_text(explained.bare_syscall_ns)} in this run"
        )
    for e in shown:
        lines += ["", *explanation_lines(e)]
    if more:
        lines += [
            "",
            f"{more} more switch figure{'' if more == 1 else 's'} in this run: `--all` prints "
            "them, a probe glob (e.g. `ctxbench explain switch.futex`) narrows to some",
        ]
    if explained.fork and not narrowed:
        f = explained.fork
        lines.append("")
        lines.append("create.fork against the parent's size:")
        for mib, ns in f.points:
            lines.append(f"  parent_mib={param_value(mib)}: {time_text(ns)}")
        if f.slope_ns_per_mib is not None:
            err = f" (+/- {time_text(f.slope_stderr)})" if f.slope_stderr is not None else ""
            lines.append(
                f"  least-squares slope: {time_text(f.slope_ns_per_mib)} per MiB of touched "
                f"parent memory{err}, intercept {time_text(f.intercept_ns or 0)}"
            )
        if f.minimal_parent_ns is not None:
            lines.append(f"  fork from a minimal static parent: {time_text(f.minimal_parent_ns)}")
        for note in f.notes:
            lines.append(f"  note: {note}")
    if costs:
        lines += ["", *cost_lines(costs)]
    if explained.unexplained and not narrowed:
        lines.append("")
        lines.append("not explained (no figure in this run):")
        lines.extend(f"  {unexplained_words(u)}" for u in explained.unexplained)
    if not explained.explanations and not explained.fork and not explained.seccomp:
        lines.append("this run holds no switch or fork figure to explain")
    elif narrowed and not shown and not costs:
        lines.append("no switch figure of this run matches")
    return "\n".join(lines) + "\n"


# ---- what a seccomp filter adds ------------------------------------------------------
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


# ---- a run, narrowed ------------------------------------------------------------------------
def parse_params(choices: Sequence[str]) -> dict[str, str]:
    """``--param NAME=VALUE`` choices as a dict; BadInput naming the fix otherwise."""
    params = {}
    for choice in choices:
        name, equals, value = choice.partition("=")
        if not equals or not name or not value:
            raise BadInput(f"--param {choice}: give NAME=VALUE (e.g. --param cpus=cross)")
        params[name] = value
    return params


def _lab_calls(globs: Sequence[str]) -> list[str]:
    """The lab's calls the globs name (every call without one)."""
    if not globs:
        return list(CALLS)
    return [c for c in CALLS if any(fnmatch.fnmatchcase(f"riscv.ecall.{c}", g) or g == "riscv"
                                    for g in globs)]  # fmt: skip


def run_text(
    results: Sequence[Result],
    run_id: str,
    globs: Sequence[str] = (),
    params: dict[str, str] | None = None,
    show_all: bool = False,
) -> str:
    """What ``ctxbench explain`` prints of one run: a RISC-V lab run's calls split
    per simulator, an engine run's switch figures (``narrow``)."""
    lab = tuple(results)
    if is_lab_run(lab):
        lines = [f"# where an ecall round trip goes, RISC-V trap lab run {run_id}"]
        lines += explain_lines(lab, _lab_calls(globs))
        return "\n".join(lines) + "\n"
    explained = explain(results, run_id)
    shown, more = narrow(explained, globs, params, show_all)
    return render_text(explained, shown, more, narrow_costs(explained, globs, params))


def run_dict(
    results: Sequence[Result],
    run_id: str,
    globs: Sequence[str] = (),
    params: dict[str, str] | None = None,
) -> JsonObject:
    """``explain --json``: the decompositions the globs and params name (all of
    them without), or a lab run's splits (``lab_dict``)."""
    lab = tuple(results)
    if is_lab_run(lab):
        data = lab_dict(lab)
        calls = set(_lab_calls(globs))
        for target in data["targets"].values():
            target["calls"] = {c: v for c, v in target["calls"].items() if c in calls}
        return {"run_id": run_id, "lab": data}
    explained = explain(results, run_id)
    shown, _ = narrow(explained, globs, params, show_all=True)
    data = explained_dict(explained)
    for e, d in zip(explained.explanations, data["explanations"], strict=True):
        d["not_separated"] = [missing_words(m) for m in e.not_separated]  # as the text says
        d["notes"] = [note_words(n) for n in e.notes]
    data["unexplained"] = [unexplained_words(u) for u in explained.unexplained]
    keep = {id(e) for e in shown}
    data["explanations"] = [
        d for e, d in zip(explained.explanations, data["explanations"], strict=True)
        if id(e) in keep
    ]  # fmt: skip
    costs = {id(c) for c in narrow_costs(explained, globs, params)}
    data["seccomp"] = [
        d for c, d in zip(explained.seccomp, data["seccomp"], strict=True) if id(c) in costs
    ]
    return data
