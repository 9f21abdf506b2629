"""Self-contained HTML report of stored runs: tables and plotly plots, offline.

Renders only from stored records (``StoredRun``); measures nothing. The page
carries plotly.js inline and makes no network request. Every string that
comes from a record reaches the page escaped: Jinja2 autoescapes the HTML,
figure data travels as JSON in ``<script type="application/json">`` with
``<``, ``>`` and ``&`` escaped, and labels given to plotly (which
understands a few HTML tags) are HTML-escaped first.

Plots:
* per family: the median of each variant with its confidence interval,
  one trace per run; log scale where the family spans more than a factor 20;
* per family: the distribution of the per-operation samples (box plots);
* switch.ring: a heatmap of the corrected cost per switch over processes x
  working set (lmbench lat_ctx's grid);
* matrix.*: a heatmap of each CPU-pair matrix, CPUs in topology order with
  the groups that share an LLC, a NUMA node or a core outlined, and a table
  of per-class medians (per-class ratios in the comparison when several runs
  have the matrix);
* several runs: the ratio of medians with its bootstrap CI against the
  first run, one marker style for significant and one for not.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from itertools import count
from typing import Any

import jinja2
import plotly.graph_objects as go
import plotly.io as pio
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from ctxbench import __version__, fmt, matrix, noise
from ctxbench.compare import Comparison, describe, summary_lines
from ctxbench.envdiff import flatten_env
from ctxbench.explain import explain
from ctxbench.explain_phases import traced_line
from ctxbench.records import param_value, params_key, params_text
from ctxbench.riscv.answer import is_lab_run, lab_answer, lab_targets, measured
from ctxbench.riscv.catalog import CALLS
from ctxbench.riscv.report import parts_rows
from ctxbench.store import StoredRun
from ctxbench.summary import (
    LADDER,
    Machines,
    Point,
    RunSummary,
    Summary,
    is_remainder,
    run_name,
    section_id,
    summarize,
)

LOG_SPAN = 20.0  # log axis when max/min over a plot exceeds this
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
RING_PROBE = "switch.ring"
RATIO_TICKS = (
    0.001,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    0.8,
    1,
    1.25,
    2,
    5,
    10,
    20,
    50,
    100,
    1000,
    10000,
)


def esc(text: Any) -> str:
    """Escape a record string for plotly, which renders some HTML in labels."""
    return html.escape(str(text), quote=True)


def _script_json(text: str) -> Markup:
    # Safe inside <script>: no "</script>", no "<!--", no HTML entities.
    return Markup(
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


@dataclass
class Figure:
    id: str
    title: str
    json: Markup
    height: int


@dataclass
class ProbeGroup:
    """One probe's variants in a run, one column per parameter."""

    probe: str
    param_names: list[str]
    results: list[dict[str, Any]]


@dataclass
class FamilySection:
    family: str
    unit: str
    id: str
    median_plot: Figure | None
    distribution_plot: Figure | None
    tables: list[tuple[str, list[ProbeGroup]]] = field(default_factory=list)
    nav_label: str = ""  # the family, and its unit where the family has several


def _probe_groups(results: list[dict[str, Any]]) -> list[ProbeGroup]:
    groups: dict[str, ProbeGroup] = {}
    for result in results:
        group = groups.setdefault(result["probe"], ProbeGroup(result["probe"], [], []))
        group.results.append(result)
        for name in result["params"]:
            if name not in group.param_names:
                group.param_names.append(name)
    return list(groups.values())


def _variant_label(result: dict[str, Any]) -> str:
    probe = result["probe"]
    short = probe.split(".", 1)[1] if "." in probe else probe
    text = esc(short)
    params = params_text(result["params"])
    if params:
        text += "<br>" + esc(params)
    return text


def _rows_height(labels: list[str], extra_per_row: int = 0) -> int:
    """Pixels for the category rows. Plotly spaces categories evenly, so every
    row gets the height the tallest label (probe, then params) needs."""
    lines = max((label.count("<br>") + 1 for label in labels), default=1)
    return len(labels) * (6 + 17 * lines + extra_per_row)


