"""The lab's text report: the table (variant x call, per target), the
decomposition of the full handler in instructions and, on a cycle model, in
cycles, the single-shot reading beside the loop, and the answer in words."""

from __future__ import annotations

from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.decompose import (
    PART_NAMES,
    explain,
    explain_cycles_vs_instructions,
    explain_variants,
    figures,
    number,
    single_shot,
)
from ctxbench.riscv.lab import LabRun, TargetRun


def decomposition_table(runs: list[TargetRun], call: str, counter: str) -> list[str]:
    """One row per target: the full handler's round trip of `call` and its parts."""
    header = f"{'target':<14} {'total':>8} " + " ".join(f"{n:>12}" for n in PART_NAMES.values())
    lines = [header, "-" * len(header)]
    for run in runs:
        p = run.parts[counter][call]  # type: ignore[index]
        lines.append(
            f"{run.target.name:<14} {number(p['total']):>8} "
            + " ".join(f"{number(p[part]):>12}" for part in PART_NAMES)
        )
    return lines


def format_report(lab: LabRun) -> str:
    names = [run.target.name for run in lab.runs]
    value: dict[tuple[str, str, str], str] = {}
    for run in lab.runs:
        for variant in VARIANTS:
            for call in CALLS:
                if run.parts is not None:
                    counter = "cycles" if run.target.counts_cycles else "instret"
                    fig = figures(run.output, variant, call, counter)  # type: ignore[arg-type]
                    value[(run.target.name, variant, call)] = number(fig.corrected)
                else:
                    value[(run.target.name, variant, call)] = "failed"
    lines = [
        "RISC-V trap lab: one ecall round trip, U-mode -> handler -> U-mode",
        "(median of timed loops of 100, minus the same loop without the ecall; Spike and "
        "QEMU count instructions, rvsim models count their own cycles, not silicon's)",
        "",
    ]
    header = f"{'variant':<9} {'call':<14}" + "".join(f" {n:>14}" for n in names)
    units = f"{'':<9} {'':<14}" + "".join(
        f" {'cycles' if run.target.counts_cycles else 'instructions':>14}" for run in lab.runs
    )
    lines += [header, units, "-" * len(header)]
    for variant in VARIANTS:
        for call in CALLS:
            lines.append(
                f"{variant:<9} {call:<14}"
                + "".join(f" {value[(n, variant, call)]:>14}" for n in names)
            )
    measured = [run for run in lab.runs if run.parts is not None]
    cycle_runs = [run for run in measured if run.target.counts_cycles]
    if measured:
        lines += ["", "Where the full handler's getpid round trip goes, in instructions:", ""]
        lines += decomposition_table(measured, "getpid", "instret")
    if cycle_runs:
        lines += ["", "The same, in each rvsim model's cycles:", ""]
        lines += decomposition_table(cycle_runs, "getpid", "cycles")
    if measured:
        lines += [
            "",
            "One getpid timed alone (rdcycle; ecall; rdcycle, before any loop) against the "
            "loop's figure, full handler:",
            "",
        ]
        header = f"{'target':<14} {'unit':<13} {'one-shot':>9} {'less timer':>11} {'loop':>8}"
        lines += [header, "-" * len(header)]
        for run in measured:
            for counter, unit in (("instret", "instructions"), ("cycles", "cycles")):
                if counter == "cycles" and not run.target.counts_cycles:
                    continue
                shot = single_shot(run.output, "full", counter)  # type: ignore[arg-type]
                loop = run.parts[counter]["getpid"]["total"]  # type: ignore[index]
                if shot is None:
                    continue
                lines.append(
                    f"{run.target.name:<14} {unit:<13} {number(shot['raw']):>9} "
                    f"{number(shot['less_timer']):>11} {number(loop):>8}"
                )
        lines += ["", "In words:"]
        for run in measured:
            unit = "cycles" if run.target.counts_cycles else "instructions"
            counter = "cycles" if run.target.counts_cycles else "instret"
            for call in CALLS:
                lines.append("- " + explain(run.target.name, call, run.parts[counter][call], unit))  # type: ignore[index]
            empty = run.shape["empty"]["instructions"]  # type: ignore[index]
            lines.append("- " + explain_variants(run.target.name, run.parts[counter], empty, unit))  # type: ignore[index]
            if run.target.counts_cycles:
                lines.append(
                    "- "
                    + explain_cycles_vs_instructions(
                        run.target.name,
                        run.parts["cycles"]["getpid"],  # type: ignore[index]
                        run.parts["instret"]["getpid"],  # type: ignore[index]
                    )
                )
    for run in lab.runs:
        if run.problem:
            lines.append(f"- {run.target.name}: not measured: {run.problem}")
    return "\n".join(lines) + "\n"
