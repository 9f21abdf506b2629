"""The HTML report: content, escaping of every record string, and the offline page.

test_report_in_chromium opens the report in headless Debian Chromium (through
playwright, with the system browser, no download) with networking off and
asserts that the plots rendered, that nothing was fetched and that the
console stayed clean; it writes build/report-screenshot.png for people.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from conftest import REPO, real_run, require_chromium, with_run_id
from ctxbench import units
from ctxbench.records.naming import params_key
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem
from ctxbench.store.db import Store
from ctxbench.views.compare.comparison import cell_words
from ctxbench.views.report import render

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
    # The summary (ladder, same vs cross, waterfall), then median + distribution
    # for two families.
    assert page.count('data-plot="plot-') == 7
    assert page.count("data-summary=") == 3
    assert "syscall.getpid" in page and "between=processes cpus=same" in page
    # The summary comes before every family section; those start collapsed.
    assert page.index('id="summary"') < page.index('<section id="family-')
    assert (
        page.count('<details class="family">') == 3 and '<details class="family" open' not in page
    )
    # Variants are grouped by probe with a column per parameter.
    assert "<th>between</th><th>cpus</th><th>policy</th>" in page
    # Verdicts in words, not codes.
    assert (
        "1 suspect" in page
        and "too_few_switches" not in page.split('id="summary"')[1].split("</section>")[0]
    )
    assert "The kernel counted fewer context switches" in page


def test_comparison_report(store_with_runs):
    runs = [store_with_runs.load(info.run_id) for info in store_with_runs.runs()]
    page = render(runs, title="A vs B")
    assert "<title>A vs B</title>" in page
    assert 'id="comparison"' in page
    assert "ratio to run A with its interval" in page
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


SUMMARY_JS = """() => {
    const first = document.querySelector('section.family');
    return Array.from(document.querySelectorAll('div.plot[data-summary]')).map(div => {
        const box = div.getBoundingClientRect();
        const svg = div.querySelector('svg.main-svg');
        const svgBox = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
        return {id: div.id, kind: div.getAttribute('data-summary'),
                width: box.width, height: box.height,
                svgWidth: svgBox.width, svgHeight: svgBox.height,
                beforeFamilies: first !== null &&
                    Boolean(div.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING),
                traces: (div.data || []).map(t => ({type: t.type, x: t.x, y: t.y,
                    customdata: t.customdata || null, error_x: t.error_x || null}))};
    });
}"""

# Click the first point of the cost ladder (plotly's own click handling) and say
# which family sections are open afterwards.
CLICK_LADDER_JS = """() => {
    const ladder = document.querySelector('div.plot[data-summary="ladder"]');
    const point = ladder && ladder.querySelector('.scatterlayer path.point');
    if (!point) return null;
    const box = point.getBoundingClientRect();
    return {x: box.x + box.width / 2, y: box.y + box.height / 2};
}"""
OPEN_FAMILIES_JS = """() => Array.from(document.querySelectorAll('section.family'))
    .filter(s => s.querySelector('details.family').open).map(s => s.id)"""
OPEN_ALL_JS = """() => document.querySelectorAll('details').forEach(d => { d.open = true; })"""
ALL_DRAWN_JS = """() => Array.from(document.querySelectorAll('div.plot'))
    .every(div => div.querySelector('.main-svg') !== null)"""

PLOTS_JS = """() => Array.from(document.querySelectorAll('div.plot')).map(div => {
    const box = div.getBoundingClientRect();
    const svg = div.querySelector('svg.main-svg');
    const svgBox = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return {id: div.id, width: box.width, height: box.height,
            svgWidth: svgBox.width, svgHeight: svgBox.height,
            traces: (div.data || []).length,
            marks: div.querySelectorAll('.point, .box, .trace, .hm').length};
})"""


def open_in_chromium(pages, profile_dir, screenshot=None, summary_screenshot=None):
    """Open each HTML file in headless Chromium (offline); what each page did.

    Before anything is opened: the summary's plots (``summary``), the ids in the
    page, and the result of clicking the ladder's first point (``clicked``: the
    family sections open afterwards). Then every collapsed section is opened and
    every plot must draw (``plots``)."""
    browser_path = require_chromium()
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
                outcome["summary"] = page.evaluate(SUMMARY_JS)
                outcome["ids"] = page.evaluate(
                    "Array.from(document.querySelectorAll('[id]')).map(e => e.id)"
                )
                outcome["open_at_start"] = page.evaluate(OPEN_FAMILIES_JS)
                if summary_screenshot is not None and number == 0:
                    page.locator("#summary").screenshot(path=str(summary_screenshot))
                if screenshot is not None and number == 0:
                    page.screenshot(path=str(screenshot), full_page=True)
                target = page.evaluate(CLICK_LADDER_JS)
                outcome["clicked"] = None
                if target is not None:
                    page.mouse.click(target["x"], target["y"])
                    page.wait_for_timeout(200)
                    outcome["clicked"] = page.evaluate(OPEN_FAMILIES_JS)
                page.evaluate(OPEN_ALL_JS)
                page.wait_for_function(ALL_DRAWN_JS, timeout=60_000)
                outcome["plots"] = page.evaluate(PLOTS_JS)
                outcome["injected"] = page.evaluate("document.querySelectorAll('img, b').length")
                page.close()
                seen.append(outcome)
        finally:
            context.close()
    return seen


def test_report_in_chromium(store_with_runs, tmp_path):
    infos = store_with_runs.runs()
    # Two machines: run_a (the KVM development VM) and other_machine (a QEMU guest).
    other_id = store_with_runs.add_run(real_run("other_machine.jsonl"), origin="import")
    pair = [real_run("run_a.jsonl").run_id, other_id]
    clean = tmp_path / "report.html"
    clean.write_text(render([store_with_runs.load(run_id) for run_id in pair]), "utf-8")
    hostile = tmp_path / "hostile.html"
    hostile.write_text(render([store_with_runs.load(i.run_id) for i in infos]), "utf-8")
    ring_id = store_with_runs.add_run(real_run("ring.jsonl"), origin="import")
    ring = tmp_path / "ring.html"
    ring.write_text(render([store_with_runs.load(ring_id)]), "utf-8")
    screenshot = REPO / "build" / "report-screenshot.png"
    summary_screenshot = REPO / "build" / "report-summary.png"
    screenshot.parent.mkdir(exist_ok=True)
    for old in (screenshot, summary_screenshot):
        old.unlink(missing_ok=True)

    pages = [clean, hostile, ring]
    outcomes = open_in_chromium(pages, tmp_path / "profile", screenshot, summary_screenshot)

    # Summary: the ladder, same-vs-cross and a waterfall per run, the key ratios;
    # then two families x (medians, distributions) + the comparison (create has
    # only an unsupported result: no plot). The hostile page (run_a, run_b and
    # the hostile run): the hostile run gave every variant a 'note' parameter, so
    # its switches are not plain placement variants: no same-vs-cross chart of its
    # own. The ring run: no ladder figure; one family x 2 + the heatmap.
    expected_plots = [11, 12, 3]
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
    assert summary_screenshot.stat().st_size > 10_000

    # The summary of the two machines comes first, drawn, with a real size.
    clean_outcome = outcomes[0]
    summary = clean_outcome["summary"]
    assert [plot["kind"] for plot in summary] == [
        "ladder",
        "same-vs-cross",
        "same-vs-cross",
        "waterfall",
        "waterfall",
        "machines",
    ]
    for plot in summary:
        assert plot["width"] > 0 and plot["height"] > 0, plot
        assert plot["svgWidth"] > 0 and plot["svgHeight"] > 0, plot
        assert plot["beforeFamilies"], plot
    # Family sections start collapsed; clicking the ladder's first point opens its own.
    assert clean_outcome["open_at_start"] == []
    ladder = summary[0]
    first_anchor = ladder["traces"][0]["customdata"][0][0]
    assert clean_outcome["clicked"] == [first_anchor]
    assert outcomes[2]["summary"] == [] and outcomes[2]["clicked"] is None  # ring: no rung

    # The ladder's points are the stored records' medians and intervals.
    runs = {run_id: store_with_runs.load(run_id) for run_id in pair}
    plotted = set()
    for trace in ladder["traces"]:
        assert trace["type"] == "scatter"
        if trace["customdata"] is None:  # a run's value labels, placed past its intervals
            continue
        for x, (anchor, probe, index, run_id), plus, minus in zip(
            trace["x"],
            trace["customdata"],
            trace["error_x"]["array"],
            trace["error_x"]["arrayminus"],
            strict=True,
        ):
            record = runs[run_id].records.results[index]
            key = params_key(record["params"])
            assert record["probe"] == probe
            assert x == record["summary"]["median"]
            ci = record["summary"]["median_ci"]
            assert x + plus == pytest.approx(ci["high"]) and x - minus == pytest.approx(ci["low"])
            assert anchor == "family-" + record["family"] and anchor in clean_outcome["ids"]
            plotted.add((run_id, probe, key))
    # Every rung the runs hold is on the chart: the vDSO call, the bare system call
    # and switch.pipe: three variants in run_a, two in other_machine (one vCPU: its
    # cross-CPU variants are unsupported, not drawn).
    assert len(plotted) == 9
    assert sum(run_id == other_id for run_id, _, _ in plotted) == 4
    assert {probe for _, probe, _ in plotted} == {
        "syscall.clock_gettime_vdso",
        "syscall.enosys",
        "switch.pipe",
    }


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


def _summary_html(page: str) -> str:
    start = page.index('<section id="summary"')
    return page[start : page.index("</section>", start)]


def _machine_rows(page: str) -> list[list[str]]:
    """The cells of the machine-vs-machine table, tags stripped."""
    summary = _summary_html(page)
    table = summary[summary.index('<table class="machines">') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    return [
        [
            re.sub(r"<[^>]+>", " ", cell).split()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in rows
    ]


def test_machine_vs_machine(store_with_runs):
    from ctxbench.analysis.summary.build import summarize

    runs = [store_with_runs.load(real_run(name).run_id) for name in ("run_a.jsonl", "run_b.jsonl")]
    page = render(runs)
    summary = _summary_html(page)
    assert 'id="summary-machines"' in summary and 'data-summary="machines"' in summary
    machines = summarize(runs).machines
    rows = _machine_rows(page)
    assert len(rows) == len(machines.figures) == 5
    for row, figure in zip(rows, machines.figures, strict=True):
        (cell,) = figure.cells
        text = [" ".join(words) for words in row]
        assert text[0].startswith(figure.label)
        # ratio [CI] as compare prints it, p, and the words of compare.describe
        assert text[3] == units.ratio(cell.ci_low, cell.ratio, cell.ci_high)
        assert text[4] == units.p_value(cell.p_value)
        assert text[5].startswith(cell_words(machines, figure, 1))
    words = [cell_words(machines, figure, 1) for figure in machines.figures]
    assert "not significant" in words  # two runs of one machine: most figures do not differ
    assert summary.count('class="not-significant"') == words.count("not significant")
    # One machine: none of the keys that explain a difference differs.
    assert 'class="env-differences"' not in summary
    assert "None of the keys that usually explain a difference" in summary


def test_machine_vs_machine_highlights_environment_differences(store_with_runs):
    """The reference run and run_a were recorded in two sessions of the development
    VM whose virtualization was detected differently: the summary says so."""
    reference = store_with_runs.add_run(
        read_run_file(REPO / "docs" / "data" / "reference-run.jsonl"), origin="import"
    )
    runs = [store_with_runs.load(reference), store_with_runs.load(real_run("run_a.jsonl").run_id)]
    summary = _summary_html(render(runs))
    table = summary[summary.index('<table class="env-differences">') :]
    table = table[: table.index("</table>")]
    highlighted = re.findall(
        r'<tr class="differs"><td>(.*?)<br><span class="muted mono">(.*?)</span>', table
    )
    keys = [key for _, key in highlighted]
    assert "virtualization.detected" in keys
    assert all(
        key.split(".")[0]
        in {"cpu", "kernel", "virtualization", "sandbox", "frequency", "mitigations", "clocksource"}
        for key in keys
    )
    # Run options differ (a full run against --quick): they change how sure a
    # figure is, not what it measures, so no ratio is marked for them.
    assert "not like for like: options" not in summary


def test_machine_vs_machine_on_two_machines(tmp_path):
    """run_a (the KVM development VM, kernel 6.18) against other_machine (a QEMU
    TCG guest with Debian's 6.1 kernel, see fixtures/README.md): real differences,
    significant, and the environment that explains them, highlighted."""
    from ctxbench.analysis.summary.build import summarize

    with Store.open(tmp_path / "two.db") as store:
        runs = [
            store.load(store.add_run(real_run(name), origin="import"))
            for name in ("run_a.jsonl", "other_machine.jsonl")
        ]
        page = render(runs)
    machines = summarize(runs).machines
    by_key = {figure.key: figure.cells[0] for figure in machines.figures}
    words = {figure.key: cell_words(machines, figure, 1) for figure in machines.figures}
    # The vDSO call, the bare syscall and both same-CPU switches have a ratio. The
    # cross-CPU switch has none: run_a's is policy=batch, a variant the newer engine
    # runs only on one CPU (and on one vCPU its cross-CPU variants are unsupported).
    for key in ("vdso", "syscall", "thread_switch", "process_switch"):
        cell = by_key[key]
        assert cell.ratio is not None and cell.significant, key
        assert cell.ci_low <= cell.ratio <= cell.ci_high
        assert cell.ratio > 1 and words[key].startswith("B ran ") and "slower than A" in words[key]
    assert by_key["cross_switch"].ratio is None
    assert by_key["cross_switch"].note == "not in this run"
    # run_a's switch.pipe has no idle knob (older engine), other_machine's says
    # idle=free: the same variant, compared.
    thread = next(f for f in machines.figures if f.key == "thread_switch")
    assert "idle" not in thread.params and thread.row.params == {
        "between": "threads",
        "cpus": "same",
        "policy": "batch",
    }

    # The guest's cross-CPU bars cannot be drawn: the page says so, and why.
    assert "pipe (threads) on another CPU: unsupported — The CPUs this placement needs" in page
    rows = _machine_rows(page)
    texts = [" ".join(" ".join(words) for words in row) for row in rows]
    assert sum("slower than A" in text for text in texts) == 4
    summary = _summary_html(page)
    assert summary.count('class="slower"') >= 1  # like-for-like rows in the decision's colour
    table = summary[summary.index('<table class="env-differences">') :]
    table = table[: table.index("</table>")]
    highlighted = dict(
        re.findall(
            r'<tr class="differs"><td>.*?<span class="muted mono">(.*?)</span></td>(.*?)</tr>',
            table,
            re.S,
        )
    )
    for key, values in (
        ("kernel.release", ("6.18.44-fc-v669", "6.1.0-56-amd64")),
        ("virtualization.hypervisor_vendor", ("KVMKVMKVM", "TCGTCGTCGTCG")),
        ("frequency.cpuidle_driver", ("haltpoll", "none")),
        ("cpu.model", ("Intel(R) Xeon(R) Processor", "QEMU TCG CPU version 2.5+")),
    ):
        assert key in highlighted, key
        assert all(value in highlighted[key] for value in values), key
    assert "clocksource.current" not in highlighted  # tsc on both
