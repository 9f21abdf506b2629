"""One comparison per `compare` (issue 38.3, issue 41 done-means 1): the key
figures, --all, --json and the gate render the same judged rows.

The store holds the recorded history of 20 identical quick runs of one
machine (fixtures/why/README.md: history_same); runs 11 and 12 are compared
with runs 1-10 as their machine's history. Its rows are system calls and
user-level switches (no `idle` parameter) and a same-CPU pipe switch (with
`idle=free`): before, the key figures looked the history up under the
parameters without `idle=free` and judged that row within-run only, while
--all and --json judged it by the history."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from conftest import FIXTURES, invoke
from ctxbench.analysis.compare.gate import gate
from ctxbench.analysis.summary.build import summarize
from ctxbench.cli.commands.compare import build_comparison
from ctxbench.records.naming import variant_name
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import group_run
from ctxbench.store.db import Store
from ctxbench.views.compare.comparison import SHORT_WORDS
from ctxbench.views.export import comparison_dict

HISTORY = FIXTURES / "why" / "history_same"


@pytest.fixture
def wide(monkeypatch):
    """A terminal of 200 columns: each key figure on one line."""
    monkeypatch.setenv("COLUMNS", "200")


def _store(tmp_path, edit_b=None) -> tuple[str, list[str]]:
    """Runs 01-12 of history_same stored in order; EDIT_B changes run 12's
    records first. The ids of runs 11 and 12."""
    path = str(tmp_path / "one.db")
    names = sorted(os.listdir(HISTORY))[:12]
    ids = []
    with Store.open(path) as store:
        for name in names:
            run = read_run_file(HISTORY / name, [])
            if name == names[-1] and edit_b is not None:
                records = copy.deepcopy(run.all())
                edit_b(records)
                run = group_run(records)
            ids.append(store.add_run(run, origin="import"))
    return path, ids[-2:]


def _rows_by_variant(document: dict) -> dict[str, dict]:
    return {row["variant"]: row for row in document["rows"]}


def _check_every_format_agrees(path: str, ids: list[str]) -> dict[str, dict]:
    with Store.open(path) as store:
        runs = [store.load(run_id) for run_id in ids]
        comparison = build_comparison(store, runs)
    judged = gate(comparison, 15.0)
    document = comparison_dict(comparison, judged)
    rows = _rows_by_variant(document)
    gate_rows = {row["variant"]: row for row in document["fail_above"]["rows"]}
    summary = summarize(runs, comparison=comparison)
    assert summary.machines is not None and summary.machines.figures
    # The tables (--all) and the summary lines render the comparison itself.
    assert summary.machines.comparison is comparison
    for figure in summary.machines.figures:
        name = variant_name(figure.probe, figure.params)
        [cell] = figure.cells
        assert cell.noise is not None, name
        assert cell.noise.source == rows[name]["noise"]["source"], name
        assert cell.noise.n == rows[name]["noise"]["n"], name
    for name, row in rows.items():
        assert row["detectable_slowdown"] == gate_rows[name]["detectable_slowdown"], name

    # The command line, in every format: the key figures' words, --all's
    # table, --json and the gate's JSON say the same of every row.
    as_json = json.loads(invoke("compare", *ids, "--db", path, "--json").stdout)
    assert _rows_by_variant(as_json) == rows  # the CLI's document is the analysis's
    text = invoke("compare", *ids, "--db", path)
    for figure in summary.machines.figures:
        row = rows[variant_name(figure.probe, figure.params)]
        line = next(li for li in text.stdout.splitlines() if li.strip().startswith(figure.label))
        words = SHORT_WORDS[row["noise"]["source"]]
        assert f"{words}, could detect {row['detectable_slowdown']:.0%}" in line, line
    shown = invoke("compare", *ids, "--db", path, "--all").stdout
    by_history = [r for r in rows.values() if r["noise"]["source"] == "history"]
    assert shown.count("judged by this machine's history") == len(by_history)
    for row in by_history:
        spread = f"spread {row['noise']['spread']:.1%} over {row['noise']['n']} earlier runs"
        assert spread in shown
    gated = invoke("compare", *ids, "--db", path, "--json", "--fail-above", "15")
    assert json.loads(gated.stdout)["fail_above"]["rows"] == document["fail_above"]["rows"]
    return rows


def test_the_key_figures_all_json_and_the_gate_judge_every_row_alike(tmp_path, wide):
    path, ids = _store(tmp_path)
    rows = _check_every_format_agrees(path, ids)
    with_idle = [r for r in rows.values() if "idle" in r["params"]]
    without = [r for r in rows.values() if "idle" not in r["params"]]
    assert with_idle and without
    # Ten earlier runs: every row, the idle one included, is judged by them.
    assert {r["noise"]["source"] for r in rows.values()} == {"history"}


def test_a_run_of_an_older_engine_without_the_idle_knob_is_judged_by_the_same_history(
    tmp_path, wide
):
    """Run B written without `idle` (an older engine: idle=free): its key
    figure is A's variant against B's, judged by the history of A's variant."""

    def drop_idle(records: list[dict]) -> None:
        for record in records:
            if record.get("kind") == "result":
                record.get("params", {}).pop("idle", None)

    path, ids = _store(tmp_path, drop_idle)
    with Store.open(path) as store:
        runs = [store.load(run_id) for run_id in ids]
        comparison = build_comparison(store, runs)
    summary = summarize(runs, comparison=comparison)
    assert summary.machines is not None
    pipe = next(f for f in summary.machines.figures if f.probe == "switch.pipe")
    assert "idle" in pipe.params
    [cell] = pipe.cells
    assert pipe.row is not None
    other = pipe.row.cells[1].result
    assert other is not None and "idle" not in other.params
    assert cell.noise is not None and cell.noise.source == "history" and cell.noise.n == 10
    text = invoke("compare", *ids, "--db", path).stdout
    line = next(li for li in text.splitlines() if li.strip().startswith(pipe.label))
    assert "by history" in line, line


@pytest.mark.parametrize("fail_above", ["15", "1"])
def test_the_gates_tail_is_the_same_after_every_format(tmp_path, fail_above):
    """The gate's lines and exit status: one tail, whatever printed before it."""
    path, ids = _store(tmp_path)
    tails = []
    for extra in ([], ["--all"], ["--json"], ["--why"]):
        done = invoke("compare", *ids, "--db", path, "--fail-above", fail_above, *extra)
        out = done.stderr if "--json" in extra else done.stdout
        tail = [
            li
            for li in out.splitlines()
            if re.match(r"(--fail-above|inconclusive at|slower by)", li)
        ]
        tails.append((done.exit_code, tail))
    assert all(tail == tails[0] for tail in tails), tails
    assert tails[0][1] and tails[0][1][-1].startswith(f"--fail-above {fail_above}:")


def test_the_report_of_two_runs_renders_the_comparison_compare_builds(tmp_path):
    """`report A B` judges each row as `compare A B` does: by the machine's
    history in the store, not by the two runs alone."""
    path, ids = _store(tmp_path)
    page = tmp_path / "report.html"
    done = invoke("report", *ids, "-o", str(page), "--db", path)
    assert done.exit_code == 0, done.output
    html = page.read_text(encoding="utf-8")
    assert "over 10 earlier runs" in html
    assert "judged by within-run samples only" not in html
