"""The summary of runs (``ctxbench.summary``) as terminal text and as JSON: answers first.

What the summary holds is decided in ``summary``; this module only lays it
out in aligned lines for a terminal of WIDTH columns (80 at the least: every
line fits 80, and a wider terminal gets the probe variants and the words
beside the figures rather than below them). Figures are formatted by
``fmt``; colour is a request (``tables.STATUS_STYLE``) that the console
drops unless ``fmt.styled`` allows it.

* one run: the cost ladder (label, median, CI of the median, verdict;
  cheapest first, its terms defined below it), why its large differences
  are there, the same CPU vs another CPU table per switch primitive, where the time of one
  switch goes (``explain``), and the verdicts in sentences;
* two or more runs: the runs, one line per key figure with the ratio, its CI
  and the decision in words (``compare.describe``), the environment
  differences that plausibly explain them, and the summary line per run.

``as_dict`` gives the same summary as plain data for ``show --json``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from typing import Any

from rich.text import Text

from ctxbench import fmt, noise
from ctxbench.compare import FASTER, SLOWER, describe
from ctxbench.compare import summary_lines as comparison_summary_lines
from ctxbench.explain import Explanation
from ctxbench.records import params_key, variant_name
from ctxbench.summary_data import Machines, Point, RunSummary, Summary
from ctxbench.tables import STATUS_STYLE

MIN_WIDTH = 80
NAMES_SHOWN = 3  # results named per shared verdict before "and N more"
ENV_VALUE_LIMIT = 60  # characters of an environment value in 80 columns


def _line(*parts: str | tuple[str, str]) -> Text:
    """A line from plain strings and (text, style) pairs. The layout fits the
    width it was given (80 at the least); on a narrower terminal rich folds a
    line rather than cut a figure off."""
    line = Text(overflow="fold")
    for part in parts:
        if isinstance(part, tuple):
            line.append(part[0], style=part[1])
        else:
            line.append(part)
    return line


def _wrapped(text: str, width: int, indent: int, style: str = "") -> list[Text]:
    pad = " " * indent
    lines = textwrap.wrap(
        text, width=width, initial_indent=pad, subsequent_indent=pad, break_on_hyphens=False
    )
    return [_line((line, style)) for line in lines]


def _heading(text: str) -> Text:
    return _line((text, "bold"))


def _status(status: str) -> tuple[str, str]:
    return status, STATUS_STYLE.get(status, "")


def _cell(point: Point | None) -> str:
    """A figure with its verdict where that is not ok: '1.314 µs (suspect)', 'unsupported'."""
    if point is None:
        return "—"
    if point.median is None:
        return point.status
    text = fmt.value(point.median, point.unit)
    return text if point.status == "ok" else f"{text} ({point.status})"


def _ci(point: Point) -> str:
    return fmt.interval(point.ci_low, point.ci_high, point.unit)


# ---- one run ---------------------------------------------------------------------
def ladder_lines(run: RunSummary, width: int) -> list[Text]:
    """Label, median, CI of the median, verdict; on a wide terminal also a
    log-scale bar of the median (the ladder drawn) and the probe variant."""
    if not run.ladder:
        return [
            _line("no figure of the cost ladder in this run (`ctxbench list` shows the probes)")
        ]
    rows = [
        (rung.label, _cell_median(rung.point), _ci(rung.point), rung.point) for rung in run.ladder
    ]
    label_w = max(len(r[0]) for r in rows)
    median_w = max(len(r[1]) for r in rows)
    ci_w = max(len(r[2]) for r in rows)
    status_w = len("unsupported")
    used = 2 + label_w + 2 + median_w + 2 + ci_w + 2 + status_w
    names = [variant_name(p.probe, p.params) for *_, p in rows]
    wide = used + 2 + max(len(n) for n in names) <= width
    scale = _log_scale([p.median for *_, p in rows if p.unit == "ns" and p.median])
    drawn = wide and scale is not None and used + 4 + LADDER_BAR + max(map(len, names)) <= width
    lines = [_heading("What one operation costs here: median, CI of the median, verdict")]
    if drawn and scale is not None:
        low, high = (_decade(decade) for decade in scale)
        ruler = f"{low} … {high}, log scale"
        lines.append(_line((" " * (used + 2) + ruler, "dim")))
    for (label, median, ci, point), name in zip(rows, names, strict=True):
        parts: list[str | tuple[str, str]] = [
            f"  {label:<{label_w}}  {median:>{median_w}}  {ci:>{ci_w}}  ",
            _status(point.status),
        ]
        if wide:
            parts.append(" " * (status_w - len(point.status) + 2))
        if drawn and scale is not None:
            parts.append((_bar(point, scale).ljust(LADDER_BAR + 2), "cyan"))
        if wide:
            parts.append((name, "dim"))
        lines.append(_line(*parts))
        aside = fmt.set_aside(point.result, with_figure=True)
        if aside:
            lines += _wrapped(aside, width, 4, "dim")
    for words in run.terms:
        lines += _wrapped(words, width, 2, "dim")
    return lines


def why_lines(run: RunSummary, width: int) -> list[Text]:
    """The ladder's large differences, one line each, from the run's own parts."""
    if not run.why:
        return []
    lines = [_heading("Why")]
    for sentence in run.why:
        lines += _wrapped(sentence, width, 2)
    return lines


LADDER_BAR = 24  # characters of the ladder's log-scale bar on a wide terminal


def _log_scale(medians: list[float]) -> tuple[int, int] | None:
    """Whole decades of ns around the medians (1 ns ... 1 ms), or None."""
    positive = [m for m in medians if m > 0]
    if not positive:
        return None
    low = math.floor(math.log10(min(positive)))
    high = max(low + 1, math.ceil(math.log10(max(positive))))
    return low, high


def _decade(exponent: int) -> str:
    """10**exponent ns in words: '1 ns', '100 ns', '10 µs', '1 s'."""
    amount = 10.0**exponent
    for factor, name in fmt.TIME_SCALES:
        if amount >= factor or factor == 1.0:
            return f"{amount / factor:g} {name}"
    return f"{amount:g} ns"


def _bar(point: Point, scale: tuple[int, int]) -> str:
    """A bar as long as the median's place on the log scale (at least one block)."""
    if point.unit != "ns" or not point.median or point.median <= 0:
        return ""
    low, high = scale
    share = (math.log10(point.median) - low) / (high - low)
    return "█" * max(1, round(share * LADDER_BAR))


