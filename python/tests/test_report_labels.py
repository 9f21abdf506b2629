"""The report's summary charts, drawn by a real browser at 1280x800: no two value
labels overlap, no error bar or point runs through a label, and no text (a
legend, a tick, a label) lies over an axis title. On the fresh
default run (fixtures/default_quick.jsonl: wide intervals, suspect figures)
alone and beside the reference run. Both pages are under 2 MB, and the chart
library they carry (plotly.js's cartesian bundle) draws every trace type they
use. Also what the page says of them: two runs of one machine are "Run vs
run", and a family with two units is named with its unit in the navigation.

It opens the pages in headless Debian Chromium through playwright, offline,
as test_report.py does; without Chromium it skips (fails under CI).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest
from plotly.offline.offline import get_plotlyjs_version

from conftest import lab_run, real_run, require_chromium
from ctxbench.analysis.summary.build import summarize
from ctxbench.cli.output_files import write_report
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import RunRecords
from ctxbench.store.db import Store
from ctxbench.views import report
from ctxbench.views.report import chart_library, render

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "data" / "reference-run.jsonl"

# Per summary chart: its value labels (scatter text, bar text), and what each
# collides with (another label, an error bar, a visible point marker).
LABELS_JS = """(PLOTS) => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const hit = (a, b) => a.x0 < b.x1 - 1 && b.x0 < a.x1 - 1 && a.y0 < b.y1 - 1 && b.y0 < a.y1 - 1;
  const seen = (e) => parseFloat(getComputedStyle(e).opacity || '1') > 0
                      && parseFloat(e.style.opacity || '1') > 0;
  return Array.from(document.querySelectorAll(PLOTS)).map(plot => {
    const labels = Array.from(plot.querySelectorAll('g.textpoint text, text.bartext'))
      .filter(e => e.textContent.trim() && e.getBoundingClientRect().width > 0)
      .map(e => ({text: e.textContent, box: box(e)}));
    const marks = Array.from(plot.querySelectorAll('g.errorbar path, path.point'))
      .filter(seen).map(box).filter(b => b.x1 > b.x0 || b.y1 > b.y0);
    const overlaps = [], struck = [];
    labels.forEach((a, i) => labels.slice(i + 1).forEach(b => {
      if (hit(a.box, b.box)) overlaps.push([a.text, b.text]);
    }));
    labels.forEach(l => marks.forEach(m => { if (hit(l.box, m)) struck.push(l.text); }));
    // No other text (legend, ticks, value labels, annotations) over an axis title.
    const titles = Array.from(plot.querySelectorAll('g.g-xtitle text, g.g-ytitle text'))
      .filter(e => e.textContent.trim()).map(e => ({text: e.textContent, box: box(e)}));
    const texts = Array.from(plot.querySelectorAll('text'))
      .filter(e => e.textContent.trim() && e.getBoundingClientRect().width > 0
                   && !e.closest('g.g-xtitle, g.g-ytitle'))
      .map(e => ({text: e.textContent, box: box(e)}));
    const onTitles = [];
    titles.forEach(t => texts.forEach(o => {
      if (hit(t.box, o.box)) onTitles.push([t.text, o.text]);
    }));
    return {kind: plot.dataset.summary, labels: labels.length, overlaps, struck,
            titles: titles.length, onTitles};
  });
}"""


def _charts(
    page_path: Path, profile: Path, every_plot: bool = False
) -> tuple[list[dict], list[str]]:
    """The summary charts' labels (LABELS_JS), and the trace types the page's
    plotly.js can draw. EVERY_PLOT: every section opened and every plot of the
    page drawn and checked, not only the summary's."""
    browser = require_chromium()
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            user_data_dir=str(profile),
            executable_path=browser,
            headless=True,
            offline=True,
            viewport={"width": 1280, "height": 800},
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        try:
            page = context.new_page()
            page.goto(page_path.as_uri(), wait_until="load")
            page.wait_for_function(
                "document.querySelectorAll('#summary .plot .main-svg').length > 0",
                timeout=60_000,
            )
            plots = "#summary .plot"
            if every_plot:
                plots = ".plot"
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                page.wait_for_function(
                    "Array.from(document.querySelectorAll('.plot'))"
                    ".every(p => p.querySelector('.main-svg'))",
                    timeout=120_000,
                )
            page.wait_for_timeout(500)  # the last plots finish their text layout
            traces = page.evaluate("Object.keys(Plotly.PlotSchema.get().traces)")
            return page.evaluate(LABELS_JS, plots), traces
        finally:
            context.close()


@pytest.fixture
def runs(tmp_path):
    with Store.open(str(tmp_path / "labels.db")) as store:
        fresh = store.load(store.add_run(real_run("default_quick.jsonl"), origin="import"))
        reference = store.load(store.add_run(read_run_file(REFERENCE), origin="import"))
        lab = store.load(store.add_run(lab_run(), origin="riscv"))
    return {"fresh": fresh, "reference": reference, "lab": lab}


@pytest.mark.parametrize("which", [("fresh",), ("fresh", "reference")], ids=["one", "two"])
def test_no_value_label_overlaps_or_is_struck(runs, tmp_path, which):
    page = tmp_path / "report.html"
    page.write_text(render([runs[name] for name in which]), "utf-8")
    charts, _ = _charts(page, tmp_path / "profile")
    ladder = [chart for chart in charts if chart["kind"] == "ladder"]
    rungs = sum(len(run.ladder) for run in summarize([runs[name] for name in which]).runs)
    assert ladder and ladder[0]["labels"] == rungs, charts  # every rung labelled
    for chart in charts:
        assert chart["overlaps"] == [], chart
        assert chart["struck"] == [], chart


