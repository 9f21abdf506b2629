"""The lab's arithmetic: kernel counts to figures per round trip, and their parts.

From the kernel's counts to figures per round trip, and the split of the
full handler's round trip into parts, in instructions and in cycles.

Both counters are treated alike: the timer pair (the counter reads with
nothing between them) is subtracted from every loop, the loop without the
ecall (the baseline) from the loop with it, and what remains, divided by the
round trips, is one ecall round trip. On Spike and QEMU the two counters
agree; on an rvsim model ``cycles`` is the model's cycle count.

The split (``split``) starts from the bare trap, the full handler's round
trip of an unassigned number: everything a system call pays before it does
anything of its own. A call's round trip is the bare trap plus its call
logic; the bare trap is entry/exit, save/restore and dispatch. Each part is
a difference of two measured round trips, so every part is at least zero
and the parts add up to the round trip; where a difference would come out
negative (a cycle model overlaps work, so differences need not add), the two
parts it would separate are given together and a note says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.parse import SimOutput

COUNTERS = ("instret", "cycles")
BARE_TRAP = "enosys"  # the unassigned number: the trap with no call logic
PART_NAMES = {
    "entry_exit": "entry/exit",
    "save_restore": "save/restore",
    "dispatch": "dispatch",
    "save_restore_dispatch": "save/restore and dispatch",
    "call_logic": "call logic",
    "round_trip": "the whole round trip",
}
# How each part is computed, in words (explain and the report say it).
PART_SOURCES = {
    "entry_exit": "the empty handler's round trip (the trap, stepping mepc, mret)",
    "save_restore": "full - minimal handler (bare trap), per load/store it skips, times the "
    "full handler's loads/stores",
    "dispatch": "the rest of the bare trap: stack switch, mcause, the C dispatcher, the "
    "table call, sys_ni_syscall",
    "save_restore_dispatch": "the bare trap less entry/exit",
    "call_logic": "this call's round trip less the bare trap's (an unassigned number)",
    "round_trip": "the measured round trip, not separable here",
}

Corrected = Mapping[tuple[str, str], float]  # (variant, call) -> per round trip
Shape = Mapping[str, Mapping[str, int]]  # variant -> instructions, loads_stores


@dataclass
class Figures:
    """One (variant, call) on one target, per round trip, for one counter."""

    samples: list[float]  # timer-corrected, before the baseline
    baseline: list[float]  # the loop without the ecall, per iteration
    timer: float  # the counter-read pair's own count
    round_trips: int

    @property
    def corrected(self) -> float:
        return statistics.median(self.samples) - statistics.median(self.baseline)


def figures(out: SimOutput, variant: str, call: str, counter: str = "instret") -> Figures:
    def count(c) -> int:
        return c.instret if counter == "instret" else c.cycles

    timer = statistics.median(count(t) for t in out.samples[(variant, "timer")])
    loop = out.samples[(variant, "loop")]
    calls = out.samples[(variant, call)]
    return Figures(
        samples=[(count(c) - timer) / c.n for c in calls],
        baseline=[(count(b) - timer) / b.n for b in loop],
        timer=timer,
        round_trips=calls[0].n,
    )


def single_shot(out: SimOutput, variant: str, counter: str = "instret") -> dict[str, float] | None:
    """The lone `rdcycle; ecall; rdcycle` getpid: as read, and less the timer pair."""
    single = out.single.get((variant, "getpid"))
    if single is None:
        return None
    raw = single.instret if counter == "instret" else single.cycles
    timer = statistics.median(
        (t.instret if counter == "instret" else t.cycles) for t in out.samples[(variant, "timer")]
    )
    return {"raw": raw, "less_timer": raw - timer}


def corrected_of(out: SimOutput, counter: str) -> dict[tuple[str, str], float]:
    """Every (variant, call)'s round trip in one counter."""
    return {(v, c): figures(out, v, c, counter).corrected for v in VARIANTS for c in CALLS}