def _value_axis(values: list[float]) -> dict[str, Any]:
    """Axis settings: log scale (ticks at 1, 2, 5 x 10^k) where values span > LOG_SPAN."""
    if _axis_type(values) == "log":
        return {"type": "log", "dtick": "D2"}
    return {"type": "linear"}


def _axis_type(values: list[float]) -> str:
    positive = [v for v in values if v is not None and v > 0]
    if len(positive) >= 2 and max(positive) / min(positive) > LOG_SPAN:
        return "log"
    return "linear"


def _unit_title(unit: str) -> str:
    return {"ns": "ns per operation", "msgs/s": "messages per second"}.get(
        unit, f"{unit} per operation"
    )


class _Figures:
    def __init__(self) -> None:
        self._ids = count(1)

    def make(
        self, title: str, figure: go.Figure, height: int, legend_on_top: bool = False
    ) -> Figure:
        """LEGEND_ON_TOP: above the plot, where a legend below would cover the axis title."""
        figure.update_layout(
            height=height,
            margin={"l": 10, "r": 20, "t": 40 + 40 * legend_on_top, "b": 40},
            template="plotly_white",
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"}
            if legend_on_top
            else {"orientation": "h", "y": -0.12},
            font={"family": "system-ui, sans-serif", "size": 12},
        )
        figure.update_yaxes(automargin=True)
        figure.update_xaxes(automargin=True)
        return Figure(
            id=f"plot-{next(self._ids)}",
            title=title,
            json=_script_json(pio.to_json(figure, validate=True, engine="json")),
            height=height,
        )


def _median_figure(
    figures: _Figures, family: str, unit: str, per_run: list[list[dict[str, Any]]], names: list[str]
) -> Figure | None:
    figure = go.Figure()
    values: list[float] = []
    labels: list[str] = []
    for index, results in enumerate(per_run):
        plotted = [r for r in results if r.get("summary")]
        if not plotted:
            continue
        y = [_variant_label(r) for r in plotted]
        x = [r["summary"]["median"] for r in plotted]
        low = []
        high = []
        for result, median in zip(plotted, x, strict=True):
            ci = result["summary"].get("median_ci")
            low.append(median - ci["low"] if ci else 0.0)
            high.append(ci["high"] - median if ci else 0.0)
            if ci:
                values += [ci["low"], ci["high"]]
        values += x
        labels += [label for label in y if label not in labels]
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                orientation="h",
                mode="markers",
                name=esc(names[index]),
                marker={"color": PALETTE[index % len(PALETTE)], "size": 9},
                error_x={"type": "data", "symmetric": False, "array": high, "arrayminus": low},
                hovertemplate="%{y}<br>median %{x}<extra>" + esc(names[index]) + "</extra>",
            )
        )
    if not figure.data:
        return None
    figure.update_xaxes(title=_unit_title(unit), **_value_axis(values))
    figure.update_layout(scattermode="group", scattergap=0.5)
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )
    per_run = 8 * (len(figure.data) - 1)
    height = max(260, 110 + _rows_height(labels, per_run))
    return figures.make(f"{family}: median with confidence interval ({unit})", figure, height)


def _distribution_figure(
    figures: _Figures, family: str, unit: str, per_run: list[list[dict[str, Any]]], names: list[str]
) -> Figure | None:
    figure = go.Figure()
    values: list[float] = []
    labels: list[str] = []
    for index, results in enumerate(per_run):
        xs: list[float] = []
        ys: list[str] = []
        for result in results:
            samples = result.get("samples") or []
            if not samples:
                continue
            label = _variant_label(result)
            if label not in labels:
                labels.append(label)
            xs += samples
            ys += [label] * len(samples)
        if not xs:
            continue
        values += xs
        figure.add_trace(
            go.Box(
                x=xs,
                y=ys,
                orientation="h",
                name=esc(names[index]),
                marker={"color": PALETTE[index % len(PALETTE)], "size": 3},
                boxpoints="outliers",
            )
        )
    if not figure.data:
        return None
    figure.update_layout(boxmode="group")
    figure.update_xaxes(title=_unit_title(unit) + " (each sample)", **_value_axis(values))
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )
    per_run = 14 * (len(figure.data) - 1)
    height = max(260, 110 + _rows_height(labels, 4 + per_run))
    return figures.make(f"{family}: distribution of samples ({unit})", figure, height)


