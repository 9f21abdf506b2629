"""The report's answers drawn: the ladder, same vs other CPU, where the time goes, runs compared.

ctxbench.summary decides what the summary says; here it is drawn."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any

import plotly.graph_objects as go

from ctxbench import units
from ctxbench.analysis.compare.comparison import Comparison
from ctxbench.analysis.explain.explanation import Explanation
from ctxbench.analysis.summary.build import is_remainder, run_name
from ctxbench.analysis.summary.data import Machines, Point, RunSummary, Summary
from ctxbench.analysis.summary.rules import LADDER
from ctxbench.records.naming import params_key
from ctxbench.records.runs import StoredRun
from ctxbench.records.strict_json import JsonObject
from ctxbench.units import params_text
from ctxbench.views.compare.comparison import describe, excluded_words, noise_words
from ctxbench.views.explain.explanation import source_words
from ctxbench.views.explain.phases import phase_words
from ctxbench.views.reasons import reason_sentence
from ctxbench.views.report_figures import (
    PALETTE,
    RATIO_TICKS,
    Figure,
    Figures,
    esc,
    rows_height,
)


def row_label(row: Any) -> str:
    return esc(row.probe) + ("<br>" + esc(params_text(row.params)) if row.params else "")


def comparison_figure(
    figures: Figures,
    comparison: Comparison,
    title: str = "ratio to run A with its interval",
    labels_of: dict[int, str] | None = None,
) -> Figure | None:
    """Ratios to run A with their CI; LABELS_OF (id of a row -> label) names
    the rows when given, else the probe and its params do."""

    def label_of(row: Any) -> str:
        return labels_of[id(row)] if labels_of is not None else row_label(row)

    figure = go.Figure()
    labels: list[str] = []
    values: list[float] = []
    for row in comparison.rows:
        if any(c.difference is not None and c.difference.ratio is not None for c in row.cells):
            labels.append(label_of(row))
    for index in range(1, len(comparison.runs)):
        for significant in (True, False):
            trace, ends = _ratio_trace(comparison, index, significant, label_of)
            values += ends
            if trace is not None:
                figure.add_trace(trace)
    if not figure.data:
        return None
    _ratio_axes(figure, values, labels)
    height = max(260, 150 + rows_height(labels))
    return figures.make(title, figure, height)


def _ratio_trace(
    comparison: Comparison, index: int, significant: bool, label_of: Callable[[Any], str]
) -> tuple[go.Scatter | None, list[float]]:
    """Run INDEX's rows judged SIGNIFICANT (or not), their ratios to A with
    the intervals as one trace (None where there are none); and the ends of
    those intervals, for the axis."""
    xs, ys, low, high, hover, ends = [], [], [], [], [], []
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
        ends += [ratio.low, ratio.high]
        hover.append(_ratio_hover(comparison, row, index))
    if not xs:
        return None, ends
    color = PALETTE[index % len(PALETTE)]
    trace = go.Scatter(
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
    return trace, ends


def _ratio_hover(comparison: Comparison, row: Any, index: int) -> str:
    """A ratio's hover text: how it was judged, by which noise, what was excluded."""
    cell = row.cells[index]
    return esc(
        describe(
            cell.difference,
            row.unit,
            comparison.min_effect,
            units.run_letter(index),
            judged_by=cell.noise,
        )
        + "; "
        + noise_words(cell.noise)
        + ("; excluded: " + "; ".join(excluded_words(cell.excluded))) * bool(cell.excluded)
    )


def _ratio_axes(figure: go.Figure, values: list[float], labels: list[str]) -> None:
    """The ratio figure's log axis over VALUES (and 1), its rows in LABELS' order."""
    figure.add_vline(x=1.0, line={"color": "#888", "dash": "dot"})
    low, high = min([*values, 1.0]), max([*values, 1.0])
    ticks = [t for t in RATIO_TICKS if low / 1.5 <= t <= high * 1.5]
    if len(ticks) > 8:  # a wide range: decades only
        ticks = [t for t in ticks if math.log10(t).is_integer()]
    figure.update_xaxes(
        type="log",
        tickvals=ticks,
        ticktext=[f"{t:g}×" for t in ticks],
        title="ratio, other run / A, as each row was judged (of p10s by history, else of "
        "medians; log scale; for times, right of 1 is slower than A)",
    )
    figure.update_yaxes(
        type="category", autorange="reversed", categoryorder="array", categoryarray=labels
    )


SAME_COLOR, CROSS_COLOR = "#1f77b4", "#ff7f0e"
LADDER_MIN_SPAN = (1.0, 1e6)  # the ladder's axis covers at least 1 ns to 1 ms
REMAINDER_LABEL = "<i>unexplained remainder</i><br>(wake-up and switch, not separated)"
REMAINDER_LABEL_TRACED = "<i>not attributed by the events</i>"


def _time_tick(ns: float) -> str:
    """'1 ns', '10 µs', '1 ms': a power of ten of nanoseconds, named in its unit."""
    for factor, name in units.TIME_SCALES:
        if ns >= factor or factor == 1.0:
            return f"{ns / factor:g} {name}"
    raise AssertionError("unreachable")


def _time_axis(values: list[float], span: tuple[float, float] | None = None) -> JsonObject:
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


def point_text(point: Point) -> str:
    """'1.110 µs [1.100–1.118 µs]', and the verdict when it is not ok."""
    text = units.value(point.median, point.unit)
    if point.ci_low is not None and point.ci_high is not None:
        text += f" [{units.interval(point.ci_low, point.ci_high, point.unit)}]"
    return text + ("" if point.status == "ok" else f" ({point.status})")


