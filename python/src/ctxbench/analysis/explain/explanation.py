"""Where the time of a switch goes, from figures measured in the same run.

Every part is a difference or a product of medians recorded in the run being
explained, nothing estimated or carried over; the last part is the remainder
(the median less every part measured: the scheduler's wake-up and switch,
plus what the run could not separate, in ``not_separated``), so the parts add
up to the median. The parts (docs/cli.md's table says how each is measured):
kernel entry/exit, the primitive's own work, the address-space switch, waking
an idle CPU, refilling the cache (a ring hop); a user-level switch is split
along its chain of figures (``analysis.explain.user_switch``). A part that is the
difference of two records is a share only where ``analysis.explain.shares`` says it
holds (the one rule); otherwise, and where a difference comes out below zero
or above the figure, it moves to ``not_explained`` (a reason code and the
two figures), and the remainder is taken over the parts that stand. Numbers
and codes only: ``views.explain.explanation`` words each part's ``Source`` and each
``NotExplained``.

It also fits how ``create.fork`` grows (``analysis.explain.fork_scaling``) and says
what a seccomp filter adds (``analysis.explain.seccomp_cost``); ``views.explain.explanation``
prints the figures a reader asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.analysis.explain.fork_scaling import ForkScaling, fit_fork
from ctxbench.analysis.explain.phases import (
    TracedView,
    compare_idle,
    measured_placement,
    traced_view,
)
from ctxbench.analysis.explain.seccomp_cost import FilterCost, filter_costs
from ctxbench.analysis.explain.shares import (  # noqa: F401 (the codes: summary_why.py imports them here)
    NO_IDLE_DRIVER,
    OVERLAP,
    SUSPECT,
    Withheld,
    share_withheld,
    withheld,
)
from ctxbench.analysis.explain.user_switch import ChainFigure, ChainGap, chain_parts
from ctxbench.analysis.typed import typed
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import has_role, probe_with


def bare_syscall() -> str:
    """The probe whose figure prices a system call (its descriptor's role)."""
    return probe_with("explain:bare_syscall")


REST = "scheduler wake-up and switch (the rest)"
IDLE_PART = "waking an idle CPU"
ADDRESS_SPACE = "address-space switch"
KERNEL_ENTRY = "kernel entry/exit"
REST_USER = "the whole switch, not split"
MEASURED = ("ok", "suspect")


# One figure a part is built from: (coefficient, the record's variant key, which
# figure: MEDIAN or BASELINE). A part is the sum of coefficient x figure over
# its terms, so two runs' parts can be resampled (ctxbench.analysis.compare.difference_parts).
Term = tuple[float, tuple[str, str], str]
MEDIAN, BASELINE = "median", "baseline"


# What a run could not separate (``Missing.code``); views.explain.explanation words them.
ENTRY_TIMING = "entry timing"  # how many calls one switch makes depends on timing
NO_BARE = "no bare call"  # the bare system call (detail: its probe) was not measured
NO_BASELINE = "no baseline"  # the probe has no baseline
RING_PROCESSES = "ring processes"  # the ring runs processes only: no thread twin
NO_THREAD_TWIN = "no thread twin"  # no between=threads twin measured
NO_HELD = "no idle held"  # idle=held was not measured
FEW_SIZES = "few sizes"  # fewer than two working-set sizes for a ring
REST_INSIDE = "rest inside"  # the wake-up and the switch inside the rest (detail: TRACE_HINT)
CHAIN = "chain"  # a user-level switch's chain (gap: analysis.explain.user_switch's code)
TRACE_HINT = "trace"  # REST_INSIDE's detail where no traced pass was tried
INSIDE_REST = "inside the rest"  # REST_INSIDE's part


@dataclass(frozen=True)
class Missing:
    """A part the run could not separate, and why (a code)."""

    part: str  # the part's name ('' for a chain)
    code: str
    detail: str = ""  # a probe's name, or TRACE_HINT
    gap: ChainGap | None = None  # CHAIN: what of the chain cannot be split, and why


# How a part was computed (``Source.code``), with the figures each names
# (``Source.values``, in this order); views.explain.explanation words them.
CALLS_PRICED = "calls priced"  # (calls, bare call ns); name: the bare call's probe
WHOLE_BASELINE = "whole baseline"  # (); name: the baseline's name
BASELINE_LESS_ENTRY = "baseline less entry"  # (baseline ns, entry ns); name: the baseline's
PROCESSES_LESS_THREADS = "processes less threads"  # (processes ns, threads ns), both corrected
FREE_LESS_HELD = "free less held"  # (idle=free ns, idle=held ns)
RING_SLOPE = "ring slope"  # (ns per KiB, sizes fitted, the variant's KiB)
MEDIAN_LESS_PARTS = "median less parts"  # (): the rest, after the parts above
WHOLE_MEDIAN = "whole median"  # (): the rest, no part measured apart
CHAIN_STEP = "chain step"  # figures: a step of a user-level chain (analysis.explain.user_switch)
CHAIN_WHOLE = "chain whole"  # gap: a user-level switch not split, and why
JOINED = "joined"  # joined: the sources of parts taken as one (compare --why)


@dataclass(frozen=True)
class Source:
    """The measured figures a part comes from: a code and its figures."""

    code: str
    values: tuple[float, ...] = ()
    name: str = ""  # the probe or baseline it names
    held: bool = False  # PROCESSES_LESS_THREADS: both taken with idle=held
    figures: tuple[ChainFigure, ...] = ()  # CHAIN_STEP: the figure, less the one below
    gap: ChainGap | None = None  # CHAIN_WHOLE
    joined: tuple[Source, ...] = ()  # JOINED


# Why a part measured is not a share (``NotExplained.code``); views.explain.explanation words them.
WITHHELD = "withheld"  # withheld: shares' code and the two figures (shares.Withheld)
NO_IDLE_EXIT = "no idle exit"  # values: (idle=free - idle=held ns, switches traced)
BELOW_ZERO_PART = "below zero"  # values: (the part's ns,); source: the part's
ABOVE_MEDIAN = "above median"  # values: (the part's ns, the median); too_few: the kernel's count
UNLIKE_PLACEMENT = "unlike placement"  # names: (processes' CPUs, threads' CPUs), as measured
PARTS_EXCEED = "parts exceed"  # values: (the parts' sum, the median)


@dataclass(frozen=True)
class NotExplained:
    """A part that is not a share of the figure, and why (a code and its figures)."""

    code: str
    part: str = ""  # the part's name ('' for the whole figure or a chain's words)
    values: tuple[float, ...] = ()
    names: tuple[str, ...] = ()
    source: Source | None = None  # BELOW_ZERO_PART, ABOVE_MEDIAN: how the part was computed
    too_few: bool = False  # ABOVE_MEDIAN: the kernel counted too few switches
    withheld: Withheld | None = None  # WITHHELD


@dataclass(frozen=True)
class SlowedNote:
    """A record a part uses was measured while the host slowed the CPU (its
    interference block's kept attempt): parts built from it carry that."""

    probe: str
    params: str  # its parameters as text
    reference_ratio: float  # the reference system calls' time over their best
    attempts: int


@dataclass(frozen=True)
class Unexplained:
    """A switch figure of the run with no figure to explain."""

    probe: str
    params: str  # its parameters as text
    status: str  # its verdict (unsupported, failed)


@dataclass
class Part:
    name: str
    ns: float
    source: Source  # the measured figures it comes from
    # what it is built from; empty when it is not a sum of medians (a fitted slope)
    terms: list[Term] = field(default_factory=list)


@dataclass
class Explanation:
    probe: str
    params: dict[str, ParamValue]
    median_ns: float
    status: str
    parts: list[Part]
    not_separated: list[Missing] = field(default_factory=list)
    switches_per_round_trip: dict[str, float] | None = None
    notes: list[SlowedNote] = field(default_factory=list)
    # differences that came out below zero or above the median, and why
    not_explained: list[NotExplained] = field(default_factory=list)
    traced: TracedView | None = None  # the traced pass's phases (explain_phases)
    # parts measured but not a share (withheld): part name -> WITHHELD code
    withheld: dict[str, str] = field(default_factory=dict)
    idle: IdleFinding | None = None  # the idle share judged once (idle=free across CPUs)

    @property
    def total_ns(self) -> float:
        return sum(p.ns for p in self.parts)

    @property
    def variant(self) -> str:
        params = _params_text(self.params)
        return f"{self.probe} {params}" if self.params else f"{self.probe} (no parameters)"


@dataclass
class Explained:
    run_id: str | None
    explanations: list[Explanation]
    fork: ForkScaling | None
    bare_syscall_ns: float | None
    unexplained: list[Unexplained] = field(default_factory=list)  # figures left out, and why
    # What a seccomp filter adds, where the run measured the axis (seccomp_cost).
    seccomp: list[FilterCost] = field(default_factory=list)


# ---- helpers ---------------------------------------------------------------------------
def _median(record: Result) -> float | None:
    return record.median


def _baseline(record: Result) -> float | None:
    baseline = record.block("baseline")
    summary = baseline.get("summary") or {}
    if summary.get("median") is not None:
        return float(summary["median"])
    if baseline.get("value") is not None:
        return float(baseline["value"])
    return None


def _corrected(record: Result) -> float | None:
    median = _median(record)
    if median is None:
        return None
    base = _baseline(record)
    return median - base if base is not None else median


def _measured(record: Result) -> bool:
    return record.verdict.status in MEASURED and _median(record) is not None


def term(coefficient: float, record: Result, which: str = MEDIAN) -> Term:
    return (coefficient, (record.probe, params_key(dict(record.params))), which)


def _corrected_terms(record: Result, sign: float) -> list[Term]:
    """The terms of ``_corrected``: the median, less the baseline where there is one."""
    terms = [term(sign, record)]
    if _baseline(record) is not None:
        terms.append(term(-sign, record, BASELINE))
    return terms


def _variant(probe: str, params: Mapping[str, Any], *, without: Iterable[str] = ()) -> tuple:
    skip = set(without)
    return (probe, tuple(sorted((k, str(v)) for k, v in params.items() if k not in skip)))


def _key(record: Result, *, without: Iterable[str] = ()) -> tuple:
    return _variant(record.probe, record.params, without=without)


def _params_text(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={_fmt_value(v)}" for k, v in sorted(params.items())) or "-"


def _fmt_value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _is_switch(record: Result) -> bool:
    return record.family == "switch" and record.unit == "ns"


# ---- the decomposition -------------------------------------------------------------------
def explain(
    results: Sequence[Result | Mapping[str, Any]], run_id: str | None = None, *, fork: bool = True
) -> Explained:
    """Decomposes every measured switch figure of one run's results (records as
    written are read into their type here). FORK=False leaves out the fork fit
    (the summary never shows it; scipy fits it)."""
    run = typed(results)
    by_key = {_key(r): r for r in run if _measured(r)}
    bare = next((r for r in run if r.probe == bare_syscall() and _measured(r)), None)
    ring_slopes = _ring_slopes(run)

    explanations: list[Explanation] = []
    unexplained: list[Unexplained] = []
    for r in run:
        if r.family == "uswitch" and _measured(r):
            explanations.append(_user_level(r, by_key))
        if not _is_switch(r):
            continue
        if not _measured(r):
            unexplained.append(Unexplained(r.probe, _params_text(r.params), r.verdict.status))
            continue
        explanations.append(_explain_one(r, by_key, bare, ring_slopes))
    return Explained(
        run_id=run_id,
        explanations=explanations,
        fork=_fork(run) if fork else None,
        bare_syscall_ns=_median(bare) if bare else None,
        unexplained=unexplained,
        seccomp=filter_costs(run),
    )


def _user_level(r: Result, by_key: dict[tuple, Result]) -> Explanation:
    """A user-level switch split along its chain of figures (analysis.explain.user_switch)."""
    chain, words, gaps = chain_parts(r, lambda probe, params: by_key.get(_variant(probe, params)))
    parts = [Part(p.name, p.ns, Source(CHAIN_STEP, figures=p.figures)) for p in chain] or [
        Part(REST_USER, _median(r) or 0.0, Source(CHAIN_WHOLE, gap=gaps[0]))
    ]
    missing = [Missing("", CHAIN, gap=gap) for gap in (gaps[1:] if not chain else gaps)]
    return Explanation(
        probe=r.probe,
        params=dict(r.params),
        median_ns=_median(r) or 0.0,
        status=r.verdict.status,
        parts=parts,
        not_separated=missing,
        not_explained=[NotExplained(WITHHELD, w.part, withheld=w) for w in words],
    )


@dataclass
class _Work:
    """What the decomposition of one switch figure gathers, part by part."""

    record: Result
    median: float
    parts: list[Part] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    used: list[Result] = field(default_factory=list)  # every record a part uses
    unlike: list[NotExplained] = field(default_factory=list)  # differences of unlike placements
    # part -> (shares' code, why it is not a share)
    withheld: dict[str, tuple[str, NotExplained]] = field(default_factory=dict)
    held: Result | None = None  # the idle=held twin of an idle=free cross-CPU figure

    @property
    def params(self) -> Mapping[str, ParamValue]:
        return self.record.params


def _explain_one(
    r: Result,
    by_key: dict[tuple, Result],
    bare: Result | None,
    ring_slopes: dict[tuple, tuple[float, int]],
) -> Explanation:
    median = _median(r)
    assert median is not None
    work = _Work(r, median, used=[r])
    entry = _take(work, _entry_part(r, bare))
    _take(work, _own_work_part(r, entry))
    _take(work, _address_space_part(r, by_key))
    idle_part = _idle_part(r, median, by_key)
    _take(work, idle_part)
    work.held = idle_part.used[0] if isinstance(idle_part, _Paired) else None
    _take(work, _cache_part(r, ring_slopes))
    traced = traced_view(r)
    _idle_events_check(work, traced)
    not_explained = _rest_part(work)
    idle = None
    if work.held is not None:
        if traced is not None and traced.status == "ok":
            traced.idle = compare_idle(r, work.held, traced)
        idle = idle_finding(work, traced)
    if traced is None or traced.status != "ok":
        work.missing.append(Missing(INSIDE_REST, REST_INSIDE, "" if traced else TRACE_HINT))
    return Explanation(
        probe=r.probe,
        params=dict(work.params),
        median_ns=median,
        status=r.verdict.status,
        parts=work.parts,
        not_separated=work.missing,
        switches_per_round_trip=_switch_kinds(r),
        notes=_interference_notes(work.used),
        not_explained=not_explained,
        traced=traced,
        withheld={name: code for name, (code, _) in work.withheld.items()},
        idle=idle,
    )


def _switch_kinds(r: Result) -> dict[str, float] | None:
    """Voluntary and involuntary switches per round trip, where the record counted them."""
    derived = r.block("derived")
    if "voluntary_switches_per_round_trip" not in derived:
        return None
    return {
        "voluntary": float(derived["voluntary_switches_per_round_trip"]),
        "involuntary": float(derived.get("involuntary_switches_per_round_trip", 0.0)),
    }


def _take(work: _Work, found: Part | _Paired | Missing | NotExplained | None) -> Part | None:
    """A part measured joins the parts (a difference of two records: with the
    records it uses, and why it is not a share), a part not separated the
    missing ones, a difference of unlike placements the unlike ones."""
    if isinstance(found, _Paired):
        work.used += found.used
        if found.withheld is not None:
            work.withheld[found.part.name] = found.withheld
        found = found.part
    if isinstance(found, Part):
        work.parts.append(found)
        return found
    if isinstance(found, NotExplained):
        work.unlike.append(found)
    elif found is not None:
        work.missing.append(found)
    return None


def _entry_part(r: Result, bare: Result | None) -> Part | Missing:
    """Kernel entry/exit of the system calls the switch makes."""
    calls = r.block("derived").get("syscalls_per_op")
    if calls is None:
        return Missing(KERNEL_ENTRY, ENTRY_TIMING)
    if bare is None:
        return Missing(KERNEL_ENTRY, NO_BARE, bare_syscall())
    bare_ns = _median(bare)
    assert bare_ns is not None
    return Part(
        "kernel entry/exit",
        float(calls) * bare_ns,
        Source(CALLS_PRICED, (float(calls), bare_ns), bare_syscall()),
        [term(float(calls), bare)],
    )


def _own_work_part(r: Result, entry: Part | None) -> Part | Missing:
    """The primitive's own work: its baseline, less the entry/exit priced above."""
    base = _baseline(r)
    if base is None:
        return Missing("the primitive's own work", NO_BASELINE)
    name = (r.block("baseline").get("name") or "baseline").split(" (")[0]
    if entry is None:
        return Part(
            "primitive's own work, its system calls included",
            base,
            Source(WHOLE_BASELINE, name=name),
            [term(1.0, r, BASELINE)],
        )
    return Part(
        "primitive's own work",
        base - entry.ns,
        Source(BASELINE_LESS_ENTRY, (base, entry.ns), name),
        [term(1.0, r, BASELINE), *[(-c, k, w) for c, k, w in entry.terms]],
    )


@dataclass(frozen=True)
class _Paired:
    """A part that is the difference of two records: the part, the records it
    uses besides the figure explained, and why it is not a share (None: it is)."""

    part: Part
    used: tuple[Result, ...]
    withheld: tuple[str, NotExplained] | None = None


def _address_space_part(
    r: Result, by_key: dict[tuple, Result]
) -> _Paired | Missing | NotExplained | None:
    """Processes against threads, all else equal (None: not a processes figure;
    NotExplained: the two ran on unlike CPUs). For a cross-CPU figure whose
    idle share is measured, the pair is taken with idle held, so the two parts
    do not overlap."""
    params = r.params
    if params.get("between") != "processes":
        if params.get("between") is None and has_role(r.probe, "explain:ring"):
            return Missing(ADDRESS_SPACE, RING_PROCESSES)
        return None
    mine_record, basis = r, params
    if params.get("cpus") == "cross" and params.get("idle") == "free":
        held_params = {**params, "idle": "held"}
        held_pair = by_key.get(_variant(r.probe, held_params))
        held_twin = by_key.get(_variant(r.probe, {**held_params, "between": "threads"}))
        if held_pair is not None and held_twin is not None:
            mine_record, basis = held_pair, held_params
    twin = by_key.get(_variant(r.probe, {**basis, "between": "threads"}))
    if twin is None:
        return Missing(ADDRESS_SPACE, NO_THREAD_TWIN)
    mine, theirs = _corrected(mine_record), _corrected(twin)
    placed = (measured_placement(mine_record), measured_placement(twin))
    if None not in placed and placed[0] != placed[1]:
        return NotExplained(UNLIKE_PLACEMENT, ADDRESS_SPACE, names=(str(placed[0]), str(placed[1])))
    if mine is None or theirs is None:
        return Missing(ADDRESS_SPACE, NO_THREAD_TWIN)
    part = Part(
        ADDRESS_SPACE,
        mine - theirs,
        Source(PROCESSES_LESS_THREADS, (mine, theirs), held=basis is not params),
        [*_corrected_terms(mine_record, 1.0), *_corrected_terms(twin, -1.0)],
    )
    shifts = (_baseline(mine_record), _baseline(twin))
    code = share_withheld(mine_record, twin, shifts=shifts)
    if code is None:
        return _Paired(part, (mine_record, twin))
    sides = (
        ("corrected between=processes", mine_record, mine),
        ("between=threads", twin, theirs),
    )
    why = withheld(code, part.name, part.ns, sides, shifts=shifts)
    return _Paired(
        part, (mine_record, twin), (code, NotExplained(WITHHELD, part.name, withheld=why))
    )


def _idle_part(r: Result, median: float, by_key: dict[tuple, Result]) -> _Paired | Missing | None:
    """Waking an idle CPU: idle=free against idle=held, all else equal (None:
    not an idle=free cross-CPU figure). The held record is the part's one used."""
    params = r.params
    if not (params.get("cpus") == "cross" and params.get("idle") == "free"):
        return None
    held = by_key.get(_variant(r.probe, {**params, "idle": "held"}))
    if held is None:
        return Missing(IDLE_PART, NO_HELD)
    held_median = _median(held)
    assert held_median is not None
    part = Part(
        IDLE_PART,
        median - held_median,
        Source(FREE_LESS_HELD, (median, held_median)),
        [term(1.0, r), term(-1.0, held)],
    )
    code = share_withheld(r, held, idle=True)
    if code is None:
        return _Paired(part, (held,))
    sides = (("idle=free", r, median), ("idle=held", held, held_median))
    why = withheld(code, part.name, part.ns, sides)
    return _Paired(part, (held,), (code, NotExplained(WITHHELD, part.name, withheld=why)))


def _cache_part(r: Result, ring_slopes: dict[tuple, tuple[float, int]]) -> Part | Missing | None:
    """Cache refill for a ring hop with a working set (None: not a ring with one)."""
    size = r.params.get("size_kib")
    if not has_role(r.probe, "explain:ring") or size is None or float(size) <= 0:
        return None
    fit = ring_slopes.get(_key(r, without=("size_kib",)))
    if fit is None:
        return Missing("cache refill", FEW_SIZES)
    slope, n = fit
    return Part(
        "cache refill of the working set",
        slope * float(size),
        Source(RING_SLOPE, (slope, n, float(size))),
    )


def _rest_part(work: _Work) -> list[NotExplained]:
    """The parts that stand, and the rest (the median less them); returns what is
    not explained, and why."""
    not_explained = [why for _, why in work.withheld.values()]
    parts = [part for part in work.parts if part.name not in work.withheld]
    parts, standing = _standing(parts, work.median, _switched_too_little(work.record))
    not_explained += standing + work.unlike
    rest = work.median - sum(p.ns for p in parts)
    rest_terms: list[Term] = [term(1.0, work.record)]
    for part in parts:
        rest_terms += [(-c, k, w) for c, k, w in part.terms]
    if any(not part.terms for part in parts):
        rest_terms = []  # a part that is not a sum of medians: the rest is not either
    if rest >= 0:
        source = Source(MEDIAN_LESS_PARTS if parts else WHOLE_MEDIAN)
        parts.append(Part(REST, rest, source, rest_terms))
    else:
        not_explained.append(NotExplained(PARTS_EXCEED, values=(work.median - rest, work.median)))
    work.parts = parts
    return not_explained


# ---- the idle share, judged once ------------------------------------------------------
# How the idle share of an idle=free cross-CPU figure was judged
# (``IdleFinding.verdict``), from idle=free − idle=held (the subtraction) and,
# where both figures were traced, the kernel's events; views word them.
IDLE_SHARE = "share"  # the subtraction stands as a share; no traced pass to check it
IDLE_AGREE = "agree"  # it stands and the events' figure lies inside its interval
IDLE_DISAGREE = "disagree"  # it stands, the events' figure outside its interval
IDLE_NOT_IDLE = "not idle"  # the traced switches had no idle exit: the target was not idle
IDLE_EVENTS = "events"  # the subtraction cannot say; the events saw idle exits
IDLE_UNKNOWN = "unknown"  # the subtraction cannot say, and no traced pass to tell
SUBTRACTION, EVENTS = "subtraction", "events"  # the method a finding trusts


@dataclass(frozen=True)
class IdleFinding:
    """The idle share of one idle=free cross-CPU figure, both ways, and which
    way is trusted (``trusted``: SUBTRACTION, EVENTS or None: neither can say)."""

    free_ns: float
    held_ns: float
    difference_ns: float  # idle=free − idle=held
    low_ns: float | None  # its interval, from the two medians' intervals
    high_ns: float | None
    withheld: str | None  # why it is not a share (shares' codes, NOT_IDLE, BELOW_ZERO)
    verdict: str
    trusted: str | None
    switches: int | None = None  # switches the traced pass followed (None: not traced)
    exits: int | None = None  # of them, with an idle exit (None: idle events not recorded)
    exit_ns: float | None = None  # per switch, the phases ending at the idle exit (scaled)
    events_ns: float | None = None  # waking → switch-in, free less held, as traced

    @property
    def spans_zero(self) -> bool:
        return self.low_ns is None or self.high_ns is None or self.low_ns <= 0 <= self.high_ns


NOT_IDLE = "not_idle"  # withheld: the traced switches saw no idle exit
BELOW_ZERO = "below_zero"  # withheld: idle=held measured higher than idle=free


def _idle_exits(traced: TracedView | None) -> int | None:
    """Switches of the traced pass with an idle exit; None where the pass did not
    record idle events (or is not there)."""
    if traced is None or traced.status != "ok" or not traced.idle_events:
        return None
    return traced.idle_exit_switches if traced.idle_exit_ns is not None else 0


def _no_idle_exit(traced: TracedView | None) -> bool:
    """The traced pass recorded idle events and no phase ends at an idle exit."""
    return _idle_exits(traced) == 0 and traced is not None and traced.idle_exit_ns is None


def _idle_events_check(work: _Work, traced: TracedView | None) -> None:
    """The events outrank the subtraction where they saw the target CPU never idle:
    then what holding idle saved is not an idle exit, and not a share."""
    if work.held is None or IDLE_PART in work.withheld or not _no_idle_exit(traced):
        return
    assert traced is not None
    part = next(p for p in work.parts if p.name == IDLE_PART)
    why = NotExplained(NO_IDLE_EXIT, IDLE_PART, (part.ns, traced.matched))
    work.withheld[IDLE_PART] = (NOT_IDLE, why)


def idle_finding(work: _Work, traced: TracedView | None) -> IdleFinding:
    """The idle share, judged once (the module's IDLE_* codes)."""
    held = work.held
    assert held is not None
    held_ns = _median(held) or 0.0
    assert work.record.summary is not None and held.summary is not None  # both measured
    free_ci, held_ci = work.record.summary.median_ci, held.summary.median_ci
    low = high = None
    if free_ci and held_ci:
        low = float(free_ci["low"]) - float(held_ci["high"])
        high = float(free_ci["high"]) - float(held_ci["low"])
    stands = any(p.name == IDLE_PART for p in work.parts)
    withheld = None if stands else work.withheld.get(IDLE_PART, (BELOW_ZERO,))[0]
    exits = _idle_exits(traced)
    events = traced.idle.events_ns if traced is not None and traced.idle else None
    if withheld == NOT_IDLE or _no_idle_exit(traced):
        verdict, trusted = IDLE_NOT_IDLE, EVENTS
    elif withheld == NO_IDLE_DRIVER:
        verdict, trusted = NO_IDLE_DRIVER, None
    elif stands and events is None:
        verdict, trusted = IDLE_SHARE, SUBTRACTION
    elif stands:
        inside = low is not None and high is not None and low <= events <= high
        verdict, trusted = (IDLE_AGREE if inside else IDLE_DISAGREE), SUBTRACTION
    elif exits is not None:
        verdict, trusted = IDLE_EVENTS, EVENTS
    else:
        verdict, trusted = IDLE_UNKNOWN, None
    return IdleFinding(
        free_ns=work.median,
        held_ns=held_ns,
        difference_ns=work.median - held_ns,
        low_ns=low,
        high_ns=high,
        withheld=withheld,
        verdict=verdict,
        trusted=trusted,
        switches=traced.matched if traced is not None and traced.status == "ok" else None,
        exits=exits,
        exit_ns=traced.idle_exit_ns if traced is not None and traced.status == "ok" else None,
        events_ns=events,
    )


def _switched_too_little(record: Result) -> bool:
    return record.verdict.has("too_few_switches")


def _standing(
    parts: list[Part], median: float, too_few: bool
) -> tuple[list[Part], list[NotExplained]]:
    """The parts that are a share of the median (0 <= part <= median), and the
    others with why: below zero, or above the whole figure."""
    kept, others = [], []
    for part in parts:
        if part.ns < 0:
            others.append(NotExplained(BELOW_ZERO_PART, part.name, (part.ns,), source=part.source))
        elif part.ns > median:
            values = (part.ns, median)
            others.append(
                NotExplained(ABOVE_MEDIAN, part.name, values, source=part.source, too_few=too_few)
            )
        else:
            kept.append(part)
    return kept, others


def _interference_notes(used: list[Result]) -> list[SlowedNote]:
    """Where the host slowed the CPU while a record the parts use was measured:
    its difference from the others then carries that, not only the mechanism."""
    notes: list[SlowedNote] = []
    seen = set()
    for rec in used:
        inter = rec.block("interference")
        key = (rec.probe, _params_text(rec.params))
        if key in seen or not inter.get("slowed"):
            continue
        seen.add(key)
        kept = inter["attempts"][inter["kept"]]
        notes.append(
            SlowedNote(key[0], key[1], float(kept["reference_ratio"]), len(inter["attempts"]))
        )
    return notes


def _ring_slopes(results: Sequence[Result]) -> dict[tuple, tuple[float, int]]:
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for r in results:
        if not has_role(r.probe, "explain:ring") or not _measured(r) or "size_kib" not in r.params:
            continue
        corrected = _corrected(r)
        assert corrected is not None
        key = _key(r, without=("size_kib",))
        groups.setdefault(key, []).append((float(r.params["size_kib"]), corrected))
    slopes = {}
    for key, points in groups.items():
        if len({x for x, _ in points}) >= 2:
            import numpy as np  # numpy's least squares: scipy takes a second to import

            slope = np.polyfit([x for x, _ in points], [y for _, y in points], 1)[0]
            slopes[key] = (float(slope), len(points))
    return slopes


def _fork(results: Sequence[Result]) -> ForkScaling | None:
    points = sorted(
        (float(r.params["parent_mib"]), float(_median(r) or 0))
        for r in results
        if has_role(r.probe, "explain:fork_size") and _measured(r) and "parent_mib" in r.params
    )
    minimal = next(
        (
            _median(r)
            for r in results
            if has_role(r.probe, "explain:fork_minimal_parent") and _measured(r)
        ),
        None,
    )
    return fit_fork(points, minimal)
