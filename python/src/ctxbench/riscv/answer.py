"""The lab's answer, read from its records alone.

What ``show``, ``explain`` and ``report`` say about a stored RISC-V run, and
what ``ctxbench riscv`` prints when it has run. Nothing here needs a simulator.

* ``lab_targets(records)``: per simulator (and rvsim model), its round trips
  per (variant, call), in its unit and in instructions, the handlers' shape
  and the one-shot reading;
* ``lab_parts(records, calls)``: the full handler's round trip of each call
  split from the bare trap (``decompose.split``), per target;
* ``lab_answer(records)``: the answer in lines, one per simulator, then one
  sentence per question the lab answers.

Instruction counts are whole by construction and print as integers. A loop's
cycle figure is the cycles of a loop of round trips divided by their number,
an average, and prints rounded to a whole cycle; a one-shot reading is one
counter difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ctxbench.records.result import Result
from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.decompose import PART_NAMES, Split, number, split

UNITS = ("instructions", "cycles")


@dataclass
class TargetFigures:
    """One simulator (or rvsim model) of a lab run, from its records."""

    name: str  # spike, qemu, rvsim-<model>
    unit: str  # instructions or cycles
    values: dict[tuple[str, str], float] = field(default_factory=dict)  # in ``unit``
    instructions: dict[tuple[str, str], float] = field(default_factory=dict)
    shape: dict[str, dict[str, int]] | None = None  # variant -> instructions, loads_stores
    single: dict[str, float] = field(default_factory=dict)  # full getpid, one reading
    problem: str | None = None  # why it was not measured

    @property
    def counts_cycles(self) -> bool:
        return self.unit == "cycles"

    def figures(self, unit: str | None = None) -> dict[tuple[str, str], float]:
        return self.instructions if unit == "instructions" else self.values


def is_lab_run(results: Iterable[Result]) -> bool:
    """Whether these results are the trap lab's (family riscv)."""
    results = list(results)
    return bool(results) and all(r.family == "riscv" for r in results)


def target_name(record: Result) -> str:
    params = record.params
    sim = str(params.get("sim", "?"))
    return f"rvsim-{params['model']}" if sim == "rvsim" and "model" in params else sim


def lab_targets(records: Iterable[Result]) -> list[TargetFigures]:
    """The lab's targets in the order the results list them."""
    targets: dict[str, TargetFigures] = {}
    shapes: dict[str, dict[str, dict[str, int]]] = {}
    for record in records:
        if record.family != "riscv":
            continue
        name = target_name(record)
        target = targets.setdefault(name, TargetFigures(name, record.unit))
        variant = record.params.get("variant")
        call = record.probe.rsplit(".", 1)[-1]
        corrected = record.block("corrected").get("median")
        if record.verdict.status == "failed" or corrected is None:
            reasons = record.verdict.reasons
            target.problem = target.problem or (
                reasons[0].detail if reasons else record.verdict.status
            )
            continue
        derived = record.block("derived")
        target.values[(variant, call)] = float(corrected)
        target.instructions[(variant, call)] = float(
            derived.get("per_round_trip_instructions", corrected)
        )
        if "handler_loads_stores" in derived:
            shapes.setdefault(name, {})[variant] = {
                "instructions": int(derived["handler_instructions"]),
                "loads_stores": int(derived["handler_loads_stores"]),
            }
        if variant == "full" and call == "getpid":
            # Spike's and QEMU's cycle counter is their instruction counter.
            units = UNITS if target.counts_cycles else ("instructions",)
            for unit in units:
                if f"single_shot_{unit}" in derived:
                    target.single[unit] = float(derived[f"single_shot_{unit}"])
                    target.single[f"{unit}_less_timer"] = float(
                        derived[f"single_shot_less_timer_{unit}"]
                    )
    for name, target in targets.items():
        shape = shapes.get(name, {})
        target.shape = shape if {"full", "minimal", "empty"} <= set(shape) else None
        if target.problem is None and not _complete(target):
            target.problem = "the run does not hold every handler and call of the lab"
    return list(targets.values())