@dataclass(frozen=True)
class Split:
    """One call's full-handler round trip in parts: each part >= 0, and the
    parts (in PART_NAMES order) add up to ``total``."""

    call: str
    total: float
    parts: dict[str, float]
    notes: tuple[str, ...] = ()
    per_access: float | None = None  # one register load/store, where measured

    def share(self, part: str) -> float:
        return self.parts[part] / self.total if self.total > 0 else 0.0

    @property
    def ranked(self) -> list[str]:
        """The parts, largest first (call logic of the bare trap, 0, last)."""
        return sorted(self.parts, key=lambda p: self.parts[p], reverse=True)


def split(corrected: Corrected, shape: Shape | None, call: str, unit: str = "") -> Split:
    """Split the full handler's round trip of CALL from the bare trap:

      call logic    this call minus the bare trap (the unassigned number);
      entry/exit    the empty handler's round trip: the trap, stepping mepc,
                    mret. Nothing less can return past an ecall;
      save/restore  full - minimal on the bare trap is the cost of the
                    registers the minimal handler skips; divided by how many
                    loads/stores that is (SHAPE, from the disassembly) it
                    gives the cost of one, times the full handler's;
      dispatch      the rest of the bare trap.

    Where a step would leave a negative part, the parts it would separate
    stay together and a note names the two figures that disagree."""
    total = corrected[("full", call)]
    bare = corrected[("full", BARE_TRAP)]
    entry = corrected[("empty", BARE_TRAP)]
    notes: list[str] = []
    parts: dict[str, float] = {}
    in_unit = f" {unit}" if unit else ""

    base = bare
    logic: float | None = total - bare
    if logic < 0:
        notes.append(
            f"call logic not separated: {call} ({number(total)}{in_unit}) measured below the "
            f"bare trap ({number(bare)}), so its round trip is split on its own"
        )
        base, logic = total, None
    if entry > base or entry < 0:
        notes.append(
            f"not separated: the empty handler ({number(entry)}{in_unit}) measured higher than "
            f"the full one ({number(base)}) in this run"
        )
        return Split(call, total, _ordered({"round_trip": base, "call_logic": logic}), tuple(notes))
    rest = base - entry
    per_access = None
    extra = shape["full"]["loads_stores"] - shape["minimal"]["loads_stores"] if shape else 0
    if shape and extra > 0:
        per_access = (bare - corrected[("minimal", BARE_TRAP)]) / extra
        save = per_access * shape["full"]["loads_stores"]
        if 0 <= save <= rest:
            parts.update(entry_exit=entry, save_restore=save, dispatch=rest - save)
        else:
            notes.append(
                "save/restore and dispatch not separated: full - minimal gives "
                f"{number(per_access)}{in_unit} per load/store, {number(save)} for the full "
                f"handler's {shape['full']['loads_stores']}, "
                + ("below zero" if save < 0 else f"more than the {number(rest)} the bare trap")
                + " leaves after entry/exit"
            )
            parts.update(entry_exit=entry, save_restore_dispatch=rest)
    else:
        notes.append(
            "save/restore and dispatch not separated: the handlers' loads and stores are "
            "not in these records"
        )
        parts.update(entry_exit=entry, save_restore_dispatch=rest)
    parts["call_logic"] = logic  # type: ignore[assignment]
    return Split(call, total, _ordered(parts), tuple(notes), per_access)


def _ordered(parts: Mapping[str, float | None]) -> dict[str, float]:
    return {name: parts[name] for name in PART_NAMES if parts.get(name) is not None}  # type: ignore[misc]


def decompose(out: SimOutput, shape: Shape, counter: str = "instret") -> dict[str, Split]:
    """Every call's split, from one simulator run's counts."""
    corrected = corrected_of(out, counter)
    unit = "cycles" if counter == "cycles" else "instructions"
    return {call: split(corrected, shape, call, unit) for call in CALLS}


def number(value: float) -> str:
    """A count as an integer when it is one (instruction counts always are)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"