def _ring_axes(results: list[dict[str, Any]]) -> tuple[str, str | None, list[str]] | None:
    """Pick (column param, row param, other params) for the ring grid."""
    varying = [
        name
        for name in sorted({k for r in results for k in r["params"]})
        if len({json.dumps(r["params"].get(name)) for r in results}) > 1
    ]
    numeric = [
        name
        for name in varying
        if all(isinstance(r["params"].get(name), int | float) for r in results)
    ]
    if not numeric:
        return None
    procs = [n for n in numeric if "proc" in n] or numeric[:1]
    column = procs[0]
    rest = [n for n in numeric if n != column]
    sized = [n for n in rest if any(w in n for w in ("ws", "work", "size", "kib", "kb"))]
    row = (sized or rest or [None])[0]
    others = [n for n in varying if n not in (column, row)]
    return column, row, others


def _ring_figures(figures: _Figures, runs: list[StoredRun]) -> list[Figure]:
    out = []
    for index, run in enumerate(runs):
        results = [r for r in run.results if r["probe"] == RING_PROBE and r.get("summary")]
        if not results:
            continue
        axes = _ring_axes(results)
        if axes is None:
            continue
        column, row, others = axes
        groups: dict[str, list[dict[str, Any]]] = {}
        for result in results:
            key = params_text({k: result["params"].get(k) for k in others})
            groups.setdefault(key, []).append(result)
        for key, group in groups.items():
            xs = sorted({r["params"][column] for r in group})
            ys = sorted({r["params"][row] for r in group}) if row else [0]
            z: list[list[float | None]] = [[None] * len(xs) for _ in ys]
            text: list[list[str]] = [[""] * len(xs) for _ in ys]
            unit = group[0]["unit"]
            corrected = all(r.get("corrected") for r in group)
            for result in group:
                value = result["corrected"]["median"] if corrected else result["summary"]["median"]
                i = ys.index(result["params"][row]) if row else 0
                j = xs.index(result["params"][column])
                z[i][j] = value
                text[i][j] = esc(fmt.value(value, unit))
                if corrected and result["corrected"].get("nonpositive"):
                    text[i][j] += " (≤0: noise)"  # baseline not below the result
            figure = go.Figure(
                go.Heatmap(
                    x=[esc(param_value(x)) for x in xs],
                    y=[esc(param_value(y)) for y in ys],
                    z=z,
                    text=text,
                    texttemplate="%{text}",
                    colorscale="Viridis",
                    colorbar={"title": {"text": esc(unit)}},
                    hovertemplate=esc(column) + "=%{x}<br>" + esc(row or "") + "=%{y}<br>%{text}"
                    "<extra></extra>",
                )
            )
            figure.update_xaxes(type="category", title=esc(column))
            figure.update_yaxes(type="category", title=esc(row or ""))
            what = (
                "corrected cost per switch (minus baseline)" if corrected else "median per switch"
            )
            title = f"{RING_PROBE} grid, {run_name(index, run)}: {what}"
            if key:
                title += f" — {key}"
            out.append(figures.make(title, figure, max(300, 120 + 40 * len(ys))))
    return out


# Outlines of CPU groups on a matrix heatmap: (line colour, dash, width).
BLOCK_STYLE = {
    "node": ("#d62728", "dash", 3),
    "llc": ("#202020", "solid", 3),
    "smt": ("#ffffff", "dot", 1.5),
}
BLOCK_LEGEND = (
    "outlined: CPUs sharing an LLC (solid white), a NUMA node (dashed red), a core (dotted)"
)


@dataclass
class MatrixView:
    plot: Figure
    result: dict[str, Any]
    run_name: str
    classes: list[dict[str, Any]]


def _matrix_hover(result: dict[str, Any], cell: dict[str, Any]) -> str:
    unit = result["unit"]
    ci = cell.get("median_ci")
    text = f"{matrix.CLASS_LABEL[cell['class']]}: median {fmt.value(cell['median'], unit)}"
    if ci:
        text += f" [{fmt.interval(ci['low'], ci['high'], unit)}]"
    text += f", n={cell['n']}"
    if not cell["ok"]:
        text += "<br>not ok: " + "; ".join(cell.get("problems", []))
    return esc(text).replace("&lt;br&gt;", "<br>")