def test_no_text_lies_over_an_axis_title_on_any_plot(runs, tmp_path):
    # Issue 30: a legend below the plot covered the x-axis title. Every plot of a
    # two-run page (legends are drawn where there are two runs), every section open.
    page = tmp_path / "report.html"
    page.write_text(render([runs["fresh"], runs["reference"]]), "utf-8")
    charts, _ = _charts(page, tmp_path / "profile", every_plot=True)
    assert sum(chart["titles"] for chart in charts) > 10  # the check saw the axis titles
    for chart in charts:
        assert chart["onTitles"] == [], chart  # no legend, tick or label over an axis title


# A report's size in bytes (issue 25): the default run's, and two runs', each.
MAX_BYTES = 2_000_000


@pytest.mark.parametrize("which", [("fresh",), ("fresh", "reference")], ids=["one", "two"])
def test_the_page_is_under_2_mb_and_its_plotly_draws_every_trace_it_uses(runs, tmp_path, which):
    html = render([runs[name] for name in which])
    size = len(html.encode("utf-8"))
    assert size < MAX_BYTES, f"{size} bytes; is the cartesian bundle there (make plotly-js)?"
    used = {
        trace["type"]
        for figure in re.findall(r'data-plot="plot-\d+">(.*?)</script>', html, re.S)
        for trace in json.loads(figure)["data"]
    }
    assert {"box", "bar", "scatter"} <= used  # distributions, the waterfall, the ladder
    page = tmp_path / "report.html"
    page.write_text(html, "utf-8")
    _, drawable = _charts(page, tmp_path / "profile")
    assert used <= set(drawable), used - set(drawable)
    assert "waterfall" not in drawable  # the cartesian bundle, not the full one


def test_the_page_carries_the_cartesian_bundle_of_plotlys_own_plotly_js():
    # PLOTLY_JS_VERSION in python/python.mk follows the plotly package: bump both.
    header = chart_library()[:200]
    assert f"plotly.js (cartesian - minified) v{get_plotlyjs_version()}" in header, header


def test_two_runs_of_one_machine_are_run_vs_run(runs, tmp_path):
    assert runs["fresh"].info.machine == runs["reference"].info.machine
    html = render([runs["fresh"], runs["reference"]])
    assert ">Run vs run</h3>" in html and "Machine vs machine" not in html


def test_a_lab_run_opens_with_the_labs_answer(runs):
    html = render([runs["lab"]])
    nav = html.split("<nav>")[1].split("</nav>")[0]
    # its family has two units: each named with its unit, not "riscv riscv"
    assert "riscv (instructions)</a>" in nav and "riscv (cycles)</a>" in nav
    summary = html.split('id="summary"')[1].split('id="runs"')[0]
    assert "The RISC-V trap lab: one ecall round trip" in summary
    assert "spike: getpid&#39;s ecall round trip is 107 instructions: save/restore 61 (57%)" in (
        summary
    )
    assert "None of the ladder" not in summary and "What things cost" not in summary
    # each call's parts per simulator, as a table
    assert summary.count('<table class="riscv-parts">') == 4


def test_without_the_cartesian_bundle_the_page_carries_the_full_one_and_says_so(
    runs, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(report, "_cartesian_bundle", lambda: tmp_path / "no-such-bundle.js")
    write_report([runs["fresh"]], tmp_path / "full.html")
    html = (tmp_path / "full.html").read_text("utf-8")
    packed = html.split('<script type="application/octet-stream" id="plotly-js">')[1]
    script = gzip.decompress(base64.b64decode(packed.split("</script>")[0])).decode("utf-8")
    assert f"* plotly.js v{get_plotlyjs_version()}\n" in script[:100]
    assert "`make plotly-js` fetches it" in capsys.readouterr().err


def test_run_vs_run_never_says_not_in_this_run_for_a_figure_it_plots(runs, tmp_path):
    # Issue 30: two runs differing only in `laps`; the ladder plots B's fiber, so the
    # Run vs run table compares it (and says B ran another variant), never "not in this run".
    reference = runs["reference"]
    results = []
    for result in reference.records.results:
        if result["probe"] == "uswitch.boost_fiber":
            result = {**result, "params": {**result["params"], "laps": 100000}}
        results.append(result)
    other = RunRecords(env=reference.records.env, results=results, end=reference.records.end)
    with Store.open(str(tmp_path / "laps.db")) as store:
        b = store.load(store.add_run(other, origin="import"))
    summary = summarize([reference, b])
    plotted = {rung.label for rung in summary.runs[1].ladder}
    assert "Boost.Fiber yield" in plotted
    figures = {f.label: f for f in summary.machines.figures}
    for label in plotted & set(figures):
        (cell,) = figures[label].cells
        assert cell.note != "not in this run", label
        assert cell.median is not None, label
    fiber = figures["Boost.Fiber yield"].cells[0]
    assert fiber.variant == "uswitch.boost_fiber fibers=4 laps=100000"
    assert fiber.ratio == pytest.approx(1.0)
    html = render([reference, b])
    table = html.split('<table class="machines">')[1].split("</table>")[0]
    assert "not in this run" not in table
    assert "B ran another variant: uswitch.boost_fiber fibers=4 laps=100000" in table
