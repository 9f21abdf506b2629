"""The report's plotting basics: figures as escaped JSON, axes, labels, colours.

Labels given to plotly (which understands a few HTML tags) are HTML-escaped
first; a figure travels as JSON with ``<``, ``>`` and ``&`` escaped. The
plotly template (the page's look, 7 kB of JSON) travels once per page, not
once per figure: the page puts it back into each layout.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from itertools import count
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from markupsafe import Markup

from ctxbench.records.result import Result
from ctxbench.units import params_text, terminal_text

LOG_SPAN = 20.0  # log axis when max/min over a plot exceeds this
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
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


def script_json(text: str) -> Markup:
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


def variant_label(result: Result) -> str:
    probe = result.probe
    short = probe.split(".", 1)[1] if "." in probe else probe
    text = esc(short)
    params = params_text(result.params)
    if params:
        text += "<br>" + esc(params)
    return text


def rows_height(labels: list[str], extra_per_row: int = 0) -> int:
    """Pixels for the category rows. Plotly spaces categories evenly, so every
    row gets the height the tallest label (probe, then params) needs."""
    lines = max((label.count("<br>") + 1 for label in labels), default=1)
    return len(labels) * (6 + 17 * lines + extra_per_row)


def value_axis(values: list[float]) -> dict[str, object]:
    """Axis settings: log scale (ticks at 1, 2, 5 x 10^k) where values span > LOG_SPAN."""
    if axis_type(values) == "log":
        return {"type": "log", "dtick": "D2"}
    return {"type": "linear"}


def axis_type(values: list[float]) -> str:
    positive = [v for v in values if v is not None and v > 0]
    if len(positive) >= 2 and max(positive) / min(positive) > LOG_SPAN:
        return "log"
    return "linear"


def unit_title(unit: str) -> str:
    return {"ns": "ns per operation", "msgs/s": "round trips per second (a message each way)"}.get(
        unit, f"{unit} per operation"
    )


def _page_strings(data: Any) -> Any:
    """DATA with every string shown as the terminal views show it
    (units.terminal_text): a record's control or bidi-override character
    reaches no plot label."""
    if isinstance(data, str):
        return terminal_text(data)
    if isinstance(data, list):
        return [_page_strings(item) for item in data]
    if isinstance(data, dict):
        return {key: _page_strings(value) for key, value in data.items()}
    return data


class Figures:
    def __init__(self) -> None:
        self._ids = count(1)
        self._template: Any = None

    def template_json(self) -> Markup:
        """The template every figure's layout shares (the page adds it back)."""
        return script_json(json.dumps(self._template, separators=(",", ":")))

    def _shared(self, figure_json: str) -> str:
        """FIGURE_JSON without its template where it is the shared one."""
        data = _page_strings(json.loads(figure_json))
        template = data["layout"].get("template")
        if self._template is None:
            self._template = template
        if template == self._template:
            del data["layout"]["template"]
        return json.dumps(data, separators=(",", ":"))

    def make(self, title: str, figure: go.Figure, height: int) -> Figure:
        """The legend sits above the plot: below it, it would cover the x-axis title."""
        shown = figure.layout.showlegend
        legend = bool(shown) if shown is not None else len(figure.data) > 1
        figure.update_layout(
            height=height,
            margin={"l": 10, "r": 20, "t": 40 + 40 * legend, "b": 40},
            template="plotly_white",
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
            font={"family": "system-ui, sans-serif", "size": 12},
        )
        figure.update_yaxes(automargin=True)
        figure.update_xaxes(automargin=True)
        return Figure(
            id=f"plot-{next(self._ids)}",
            title=title,
            json=script_json(self._shared(pio.to_json(figure, validate=True, engine="json"))),
            height=height,
        )