def _matrix_views(figures: _Figures, runs: list[StoredRun]) -> list[MatrixView]:
    views = []
    for index, run in enumerate(runs):
        for result in run.results:
            if not matrix.has_matrix(result):
                continue
            shown = result["matrix"]
            cpus = shown["cpus"]
            by_pair = matrix.cells_by_pair(result)
            labels = [str(cpu) for cpu in cpus]
            unit = result["unit"]
            z: list[list[float | None]] = []
            text: list[list[str]] = []
            hover: list[list[str]] = []
            for row in cpus:
                cells = [by_pair.get((row, column)) for column in cpus]
                z.append([c["median"] if c else None for c in cells])
                text.append(
                    [
                        esc(fmt.value(c["median"], unit)) + ("*" if not c["ok"] else "")
                        if c
                        else ""
                        for c in cells
                    ]
                )
                hover.append([_matrix_hover(result, c) if c else "not measured" for c in cells])
            figure = go.Figure(
                go.Heatmap(
                    x=labels,
                    y=labels,
                    z=z,
                    text=text,
                    texttemplate="%{text}" if len(cpus) <= matrix.GRID_MAX_CPUS else None,
                    customdata=hover,
                    colorscale="Viridis",
                    colorbar={"title": {"text": esc(unit)}},
                    hovertemplate="row CPU %{y}, column CPU %{x}<br>%{customdata}<extra></extra>",
                )
            )
            for block in matrix.blocks(result):
                color, dash, width = BLOCK_STYLE[block.kind]
                figure.add_shape(
                    type="rect",
                    x0=block.first - 0.5,
                    x1=block.last + 0.5,
                    y0=block.first - 0.5,
                    y1=block.last + 0.5,
                    line={"color": color, "dash": dash, "width": width},
                    fillcolor="rgba(0,0,0,0)",
                )
            figure.update_xaxes(type="category", title="column CPU (task 1)", side="top")
            figure.update_yaxes(
                type="category",
                title="row CPU (task 0)",
                autorange="reversed",
                scaleanchor="x",
            )
            title = f"{result['probe']} ({params_text(result['params'])}), {run_name(index, run)}"
            size = min(900, 300 + 36 * len(cpus))
            views.append(
                MatrixView(
                    plot=figures.make(title, figure, size),
                    result=result,
                    run_name=run_name(index, run),
                    classes=matrix.classes(result),
                )
            )
    return views


def _row_label(row: Any) -> str:
    return esc(row.probe) + ("<br>" + esc(params_text(row.params)) if row.params else "")