def _cell_median(point: Point) -> str:
    return "—" if point.median is None else fmt.value(point.median, point.unit)


def same_vs_cross_lines(run: RunSummary, width: int) -> list[Text]:
    if not run.same_vs_cross:
        return []
    rows = [
        (
            row.primitive,
            row.between or "—",
            _cell(row.same),
            _cell(row.cross),
            "not a switch"
            if row.no_ratio
            else "—"
            if row.ratio is None
            else f"{fmt.number(row.ratio)}×",
        )
        for row in run.same_vs_cross
    ]
    heads = ("switch", "between", "same CPU", "other CPU", "other/same")
    widths = [max(len(head), *(len(r[i]) for r in rows)) for i, head in enumerate(heads)]
    # The primitive's name gives way first (a long name is cut, never the figures).
    excess = 2 + sum(widths) + 2 * (len(widths) - 1) - min(width, MIN_WIDTH * 2)
    if excess > 0:
        widths[0] = max(len(heads[0]), widths[0] - excess)

    def fit(text: str, size: int) -> str:
        return text if len(text) <= size else text[: size - 1] + "…"

    def join(cells: Iterable[str]) -> str:
        out = []
        for index, (text, size) in enumerate(zip(cells, widths, strict=True)):
            out.append(fit(text, size).ljust(size) if index < 2 else text.rjust(size))
        return "  " + "  ".join(out)

    lines = [
        _heading("Same CPU vs another CPU, per switch primitive: median per switch"),
        _line((join(heads), "dim")),
    ]
    lines += [_line(join(row)) for row in rows]
    unmatched: dict[str, list[str]] = {}
    for row in run.same_vs_cross:
        if row.no_ratio:
            unmatched.setdefault(row.no_ratio, []).append(
                " ".join(filter(None, (row.primitive, row.between)))
            )
    for words, names in unmatched.items():
        lines += _wrapped(f"{', '.join(names)}: {words}", width, 2, "dim")
    return lines


def explanation_lines(explanation: Explanation | None, label: str, width: int) -> list[Text]:
    if explanation is None:
        return []
    name = variant_name(explanation.probe, explanation.params)
    lines = [
        _heading(f"Where the time goes: {label} ({fmt.value(explanation.median_ns, 'ns')})"),
        *_wrapped(name + ("" if explanation.status == "ok" else f" [{explanation.status}]"),
                  width, 2, "dim"),
    ]  # fmt: skip
    for part in explanation.parts:
        share = 100 * part.ns / explanation.median_ns if explanation.median_ns else 0.0
        head = f"  {fmt.value(part.ns, 'ns'):>10} {share:4.0f}%  "
        text = f"{part.name}: {part.source}"
        wrapped = textwrap.wrap(text, width=width - len(head), break_on_hyphens=False)
        lines.append(_line(head + wrapped[0]))
        lines += [_line(" " * len(head) + more) for more in wrapped[1:]]
    for words in explanation.not_explained:
        lines += _wrapped(f"not explained: {words}", width, 2, "yellow")
    for note in explanation.notes:
        lines += _wrapped(f"note: {note}", width, 2, "yellow")
    lines += _wrapped(
        "`ctxbench explain` gives every switch of the run and what it could not separate.",
        width,
        2,
        "dim",
    )
    return lines