def _point_hover(point: Point) -> str:
    text = esc(point.probe) + (" " + esc(point.params_text) if point.params else "")
    text += "<br>median " + esc(point_text(point))
    for code in point.reasons:
        text += "<br>" + esc(reason_sentence(code))
    return text


def _errors(points: list[Point]) -> JsonObject:
    return {
        "type": "data",
        "symmetric": False,
        "array": [p.ci_high - p.median if p.ci_high is not None else 0.0 for p in points],
        "arrayminus": [p.median - p.ci_low if p.ci_low is not None else 0.0 for p in points],
    }


def ladder_labels(summary: Summary) -> list[str]:
    """The ladder's rungs in run A's order (cheapest first), then any only
    another run measured, in the ladder's order."""
    first = [rung.label for rung in summary.runs[0].ladder]
    others = {rung.label for run in summary.runs[1:] for rung in run.ladder}
    return first + [spec.label for spec in LADDER if spec.label in others - set(first)]


def _ladder_figure(figures: Figures, summary: Summary, runs: list[StoredRun]) -> Figure | None:
    """One log axis from ns to ms: each rung's median with its CI, labelled, one trace per run."""
    position = {id(r): i for run in runs for i, r in enumerate(run.results)}
    shown = [[rung for rung in run.ladder if rung.point.unit == "ns"] for run in summary.runs]
    present = {rung.label for rungs in shown for rung in rungs}
    labels = [esc(label) for label in ladder_labels(summary) if label in present]
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
                text=[esc(point_text(p)) for p in points],
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


def _same_vs_cross_figure(figures: Figures, run: RunSummary) -> Figure | None:
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


def _waterfall_bars(explanation: Explanation) -> tuple[list[str], list[float], list[str], str]:
    """The bars of the featured switch's waterfall: the traced pass's phases
    (each its share of the traced samples times the median, explain_phases)
    and what they leave of the median, when the figure has a traced pass;
    else the subtraction parts."""
    traced = explanation.traced
    if traced is not None and traced.status == "ok" and traced.rest_ns is not None:
        names = [esc(p.name) for p in traced.phases] + [REMAINDER_LABEL_TRACED]
        values = [p.ns for p in traced.phases]
        values.append(traced.rest_ns)
        hover = [
            esc(f"{p.name}: {phase_words(p)} ({units.value(p.traced_ns, 'ns')} per switch traced)")
            for p in traced.phases
        ] + [esc("the median traced sample's time no switch's chain covers, scaled")]
        return names, values, hover, " (the kernel's events)"
    names = [REMAINDER_LABEL if is_remainder(p.name) else esc(p.name) for p in explanation.parts]
    hover = [esc(p.name + ": " + source_words(p.source)) for p in explanation.parts]
    return names, [p.ns for p in explanation.parts], hover, ""


def _waterfall_figure(figures: Figures, run: RunSummary) -> Figure | None:
    """The featured switch's decomposition (ctxbench.explain), parts adding up to the median."""
    explanation = run.explanation
    if explanation is None:
        return None
    names, values, hover, source = _waterfall_bars(explanation)
    # A waterfall drawn as bars that each start where the parts before it end
    # (plotly's Waterfall trace is not in the cartesian bundle the page carries).
    bases = list(accumulate(values[:-1], initial=0.0)) if values else []
    colours = ["#4c78a8" if v >= 0 else "#54a24b" for v in values]
    figure = go.Figure(
        go.Bar(
            x=[*names, "measured median"],
            y=[*values, explanation.median_ns],
            base=[*bases, 0.0],
            marker={"color": [*colours, "#1d2330"]},
            text=[esc(units.value(v, "ns")) for v in (*values, explanation.median_ns)],
            textposition="outside",
            hovertext=[*hover, esc("the median of " + explanation.probe)],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    figure.update_yaxes(title="ns per switch", rangemode="tozero")
    figure.update_xaxes(type="category")
    title = (
        f"where the time of {explanation.probe} ({units.params(explanation.params)}) goes"
        f"{source}, {run.name}"
    )
    return figures.make(title, figure, 400)


def _machines_figure(figures: Figures, machines: Machines) -> Figure | None:
    """The key figures' ratios to run A, drawn like the full comparison's."""
    chosen = [(f, f.row) for f in machines.figures if f.row is not None]
    if machines.key_comparison is None or not chosen:
        return None
    subset = replace(machines.key_comparison, rows=[row for _, row in chosen])
    labels = {id(row): esc(f.label) for f, row in chosen}
    return comparison_figure(
        figures, subset, "key figures: ratio to run A with its interval", labels
    )


@dataclass
class SummaryView:
    summary: Summary
    ladder_plot: Figure | None
    same_vs_cross_plots: list[Figure | None]  # one per run
    waterfalls: list[Figure | None]  # one per run
    machines_plot: Figure | None


def summary_figures(figures: Figures, summary: Summary, runs: list[StoredRun]) -> SummaryView:
    return SummaryView(
        summary=summary,
        ladder_plot=_ladder_figure(figures, summary, runs),
        same_vs_cross_plots=[_same_vs_cross_figure(figures, run) for run in summary.runs],
        waterfalls=[_waterfall_figure(figures, run) for run in summary.runs],
        machines_plot=_machines_figure(figures, summary.machines) if summary.machines else None,
    )