def _complete(target: TargetFigures) -> bool:
    return all((v, c) in target.values for v in VARIANTS for c in CALLS)


def measured(targets: Sequence[TargetFigures]) -> list[TargetFigures]:
    return [t for t in targets if t.problem is None]


def target_parts(
    target: TargetFigures, calls: Sequence[str] = CALLS, unit: str | None = None
) -> dict[str, Split]:
    shown = unit or target.unit
    figures = target.figures(shown)
    return {call: split(figures, target.shape, call, shown) for call in calls}


def lab_parts(
    records: Iterable[Result], calls: Sequence[str] = CALLS, unit: str | None = None
) -> dict[str, dict[str, Split]]:
    """Per measured target, each call's full-handler round trip in parts, in
    the target's own unit (or UNIT='instructions'). Every part is >= 0 and the
    parts add up to the round trip."""
    return {t.name: target_parts(t, calls, unit) for t in measured(lab_targets(records))}


# ---- figures in words ---------------------------------------------------------------------
def count(value: float, unit: str) -> str:
    """A figure as it means: instructions exact, a loop's cycles to the whole cycle."""
    if unit == "cycles":
        return f"{value:.0f}"
    return number(value)


def percent(part: float, total: float) -> str:
    return f"{100 * part / total:.0f}%" if total > 0 else "-"


def parts_text(parts: Split, unit: str) -> str:
    """'save/restore 61 (57%), dispatch 38, entry/exit 6, call logic 2': largest
    first, the largest with its share."""
    words = []
    for index, name in enumerate(parts.ranked):
        value = parts.parts[name]
        share = f" ({percent(value, parts.total)})" if index == 0 else ""
        words.append(f"{PART_NAMES[name]} {count(value, unit)}{share}")
    return ", ".join(words)


def _range(values: Sequence[float], unit: str) -> str:
    """'55–74' (or '55' when they are one figure at this rounding)."""
    low, high = count(min(values), unit), count(max(values), unit)
    return low if low == high else f"{low}–{high}"


def _shares(shares: Sequence[float]) -> str:
    """'57%' or '38–57%', from fractions."""
    return _range([100 * s for s in shares], "cycles") + "%"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def target_line(target: TargetFigures) -> str:
    """One simulator's answer in one line."""
    if target.problem is not None:
        return f"{target.name}: not measured: {target.problem}"
    getpid = target_parts(target, ("getpid",))["getpid"]
    head = f"{target.name}: getpid's ecall round trip is {count(getpid.total, target.unit)} "
    head += target.unit
    if target.counts_cycles:
        head += f" ({count(target.instructions[('full', 'getpid')], 'instructions')} instructions)"
    line = f"{head}: {parts_text(getpid, target.unit)}"
    cold = target.single.get(f"{target.unit}_less_timer")
    if target.counts_cycles and cold is not None:
        line += f"; one cold getpid alone {count(cold, 'cycles')} cycles"
    return line + "."


def dominance_sentence(targets: Sequence[TargetFigures]) -> str:
    """Which part is the largest of getpid's round trip, per target, and what
    dominates the other calls where that differs."""
    by_top: dict[str, list[tuple[str, float]]] = {}
    for target in targets:
        parts = target_parts(target, ("getpid",))["getpid"]
        top = parts.ranked[0]
        by_top.setdefault(top, []).append((target.name, parts.share(top)))
    clauses = [
        f"{PART_NAMES[top]} on {_names([n for n, _ in found])} "
        f"({_shares([s for _, s in found])} of the round trip)"
        for top, found in by_top.items()
    ]
    sentence = "Which part dominates getpid's round trip: " + "; ".join(clauses) + "."
    entry = [t for t in targets if t.counts_cycles]
    if entry and all(t.shape for t in entry):
        empty_length = entry[0].shape["empty"]["instructions"]  # type: ignore[index]
        cycles = [t.values[("empty", "enosys")] for t in entry]
        sentence += (
            f" In cycles the trap and its return (the empty handler, {empty_length} "
            f"instructions) take {_range(cycles, 'cycles')} cycles: entering and leaving the "
            "handler drains and redirects the pipeline, which an instruction count cannot see."
        )
    other = []
    for call in CALLS:
        if call in ("getpid", "enosys"):
            continue
        led = []
        for target in targets:
            parts = target_parts(target, (call,))[call]
            if parts.ranked[0] == "call_logic":
                led.append((target.name, parts.share("call_logic")))
        if led:
            other.append(
                f"{call}'s own logic is its largest part on {_names([n for n, _ in led])} "
                f"({_shares([s for _, s in led])})"
            )
    if other:
        sentence += " " + _capital("; ".join(other)) + "."
    return sentence