def verdict_lines(run: RunSummary, width: int) -> list[Text]:
    counts = run.verdicts.counts
    head = "Verdicts: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    lines = [_heading(head)]
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for note in run.verdicts.notes:
        key = (note.point.status, note.sentences)
        groups.setdefault(key, []).append(variant_name(note.point.probe, note.point.params))
    for (status, sentences), names in groups.items():
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        listed = "; ".join(names[:NAMES_SHOWN]) + more
        count = f" ({len(names)})" if len(names) > 1 else ""
        wrapped = textwrap.wrap(
            f"{status}{count}: {listed}",
            width=width - 2,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        first = wrapped[0]
        lines.append(_line("  ", _status(status), first[2 + len(status) :]))
        lines += [_line(line) for line in wrapped[1:]]
        for sentence in sentences:
            lines += _wrapped(sentence, width, 4)
    if not run.verdicts.notes:
        lines.append(_line("  every result is ok"))
    return lines


def sandbox_lines(run: RunSummary, width: int) -> list[Text]:
    """Warnings first: what sat on every system call of the run."""
    lines: list[Text] = []
    for warning in run.sandbox:
        lines += _wrapped(f"warning: {warning}", width, 0, "yellow")
    return lines


def run_lines(summary: Summary, width: int, index: int = 0) -> list[Text]:
    """The summary of run INDEX: ladder, why, same vs cross, explanation, verdicts."""
    width = max(width, MIN_WIDTH)
    run = summary.runs[index]
    label = _explained_label(run)
    sections = [
        sandbox_lines(run, width),
        ladder_lines(run, width),
        why_lines(run, width),
        same_vs_cross_lines(run, width),
        explanation_lines(run.explanation, label, width),
        verdict_lines(run, width),
    ]
    lines: list[Text] = []
    for section in sections:
        if section:
            if lines:
                lines.append(Text(""))
            lines += section
    return lines


def _explained_label(run: RunSummary) -> str:
    explanation = run.explanation
    if explanation is None:
        return "switch"
    for rung in run.ladder:
        if rung.point.probe == explanation.probe and rung.point.params == explanation.params:
            return rung.label
    return "switch"


# ---- two or more runs ---------------------------------------------------------------
def machine_lines(summary: Summary, width: int) -> list[Text]:
    """The runs, each key figure of run A's ladder against every other run, the
    environment differences of interest, and the comparison's summary lines."""
    machines = summary.machines
    if machines is None:
        return []
    width = max(width, MIN_WIDTH)
    lines = [_heading("Runs (A is the reference)")]
    options = machines.comparison.options
    for index, run in enumerate(summary.runs):
        measured = fmt.run_options(options[index]) if index < len(options) else "?"
        lines += _wrapped(f"{run.name}; {measured}", width, 2)
    lines += [Text(""), *_figure_lines(machines, width)]
    lines += [Text(""), *_other_difference_lines(machines, width)]
    lines += [Text(""), *_env_lines(machines, width)]
    lines.append(Text(""))
    for line in comparison_summary_lines(machines.comparison):
        lines += _wrapped(line, width, 0)
    return lines


def _figure_lines(machines: Machines, width: int) -> list[Text]:
    if not machines.figures:
        return [_line("no key figure of run A is in the other runs")]
    letters = [fmt.run_letter(i) for i in range(len(machines.others) + 1)]
    heading = _heading(
        f"Key figures against A: ratio, {machines.comparison.level:.0%} interval, "
        "judged by repeats, history or within-run"
    )
    medians = [
        [fmt.value(f.reference_median, f.unit)] + [fmt.value(c.median, f.unit) for c in f.cells]
        for f in machines.figures
    ]
    label_w = max(len(f.label) for f in machines.figures)
    median_w = max(len(m) for row in medians for m in row)
    head = f"  {'':<{label_w}}" + "".join(f"  {letter:>{median_w}}" for letter in letters)
    lines = [heading, _line((head, "dim"))]
    for figure, row in zip(machines.figures, medians, strict=True):
        start = f"  {figure.label:<{label_w}}" + "".join(f"  {m:>{median_w}}" for m in row)
        verdicts = [_cell_words(cell) for cell in figure.cells]
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
            lines.append(_line(*parts))
        else:
            lines.append(_line(start))
            for text, style in verdicts:
                lines += _wrapped(text, width, 4, style)
        for letter, cell in zip(letters, figure.row.cells if figure.row else [], strict=False):
            aside = fmt.set_aside(cell.result) if cell.result else None
            if aside:
                lines += _wrapped(f"{letter}: {aside}", width, 4, "dim")
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
                fmt.run_letter(index),
                judged_by=cell.noise,
            )
            p = cell.difference.u_test if cell.difference else None
            found.append(
                (
                    f"{variant_name(row.probe, row.params)}: {words}"
                    + (f", {fmt.p_value(p.p_value)}" if p else "")
                    + f", {noise.words(cell.noise, short=True)}",
                    "red" if cell.decision == SLOWER else "green",
                )
            )
    if not found:
        return _wrapped(
            "No other comparable row differs meaningfully (whole interval beyond "
            f"{comparison.min_effect:.0%}).",
            width,
            0,
        )
    lines = [
        _heading(f"Other rows that differ (whole interval beyond {comparison.min_effect:.0%})")
    ]
    for text, style in found:
        lines += _wrapped(text, width, 2, style)
    return lines


