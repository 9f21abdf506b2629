"""The summary of two or more runs as terminal text: machine vs machine, answers first.

The runs, one line per key figure with the ratio, its CI and the decision in
words (``comparison.describe``), the other rows that differ, the environment
differences that plausibly explain them, and the summary line per run. The
layout rules are summary_view's (80 columns at the least).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from ctxbench import stats, units
from ctxbench.analysis.compare.comparison import FASTER, SLOWER
from ctxbench.analysis.compare.pairs import measured_as
from ctxbench.analysis.summary.data import Machines, Summary
from ctxbench.records.naming import params_key, variant_name
from ctxbench.records.runs import StoredRun
from ctxbench.views.compare.comparison import (
    cell_words,
    describe,
    excluded_words,
    noise_words,
    why_not_words,
)
from ctxbench.views.compare.comparison import summary_lines as comparison_summary_lines
from ctxbench.views.summary.text import (
    MIN_WIDTH,
    heading_line,
    styled_line,
    wrapped_lines,
)

ENV_VALUE_LIMIT = 60  # characters of an environment value in 80 columns


def machine_lines(summary: Summary, width: int) -> list[Text]:
    """The runs, each key figure of run A's ladder against every other run, the
    environment differences of interest, and the comparison's summary lines."""
    machines = summary.machines
    if machines is None:
        return []
    width = max(width, MIN_WIDTH)
    lines = [heading_line("Runs (A is the reference)")]
    options = machines.comparison.options
    for index, run in enumerate(summary.runs):
        stored = machines.comparison.runs
        measured = (
            options_text(options[index], stored[index])
            if index < min(len(options), len(stored))
            else "?"
        )
        lines += wrapped_lines(f"{run.name}; {measured}", width, 2)
    lines += [Text(""), *_figure_lines(machines, width)]
    lines += [Text(""), *_other_difference_lines(machines, width)]
    lines += [Text(""), *_env_lines(machines, width)]
    lines.append(Text(""))
    for line in comparison_summary_lines(machines.comparison):
        lines += wrapped_lines(line, width, 0)
    return lines


def _figure_lines(machines: Machines, width: int) -> list[Text]:
    if not machines.figures:
        return [styled_line("no key figure of run A is in the other runs")]
    letters = [units.run_letter(i) for i in range(len(machines.others) + 1)]
    heading = heading_line(
        f"Key figures against A: ratio, {machines.comparison.level:.0%} interval, "
        "judged by repeats, history (of the runs' p10s) or within-run"
    )
    medians = [
        [units.value(f.reference_median, f.unit)] + [units.value(c.median, f.unit) for c in f.cells]
        for f in machines.figures
    ]
    label_w = max(len(f.label) for f in machines.figures)
    median_w = max(len(m) for row in medians for m in row)
    head = f"  {'':<{label_w}}" + "".join(f"  {letter:>{median_w}}" for letter in letters)
    lines = [heading, styled_line((head, "dim"))]
    for figure, row in zip(machines.figures, medians, strict=True):
        start = f"  {figure.label:<{label_w}}" + "".join(f"  {m:>{median_w}}" for m in row)
        verdicts = [
            _cell_words(cell, cell_words(machines, figure, index))
            for index, cell in enumerate(figure.cells, start=1)
        ]
        if len(verdicts) > 1:  # several runs against A: say which each line is about
            verdicts = [
                (text if text.startswith(f"{letter} ran ") else f"{letter}: {text}", style)
                for letter, (text, style) in zip(letters[1:], verdicts, strict=True)
            ]
        together = start + "  " + "; ".join(text for text, _ in verdicts)
        if len(together) <= width:
            parts: list[str | tuple[str, str]] = [start + "  "]
            for number, (text, style) in enumerate(verdicts):
                parts += (["; "] if number else []) + [(text, style)]
            lines.append(styled_line(*parts))
        else:
            lines.append(styled_line(start))
            for text, style in verdicts:
                lines += wrapped_lines(text, width, 4, style)
        for letter, cell in zip(letters, figure.row.cells if figure.row else [], strict=False):
            aside = units.set_aside(cell.result) if cell.result else None
            if aside:
                lines += wrapped_lines(f"{letter}: {aside}", width, 4, "dim")
    return lines