def _comparison_figure(
    figures: _Figures,
    comparison: Comparison,
    title: str = "ratio to run A with bootstrap CI",
    labels_of: dict[int, str] | None = None,
) -> Figure | None:
    """Ratios to run A with their CI; LABELS_OF (id of a row -> label) names
    the rows when given, else the probe and its params do."""

    def label_of(row: Any) -> str:
        return labels_of[id(row)] if labels_of is not None else _row_label(row)

    figure = go.Figure()
    labels: list[str] = []
    values: list[float] = []
    for row in comparison.rows:
        if any(c.difference is not None and c.difference.ratio is not None for c in row.cells):
            labels.append(label_of(row))
    for index in range(1, len(comparison.runs)):
        for significant in (True, False):
            xs, ys, low, high, hover = [], [], [], [], []
            for row in comparison.rows:
                difference = row.cells[index].difference
                if difference is None or difference.ratio is None:
                    continue
                if difference.significant != significant:
                    continue
                label = label_of(row)
                ratio = difference.ratio
                xs.append(ratio.ratio)
                ys.append(label)
                low.append(ratio.ratio - ratio.low)
                high.append(ratio.high - ratio.ratio)
                values += [ratio.low, ratio.high]
                hover.append(
                    esc(
                        describe(
                            difference,
                            row.unit,
                            comparison.min_effect,
                            fmt.run_letter(index),
                            judged_by=row.cells[index].noise,
                        )
                        + "; "
                        + noise.words(row.cells[index].noise)
                        + ("; excluded: " + "; ".join(row.cells[index].excluded))
                        * bool(row.cells[index].excluded)
                    )
                )
            if not xs:
                continue
            color = PALETTE[index % len(PALETTE)]
            figure.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers",
                    name=esc(f"{run_name(index, comparison.runs[index])} / A")
                    + ("" if significant else " (not significant)"),
                    marker={
                        "color": color if significant else "rgba(0,0,0,0)",
                        "line": {"color": color, "width": 2},
                        "size": 9,
                        "symbol": "circle",
                    },
                    error_x={
                        "type": "data",
                        "symmetric": False,
                        "array": high,
                        "arrayminus": low,
                        "color": color,
                    },
                    text=hover,
                    hovertemplate="%{y}<br>ratio %{x:.3g}: %{text}<extra></extra>",
                )
            )
    if not figure.data:
        return None
    figure.add_vline(x=1.0, line={"color": "#888", "dash": "dot"})
    low, high = min([*values, 1.0]), max([*values, 1.0])
    ticks = [t for t in RATIO_TICKS if low / 1.5 <= t <= high * 1.5]
    if len(ticks) > 8:  # a wide range: decades only
        ticks = [t for t in ticks if math.log10(t).is_integer()]
    figure.update_xaxes(
        type="log",
        tickvals=ticks,
        ticktext=[f"{t:g}×" for t in ticks],
        title="ratio of medians, other run / A (log scale; for times, right of 1 is slower than A)",
    )
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )
    height = max(260, 150 + _rows_height(labels))
    return figures.make(title, figure, height, legend_on_top=True)


# ---- the summary (ctxbench.summary decides what it says; here it is drawn) ---------------
SAME_COLOR, CROSS_COLOR = "#1f77b4", "#ff7f0e"
LADDER_MIN_SPAN = (1.0, 1e6)  # the ladder's axis covers at least 1 ns to 1 ms
REMAINDER_LABEL = "<i>unexplained remainder</i><br>(wake-up and switch, not separated)"


def _time_tick(ns: float) -> str:
    """'1 ns', '10 µs', '1 ms': a power of ten of nanoseconds, named in its unit."""
    for factor, name in fmt.TIME_SCALES:
        if ns >= factor or factor == 1.0:
            return f"{ns / factor:g} {name}"
    raise AssertionError("unreachable")


def _time_axis(values: list[float], span: tuple[float, float] | None = None) -> dict[str, Any]:
    """A log axis of nanoseconds with a tick per decade, named in ns/µs/ms/s."""
    positive = [v for v in values if v is not None and v > 0]
    low = min([*(span[:1] if span else ()), *positive])
    high = max([*(span[1:] if span else ()), *positive])
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1, 2, 5) if last - first <= 2 else (1,)  # a narrow span gets 2 and 5 as well
    ticks = [
        m * 10.0**k for k in range(first, last + 1) for m in steps if m * 10.0**k <= 10.0**last
    ]
    return {
        "type": "log",
        "tickvals": ticks,
        "ticktext": [_time_tick(t) for t in ticks],
        "range": [math.log10(low) - 0.2, math.log10(high) + 0.2],
    }


def _point_text(point: Point) -> str:
    """'1.110 µs [1.100–1.118 µs]', and the verdict when it is not ok."""
    text = fmt.value(point.median, point.unit)
    if point.ci_low is not None and point.ci_high is not None:
        text += f" [{fmt.interval(point.ci_low, point.ci_high, point.unit)}]"
    return text + ("" if point.status == "ok" else f" ({point.status})")


def _point_hover(point: Point) -> str:
    text = esc(point.probe) + (" " + esc(point.params_text) if point.params else "")
    text += "<br>median " + esc(_point_text(point))
    for sentence in point.reasons:
        text += "<br>" + esc(sentence)
    return text


def _errors(points: list[Point]) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": [p.ci_high - p.median if p.ci_high is not None else 0.0 for p in points],
        "arrayminus": [p.median - p.ci_low if p.ci_low is not None else 0.0 for p in points],
    }


