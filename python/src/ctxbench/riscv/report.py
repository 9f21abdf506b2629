"""The lab's text report, from its records alone.

For ``ctxbench riscv`` after a run, ``ctxbench show`` and ``explain`` on a
stored one: the answer first, then every variant and call per target, where
each call's round trip goes, what the other handlers change, and the
one-shot reading beside the loop."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ctxbench.records.result import Result
from ctxbench.riscv.answer import (
    TargetFigures,
    count,
    lab_answer,
    lab_targets,
    measured,
    target_parts,
)
from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.decompose import PART_NAMES, PART_SOURCES, Split

TITLE = "RISC-V trap lab: one ecall round trip, U-mode -> handler -> U-mode"


def _table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: int = 1,
    units: Sequence[str] | None = None,
) -> list[str]:
    """Columns as wide as their widest cell; the first LEFT columns left-aligned;
    UNITS: a second header line."""
    heads = [header, units] if units else [header]
    widths = [max(len(h), *(len(r[i]) for r in [*rows, *heads])) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    head = [line(h) for h in heads]
    rule = "-" * max(len(h) for h in head)
    return [*("  " + h for h in head), "  " + rule, *("  " + line(r) for r in rows)]


def answer_lines(records: Iterable[Result]) -> list[str]:
    """The answer: one line per simulator, then the sentences."""
    return [f"- {line}" for line in lab_answer(records)]


def variants_table(targets: Sequence[TargetFigures]) -> list[str]:
    header = ["variant", "call", *(t.name for t in targets)]
    units = ["", "", *(t.unit for t in targets)]
    rows = []
    for variant in VARIANTS:
        for call in CALLS:
            cells = [count(t.values[(variant, call)], t.unit) for t in targets]
            rows.append([variant, call, *cells])
    return _table(header, rows, left=2, units=units)


def parts_table(targets: Sequence[TargetFigures], call: str, unit: str | None) -> list[str]:
    """One row per target: the full handler's round trip of CALL and its parts."""
    header, rows = parts_rows(targets, call, unit)
    return _table(header, rows, left=2)


def parts_rows(
    targets: Sequence[TargetFigures], call: str, unit: str | None = None
) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of CALL's parts per target (text and HTML alike)."""
    splits = {t.name: target_parts(t, (call,), unit)[call] for t in targets}
    names = [p for p in PART_NAMES if any(p in s.parts for s in splits.values())]
    rows = []
    for target in targets:
        shown = unit or target.unit
        parts = splits[target.name]
        rows.append(
            [
                target.name,
                shown,
                count(parts.total, shown),
                *(count(parts.parts[p], shown) if p in parts.parts else "—" for p in names),
            ]
        )
    return ["target", "unit", "total", *(PART_NAMES[p] for p in names)], rows


def handlers_table(targets: Sequence[TargetFigures]) -> list[str]:
    """What each other handler changes on getpid, against the full one."""
    rows = []
    for target in targets:
        base = target.values[("full", "getpid")]
        cells = []
        for variant in ("minimal", "smode", "fpu"):
            change = target.values[(variant, "getpid")] - base
            size = count(abs(change), target.unit)
            sign = "" if size == "0" else "+" if change > 0 else "-"
            cells.append(f"{sign}{size} ({sign}{abs(100 * change / base):.0f}%)")
        rows.append([target.name, target.unit, *cells])
    return _table(
        ["target", "unit", "caller-saved only", "in S-mode", "with the FPU"], rows, left=2
    )


def single_table(targets: Sequence[TargetFigures]) -> list[str]:
    rows = []
    for target in targets:
        for unit in ("instructions", "cycles"):
            if unit not in target.single:
                continue
            loop = target.figures(unit)[("full", "getpid")]
            rows.append(
                [
                    target.name,
                    unit,
                    count(target.single[unit], unit),
                    count(target.single[f"{unit}_less_timer"], unit),
                    count(loop, unit),
                ]
            )
    if not rows:
        return []
    return _table(["target", "unit", "one-shot", "less the reads", "loop"], rows, left=2)


def split_notes(targets: Sequence[TargetFigures]) -> list[str]:
    """Each note once, with the targets and calls it applies to."""
    where: dict[str, dict[str, list[str]]] = {}
    for target in targets:
        for parts in target_parts(target).values():
            for note in parts.notes:
                where.setdefault(note, {}).setdefault(target.name, []).append(parts.call)
    lines = []
    for note, found in where.items():
        if len(found) == len(targets) and all(len(c) == len(CALLS) for c in found.values()):
            lines.append(f"- every target and call: {note}")
            continue
        for name, calls in found.items():
            shown = "every call" if len(calls) == len(CALLS) else ", ".join(calls)
            lines.append(f"- {name}, {shown}: {note}")
    return lines


def format_report(records: Iterable[Result]) -> str:
    """The whole text report of a lab run."""
    records = list(records)
    targets = lab_targets(records)
    done = measured(targets)
    lines = [TITLE, "", "The answer (getpid, full handler):", *answer_lines(records)]
    if done:
        lines += [
            "",
            "Every handler and call, per round trip (median of timed loops, less the loop "
            "without the ecall):",
            "",
            *variants_table(done),
            "",
            "Where the full handler's round trip goes, split from the bare trap (an "
            "unassigned number); the parts add up to the total:",
        ]
        used = {p for t in done for split in target_parts(t).values() for p in split.parts}
        lines += [f"  {PART_NAMES[p]}: {PART_SOURCES[p]}" for p in PART_NAMES if p in used]
        for call in CALLS:
            lines += ["", f"{call}:", *parts_table(done, call, None)]
        lines += ["", "What the other handlers change (getpid, against the full handler):", ""]
        lines += handlers_table(done)
        single = single_table(done)
        if single:
            lines += [
                "",
                "One getpid timed alone (rdcycle; ecall; rdcycle, before any loop, full "
                "handler) against the loop's figure:",
                "",
                *single,
            ]
        notes = split_notes(done)
        if notes:
            lines += ["", "Not separated:", *notes]
    return "\n".join(lines) + "\n"


def explain_lines(records: Iterable[Result], calls: Sequence[str] = CALLS) -> list[str]:
    """Every call's split per target, with how each part is computed: what
    ``ctxbench explain`` says about a lab run."""
    targets = measured(lab_targets(records))
    lines: list[str] = []
    for target in targets:
        for parts in target_parts(target, calls).values():
            lines += ["", *_split_lines(target, parts)]
    return lines


def _split_lines(target: TargetFigures, parts: Split) -> list[str]:
    unit = target.unit
    lines = [
        f"riscv.ecall.{parts.call} on {target.name}, full handler: "
        f"{count(parts.total, unit)} {unit} per round trip"
    ]
    for name, value in parts.parts.items():
        share = f"{100 * value / parts.total:4.0f}%" if parts.total > 0 else "    -"
        lines.append(f"  {count(value, unit):>8} {share}  {PART_NAMES[name]}: {PART_SOURCES[name]}")
    lines += [f"  not separated: {note}" for note in parts.notes]
    return lines