def _other_difference_lines(machines: Machines, width: int) -> list[Text]:
    """The comparable rows outside the key figures that got meaningfully slower
    or faster: a difference elsewhere is not hidden by the summary."""
    comparison = machines.comparison
    keys = {(f.probe, params_key(f.params)) for f in machines.figures}
    found = []
    for row in comparison.rows:
        if (row.probe, params_key(row.params)) in keys:
            continue
        for index, cell in enumerate(row.cells[1:], start=1):
            if cell.excluded or cell.decision not in (SLOWER, FASTER):
                continue
            words = describe(
                cell.difference,
                row.unit,
                comparison.min_effect,
                units.run_letter(index),
                judged_by=cell.noise,
            )
            p = cell.difference.u_test if cell.difference else None
            found.append(
                (
                    f"{variant_name(row.probe, row.params)}: {words}"
                    + (f", {units.p_value(p.p_value)}" if p else "")
                    + f", {noise_words(cell.noise, short=True)}",
                    "red" if cell.decision == SLOWER else "green",
                )
            )
    if not found:
        return wrapped_lines(
            "No other comparable row differs meaningfully (whole interval beyond "
            f"{comparison.min_effect:.0%}).",
            width,
            0,
        )
    lines = [
        heading_line(f"Other rows that differ (whole interval beyond {comparison.min_effect:.0%})")
    ]
    for text, style in found:
        lines += wrapped_lines(text, width, 2, style)
    return lines


def _cell_words(cell: Any, words: str) -> tuple[str, str]:
    """'B ran 1.94× (1.24–3.96) slower than A, p = 0.031', styled by the decision."""
    if cell.excluded:
        return f"{words}, not comparable: {'; '.join(excluded_words(cell.excluded))}", "yellow"
    note = cell.note or why_not_words(cell.why_not)
    if note and cell.ratio is None:
        return note, "dim"
    large_p = not cell.note and cell.why_not and cell.why_not.code == stats.P_AT_LEAST_ALPHA
    if not cell.significant and note and not large_p:
        # Beside a small p, a bare 'not significant' reads as a contradiction: say why
        # (a large p is its own reason, printed next).
        words += f" ({note})"
    p = f", {units.p_value(cell.p_value)}" if cell.p_value is not None else ""
    source = f", {noise_words(cell.noise, short=True)}" if cell.noise else ""
    style = {"slower": "red", "faster": "green"}.get(cell.decision or "", "dim")
    return words + p + source, style


def _env_lines(machines: Machines, width: int) -> list[Text]:
    if not machines.env:
        return wrapped_lines(
            "The environments do not differ in kernel, CPU, virtualization, idle driver, "
            "mitigations, clocksource or sandbox (seccomp, tracer, auditing).",
            width,
            0,
        )
    lines = [heading_line("What differs between the environments (what may explain the figures)")]
    limit = max(ENV_VALUE_LIMIT, width - 30)
    for difference in machines.env:
        lines.append(styled_line("  ", (difference.label, "yellow")))
        values = ["—" if value is None else value for value in difference.values]
        for index, shown in enumerate(_clipped_apart(values, limit)):
            lines += wrapped_lines(f"{units.run_letter(index)}: {shown}", width, 4)
    return lines


def _clipped_apart(values: list[str], limit: int) -> list[str]:
    """Long values cut to LIMIT characters where they start to differ, so two
    values that share a long beginning do not print the same."""
    if all(len(value) <= limit for value in values):
        return values
    start = 0
    while all(len(value) > start for value in values) and len({v[start] for v in values}) == 1:
        start += 1
    start = max(0, start - limit // 3)  # a little of what they share, for context

    def clip(value: str) -> str:
        head = "…" if start else ""
        piece = value[start : start + limit - len(head)]
        tail = "…" if start + len(piece) < len(value) else ""
        return head + (piece[: len(piece) - len(tail)] if tail else piece) + tail

    return [clip(value) for value in values]


def run_flags(run: StoredRun) -> list[str]:
    """The options of a run that its records show but its options block does not:
    --hold-idle (every idle variant held), --trace (a traced pass), a seccomp filter."""
    flags = []
    idle = {r.params["idle"] for r in run.results if "idle" in r.params}
    if idle == {"held"}:
        flags.append("--hold-idle")
    if any(measured_as(r).block("trace") for r in run.results):  # the pairs' copies, as measured
        flags.append("--trace")
    sandbox = run.env.sandbox
    if sandbox is not None and sandbox.seccomp_mode == "filter":
        flags.append("under a seccomp filter")
    if sandbox is not None and sandbox.tracepoints_recording:
        flags.append(f"{sandbox.tracepoints_enabled} tracepoints recording")
    return flags


def options_text(options: Mapping[str, Any], run: StoredRun) -> str:
    """The run's options as compare shows them, with ``run_flags``."""
    return ", ".join(part for part in [units.run_options(options), *run_flags(run)] if part)
