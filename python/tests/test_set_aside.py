"""Samples set aside as host interference are said wherever the figure is shown:
the terminal summary (run, show), the table of every result, compare's key
figures and the report. The records are real engine output (run_a, run_b) with
set-aside samples written in the engine's shape: ``set_aside: {samples,
summary_with_them}`` beside ``interference``, or only the kept attempt's count
and median in older records."""

from __future__ import annotations

import copy
import io

import pytest
from rich.console import Console

from conftest import real_run
from ctxbench import stats, units
from ctxbench.analysis.summary.build import summarize
from ctxbench.records.result import result_of
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem
from ctxbench.store.db import Store
from ctxbench.views import machines as machines_view
from ctxbench.views import tables
from ctxbench.views.report import render
from ctxbench.views.summary import text as summary_view

# The thread switch on one CPU: run A's ladder shows it.
PROBE, PARAMS = "switch.pipe", {"between": "threads", "cpus": "same"}
WORDS = "4 of 14 samples set aside as host interference"


INTERFERENCE = {
    "reference": "getppid loop",
    "best_ns": 100.0,
    "slowed_ratio": 1.2,
    "retries": 1,
    "attempts": [
        {"median": 1.0, "reference_ratio": 1.5, "slowed_share": 0.5, "samples": 10},
        {
            "median": 1.0,
            "reference_ratio": 1.01,
            "slowed_share": 0.2,
            "samples": 10,
            "set_aside": 4,
            "set_aside_median": 5000.0,
        },
    ],
    "kept": 1,
    "slowed": False,
}


def _with_set_aside(name: str, samples_kept: bool = True) -> list[dict]:
    """The run with four of its same-CPU thread switch samples set aside as host
    interference: kept in the record (slower than the rest), or, as older
    records have it, only their count and median in the interference block."""
    records = copy.deepcopy(real_run(name).all())
    result = next(
        r
        for r in records
        if r["kind"] == "result"
        and r["probe"] == PROBE
        and all(r["params"].get(k) == v for k, v in PARAMS.items())
    )
    result["interference"] = copy.deepcopy(INTERFERENCE)
    if samples_kept:
        aside = [max(result["samples"]) * factor for factor in (1.5, 1.6, 1.7, 1.8)]
        result["set_aside"] = {
            "samples": aside,
            "summary_with_them": stats.summarize(result["samples"] + aside),
        }
    return records


def _stored(store, name: str, samples_kept: bool = True):
    """The run stored with its set-aside samples, every record valid."""
    records = _with_set_aside(name, samples_kept)
    for record in records:
        assert record_problem(record) is None, record_problem(record)
    return store.load(store.add_run(group_run(records), origin="import"))


def _result(records):
    return next(r for r in records if r.get("interference"))


def test_the_words_give_both_figures():
    result = _result(_with_set_aside("run_a.jsonl"))
    with_them = units.value(result["set_aside"]["summary_with_them"]["median"], result["unit"])
    assert units.set_aside(result_of(result)) == f"{WORDS}; {with_them} with them"
    figure = units.value(result["summary"]["median"], result["unit"])
    shown = units.set_aside(result_of(result), with_figure=True)
    assert shown.startswith(f"{figure}, {WORDS}; ")


def test_older_records_give_the_count_and_its_median():
    result = _result(_with_set_aside("run_a.jsonl", samples_kept=False))
    assert record_problem(result) is None
    assert units.set_aside(result_of(result)) == f"{WORDS} (their median 5.000 µs)"
    result["interference"]["attempts"][1]["set_aside"] = 0
    assert units.set_aside(result_of(result)) is None


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "aside.db") as opened:
        yield opened


@pytest.mark.parametrize("samples_kept", [True, False])
def test_the_terminal_summary_and_the_table_say_it(store, samples_kept):
    run = _stored(store, "run_a.jsonl", samples_kept)
    lines = summary_view.run_lines(summarize([run]), 120)
    text = summary_view.plain(lines)
    # One line per rung: the count is a column ('4/14') with its note under the
    # ladder, not a second line under the rung.
    # The ladder is its own paragraph (Answers and Why may come before it).
    (ladder,) = [
        block.splitlines()
        for block in text.split("\n\n")
        if block.startswith("What one operation costs here")
    ]
    (rung,) = [line for line in ladder if " 4/14 " in line]
    assert "samples set aside" not in ladder[ladder.index(rung) + 1]
    assert not any(WORDS in line for line in ladder)
    assert any(line.strip().startswith("set aside: n/m of the samples") for line in ladder)
    assert "set aside, verdict" in ladder[0]
    for width in (200, 80):  # the wide table and the narrow one
        table = tables.results_table(run.results, width=width)
        shown = _rendered(table, width)
        assert "4 of 14 samples set aside" in " ".join(shown.split())


def test_a_narrow_terminal_drops_the_column_not_the_verdicts(store):
    """Where the set-aside column would push a row past the width, the ladder
    drops it and says so under the rows: no row spills its verdict onto a
    line of its own (the recorded no-idle-driver run at 80 columns)."""
    run = _stored(store, "no_idle_driver.jsonl")
    for width, column in ((80, False), (120, True)):
        text = summary_view.plain(summary_view.run_lines(summarize([run]), width))
        (ladder,) = [
            block.splitlines()
            for block in text.split("\n\n")
            if block.startswith("What one operation costs here")
        ]
        assert all(len(line) <= width for line in ladder), ladder
        assert ("set aside, verdict" in ladder[0]) is column
        rows = [
            line
            for line in ladder
            if line.startswith("  ") and line.rstrip().endswith(("ok", "suspect"))
        ]
        assert len(rows) == 4, ladder
        narrow_note = any("some figures had samples taken" in line for line in ladder)
        assert narrow_note is not column


def _rendered(table, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_compare_and_the_report_say_it(store):
    a = _stored(store, "run_a.jsonl")
    b = store.load(store.add_run(real_run("run_b.jsonl"), origin="import"))
    text = summary_view.plain(machines_view.machine_lines(summarize([a, b]), 200))
    assert f"A: {WORDS}" in text
    assert "B: " + WORDS not in text
    page = render([a, b])
    assert WORDS in page
