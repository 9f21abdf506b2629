"""The HTML report: content, escaping of every record string, and the offline page.

test_report_in_chromium opens the report in headless Debian Chromium (through
playwright, with the system browser, no download) with networking off and
asserts that the plots rendered, that nothing was fetched and that the
console stayed clean; it writes build/report-screenshot.png for people.
"""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from conftest import REPO, chromium_path, real_run, with_run_id
from ctxbench.records import group_run, record_problem
from ctxbench.report import render
from ctxbench.store import Store

EVIL = "</script><img src=x onerror=alert(1)><script>alert('xss')</script>&amp;"


def evil_run():
    """run_a with hostile strings wherever a record allows free text."""
    run = with_run_id(real_run("run_a.jsonl"), "evil-run-00000001")
    records = copy.deepcopy(run.all())
    env = records[0]
    env["hostname"] = "host" + EVIL
    env["kernel"]["release"] = "6.0" + EVIL
    env["mitigations"]["spectre_v2"] = EVIL
    for record in records[1:-1]:
        record["params"] = dict(record["params"], note="<b>" + EVIL)
        record["op"] = "op" + EVIL
        if record["verdict"]["status"] == "ok":
            record["verdict"] = {
                "status": "suspect",
                "reasons": [{"code": "high_spread", "detail": "detail" + EVIL}],
            }
    for record in records:
        assert record_problem(record) is None
    return group_run(records)


@pytest.fixture
def store_with_runs(tmp_path):
    store = Store.open(tmp_path / "report.db")
    store.add_run(real_run("run_a.jsonl"), origin="import", label="machine A")
    store.add_run(real_run("run_b.jsonl"), origin="import", label="machine B")
    store.add_run(evil_run(), origin="import", label="label" + EVIL)
    yield store
    store.close()


def test_single_run_report(store_with_runs):
    page = render([store_with_runs.load(real_run("run_a.jsonl").run_id)])
    assert "<h2>switch <span" in page and "<h2>syscall <span" in page
    assert 'id="comparison"' not in page
    assert page.count('data-plot="plot-') == 4  # median + distribution for two families
    assert "syscall.getpid" in page and "between=processes cpus=cross" in page


def test_comparison_report(store_with_runs):
    runs = [store_with_runs.load(info.run_id) for info in store_with_runs.runs()]
    page = render(runs, title="A vs B")
    assert "<title>A vs B</title>" in page
    assert 'id="comparison"' in page
    assert "ratio to run A with bootstrap CI" in page
    assert "environment keys differ" in page


def test_every_record_string_is_escaped(store_with_runs):
    runs = [store_with_runs.load(info.run_id) for info in store_with_runs.runs()]
    page = render(runs)
    # No injected markup survives: not in the HTML, not inside the JSON of the plots.
    assert "<img" not in page
    assert "alert('xss')" not in page.replace("alert(&#39;xss&#39;)", "")
    assert page.count("</script>") == page.count("<script")
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    scripts = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert scripts and all("<" not in text for text in scripts)


PLOTS_JS = """() => Array.from(document.querySelectorAll('div.plot')).map(div => {
    const box = div.getBoundingClientRect();
    const svg = div.querySelector('svg.main-svg');
    const svgBox = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return {id: div.id, width: box.width, height: box.height,
            svgWidth: svgBox.width, svgHeight: svgBox.height,
            traces: (div.data || []).length,
            marks: div.querySelectorAll('.point, .box, .trace, .hm').length};
})"""


def open_in_chromium(pages, profile_dir, screenshot=None):
    """Open each HTML file in headless Chromium (offline); what each page did."""
    browser_path = chromium_path()
    if browser_path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; `scripts/deps.sh browser` installs it")
        pytest.skip("chromium is not installed (scripts/deps.sh browser)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    seen = []
    with playwright_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            user_data_dir=str(profile_dir),  # a fresh profile
            executable_path=browser_path,
            headless=True,
            offline=True,
            viewport={"width": 1280, "height": 900},
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            for number, path in enumerate(pages):
                outcome = {"requests": [], "problems": [], "dialogs": []}
                page = context.new_page()
                page.on("request", lambda request, o=outcome: o["requests"].append(request.url))
                page.on(
                    "console",
                    lambda message, o=outcome: (
                        o["problems"].append(message.text) if message.type == "error" else None
                    ),
                )
                page.on("pageerror", lambda error, o=outcome: o["problems"].append(str(error)))
                page.on(
                    "dialog",
                    lambda dialog, o=outcome: (
                        o["dialogs"].append(dialog.message),
                        dialog.dismiss(),
                    ),
                )
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_function(
                    "document.querySelectorAll('.plot .main-svg').length > 0", timeout=30_000
                )
                outcome["plots"] = page.evaluate(PLOTS_JS)
                outcome["injected"] = page.evaluate("document.querySelectorAll('img, b').length")
                if screenshot is not None and number == 0:
                    page.screenshot(path=str(screenshot), full_page=True)
                page.close()
                seen.append(outcome)
        finally:
            context.close()
    return seen


def test_report_in_chromium(store_with_runs, tmp_path):
    infos = store_with_runs.runs()
    pair = [real_run("run_a.jsonl").run_id, real_run("run_b.jsonl").run_id]
    clean = tmp_path / "report.html"
    clean.write_text(render([store_with_runs.load(run_id) for run_id in pair]), "utf-8")
    hostile = tmp_path / "hostile.html"
    hostile.write_text(render([store_with_runs.load(i.run_id) for i in infos]), "utf-8")
    ring_id = store_with_runs.add_run(real_run("ring.jsonl"), origin="import")
    ring = tmp_path / "ring.html"
    ring.write_text(render([store_with_runs.load(ring_id)]), "utf-8")
    screenshot = REPO / "build" / "report-screenshot.png"
    screenshot.parent.mkdir(exist_ok=True)

    pages = [clean, hostile, ring]
    outcomes = open_in_chromium(pages, tmp_path / "profile", screenshot)

    # Two families x (medians, distributions) + the comparison; the ring run: one
    # family x 2 + the heatmap.
    expected_plots = [5, 5, 3]
    for path, outcome, expected in zip(pages, outcomes, expected_plots, strict=True):
        plots = outcome["plots"]
        assert len(plots) == expected
        for plot in plots:
            assert plot["width"] > 0 and plot["height"] > 0, plot
            assert plot["svgWidth"] > 0 and plot["svgHeight"] > 0, plot
            assert plot["traces"] > 0 and plot["marks"] > 0, plot
        assert outcome["problems"] == []
        assert outcome["dialogs"] == []
        assert outcome["injected"] == 0
        assert [url for url in outcome["requests"] if url != path.as_uri()] == []
    assert screenshot.stat().st_size > 10_000


def test_ring_grid_becomes_a_heatmap(tmp_path):
    with Store.open(tmp_path / "ring.db") as store:
        store.add_run(real_run("ring.jsonl"), origin="import")
        page = render([store.load("latest")])
    assert 'id="ring"' in page
    assert "switch.ring grid" in page and "corrected cost per switch" in page
    figure = re.findall(r'data-plot="(plot-\d+)">(.*?)</script>', page, re.S)[-1][1]
    heatmap = json.loads(figure)["data"][0]
    assert heatmap["type"] == "heatmap"
    assert heatmap["x"] == ["2", "4", "8", "16"]  # processes in the ring
    assert heatmap["y"] == ["0", "16", "64"]  # KiB touched per hop
    assert all(value is not None for row in heatmap["z"] for value in row)
