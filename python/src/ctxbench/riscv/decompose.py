"""From the kernel's counts to figures per round trip, and the split of the
full handler's round trip into parts, in instructions and in cycles; the
answer in words.

Both counters are treated alike: the timer pair (the counter reads with
nothing between them) is subtracted from every loop, the loop without the
ecall (the baseline) from the loop with it, and what remains, divided by the
round trips, is one ecall round trip. On Spike and QEMU the two counters
agree; on an rvsim model ``cycles`` is the model's cycle count.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.parse import SimOutput

COUNTERS = ("instret", "cycles")
PART_NAMES = {
    "entry_exit": "entry/exit",
    "save_restore": "save/restore",
    "dispatch": "dispatch",
    "call_logic": "call logic",
}


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


def decompose(
    out: SimOutput, shape: dict[str, dict[str, int]], counter: str = "instret"
) -> dict[str, dict[str, float]]:
    """Split each call's full-save round trip into four parts, from the
    measured differences between handlers:

      entry/exit    the empty handler's round trip: the trap, stepping mepc,
                    mret. Nothing less can return past an ecall.
      save/restore  full - minimal is the cost of the registers the minimal
                    handler skips; divided by how many loads/stores that is
                    (counted in the disassembly) it gives the cost of one,
                    times the full handler's loads/stores.
      dispatch      the rest of the bare trap (an unassigned number, which
                    goes through the same table to sys_ni_syscall): stack
                    switch, mcause, the C dispatcher, the table call.
      call logic    this call minus the unassigned number.
    The parts add up to the full handler's round trip, in either counter.
    """
    corrected = {(v, c): figures(out, v, c, counter).corrected for v in VARIANTS for c in CALLS}
    extra_accesses = shape["full"]["loads_stores"] - shape["minimal"]["loads_stores"]
    parts = {}
    for call in CALLS:
        total = corrected[("full", call)]
        entry_exit = corrected[("empty", call)]
        per_access = (total - corrected[("minimal", call)]) / extra_accesses
        save_restore = per_access * shape["full"]["loads_stores"]
        call_logic = total - corrected[("full", "enosys")]
        dispatch = total - entry_exit - save_restore - call_logic
        parts[call] = {
            "total": total,
            "entry_exit": entry_exit,
            "save_restore": save_restore,
            "dispatch": dispatch,
            "call_logic": call_logic,
            "per_access": per_access,
            "beyond_empty_handler": entry_exit - shape["empty"]["instructions"],
            "minimal": corrected[("minimal", call)],
            "smode": corrected[("smode", call)],
            "fpu": corrected[("fpu", call)],
        }
    return parts


def number(value: float) -> str:
    """A count as an integer when it is one (they always are in these simulators)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _share(part: float, total: float) -> str:
    return f"{100 * part / total:.0f}%" if total else "-"


def explain(name: str, call: str, parts: dict[str, float], unit: str) -> str:
    """Which part dominates this call's round trip, by how much, in words."""
    total = parts["total"]
    ranked = sorted(PART_NAMES, key=lambda p: parts[p], reverse=True)
    top, second = ranked[0], ranked[1]
    words = (
        f"{call} on {name}: {number(total)} {unit} per round trip; "
        f"{PART_NAMES[top]} dominates with {number(parts[top])} ({_share(parts[top], total)})"
    )
    if parts[second] > 0:
        words += (
            f", {parts[top] / parts[second]:.1f}x the next part, "
            f"{PART_NAMES[second]} ({number(parts[second])})"
        )
    logic = parts["call_logic"]
    if call == "enosys":
        words += "; there is no call logic (sys_ni_syscall counts as dispatch)"
    elif top != "call_logic" and logic > 0:
        words += (
            f", and {parts[top] / logic:.1f}x the call's own logic "
            f"({number(logic)}, {_share(logic, total)})"
        )
    return words + "."


def explain_variants(
    name: str, parts: dict[str, dict[str, float]], empty_length: int, unit: str
) -> str:
    """What each other handler changes, on getpid, in words."""
    getpid = parts["getpid"]
    base = getpid["total"]

    def delta(variant: str) -> str:
        change = getpid[variant] - base
        sign = "+" if change >= 0 else ""
        return f"{sign}{number(change)} {unit} ({100 * change / base:+.0f}%)"

    same_smode = getpid["smode"] == base
    smode_words = (
        " (the same instructions run; any difference would have to be in cycles)"
        if same_smode and unit == "instructions"
        else ""
    )
    words = (
        f"{name}, getpid: saving only the caller-saved registers changes the round trip by "
        f"{delta('minimal')}; delegating the trap to S-mode by {delta('smode')}"
        f"{smode_words}; saving the FPU state as well by {delta('fpu')}, which is what lazy "
        "FPU saving avoids."
    )
    beyond = getpid["beyond_empty_handler"]
    if unit == "instructions":
        words += (
            f" The ecall itself, beyond the empty handler's {empty_length} instructions "
            f"(mret included), counts {number(beyond)} instruction"
            f"{'' if beyond == 1 else 's'} here."
        )
    else:
        words += (
            f" The empty handler ({empty_length} instructions, mret included) takes "
            f"{number(getpid['entry_exit'])} {unit}: the trap and the return cost "
            f"{number(beyond)} {unit} more than its instructions would at one per cycle."
        )
    return words


def explain_cycles_vs_instructions(
    name: str, cycles: dict[str, float], instructions: dict[str, float]
) -> str:
    """Where the cycle view of getpid differs from the instruction view."""
    top_cycles = max(PART_NAMES, key=lambda p: cycles[p])
    top_instr = max(PART_NAMES, key=lambda p: instructions[p])
    share_c = {p: cycles[p] / cycles["total"] for p in PART_NAMES}
    share_i = {p: instructions[p] / instructions["total"] for p in PART_NAMES}
    moved = max(PART_NAMES, key=lambda p: share_c[p] - share_i[p])
    agree = (
        f"both views agree that {PART_NAMES[top_cycles]} dominates"
        if top_cycles == top_instr
        else f"in cycles {PART_NAMES[top_cycles]} dominates, in instructions "
        f"{PART_NAMES[top_instr]}"
    )
    return (
        f"{name}, getpid, cycles against instructions: {number(cycles['total'])} cycles for "
        f"{number(instructions['total'])} instructions "
        f"({cycles['total'] / instructions['total']:.2f} cycles per instruction); {agree}; "
        f"{PART_NAMES[moved]} grows most, from {share_i[moved]:.0%} of the instructions to "
        f"{share_c[moved]:.0%} of the cycles."
    )