def _cell_words(cell: Any) -> tuple[str, str]:
    """'B ran 1.94× (1.24–3.96) slower than A, p = 0.031', styled by the decision."""
    if cell.excluded:
        return f"{cell.words}, not comparable: {'; '.join(cell.excluded)}", "yellow"
    if cell.note and cell.ratio is None:
        return cell.note, "dim"
    p = f", {fmt.p_value(cell.p_value)}" if cell.p_value is not None else ""
    source = f", {noise.words(cell.noise, short=True)}" if cell.noise else ""
    style = {"slower": "red", "faster": "green"}.get(cell.decision or "", "dim")
    return cell.words + p + source, style


def _env_lines(machines: Machines, width: int) -> list[Text]:
    if not machines.env:
        return _wrapped(
            "The environments do not differ in kernel, CPU, virtualization, idle driver, "
            "mitigations, clocksource or sandbox (seccomp, tracer, auditing).",
            width,
            0,
        )
    lines = [_heading("What differs between the environments (what may explain the figures)")]
    limit = max(ENV_VALUE_LIMIT, width - 30)
    for difference in machines.env:
        lines.append(_line("  ", (difference.label, "yellow")))
        values = ["—" if value is None else value for value in difference.values]
        for index, shown in enumerate(_clipped_apart(values, limit)):
            lines += _wrapped(f"{fmt.run_letter(index)}: {shown}", width, 4)
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


def plain(lines: list[Text]) -> str:
    """The lines as plain text (tests, logs)."""
    return "\n".join(line.plain for line in lines) + "\n"


# ---- as data ---------------------------------------------------------------------------
def _point_dict(point: Point | None) -> dict[str, Any] | None:
    if point is None:
        return None
    return {
        "probe": point.probe,
        "params": point.params,
        "variant": variant_name(point.probe, point.params),
        "unit": point.unit,
        "median": point.median,
        "ci_low": point.ci_low,
        "ci_high": point.ci_high,
        "status": point.status,
        "reasons": list(point.reasons),
    }


def as_dict(run: RunSummary) -> dict[str, Any]:
    """One run's summary as plain data: the ladder, same vs cross, the featured
    explanation and the verdicts, each figure with the record it comes from."""
    explanation = run.explanation
    return {
        "run": run.name,
        "ladder": [
            {"key": rung.key, "label": rung.label, **(_point_dict(rung.point) or {})}
            for rung in run.ladder
        ],
        "why": list(run.why),
        "terms": list(run.terms),
        "same_vs_cross": [
            {
                "probe": row.probe,
                "between": row.between,
                "same": _point_dict(row.same),
                "cross": _point_dict(row.cross),
                "ratio": row.ratio,
                "no_ratio": row.no_ratio,
            }
            for row in run.same_vs_cross
        ],
        "explanation": None
        if explanation is None
        else {
            "variant": variant_name(explanation.probe, explanation.params),
            "median_ns": explanation.median_ns,
            "parts": [
                {"name": part.name, "ns": part.ns, "source": part.source}
                for part in explanation.parts
            ],
            "not_separated": list(explanation.not_separated),
            "not_explained": list(explanation.not_explained),
            "notes": list(explanation.notes),
        },
        "sandbox": list(run.sandbox),
        "verdicts": {
            "counts": run.verdicts.counts,
            "notes": [
                {
                    "variant": variant_name(note.point.probe, note.point.params),
                    "status": note.point.status,
                    "sentences": list(note.sentences),
                }
                for note in run.verdicts.notes
            ],
        },
    }