def cold_sentence(targets: Sequence[TargetFigures]) -> str | None:
    """A cold single getpid against the warm loop's, and why they differ."""
    cycles = [t for t in targets if t.counts_cycles and "cycles_less_timer" in t.single]
    counted = [t for t in targets if "instructions_less_timer" in t.single]
    if not cycles and not counted:
        return None
    words = []
    if cycles:
        ratios = [t.single["cycles_less_timer"] / t.values[("full", "getpid")] for t in cycles]
        figures = ", ".join(
            f"{count(t.single['cycles_less_timer'], 'cycles')}"
            + (" cycles" if i == 0 else "")
            + f" on {t.name}"
            for i, t in enumerate(cycles)
        )
        words.append(
            "Cold against warm: one getpid timed alone before any loop (rdcycle; ecall; "
            f"rdcycle, less the two counter reads) takes {figures}, "
            f"{min(ratios):.1f}–{max(ratios):.1f} times the loop's figure: that first trap "
            "finds the handler, its frame and the dispatch table out of the caches and the "
            "predictors untrained, where the loop's figure is the steady state after a "
            "warm-up loop (the lab does not split the cold cost further)"
        )
    if counted:
        same = all(
            t.single["instructions_less_timer"] == t.instructions[("full", "getpid")]
            for t in counted
        )
        words.append(
            "in instructions the single reading "
            + (
                "equals the loop's figure: the same instructions run, cold or warm"
                if same
                else "is "
                + ", ".join(
                    f"{count(t.single['instructions_less_timer'], 'instructions')} on {t.name} "
                    f"(loop {count(t.instructions[('full', 'getpid')], 'instructions')})"
                    for t in counted
                )
            )
        )
    return _capital("; ".join(words)) + "."


UNITS_SENTENCE = (
    "Figures: a loop's figure is the count of a timed loop of round trips divided by "
    "their number, less the same loop without the ecall (cycles rounded to a whole cycle); a "
    "one-shot figure is a single counter difference. Spike and QEMU count instructions; "
    "rvsim counts a model's cycles, not silicon's."
)


def lab_answer(records: Iterable[Result]) -> list[str]:
    """The lab's answer: one line per simulator, then one sentence per question
    (which part dominates; a cold ecall against a warm loop), then the units."""
    targets = lab_targets(records)
    lines = [target_line(t) for t in targets]
    done = measured(targets)
    if done:
        lines.append(dominance_sentence(done))
        cold = cold_sentence(done)
        if cold:
            lines.append(cold)
        lines.append(UNITS_SENTENCE)
    return lines


def lab_dict(records: Iterable[Result]) -> dict[str, object]:
    """The answer and every call's split per simulator, as plain data
    (``show --json``'s ``lab``; schema/show.schema.json)."""
    records = list(records)
    targets = measured(lab_targets(records))
    return {
        "answer": lab_answer(records),
        "targets": {
            target.name: {
                "unit": target.unit,
                "calls": {
                    call: {"total": split.total, "parts": split.parts, "notes": list(split.notes)}
                    for call, split in target_parts(target).items()
                },
            }
            for target in targets
        },
    }
