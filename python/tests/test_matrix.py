"""CPU-pair matrices: real 2-CPU engine output (fixtures/matrix_*.jsonl) through
the grid of ``show``, the per-class comparison and the report's heatmap; a
16-CPU and a 20-CPU matrix built here from the real record's shape (display
only: the figures are made up and say so) for the 80-column grid and the
per-class fallback."""

from __future__ import annotations

import copy
import json
import re

import pytest

from conftest import fixture_path, invoke, real_run
from ctxbench import stats
from ctxbench.analysis.compare.comparison import compare_runs
from ctxbench.records import matrix
from ctxbench.records.result import result_of, results_of
from ctxbench.records.schema import record_problem
from ctxbench.store.db import Store
from ctxbench.views.report import render


def real_matrix(probe: str, name: str = "matrix_a.jsonl", idle: str = "free") -> dict:
    """The recorded result of `probe` (matrix.wakeup: the `idle` variant)."""
    return next(
        r
        for r in real_run(name).results
        if r["probe"] == probe and r["params"].get("idle", idle) == idle
    )


def wide_matrix(cpus: int) -> dict:
    """matrix.wakeup's real record re-shaped to `cpus` CPUs: two NUMA nodes, an
    LLC per two cores (four CPUs), SMT pairs (CPU c and c + cpus/2, as Linux numbers
    them). Each cell has three made-up samples; the whole record still
    validates against the schema."""
    result = copy.deepcopy(real_matrix("matrix.wakeup"))
    half = cpus // 2
    topology = []
    for cpu in range(cpus):
        core = cpu % half
        siblings = f"{core},{core + half}"
        llc = core // 2
        node = core // (half // 2)
        llc_cpus = [c for c in range(cpus) if (c % half) // 2 == llc]
        topology.append(
            {
                "cpu": cpu,
                "core": core,
                "package": node,
                "die": node,
                "cluster": None,
                "node": node,
                "llc": llc,
                "llc_level": 3,
                "llc_shared_with": ",".join(map(str, llc_cpus)),
                "smt_siblings": siblings,
            }
        )
    place = {p["cpu"]: p for p in topology}

    def pair_class(a: int, b: int) -> str:
        if a == b:
            return "same_cpu"
        if place[a]["core"] == place[b]["core"]:
            return "smt"
        if place[a]["llc"] == place[b]["llc"]:
            return "llc"
        return "node" if place[a]["node"] == place[b]["node"] else "other_node"

    order = sorted(
        range(cpus), key=lambda c: (place[c]["node"], place[c]["llc"], place[c]["core"], c)
    )
    level = {"same_cpu": 3000.0, "smt": 900.0, "llc": 5000.0, "node": 8000.0, "other_node": 40000.0}
    samples: list[float] = []
    cells = []
    for row in order:
        for column in order:
            cls = pair_class(row, column)
            values = [level[cls], level[cls] * 1.01, level[cls] * 1.02]
            cells.append(
                {
                    "row": row,
                    "column": column,
                    "class": cls,
                    "first_sample": len(samples),
                    "n": 3,
                    "median": values[1],
                    "min": values[0],
                    "p99": values[2],
                    "median_ci": None,
                    "ops_per_sample": 10,
                    "observed": [row, column],
                    "ok": not (row == order[0] and column == order[1]),
                    **({} if row != order[0] or column != order[1] else {"problems": ["x: y"]}),
                }
            )
            samples += values
    classes = []
    for cls in matrix.CLASS_ORDER:
        own = [
            v
            for c in cells
            if c["class"] == cls
            for v in samples[c["first_sample"] : c["first_sample"] + 3]
        ]
        classes.append(
            {
                "class": cls,
                "pairs": sum(1 for c in cells if c["class"] == cls),
                "measured": sum(1 for c in cells if c["class"] == cls),
                "summary": dict(result["summary"], median=stats.median(own), n=len(own)),
                "lowest_cell_median": level[cls] * 1.01,
                "highest_cell_median": level[cls] * 1.01,
            }
        )
    result["samples"] = samples
    ordered = sorted(samples)
    result["summary"] = dict(
        result["summary"],
        n=len(samples),
        min=ordered[0],
        max=ordered[-1],
        median=stats.median(samples),
        mean=sum(samples) / len(samples),
        p90=ordered[int(0.9 * (len(ordered) - 1))],
        p99=ordered[int(0.99 * (len(ordered) - 1))],
    )
    result["matrix"].update(
        cpus=order,
        cells=cells,
        classes=classes,
        topology=topology,
        selection={
            "pairs": len(cells),
            "limit": 1024,
            "sampled": False,
            "rule": "made up for a display test",
        },
    )
    assert record_problem(result) is None
    return result


# ---- the real 2-CPU records ----------------------------------------------------------
@pytest.mark.parametrize("name", ["matrix_a.jsonl", "matrix_b.jsonl"])
def test_fixtures_are_valid_matrix_runs(name):
    run = real_run(name)
    assert {r["probe"] for r in run.results} == {"matrix.cacheline", "matrix.wakeup"}
    places = run.env["cpu"]["topology"]
    assert [p["cpu"] for p in places] == run.env["cpu"]["online"]
    assert run.env["cpu"]["smt"]["siblings_present"] is False
    for result in run.results:
        assert record_problem(result) is None
        typed = result_of(result)
        assert matrix.has_matrix(typed)
        shown = result["matrix"]
        # The cells' samples are the record's samples, in order, without gaps.
        assert sum(cell["n"] for cell in shown["cells"]) == len(result["samples"])
        for cell in shown["cells"]:
            own = matrix.cell_samples(typed, cell)
            assert stats.median(own) == pytest.approx(cell["median"])
        for pair_class in matrix.classes(typed):
            pooled = matrix.class_samples(typed, pair_class["class"])
            assert len(pooled) == pair_class["summary"]["n"]


def test_two_cpu_grid_marks_the_unmeasured_diagonal():
    result = real_matrix("matrix.cacheline")
    lines = matrix.grid_lines(result_of(result))
    assert lines[0].split() == ["0", "1"]
    assert lines[1].split()[:2] == ["0", "-"] and lines[2].split()[-1] == "-"
    factor, unit = matrix.grid_unit([c["median"] for c in result["matrix"]["cells"]])
    cell = matrix.cells_by_pair(result_of(result))[(0, 1)]
    assert lines[1][8:11] == matrix.grid_number(cell["median"] / factor)
    assert unit in ("ns", "µs", "ms", "s")


def test_wakeup_grid_has_the_diagonal():
    lines = matrix.grid_lines(result_of(real_matrix("matrix.wakeup")))
    assert "-" not in "".join(lines[1:])
    assert len(lines) == 3


def test_grid_numbers_are_three_characters():
    assert matrix.grid_number(999.4) == "999"
    assert matrix.grid_number(9.94) == "9.9"
    assert matrix.grid_number(9.96) == " 10"
    assert matrix.grid_number(0.96) == "1.0"
    assert matrix.grid_number(0.0108) == ".01" and matrix.grid_number(0.004) == ".00"
    assert matrix.grid_unit([999.0]) == (1.0, "ns")
    assert matrix.grid_unit([999.6]) == (1e3, "µs")


def test_blocks_of_this_machine_are_one_llc():
    blocks = matrix.blocks(result_of(real_matrix("matrix.wakeup")))
    assert blocks == [matrix.Block("llc", 0, 1)]


def test_blocks_of_a_two_node_smt_machine():
    result = wide_matrix(16)
    blocks = matrix.blocks(result_of(result))
    kinds = {
        kind: [(b.first, b.last) for b in blocks if b.kind == kind]
        for kind in ("llc", "node", "smt")
    }
    assert kinds["node"] == [(0, 7), (8, 15)]
    assert kinds["llc"] == [(0, 3), (4, 7), (8, 11), (12, 15)]  # two cores x two threads
    assert kinds["smt"] == [(i, i + 1) for i in range(0, 16, 2)]


# ---- show ------------------------------------------------------------------------------


def test_show_prints_the_grid_and_the_classes(db, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert invoke("import", str(fixture_path("matrix_a.jsonl")), "--db", db).exit_code == 0
    shown = invoke("show", "latest", "--db", db)
    assert shown.exit_code == 0, shown.stderr
    out = shown.stdout
    assert "matrix.cacheline" in out and "matrix.wakeup" in out
    assert "not measured: two spinning threads" in out
    assert "same LLC" in out and "same CPU" in out
    for line in matrix.grid_lines(result_of(real_matrix("matrix.wakeup"))):
        assert line in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_sixteen_cpus_fit_80_columns_and_more_give_classes_only(monkeypatch):
    from rich.console import Console

    from ctxbench.views import tables

    sixteen = wide_matrix(16)
    lines = matrix.grid_lines(result_of(sixteen))
    assert len(lines) == 17 and max(len(line) for line in lines) <= 80
    assert "*" in lines[1]  # the one cell that is not ok
    console = Console(width=80, record=True, color_system=None)
    for part in tables.matrix_sections(results_of([sixteen, wide_matrix(20)])):
        console.print(part)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "20 CPUs: too many for a grid in 80 columns; per class:" in text
    assert text.count("other node") == 2 and text.count("SMT sibling") == 2
    assert "*: the cell is not ok" in text


# ---- compare ---------------------------------------------------------------------------
def stored_runs(path, *names):
    """The fixtures, imported into a store at `path` and loaded back."""
    with Store.open(path) as store:
        loaded = []
        for name in names:
            run = real_run(name)
            store.add_run(run, origin="import")
            loaded.append(store.load(run.run_id))
    return loaded


def test_compare_gives_a_ratio_per_pair_class(tmp_path):
    comparison = compare_runs(stored_runs(tmp_path / "c.db", "matrix_a.jsonl", "matrix_b.jsonl"))
    by_variant = {(m.probe, m.params.get("idle")): m for m in comparison.matrices}
    assert set(by_variant) == {
        ("matrix.cacheline", None),
        ("matrix.wakeup", "free"),
        ("matrix.wakeup", "held"),
    }
    wakeup = by_variant["matrix.wakeup", "free"]
    assert [row.pair_class for row in wakeup.rows] == ["same_cpu", "llc"]
    a, b = (real_matrix("matrix.wakeup", name) for name in ("matrix_a.jsonl", "matrix_b.jsonl"))
    for row in wakeup.rows:
        reference, other = row.cells
        assert reference.difference is None and reference.cells == 2
        expected = stats.compare_samples(
            matrix.class_samples(result_of(a), row.pair_class),
            matrix.class_samples(result_of(b), row.pair_class),
        )
        assert other.difference == expected
        assert other.median == pytest.approx(
            stats.median(matrix.class_samples(result_of(b), row.pair_class))
        )


def test_compare_cli_prints_the_class_table(db):
    for name in ("matrix_a.jsonl", "matrix_b.jsonl"):
        assert invoke("import", str(fixture_path(name)), "--db", db).exit_code == 0
    a, b = (real_run(name).run_id for name in ("matrix_a.jsonl", "matrix_b.jsonl"))
    result = invoke("compare", a, b, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert "matrix.wakeup (idle=free max_pairs=256 policy=normal) per pair class" in result.stdout
    assert "same CPU" in result.stdout and "same LLC" in result.stdout


def test_compare_without_matrix_in_one_run_says_so(tmp_path):
    comparison = compare_runs(stored_runs(tmp_path / "c.db", "matrix_a.jsonl", "run_a.jsonl"))
    assert comparison.matrices == []  # a matrix in only one run: nothing to compare


# ---- report ----------------------------------------------------------------------------
def heatmaps(page: str) -> list[dict]:
    figures = re.findall(r'data-plot="(plot-\d+)">(.*?)</script>', page, re.S)
    found = []
    for _, text in figures:
        figure = json.loads(text)
        if figure["data"] and figure["data"][0]["type"] == "heatmap":
            found.append(figure)
    return found


def test_report_draws_each_matrix_as_a_heatmap(tmp_path):
    page = render(stored_runs(tmp_path / "r.db", "matrix_a.jsonl"))
    assert 'id="matrices"' in page and "CPU-pair matrices" in page
    figures = heatmaps(page)
    assert len(figures) == 3
    for figure in figures:
        heatmap = figure["data"][0]
        assert heatmap["x"] == ["0", "1"] and heatmap["y"] == ["0", "1"]
        # The LLC both CPUs share is outlined.
        assert [(s["x0"], s["x1"]) for s in figure["layout"]["shapes"]] == [(-0.5, 1.5)]
    # In record order: matrix.cacheline (no diagonal), then matrix.wakeup idle=free, held.
    cacheline, *wakeups = (figure["data"][0]["z"] for figure in figures)
    assert cacheline[0][0] is None and cacheline[1][1] is None and cacheline[0][1] > 0
    assert all(value > 0 for wakeup in wakeups for row in wakeup for value in row)
    assert "per class" in page.lower() and "same LLC" in page


def test_report_compares_classes_of_two_runs(tmp_path):
    page = render(stored_runs(tmp_path / "r.db", "matrix_a.jsonl", "matrix_b.jsonl"))
    assert "matrix.wakeup (idle=held max_pairs=256 policy=normal) per pair class" in page
    assert len(heatmaps(page)) == 6


def test_matrix_report_in_chromium(tmp_path):
    """The heatmaps render offline with a clean console; build/matrix-report.png
    is the screenshot people look at."""
    from conftest import REPO
    from test_report import open_in_chromium

    path = tmp_path / "matrix.html"
    path.write_text(render(stored_runs(tmp_path / "r.db", "matrix_a.jsonl")), "utf-8")
    screenshot = REPO / "build" / "matrix-report.png"
    screenshot.parent.mkdir(exist_ok=True)
    (outcome,) = open_in_chromium([path], tmp_path / "profile", screenshot)
    assert outcome["problems"] == [] and outcome["dialogs"] == []
    assert [url for url in outcome["requests"] if url != path.as_uri()] == []
    page = path.read_text("utf-8")
    heatmap_ids = [
        plot_id
        for plot_id, text in re.findall(r'data-plot="(plot-\d+)">(.*?)</script>', page, re.S)
        if json.loads(text)["data"][0]["type"] == "heatmap"
    ]
    drawn = {plot["id"]: plot for plot in outcome["plots"]}
    assert len(heatmap_ids) == 3
    for plot_id in heatmap_ids:
        plot = drawn[plot_id]
        assert plot["svgWidth"] > 0 and plot["svgHeight"] > 0 and plot["traces"] == 1, plot
    assert screenshot.stat().st_size > 10_000