def _ladder_labels(summary: Summary) -> list[str]:
    """The ladder's rungs in run A's order (cheapest first), then any only
    another run measured, in the ladder's order."""
    first = [rung.label for rung in summary.runs[0].ladder]
    others = {rung.label for run in summary.runs[1:] for rung in run.ladder}
    return first + [spec.label for spec in LADDER if spec.label in others - set(first)]


def _ladder_figure(figures: _Figures, summary: Summary, runs: list[StoredRun]) -> Figure | None:
    """One log axis from ns to ms: each rung's median with its CI, labelled, one trace per run."""
    position = {id(r): i for run in runs for i, r in enumerate(run.results)}
    shown = [[rung for rung in run.ladder if rung.point.unit == "ns"] for run in summary.runs]
    present = {rung.label for rungs in shown for rung in rungs}
    labels = [esc(label) for label in _ladder_labels(summary) if label in present]
    if not labels:
        return None
    figure = go.Figure()
    values: list[float] = []
    # A rung is a row (0, 1, ... top down); each run's points sit on a line of
    # their own within it, and its labels on the same line.
    row = {label: number for number, label in enumerate(labels)}
    drawn = [index for index, rungs in enumerate(shown) if rungs]
    for index, (run, rungs) in enumerate(zip(summary.runs, shown, strict=True)):
        if not rungs:
            continue
        shift = (drawn.index(index) - (len(drawn) - 1) / 2) * 0.3
        y = [row[esc(rung.label)] + shift for rung in rungs]
        points = [rung.point for rung in rungs]
        values += [v for p in points for v in (p.median, p.ci_low, p.ci_high) if v is not None]
        color = PALETTE[index % len(PALETTE)]
        figure.add_trace(
            go.Scatter(
                x=[p.median for p in points],
                y=y,
                orientation="h",
                mode="markers",
                name=esc(run.name),
                marker={"color": color, "size": 10},
                error_x={**_errors(points), "color": color},
                # [section to open on a click, probe, index of the record in its run, run]:
                # the page's links and the tests read them
                customdata=[
                    [p.anchor, esc(p.probe), position[id(p.result)], esc(run.run_id)]
                    for p in points
                ],
                hovertext=[_point_hover(p) for p in points],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
        # The labels start where the interval ends, so no error bar runs through one.
        figure.add_trace(
            go.Scatter(
                x=[p.ci_high if p.ci_high is not None else p.median for p in points],
                y=y,
                mode="markers+text",
                # an unseen marker a little larger than the point: the text starts past it
                marker={"size": 14, "opacity": 0},
                text=[esc(_point_text(p)) for p in points],
                textposition="middle right",
                textfont={"size": 11, "color": color},
                showlegend=False,
                hoverinfo="skip",
            )
        )
    axis = _time_axis(values, LADDER_MIN_SPAN)
    axis["range"][1] += 1.4  # room for the labels right of the points
    figure.update_xaxes(title="time per operation (log scale)", **axis)
    figure.update_yaxes(
        tickvals=list(range(len(labels))),
        ticktext=labels,
        range=[len(labels) - 0.5, -0.5],  # the first rung at the top
        showgrid=False,
        zeroline=False,
    )
    runs_drawn = len(drawn)
    figure.update_layout(showlegend=runs_drawn > 1)
    # Each run's labels need a line of their own within a rung.
    height = max(300, 110 + len(labels) * (30 + 26 * (runs_drawn - 1)))
    return figures.make(
        "cost ladder: median per operation with its confidence interval", figure, height
    )


def _same_vs_cross_figure(figures: _Figures, run: RunSummary) -> Figure | None:
    """Grouped bars per switch primitive: the same-CPU and the cross-CPU median, log axis;
    hatched where the verdict is not ok."""
    rows = [
        r for r in run.same_vs_cross if all(p is None or p.unit == "ns" for p in (r.same, r.cross))
    ]
    if not rows:
        return None
    x = [esc(r.primitive) + ("<br>" + esc(r.between) if r.between else "") for r in rows]
    figure = go.Figure()
    values: list[float] = []
    for side, name, color in (
        ("same", "same CPU", SAME_COLOR),
        ("cross", "another CPU", CROSS_COLOR),
    ):
        points = [getattr(r, side) for r in rows]
        measured = [p if p is not None and p.median is not None else None for p in points]
        values += [
            v for p in measured if p for v in (p.median, p.ci_low, p.ci_high) if v is not None
        ]
        figure.add_trace(
            go.Bar(
                x=x,
                y=[p.median if p else None for p in measured],
                name=name,
                marker={
                    "color": color,
                    "pattern": {
                        "shape": ["" if p is None or p.status == "ok" else "/" for p in points]
                    },
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        p.ci_high - p.median if p and p.ci_high is not None else 0 for p in measured
                    ],
                    "arrayminus": [
                        p.median - p.ci_low if p and p.ci_low is not None else 0 for p in measured
                    ],
                },
                # No value printed on the bars: over hatching and under error
                # bars it cannot be read; the table below the chart gives them.
                customdata=[
                    [p.anchor, p.probe, params_key(p.params)] if p else None for p in points
                ],
                hovertext=[_point_hover(p) if p else "not measured in this run" for p in points],
                hovertemplate="%{hovertext}<extra>" + name + "</extra>",
            )
        )
    if not values:
        return None
    figure.update_layout(barmode="group")
    figure.update_yaxes(title="time per switch (log scale)", **_time_axis(values))
    figure.update_xaxes(type="category")
    title = f"same CPU vs another CPU, {run.name} (hatched: verdict not ok)"
    return figures.make(title, figure, 420)


def _waterfall_figure(figures: _Figures, run: RunSummary) -> Figure | None:
    """The featured switch's decomposition (ctxbench.explain), parts adding up to the median."""
    explanation = run.explanation
    if explanation is None:
        return None
    names = []
    for part in explanation.parts:
        names.append(REMAINDER_LABEL if is_remainder(part.name) else esc(part.name))
    figure = go.Figure(
        go.Waterfall(
            x=[*names, "measured median"],
            y=[*(part.ns for part in explanation.parts), explanation.median_ns],
            measure=["relative"] * len(explanation.parts) + ["total"],
            text=[
                esc(fmt.value(v, "ns"))
                for v in (*(p.ns for p in explanation.parts), explanation.median_ns)
            ],
            textposition="outside",
            hovertext=[esc(p.name + ": " + p.source) for p in explanation.parts]
            + [esc("the median of " + explanation.probe)],
            hovertemplate="%{hovertext}<extra></extra>",
            connector={"line": {"color": "#888", "dash": "dot"}},
            increasing={"marker": {"color": "#4c78a8"}},
            decreasing={"marker": {"color": "#54a24b"}},
            totals={"marker": {"color": "#1d2330"}},
        )
    )
    figure.update_yaxes(title="ns per switch", rangemode="tozero")
    figure.update_xaxes(type="category")
    title = (
        f"where the time of {explanation.probe} ({fmt.params(explanation.params)}) goes, {run.name}"
    )
    return figures.make(title, figure, 400)


def _machines_figure(figures: _Figures, machines: Machines) -> Figure | None:
    """The key figures' ratios to run A, drawn like the full comparison's."""
    chosen = [(f, f.row) for f in machines.figures if f.row is not None]
    if machines.key_comparison is None or not chosen:
        return None
    subset = replace(machines.key_comparison, rows=[row for _, row in chosen])
    labels = {id(row): esc(f.label) for f, row in chosen}
    return _comparison_figure(
        figures, subset, "key figures: ratio to run A with bootstrap CI", labels
    )


@dataclass
class SummaryView:
    summary: Summary
    ladder_plot: Figure | None
    same_vs_cross_plots: list[Figure | None]  # one per run
    waterfalls: list[Figure | None]  # one per run
    machines_plot: Figure | None


def _summary_view(figures: _Figures, summary: Summary, runs: list[StoredRun]) -> SummaryView:
    return SummaryView(
        summary=summary,
        ladder_plot=_ladder_figure(figures, summary, runs),
        same_vs_cross_plots=[_same_vs_cross_figure(figures, run) for run in summary.runs],
        waterfalls=[_waterfall_figure(figures, run) for run in summary.runs],
        machines_plot=_machines_figure(figures, summary.machines) if summary.machines else None,
    )


def _families(runs: list[StoredRun]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for run in runs:
        for result in run.results:
            seen.setdefault((result["family"], result["unit"]), None)
    return list(seen)


def build_context(runs: list[StoredRun], title: str | None = None) -> dict[str, Any]:
    figures = _Figures()
    names = [run_name(i, run) for i, run in enumerate(runs)]
    summary = summarize(runs)
    summary_view = _summary_view(figures, summary, runs)
    comparison = summary.machines.comparison if summary.machines else None
    sections = []
    ids: set[str] = set()
    families = _families(runs)
    for family, unit in families:
        per_run = [
            [r for r in run.results if r["family"] == family and r["unit"] == unit] for run in runs
        ]
        # The first section of a family answers to the summary's links (section_id).
        anchor = section_id(family)
        if anchor in ids:
            anchor = f"{anchor}-{len(ids)}"
        ids.add(anchor)
        section = FamilySection(
            family=family,
            unit=unit,
            id=anchor,
            median_plot=_median_figure(figures, family, unit, per_run, names),
            distribution_plot=_distribution_figure(figures, family, unit, per_run, names),
            nav_label=family
            if sum(1 for f, _ in families if f == family) == 1
            else f"{family} ({unit})",
        )
        for name, results in zip(names, per_run, strict=True):
            if results:
                section.tables.append((name, _probe_groups(results)))
        sections.append(section)
    envs = [flatten_env(run.env) for run in runs]
    env_keys = comparison.env.keys if comparison else list(envs[0])
    differing = set(comparison.env.differing) if comparison else set()
    env_rows = [
        {"key": key, "values": [env.get(key) for env in envs], "differs": key in differing}
        for key in env_keys
    ]
    env_rows.sort(key=lambda row: not row["differs"])
    notes = []
    for name, run in zip(names, runs, strict=True):
        for result in run.results:
            if result["verdict"]["status"] != "ok":
                notes.append((name, result))
    return {
        "title": title or "ctxbench report",
        "summary": summary_view,
        "ladder_labels": _ladder_labels(summary),
        "point_text": _point_text,
        "is_remainder": is_remainder,
        "traced_line": traced_line,
        "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": list(zip(names, runs, strict=True)),
        "env_rows": env_rows,
        "n_differing": len(differing),
        "sections": sections,
        "ring_plots": _ring_figures(figures, runs),
        "matrix_views": _matrix_views(figures, runs),
        "matrix_legend": BLOCK_LEGEND,
        "class_label": matrix.CLASS_LABEL,
        "labs": _labs(names, runs),
        "explained": [
            (name, explained)
            for name, run in zip(names, runs, strict=True)
            if (explained := explain(run.results, run.run_id)).explanations or explained.fork
        ],
        "comparison": comparison,
        "comparison_plot": _comparison_figure(figures, comparison) if comparison else None,
        "notes": notes,
        "fmt": fmt,
        "describe": describe,
        "summary_lines": summary_lines(comparison) if comparison else [],
        "letter": fmt.run_letter,
        "plotly_js": Markup(get_plotlyjs().replace("</script", "<\\/script")),
    }


def _labs(names: list[str], runs: list[StoredRun]) -> list[dict[str, Any]]:
    """The RISC-V trap lab's answer per lab run: its lines, and each call's
    parts per simulator (ctxbench.riscv.answer, as show prints them)."""
    labs = []
    for name, run in zip(names, runs, strict=True):
        if not is_lab_run(run.results):
            continue
        targets = measured(lab_targets(run.results))
        labs.append(
            {
                "name": name,
                "answer": lab_answer(run.results),
                "calls": [(call, *parts_rows(targets, call)) for call in CALLS] if targets else [],
            }
        )
    return labs


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("ctxbench", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(runs: list[StoredRun], title: str | None = None) -> str:
    if not runs:
        raise ValueError("a report needs at least one run")
    return _environment().get_template("report.html.j2").render(build_context(runs, title))
