"""Terminal tables (rich) for runs, probes, history, environments and comparisons.

Presentation only: every figure comes from a stored record or a
``compare.Comparison``; nothing is measured or computed here beyond
choosing how to show it. The styles here are requests: whether they reach
the output is decided once, by ``units.styled`` (a terminal, no NO_COLOR), in
the CLI's consoles.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ctxbench import units
from ctxbench.records import matrix
from ctxbench.records.envdiff import flatten_env
from ctxbench.records.environment import Environment
from ctxbench.records.result import Result
from ctxbench.records.runs import RunInfo

if TYPE_CHECKING:  # the comparison tables' types; compare (numpy) loads with `compare`
    from ctxbench.analysis.compare.comparison import Comparison, MatrixComparison

STATUS_STYLE = {"ok": "green", "suspect": "yellow", "unsupported": "dim", "failed": "red"}


def _verdict_text(result: Result) -> Text:
    return Text(units.verdict(result), style=STATUS_STYLE.get(result.verdict.status, ""))


def _with_set_aside(text: Text, result: Result) -> Text:
    """``text`` with a dim line for the samples set aside as host interference, if any."""
    aside = units.set_aside(result)
    if aside:
        text.append("\n" + aside, style="dim")
    return text


NARROW = 140  # below this width: params under the probe, p99 under the median, baseline below


def results_table(
    results: Sequence[Result], title: str | None = None, width: int | None = None
) -> Table:
    if width is not None and width < NARROW:
        return _narrow_results_table(results, title)
    table = _wide_results_table(results, title)
    if width is not None and _natural_width(table) > width:
        return _narrow_results_table(results, title)
    return table


def _natural_width(table: Table) -> int:
    console = Console(width=10_000, file=io.StringIO())
    return Measurement.get(console, console.options, table).maximum


def _wide_results_table(results: Sequence[Result], title: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("probe", no_wrap=True)
    table.add_column("params", overflow="fold")
    table.add_column("median", justify="right", no_wrap=True)
    table.add_column("p99", justify="right", no_wrap=True)
    table.add_column("CI of median", justify="right", no_wrap=True)
    table.add_column("baseline", justify="right", no_wrap=True)
    table.add_column("less baseline", justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold")
    for result in results:
        table.add_row(
            Text(result.probe),
            Text(units.params(result.params)),
            units.value(result.figure("median"), result.unit),
            units.value(result.figure("p99"), result.unit),
            units.median_ci_text(result),
            units.baseline(result),
            units.corrected(result),
            _with_set_aside(_verdict_text(result), result),
        )
    return table


def _narrow_results_table(results: Sequence[Result], title: str | None) -> Table:
    """The same figures for an 80-column terminal: two lines per result."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, expand=True)
    table.add_column("probe\nparams", overflow="fold", ratio=1, min_width=18)
    table.add_column("median\np99", justify="right", no_wrap=True)
    table.add_column("CI of\nmedian", justify="right", no_wrap=True)
    table.add_column("less base\nbaseline", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for result in results:
        unit = result.unit
        name = Text(result.probe)
        if result.params:
            name.append("\n" + units.params(result.params), style="dim")
        _with_set_aside(name, result)
        status = result.verdict.status
        median, p99 = result.figure("median"), result.figure("p99")
        table.add_row(
            name,
            f"{units.value(median, unit)}\n{units.value(p99, unit)}",
            units.median_ci_text(result),
            f"{units.corrected(result)}\n{units.baseline(result)}",
            Text(status, style=STATUS_STYLE.get(status, "")),
        )
    return table


def verdict_notes(results: Iterable[Result], shown: int = 3) -> list[str]:
    """What the reasons of the results that are not plain ok say: one line per
    distinct reason, so a reason shared by many results is printed once, with
    how many they are and the first few of them."""
    by_detail: dict[str, list[str]] = {}
    for result in results:
        if result.verdict.status != "ok":
            label = result.probe
            if result.params:
                label += f" ({units.params(result.params)})"
            by_detail.setdefault(units.verdict_detail(result), []).append(label)
    notes = []
    for detail, labels in by_detail.items():
        if len(labels) == 1:
            notes.append(f"{labels[0]}: {detail}")
            continue
        more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
        notes.append(f"{len(labels)} results ({'; '.join(labels[:shown])}{more}): {detail}")
    return notes


def matrix_sections(results: Iterable[Result]) -> list[Any]:
    """Each matrix result: the grid of cell medians (up to 16 CPUs, 80 columns)
    or, for more CPUs, only the per-class summary, which follows the grid too."""
    parts: list[Any] = []
    for result in results:
        if not matrix.has_matrix(result):
            continue
        shown = result.block("matrix")
        cpus = shown["cpus"]
        unit = matrix.unit_name(result)
        head = Text(f"{result.probe} ({units.params(result.params)})", style="bold")
        head.append(f": median per op in each cell, {unit}", style="")
        parts += [
            Text(""),
            head,
            Text(f"rows: {shown['rows']}; columns: {shown['columns']}", style="dim"),
        ]
        if len(cpus) <= matrix.GRID_MAX_CPUS:
            parts.append(Text("\n".join(matrix.grid_lines(result)), no_wrap=True))
            legend = []
            if not shown["diagonal"].startswith("measured"):
                legend.append(f"-: {shown['diagonal']}")
            if any(not cell["ok"] for cell in shown["cells"]):
                legend.append("*: the cell is not ok (its problems are in the record)")
            parts += [Text(line, style="dim") for line in legend]
        else:
            parts.append(
                Text(
                    f"{len(cpus)} CPUs: too many for a grid in 80 columns; per class:", style="dim"
                )
            )
        if shown["selection"]["sampled"]:
            parts.append(Text(f"sampled: {shown['selection']['rule']}", style="dim"))
        parts.append(matrix_class_table(result))
    return parts


def matrix_class_table(result: Result) -> Table:
    """Per class of CPU pair: cells measured, median over their samples with its
    CI, and the spread of the cells' own medians."""
    unit = result.unit
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("pair class", no_wrap=True)
    table.add_column("cells", justify="right", no_wrap=True)
    table.add_column("median", justify="right", no_wrap=True)
    table.add_column("CI of median", justify="right", no_wrap=True)
    table.add_column("cell medians", justify="right", no_wrap=True)
    for pair_class in matrix.classes(result):
        summary = pair_class.get("summary") or {}
        ci = summary.get("median_ci") or {}
        table.add_row(
            matrix.CLASS_LABEL[pair_class["class"]],
            f"{pair_class['measured']}/{pair_class['pairs']}",
            units.value(summary.get("median"), unit),
            units.interval(ci.get("low"), ci.get("high"), unit),
            units.interval(
                pair_class.get("lowest_cell_median"), pair_class.get("highest_cell_median"), unit
            ),
        )
    return table


def matrix_comparison_tables(comparison: Comparison) -> list[Table]:
    """Per matrix probe in the runs: each class's median per run and its ratio to run A."""
    return [_matrix_comparison_table(comparison, m) for m in comparison.matrices]


def _matrix_comparison_table(comparison: Comparison, compared: MatrixComparison) -> Table:
    from ctxbench.analysis.compare import noise
    from ctxbench.views.compare.comparison import describe, why_not_words

    title = f"{compared.probe} ({units.params(compared.params)}) per pair class (ratio = other / A)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("pair class", no_wrap=True)
    table.add_column("A median", justify="right", no_wrap=True)
    for index in range(1, len(comparison.runs)):
        letter = units.run_letter(index)
        table.add_column(f"{letter} median", justify="right", no_wrap=True)
        table.add_column(f"{letter}/A [CI], p", justify="right", no_wrap=True)
        table.add_column(f"{letter} vs A", overflow="fold")
    for row in compared.rows:
        reference = row.cells[0]
        cells: list[Any] = [
            matrix.CLASS_LABEL[row.pair_class],
            units.value(reference.median, compared.unit)
            if reference.note is None
            else Text(reference.note, style="dim"),
        ]
        for cell in row.cells[1:]:
            median = units.value(cell.median, compared.unit) if cell.note is None else "—"
            difference = cell.difference
            if difference is None or difference.ratio is None:
                note = (
                    cell.note or (why_not_words(difference.why_not) if difference else None) or "—"
                )
                cells += [median, "—", Text(note, style="dim")]
                continue
            ratio = units.ratio(difference.ratio.low, difference.ratio.ratio, difference.ratio.high)
            p = f"{difference.u_test.p_value:.2g}" if difference.u_test else "—"
            words = describe(difference, compared.unit, judged_by=noise.within_run())
            style = "dim"
            if difference.significant:
                style = "red" if words.endswith("slower") else "green"
            cells += [median, f"{ratio}, p = {p}", Text(words, style=style)]
        table.add_row(*cells)
    return table


def history_table(infos: list[RunInfo], width: int | None = None) -> Table:
    """The stored runs; two lines per run where one would not fit."""
    wide = _history_table(infos, narrow=False)
    if width is not None and _natural_width(wide) > width:
        return _history_table(infos, narrow=True)
    return wide


def _history_table(infos: list[RunInfo], narrow: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, expand=narrow)
    if narrow:
        table.add_column("run id\nmeasured (UTC)", no_wrap=True)
        table.add_column("machine\nlabel", overflow="fold", ratio=1)
        table.add_column("results\nok/sus/uns/fail", justify="right", no_wrap=True)
        table.add_column("state\nfrom", no_wrap=True)
    else:
        table.add_column("run id", no_wrap=True)
        table.add_column("measured (UTC)", no_wrap=True)
        table.add_column("machine")
        table.add_column("label")
        table.add_column("from")
        table.add_column("results", justify="right")
        table.add_column("ok/suspect/unsupp./failed", justify="right")
        table.add_column("state")
    for info in infos:
        counts = "/".join(
            str(info.counts.get(s, 0)) for s in ("ok", "suspect", "unsupported", "failed")
        )
        state = "complete"
        if info.interrupted:
            state = "partial (interrupted)" if info.complete else "partial (no run_end)"
        state_text = Text(state, style="yellow" if info.interrupted else "")
        started = (info.started_at or "?").replace("T", " ").removesuffix("Z")
        if narrow:
            table.add_row(
                Text(f"{info.run_id}\n{started}"),
                Text(f"{info.machine}\n{info.label or ''}"),
                f"{info.n_results}\n{counts}",
                Text.assemble(state_text, "\n", info.origin),
            )
        else:
            table.add_row(
                Text(info.run_id),
                Text(started),
                Text(info.machine),
                Text(info.label or ""),
                Text(info.origin),
                str(info.n_results),
                counts,
                state_text,
            )
    return table


def probes_listing(probes: Sequence[Mapping[str, Any]]) -> Group:
    """Each probe of the engine's catalogue (``list --json``, as it writes it):
    name, unit and params on one line; what one op is and its baseline below,
    indented (long sentences read better wrapped than in cells)."""
    lines: list[Any] = []
    family = None
    for probe in probes:
        name = str(probe.get("name"))
        if name.split(".", 1)[0] != family:
            family = name.split(".", 1)[0]
            lines.append(Text(""))
            lines.append(Text(family, style="bold underline"))
        params = " ".join(
            f"{p.get('name')}={'|'.join(str(v) for v in p.get('values', []))}"
            for p in probe.get("params", [])
        )
        head = Text(name, style="bold")
        head.append(f"  [{probe.get('unit', '?')}]", style="cyan")
        if params:
            head.append(f"  {params}")
        if not probe.get("supported", True):
            head.append(f"  not supported here: {probe.get('reason') or '?'}", style="yellow")
        lines.append(head)
        lines.append(
            Padding(Text(str(probe.get("op", "")), style="dim"), (0, 0, 0, 4), expand=False)
        )
        baseline = probe.get("baseline")
        if isinstance(baseline, dict):
            baseline = baseline.get("name") or baseline.get("probe")
        if baseline:
            lines.append(
                Padding(Text(f"baseline: {baseline}", style="dim"), (0, 0, 0, 4), expand=False)
            )
    return Group(*lines[1:])


def env_table(env: Environment) -> Table:
    table = Table(show_header=True)
    table.add_column("environment", no_wrap=True)
    table.add_column("value")
    for key, value in flatten_env(env).items():
        table.add_row(Text(key), Text(_clip(value, 300)))
    return table


def env_diff_table(comparison: Comparison) -> Table | Text:
    env = comparison.env
    if not env.differing:
        return Text(f"environment: no differences ({len(env.keys)} keys compared)")
    table = Table(
        title=f"environment: what differs ({len(env.differing)} of {len(env.keys)} keys)",
        title_justify="left",
    )
    table.add_column("key", no_wrap=True)
    for index, run in enumerate(comparison.runs):
        table.add_column(_run_label(index, run.run_id, run.info.label), overflow="fold")
    for key in env.differing:
        table.add_row(
            Text(key),
            *[Text(_clip(v, 120) if v is not None else "—") for v in env.values[key]],
        )
    return table


def comparison_table(
    comparison: Comparison, width: int | None = None, only_common: bool = False
) -> Table:
    """Per variant: medians (with the verdict where it is not ok), ratio [CI]
    to run A, p of the U test, the decision, and why a row is excluded from
    the summary. ``only_common``: leave out variants missing from a run.

    Below NARROW columns, params go under the probe and p under the ratio.
    """
    narrow = width is not None and width < NARROW
    table = Table(
        title=f"results (reference: A; ratio = other / A with its {comparison.level:.0%} "
        f"interval from the noise source each row names; by history, of the runs' p10s "
        f"(each run's fastest tenth), else of medians; within-run: bootstrap and "
        f"Mann-Whitney U, alpha {comparison.alpha:g})",
        title_justify="left",
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD,
        expand=narrow,
    )
    _comparison_columns(table, len(comparison.runs), narrow)
    for row in comparison.rows:
        if only_common and any(cell.result is None for cell in row.cells):
            continue
        cells = _variant_cells(row, narrow)
        for index, cell in enumerate(row.cells[1:], start=1):
            cells += _compared_cells(comparison, row, index, cell, narrow)
        table.add_row(*cells)
    return table


def _comparison_columns(table: Table, runs: int, narrow: bool) -> None:
    """The comparison table's columns: the variant, A's median, then per
    other run its median, ratio [CI], p and decision."""
    if narrow:
        table.add_column("probe\nparams", overflow="fold", ratio=1, min_width=16)
    else:
        table.add_column("probe", no_wrap=True)
        table.add_column("params", overflow="fold")
    table.add_column("A median", justify="right", no_wrap=True)
    for index in range(1, runs):
        letter = units.run_letter(index)
        table.add_column(f"{letter} median", justify="right", no_wrap=True)
        if narrow:
            table.add_column(f"{letter}/A [CI], p", justify="right", no_wrap=True)
        else:
            table.add_column(f"{letter}/A [CI]", justify="right", no_wrap=True)
            table.add_column("p", justify="right", no_wrap=True)
        table.add_column(f"{letter} vs A", overflow="fold")


def _variant_cells(row: Any, narrow: bool) -> list[Any]:
    """A row's first cells: the probe, its params, the reference's median."""
    reference = row.cells[0]
    if narrow:
        name = Text(row.probe)
        if row.params:
            name.append("\n" + units.params(row.params), style="dim")
        cells: list[Any] = [name]
    else:
        cells = [Text(row.probe), Text(units.params(row.params))]
    cells.append(
        _median_text(reference, row.unit)
        if reference.note is None
        else Text(reference.note, style="dim")
    )
    return cells


def _compared_cells(
    comparison: Comparison, row: Any, index: int, cell: Any, narrow: bool
) -> list[Any]:
    """Run INDEX's cells of a row: its median, ratio [CI] to A, p, and the
    decision in words (or why there is no ratio)."""
    # views.compare.comparison needs compare's statistics (numpy): only `compare` loads it
    from ctxbench.views.compare.comparison import (
        describe,
        excluded_words,
        noise_words,
        why_not_words,
    )

    median = _median_text(cell, row.unit) if cell.result and cell.median is not None else "—"
    difference = cell.difference
    if difference is None or difference.ratio is None:
        note = cell.note or (why_not_words(difference.why_not) if difference else None) or "—"
        return [median, "—"] + ([] if narrow else ["—"]) + [Text(note, style="dim")]
    ratio = units.ratio(difference.ratio.low, difference.ratio.ratio, difference.ratio.high)
    p = units.p_value(difference.u_test.p_value) if difference.u_test else "—"
    words = Text(
        describe(
            difference,
            row.unit,
            comparison.min_effect,
            units.run_letter(index),
            judged_by=cell.noise,
        ),
        style={"slower": "red", "faster": "green"}.get(cell.decision or "", "dim"),
    )
    words.append("\n" + noise_words(cell.noise), style="dim")
    if cell.excluded:
        words.stylize("dim")
        words.append("\nexcluded: " + "; ".join(excluded_words(cell.excluded)), style="yellow")
    if narrow:
        return [median, f"{ratio}\n{p}", words]
    return [median, ratio, p, words]


def _median_text(cell: Any, unit: str) -> str:
    """The median, with the verdict beside it when it is not ok."""
    text = units.value(cell.median, unit)
    return text if cell.status == "ok" else f"{text} ({cell.status})"


def runs_legend(comparison: Comparison) -> Table:
    table = Table(show_header=True)
    table.add_column("")
    table.add_column("run id", no_wrap=True)
    table.add_column("machine")
    table.add_column("label")
    table.add_column("measured (UTC)")
    table.add_column("options")
    for index, run in enumerate(comparison.runs):
        options = comparison.options[index] if index < len(comparison.options) else {}
        table.add_row(
            units.run_letter(index),
            Text(run.run_id),
            Text(run.info.machine),
            Text(run.info.label or ""),
            Text(run.info.started_at or "?"),
            Text(units.run_options(options)),
        )
    return table


def _run_label(index: int, run_id: str, label: str | None) -> str:
    return f"{units.run_letter(index)}: {label or run_id}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
