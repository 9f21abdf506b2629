"""The report's sections per family: medians, distributions, the ring grid, CPU-pair matrices."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from ctxbench import units
from ctxbench.analysis.summary.build import run_name
from ctxbench.records import matrix
from ctxbench.records.result import Result
from ctxbench.records.roles import has_role
from ctxbench.records.runs import StoredRun
from ctxbench.units import param_value, params_text
from ctxbench.views.report_figures import (
    PALETTE,
    Figure,
    Figures,
    esc,
    rows_height,
    unit_title,
    value_axis,
    variant_label,
)


@dataclass
class ProbeGroup:
    """One probe's variants in a run, one column per parameter."""

    probe: str
    param_names: list[str]
    results: list[Result]


@dataclass
class FamilySection:
    family: str
    unit: str
    id: str
    median_plot: Figure | None
    distribution_plot: Figure | None
    tables: list[tuple[str, list[ProbeGroup]]] = field(default_factory=list)
    nav_label: str = ""  # the family, and its unit where the family has several


def probe_groups(results: list[Result]) -> list[ProbeGroup]:
    groups: dict[str, ProbeGroup] = {}
    for result in results:
        group = groups.setdefault(result.probe, ProbeGroup(result.probe, [], []))
        group.results.append(result)
        for name in result.params:
            if name not in group.param_names:
                group.param_names.append(name)
    return list(groups.values())


def median_figure(
    figures: Figures, family: str, unit: str, per_run: list[list[Result]], names: list[str]
) -> Figure | None:
    figure = go.Figure()
    values: list[float] = []
    labels: list[str] = []
    for index, results in enumerate(per_run):
        plotted = [(r, r.summary) for r in results if r.summary is not None]
        if not plotted:
            continue
        y = [variant_label(r) for r, _ in plotted]
        x = [summary.median for _, summary in plotted]
        low = []
        high = []
        for (_, summary), median in zip(plotted, x, strict=True):
            ci = summary.median_ci
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
    figure.update_xaxes(title=unit_title(unit), **value_axis(values))
    figure.update_layout(scattermode="group", scattergap=0.5)
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )
    per_run = 8 * (len(figure.data) - 1)
    height = max(260, 110 + rows_height(labels, per_run))
    return figures.make(f"{family}: median with confidence interval ({unit})", figure, height)


def _four_digits(value: float) -> float:
    """A sample to 4 significant digits for the box plot: a step far below the
    spread of any distribution drawn, and a fifth of the page's bytes."""
    return float(f"{value:.4g}")


def distribution_figure(
    figures: Figures, family: str, unit: str, per_run: list[list[Result]], names: list[str]
) -> Figure | None:
    figure = go.Figure()
    values: list[float] = []
    labels: list[str] = []
    drawn = 0  # runs with samples
    # One box per run and variant, placed by y0 (its label, once, not once a
    # sample), in the run's slot (offsetgroup) and colour, one legend entry a run.
    for index, results in enumerate(per_run):
        boxes = 0
        for result in results:
            samples = result.samples
            if not samples:
                continue
            label = variant_label(result)
            if label not in labels:
                labels.append(label)
            xs = [_four_digits(v) for v in samples]
            values += xs
            figure.add_trace(
                go.Box(
                    x=xs,
                    y0=label,
                    orientation="h",
                    name=esc(names[index]),
                    legendgroup=str(index),
                    offsetgroup=str(index),
                    showlegend=boxes == 0,
                    marker={"color": PALETTE[index % len(PALETTE)], "size": 3},
                    boxpoints="outliers",
                )
            )
            boxes += 1
        drawn += boxes > 0
    if not figure.data:
        return None
    figure.update_layout(boxmode="group", showlegend=drawn > 1)
    figure.update_xaxes(title=unit_title(unit) + " (each sample)", **value_axis(values))
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )
    per_run = 14 * (drawn - 1)
    height = max(260, 110 + rows_height(labels, 4 + per_run))
    return figures.make(f"{family}: distribution of samples ({unit})", figure, height)


def _ring_axes(results: list[Result]) -> tuple[str, str | None, list[str]] | None:
    """Pick (column param, row param, other params) for the ring grid."""
    varying = [
        name
        for name in sorted({k for r in results for k in r.params})
        if len({json.dumps(r.params.get(name)) for r in results}) > 1
    ]
    numeric = [
        name
        for name in varying
        if all(isinstance(r.params.get(name), int | float) for r in results)
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


def ring_figures(figures: Figures, runs: list[StoredRun]) -> list[Figure]:
    out = []
    for index, run in enumerate(runs):
        results = [r for r in run.results if has_role(r.probe, "explain:ring") and r.summary]
        if not results:
            continue
        axes = _ring_axes(results)
        if axes is None:
            continue
        column, row, others = axes
        groups: dict[str, list[Result]] = {}
        for result in results:
            key = params_text({k: result.params.get(k) for k in others})
            groups.setdefault(key, []).append(result)
        for key, group in groups.items():
            xs = sorted({r.params[column] for r in group})
            ys = sorted({r.params[row] for r in group}) if row else [0]
            z: list[list[float | None]] = [[None] * len(xs) for _ in ys]
            text: list[list[str]] = [[""] * len(xs) for _ in ys]
            unit = group[0].unit
            corrected = all(r.block("corrected") for r in group)
            for result in group:
                value = result.block("corrected")["median"] if corrected else result.median
                i = ys.index(result.params[row]) if row else 0
                j = xs.index(result.params[column])
                z[i][j] = value
                text[i][j] = esc(units.value(value, unit))
                if corrected and result.block("corrected").get("nonpositive"):
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
            title = f"{results[0].probe} grid, {run_name(index, run)}: {what}"
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
    result: Result
    run_name: str
    classes: list[Mapping[str, Any]]  # the record's matrix classes, as written


def _matrix_hover(result: Result, cell: Mapping[str, Any]) -> str:
    unit = result.unit
    ci = cell.get("median_ci")
    text = f"{matrix.CLASS_LABEL[cell['class']]}: median {units.value(cell['median'], unit)}"
    if ci:
        text += f" [{units.interval(ci['low'], ci['high'], unit)}]"
    text += f", n={cell['n']}"
    if not cell["ok"]:
        text += "<br>not ok: " + "; ".join(cell.get("problems", []))
    return esc(text).replace("&lt;br&gt;", "<br>")


def matrix_views(figures: Figures, runs: list[StoredRun]) -> list[MatrixView]:
    views = []
    for index, run in enumerate(runs):
        for result in run.results:
            if not matrix.has_matrix(result):
                continue
            shown = result.block("matrix")
            cpus = shown["cpus"]
            by_pair = matrix.cells_by_pair(result)
            labels = [str(cpu) for cpu in cpus]
            unit = result.unit
            z: list[list[float | None]] = []
            text: list[list[str]] = []
            hover: list[list[str]] = []
            for row in cpus:
                cells = [by_pair.get((row, column)) for column in cpus]
                z.append([c["median"] if c else None for c in cells])
                text.append(
                    [
                        esc(units.value(c["median"], unit)) + ("*" if not c["ok"] else "")
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
            title = f"{result.probe} ({params_text(result.params)}), {run_name(index, run)}"
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


def families_of(runs: list[StoredRun]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for run in runs:
        for result in run.results:
            seen.setdefault((result.family, result.unit), None)
    return list(seen)
