"""The summary of a run (``analysis.summary.build``) as terminal text and as JSON: answers first.

What the summary holds is decided in ``summary``; this module only lays it
out in aligned lines for a terminal of WIDTH columns (80 at the least: every
line fits 80, and a wider terminal gets the probe variants and the words
beside the figures rather than below them). Figures are formatted by
``units``; colour is a request (``tables.STATUS_STYLE``) that the console
drops unless ``units.styled`` allows it.

* one run: the cost ladder (label, median, CI of the median, verdict;
  cheapest first, its terms defined below it), why its large differences
  are there, the same CPU vs another CPU table per switch primitive, where the time of one
  switch goes (``explain``), and the verdicts in sentences;
* two or more runs: in ``machines_view``.

``as_dict`` gives the same summary as plain data for ``show --json``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable

from rich.text import Text

from ctxbench import units
from ctxbench.analysis.explain.explanation import Explanation
from ctxbench.analysis.summary.data import Point, RunSummary, Summary
from ctxbench.records.naming import variant_name
from ctxbench.records.strict_json import JsonObject
from ctxbench.views.explain.explanation import (
    missing_words,
    not_explained_words,
    note_words,
    source_words,
)
from ctxbench.views.reasons import reason_sentence, reason_sentences
from ctxbench.views.summary import why
from ctxbench.views.summary.answers import sentences as answer_sentences
from ctxbench.views.tables import STATUS_STYLE

MIN_WIDTH = 80
NAMES_SHOWN = 3  # results named per shared verdict before "and N more"


def styled_line(*parts: str | tuple[str, str]) -> Text:
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


def wrapped_lines(text: str, width: int, indent: int, style: str = "") -> list[Text]:
    pad = " " * indent
    lines = textwrap.wrap(
        text, width=width, initial_indent=pad, subsequent_indent=pad, break_on_hyphens=False
    )
    return [styled_line((line, style)) for line in lines]


def heading_line(text: str) -> Text:
    return styled_line((text, "bold"))


def _status(status: str) -> tuple[str, str]:
    return status, STATUS_STYLE.get(status, "")


def _cell(point: Point | None) -> str:
    """A figure with its verdict where that is not ok: '1.314 µs (suspect)', 'unsupported'."""
    if point is None:
        return "—"
    if point.median is None:
        return point.status
    text = units.value(point.median, point.unit)
    return text if point.status == "ok" else f"{text} ({point.status})"


def _ci(point: Point) -> str:
    return units.interval(point.ci_low, point.ci_high, point.unit)


# ---- one run ---------------------------------------------------------------------
def _aside_cell(point: Point) -> str:
    """'1/31': samples set aside as host interference of those taken; '' for none."""
    counted = units.set_aside_count(point.result)
    return f"{counted[0]}/{counted[1]}" if counted else ""


SET_ASIDE_NOTE = (
    "set aside: n/m of the samples were taken while the host slowed the CPU, set aside "
    "and taken again (`ctxbench show RUN --all` gives each figure with them)"
)
# The same where the terminal has no room for the column.
SET_ASIDE_NARROW_NOTE = (
    "some figures had samples taken while the host slowed the CPU: they were set aside "
    "and taken again (`ctxbench show RUN --all` gives how many, and each figure with them)"
)


def ladder_lines(run: RunSummary, width: int) -> list[Text]:
    """Label, median, CI of the median, samples set aside, verdict: one line per
    rung; on a wide terminal also a log-scale bar of the median (the ladder drawn)
    and the probe variant."""
    if not run.ladder:
        return [
            styled_line(
                "no figure of the cost ladder in this run (`ctxbench list` shows the probes)"
            )
        ]
    rows = [
        (rung.label, _cell_median(rung.point), _ci(rung.point), _aside_cell(rung.point), rung.point)
        for rung in run.ladder
    ]
    label_w = max(len(r[0]) for r in rows)
    median_w = max(len(r[1]) for r in rows)
    ci_w = max(len(r[2]) for r in rows)
    aside_w = max(len(r[3]) for r in rows)  # its heading may reach over the CI column
    status_w = len("unsupported")
    used = 2 + label_w + 2 + median_w + 2 + ci_w + 2 + (aside_w + 2 if aside_w else 0) + status_w
    aside_note = SET_ASIDE_NOTE
    longest = used - status_w + max(len(p.status) for *_, p in rows)  # the longest row
    if aside_w and longest > width:
        # No room for the column: each row would spill its verdict onto a
        # line of its own. The note says samples were set aside; --all shows
        # how many per figure.
        used -= aside_w + 2
        aside_w, aside_note = 0, SET_ASIDE_NARROW_NOTE
    names = [variant_name(p.probe, p.params) for *_, p in rows]
    wide = used + 2 + max(len(n) for n in names) <= width
    scale = _log_scale([p.median for *_, p in rows if p.unit == "ns" and p.median])
    drawn = wide and scale is not None and used + 4 + LADDER_BAR + max(map(len, names)) <= width
    heading = "What one operation costs here: median, CI of the median, " + (
        "set aside, verdict" if aside_w else "verdict"
    )
    lines = [heading_line(heading)]
    ruler = ""
    if drawn and scale is not None:
        low, high = (_decade(decade) for decade in scale)
        ruler = f"{low} … {high}, log scale"
    if aside_w or ruler:
        head = f"{'set aside' if aside_w else '':>{used - status_w - 2}}"
        if ruler:
            head = head.ljust(used + 2) + ruler
        lines.append(styled_line((head, "dim")))
    for (label, median, ci, aside, point), name in zip(rows, names, strict=True):
        parts: list[str | tuple[str, str]] = [
            f"  {label:<{label_w}}  {median:>{median_w}}  {ci:>{ci_w}}  ",
        ]
        if aside_w:
            parts.append((f"{aside:>{aside_w}}  ", "dim"))
        parts.append(_status(point.status))
        if wide:
            parts.append(" " * (status_w - len(point.status) + 2))
        if drawn and scale is not None:
            parts.append((_bar(point, scale).ljust(LADDER_BAR + 2), "cyan"))
        if wide:
            parts.append((name, "dim"))
        lines.append(styled_line(*parts))
    if any(row[3] for row in rows):
        lines += wrapped_lines(aside_note.replace("RUN", run.run_id), width, 2, "dim")
    for words in run.timer:
        lines += wrapped_lines(words, width, 2, "dim")
    for words in why.terms(run.ladder):
        lines += wrapped_lines(words, width, 2, "dim")
    return lines


def why_lines(run: RunSummary, width: int) -> list[Text]:
    """The ladder's large differences, one line each, from the run's own parts."""
    sentences = why.run_why(run)
    if not sentences:
        return []
    lines = [heading_line("Why")]
    for sentence in sentences:
        lines += wrapped_lines(sentence, width, 2)
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
    for factor, name in units.TIME_SCALES:
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
    return "—" if point.median is None else units.value(point.median, point.unit)


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
            else f"{units.number(row.ratio)}×",
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
        heading_line("Same CPU vs another CPU, per switch primitive: median per switch"),
        styled_line((join(heads), "dim")),
    ]
    lines += [styled_line(join(row)) for row in rows]
    unmatched: dict[str, list[str]] = {}
    for row in run.same_vs_cross:
        words = why.no_ratio_words(row.same, row.cross)
        if words:
            unmatched.setdefault(words, []).append(
                " ".join(filter(None, (row.primitive, row.between)))
            )
    for words, names in unmatched.items():
        lines += wrapped_lines(f"{', '.join(names)}: {words}", width, 2, "dim")
    return lines


def explanation_lines(explanation: Explanation | None, label: str, width: int) -> list[Text]:
    if explanation is None:
        return []
    name = variant_name(explanation.probe, explanation.params)
    lines = [
        heading_line(f"Where the time goes: {label} ({units.value(explanation.median_ns, 'ns')})"),
        *wrapped_lines(name + ("" if explanation.status == "ok" else f" [{explanation.status}]"),
                  width, 2, "dim"),
    ]  # fmt: skip
    for part in explanation.parts:
        share = 100 * part.ns / explanation.median_ns if explanation.median_ns else 0.0
        head = f"  {units.value(part.ns, 'ns'):>10} {share:4.0f}%  "
        text = f"{part.name}: {source_words(part.source)}"
        wrapped = textwrap.wrap(text, width=width - len(head), break_on_hyphens=False)
        lines.append(styled_line(head + wrapped[0]))
        lines += [styled_line(" " * len(head) + more) for more in wrapped[1:]]
    for words in map(not_explained_words, explanation.not_explained):
        lines += wrapped_lines(f"not explained: {words}", width, 2, "yellow")
    for note in map(note_words, explanation.notes):
        lines += wrapped_lines(f"note: {note}", width, 2, "yellow")
    lines += wrapped_lines(
        "`ctxbench explain` gives every switch of the run and what it could not separate.",
        width,
        2,
        "dim",
    )
    return lines


def verdict_lines(run: RunSummary, width: int) -> list[Text]:
    counts = run.verdicts.counts
    head = "Verdicts: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    lines = [heading_line(head)]
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for note in run.verdicts.notes:
        key = (note.point.status, note.reasons)
        groups.setdefault(key, []).append(variant_name(note.point.probe, note.point.params))
    for (status, codes), names in groups.items():
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
        lines.append(styled_line("  ", _status(status), first[2 + len(status) :]))
        lines += [styled_line(line) for line in wrapped[1:]]
        for code in codes:
            lines += wrapped_lines(reason_sentence(code), width, 4)
    if not run.verdicts.notes:
        lines.append(styled_line("  every result is ok"))
    return lines


def sandbox_lines(run: RunSummary, width: int) -> list[Text]:
    """Warnings first: what sat on every system call of the run."""
    lines: list[Text] = []
    for warning in run.sandbox:
        lines += wrapped_lines(f"warning: {warning}", width, 0, "yellow")
    return lines


def answer_lines(run: RunSummary, width: int) -> list[Text]:
    """The seed questions this run answers, first: figures, ratios with their
    intervals, what the run lacks (views.summary.answers)."""
    if not run.answers:
        return []
    lines = [heading_line("Answers")]
    for answer in run.answers:
        first, *rest = answer_sentences(answer)
        lines += wrapped_lines(first, width, 2)
        for more in rest:
            lines += wrapped_lines(more, width, 4, "dim" if more.startswith("not measured") else "")

    return lines


def run_lines(summary: Summary, width: int, index: int = 0) -> list[Text]:
    """The summary of run INDEX: answers, why, ladder, same vs cross, explanation, verdicts."""
    width = max(width, MIN_WIDTH)
    run = summary.runs[index]
    label = _explained_label(run)
    sections = [
        sandbox_lines(run, width),
        answer_lines(run, width),
        why_lines(run, width),  # the answers' causes, before the ladder they come from
        ladder_lines(run, width),
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


def plain(lines: list[Text]) -> str:
    """The lines as plain text (tests, logs)."""
    return "\n".join(line.plain for line in lines) + "\n"


# ---- as data ---------------------------------------------------------------------------
def _point_dict(point: Point | None) -> JsonObject | None:
    if point is None:
        return None
    return {
        "probe": point.probe,
        "params": point.params,
        "variant": variant_name(point.probe, point.params),
        "unit": units.unit_name(point.unit),
        "median": point.median,
        "ci_low": point.ci_low,
        "ci_high": point.ci_high,
        "status": point.status,
        "reasons": reason_sentences(point.reasons),
    }


def as_dict(run: RunSummary) -> JsonObject:
    """One run's summary as plain data: the ladder, same vs cross, the featured
    explanation and the verdicts, each figure with the record it comes from."""
    explanation = run.explanation
    return {
        "run": run.name,
        "ladder": [
            {"key": rung.key, "label": rung.label, **(_point_dict(rung.point) or {})}
            for rung in run.ladder
        ],
        "why": why.run_why(run),
        "terms": why.terms(run.ladder),
        "timer": list(run.timer),
        "answers": [
            {
                "question": answer.key,
                "title": answer.title,
                "sentences": answer_sentences(answer),
                "figures": [
                    {"label": label, "point": _point_dict(point)} for label, point in answer.figures
                ],
            }
            for answer in run.answers
        ],
        "same_vs_cross": [
            {
                "probe": row.probe,
                "between": row.between,
                "same": _point_dict(row.same),
                "cross": _point_dict(row.cross),
                "ratio": row.ratio,
                "no_ratio": why.no_ratio_words(row.same, row.cross),
            }
            for row in run.same_vs_cross
        ],
        "explanation": None
        if explanation is None
        else {
            "variant": variant_name(explanation.probe, explanation.params),
            "median_ns": explanation.median_ns,
            "parts": [
                {"name": part.name, "ns": part.ns, "source": source_words(part.source)}
                for part in explanation.parts
            ],
            "not_separated": [missing_words(m) for m in explanation.not_separated],
            "not_explained": [not_explained_words(n) for n in explanation.not_explained],
            "notes": [note_words(n) for n in explanation.notes],
        },
        "sandbox": list(run.sandbox),
        "verdicts": {
            "counts": run.verdicts.counts,
            "notes": [
                {
                    "variant": variant_name(note.point.probe, note.point.params),
                    "status": note.point.status,
                    "sentences": reason_sentences(note.reasons),
                }
                for note in run.verdicts.notes
            ],
        },
    }
