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

* ``chain_parts(record, find)``: (parts as (name, ns, source), not
  explained in words, not separated in words); ``find(probe, params)`` gives
  the run's measured record of that variant, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxbench import units
from ctxbench.analysis.explain.shares import Withheld, share_withheld, withheld
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

Stage = tuple[str, str, dict[str, Any] | None]  # part name, probe, params (None: the figure)


def _stages(record: dict[str, Any]) -> list[Stage] | None:
    """The chain of figures up to RECORD, smallest first; None: it cannot be split."""
    probe, params = record["probe"], record.get("params", {})
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


# Why a switch is not split, by the role of its probe (records.roles).
WHOLE = {
    "uswitch:floor": "the own asm switch is the floor: the callee-saved registers and the "
    "stack pointer saved and restored, nothing smaller measured apart",
    "uswitch:compiled": "a C++20 coroutine's transfer is compiled into the coroutines' "
    "code: no save/restore of its own is measured apart, so it is not split",
}


NOTHING_BELOW = (
    "no smaller figure of its chain was measured in this run, so no step of it is separated"
)


def _median(record: dict[str, Any]) -> float:
    return float(record["summary"]["median"])


def chain_parts(
    record: dict[str, Any], find: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> tuple[list[tuple[str, float, str]], list[str], list[str]]:
    """RECORD's parts along its chain (name, ns, the figures it comes from),
    what is not a share (in words), and what cannot be split (in words)."""
    stages = _stages(record)
    if stages is None:
        words = next(
            (w for role, w in WHOLE.items() if has_role(record["probe"], role)),
            "no smaller figure of this switch is measured apart",
        )
        return [], [], [words]
    figures: list[tuple[str, dict[str, Any] | None]] = []
    missing = []
    for name, probe, params in stages[:-1]:
        found = find(probe, params or {})
        if found is None:
            missing.append(f"{name}: {units.params(params or {})} of {probe} not measured here")
        figures.append((name, found))
    if all(found is None for _, found in figures):
        # Nothing below the figure was measured: no step of it is separated, so
        # no part is named after one (the fiber's whole time is not its scheduler's).
        return [], [], [NOTHING_BELOW, *missing]
    figures.append((stages[-1][0], record))
    # From the figure down: keep a smaller figure only where the step to it holds;
    # a stage not measured joins the step above it.
    kept: list[tuple[str, dict[str, Any]]] = [(stages[-1][0], record)]
    not_explained: list[Withheld] = []
    pending = [stages[-1][0]]
    for name, found in reversed(figures[:-1]):
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
    parts, below = [], 0.0
    for index, (name, found) in enumerate(kept):
        ns = _median(found) - below
        source = f"{_label(found)} ({units.value(_median(found), 'ns')})"
        if index:
            source += f" - {_label(kept[index - 1][1])} ({units.value(below, 'ns')})"
        parts.append((name, ns, source))
        below = _median(found)
    return parts, not_explained, missing


def _label(record: dict[str, Any]) -> str:
    params = record.get("params") or {}
    return f"{record['probe']} {units.params(params)}" if params else record["probe"]
