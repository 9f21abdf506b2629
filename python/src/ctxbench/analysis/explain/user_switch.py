"""Where the time of a user-level switch goes, from figures of the same run.

A user-level switch (the ``uswitch`` family) is split along a chain of
figures the run measured, each containing the one before: the own assembly
switch (``uswitch.asm`` fpstate=abi fpcontrol=same: the callee-saved
registers and the stack pointer saved and restored) is the floor; the full
FP/vector state (fpstate=full) and a changed FP control word (fpcontrol=
differs) add to it; Boost.Context adds the library's own work, Boost.Fiber
its scheduler on top of Boost.Context, glibc's ucontext its own work with an
rt_sigprocmask system call. Each step is the difference of two figures, and
a share only where ``analysis.explain.shares`` says it holds; a step that does not
is named in words and the next step spans both. A C++20 coroutine's transfer
is compiled into the coroutines' code: nothing of it is measured apart.

* ``chain_parts(record, find)``: (parts as ``ChainPart``: a name, its ns
  and the figures it is the difference of; what is not a share, as
  ``Withheld``; what cannot be split, as ``ChainGap`` codes);
  ``find(probe, params)`` gives the run's measured record of that variant,
  or None. Numbers and codes: ``views.explain.explanation`` words them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ctxbench import units
from ctxbench.analysis.explain.shares import Withheld, share_withheld, withheld
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import has_role, probe_with

FLOOR = {"fpstate": "abi", "fpcontrol": "same"}
SAVE = "register save/restore (own asm switch)"
FP_STATE = "FP/vector state (XSAVE/XRSTOR)"
FP_CONTROL = "FP control reload (the control word changed)"

BOOST_CONTEXT = "Boost.Context's own work"
BOOST_BEYOND = "Boost.Context beyond the own switch"
FIBER_SCHEDULER = "the fiber scheduler's own work"
GLIBC = "glibc's own work, its rt_sigprocmask system call included"
STEPS = (SAVE, FP_STATE, FP_CONTROL, BOOST_CONTEXT, BOOST_BEYOND, FIBER_SCHEDULER, GLIBC)

Params = Mapping[str, ParamValue]
Stage = tuple[str, str, Params | None]  # part name, probe, params (None: the figure)
Find = Callable[[str, Params], Result | None]

# Why a switch, or a step of its chain, is not split (``ChainGap.code``);
# views.explain.explanation words them.
FLOOR_WHOLE = "floor"  # the own asm switch is the floor: nothing smaller measured apart
COMPILED = "compiled"  # a C++20 coroutine's transfer is compiled into the coroutines' code
NO_SMALLER = "no smaller"  # no smaller figure of this switch is measured apart
NOTHING_BELOW = "nothing below"  # no smaller figure of its chain was measured in this run
NOT_MEASURED = "not measured"  # a stage (step) of the chain: its variant not measured here

# The code of a switch not split, by the role of its probe (records.roles).
WHOLE = {"uswitch:floor": FLOOR_WHOLE, "uswitch:compiled": COMPILED}


@dataclass(frozen=True)
class ChainGap:
    """What of a user-level chain cannot be split, and why (a code); NOT_MEASURED
    names the step and the variant (probe, params) the run lacks."""

    code: str
    step: str = ""
    probe: str = ""
    params: tuple[tuple[str, ParamValue], ...] = ()


@dataclass(frozen=True)
class ChainFigure:
    """One figure of a chain: its variant and its median."""

    probe: str
    params: tuple[tuple[str, ParamValue], ...]
    ns: float


@dataclass(frozen=True)
class ChainPart:
    """A step of the chain: the figure it ends at, less the one below (if any)."""

    name: str
    ns: float
    figures: tuple[ChainFigure, ...]  # (the figure,) or (the figure, the one below)


def _stages(record: Result) -> list[Stage] | None:
    """The chain of figures up to RECORD, smallest first; None: it cannot be split."""
    probe, params = record.probe, record.params
    asm = probe_with("uswitch:floor")
    floor: Stage = (SAVE, asm, FLOOR)
    if probe == asm:
        full = params.get("fpstate") == "full"
        differs = params.get("fpcontrol") == "differs"
        if not full and not differs:
            return None
        chain = [floor]
        if full:
            chain.append((FP_STATE, asm, {"fpstate": "full", "fpcontrol": "same"}))
        if differs:
            chain.append((FP_CONTROL, asm, dict(params)))
        return chain
    if has_role(probe, "uswitch:boost_context"):
        return [floor, (BOOST_CONTEXT, probe, dict(params))]
    if has_role(probe, "uswitch:on_boost_context"):
        context = probe_with("uswitch:boost_context")
        return [
            floor,
            (BOOST_BEYOND, context, {"api": "fiber"}),
            (FIBER_SCHEDULER, probe, dict(params)),
        ]
    if has_role(probe, "uswitch:ucontext"):
        return [floor, (GLIBC, probe, {})]
    return None


def _median(record: Result) -> float:
    assert record.median is not None  # find gives measured records only
    return record.median


def _figure(record: Result) -> ChainFigure:
    return ChainFigure(record.probe, tuple(record.params.items()), _median(record))


def chain_parts(
    record: Result, find: Find
) -> tuple[list[ChainPart], list[Withheld], list[ChainGap]]:
    """RECORD's parts along its chain (name, ns, the figures it comes from),
    what is not a share, and what cannot be split (codes)."""
    stages = _stages(record)
    if stages is None:
        code = next((c for role, c in WHOLE.items() if has_role(record.probe, role)), NO_SMALLER)
        return [], [], [ChainGap(code)]
    figures: list[tuple[str, Result | None]] = []
    missing = []
    for name, probe, params in stages[:-1]:
        found = find(probe, params or {})
        if found is None:
            missing.append(ChainGap(NOT_MEASURED, name, probe, tuple((params or {}).items())))
        figures.append((name, found))
    if all(found is None for _, found in figures):
        # Nothing below the figure was measured: no step of it is separated, so
        # no part is named after one (the fiber's whole time is not its scheduler's).
        return [], [], [ChainGap(NOTHING_BELOW), *missing]
    kept, not_explained = _kept(record, stages[-1][0], figures)
    parts, below = [], None
    for name, found in kept:
        mine = _figure(found)
        ns = mine.ns - (below.ns if below else 0.0)
        parts.append(ChainPart(name, ns, (mine, below) if below else (mine,)))
        below = mine
    return parts, not_explained, missing


def _kept(
    record: Result, top: str, figures: list[tuple[str, Result | None]]
) -> tuple[list[tuple[str, Result]], list[Withheld]]:
    """From the figure down: keep a smaller figure only where the step to it
    holds; a stage not measured, or a step that is not a share, joins the
    step above it. Smallest first, with what is not a share."""
    kept: list[tuple[str, Result]] = [(top, record)]
    not_explained: list[Withheld] = []
    pending = [top]
    for name, found in reversed(figures):
        if found is None:
            pending.append(name)
            continue
        upper = kept[-1][1]
        code = share_withheld(upper, found)
        if code is None:
            kept[-1] = (" + ".join(reversed(pending)), upper)
            kept.append((name, found))
            pending = [name]
        else:
            step = _median(upper) - _median(found)
            sides = (
                (_label(upper), upper, _median(upper)),
                (_label(found), found, _median(found)),
            )
            not_explained.append(withheld(code, " + ".join(pending), step, sides))
            pending.append(name)
    kept[-1] = (" + ".join(reversed(pending)), kept[-1][1])
    kept.reverse()
    return kept, not_explained


def _label(record: Result) -> str:
    """The variant as a Withheld figure's label: 'probe k=v ...' (a name, not a sentence)."""
    return variant_label(record.probe, record.params)


def variant_label(probe: str, params: Params) -> str:
    return f"{probe} {units.params(dict(params))}" if params else probe
