"""The seed questions answered first (issue 30.1): on the recorded reference
run, `show` opens with each question's figures and ratios with intervals,
within its first 25 lines at 80 columns; a suspect side is marked, never
dropped; what the run lacks is named with the command that measures it; the
report carries the same answers before its ladder."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import invoke
from ctxbench.analysis.summary.answers import answers
from ctxbench.cli.main import cli
from ctxbench.records.reading import read_run_file
from ctxbench.records.result import results_of
from ctxbench.store.db import Store
from ctxbench.views.report import render

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "data" / "reference-run.jsonl"


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("answers") / "answers.db")
    invoke("import", str(REFERENCE), "--db", db)
    result = CliRunner().invoke(
        cli, ["show", "latest", "--db", db], env={"COLUMNS": "80"}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_every_seed_question_is_answered_in_the_first_25_lines_of_show(shown):
    first = " ".join(" ".join(shown.splitlines()[:25]).split())
    assert "Answers" in shown.splitlines()[:5]  # first, right under the run header
    for words in (
        "Fibers, coroutines or threads: coroutine (C++20) 3.465 ns; fiber (Boost.Fiber) 41.26 ns",
        "thread hand-off / fiber = 23.3× (CI 22.6–24.0×)",
        "What a system call, a thread, a process cost: system call 72.21 ns",
        "thread (create + join) 35.90 µs (suspect)",  # a suspect side marked, kept
        "process / thread = 8.70× (CI 7.65–9.26×)",
        "Switches in a burst (per switch), pinned to one CPU or not: pinned n=20 1.125 µs",
        "not measured: unpinned n=20, unpinned n=200, unpinned n=20000",
        "Pipe vs condvar thread switch, one CPU; round trips per second: pipe 983.0 ns",
        "condvar / pipe = 1.68× (CI 1.65–1.77×)",
        "pipe, 1 byte each way, one CPU 502.8 k round trips/s",
    ):
        assert words in first, words


def test_a_question_the_run_cannot_answer_is_left_out():
    run = read_run_file(REFERENCE)
    only = [r for r in run.results if r["probe"] in ("uswitch.coroutine", "syscall.enosys")]
    # One figure of each question: no answer, no made-up ratio.
    assert answers(results_of(only)) == []
    preset = [
        r
        for r in run.results
        if r["probe"] in ("uswitch.boost_fiber", "switch.threads_round_robin")
        and r["params"].get("policy", "batch") == "batch"
    ]
    (fibers,) = answers(results_of(preset))
    assert [label for label, _ in fibers.figures] == ["fiber (Boost.Fiber)", "4-thread round robin"]
    assert fibers.missing == ["coroutine (C++20)", "thread hand-off (futex, one CPU)"]
    (ratio,) = fibers.ratios
    assert (ratio.figure, ratio.against) == ("round robin", "fiber")
    assert ratio.interval.low < ratio.value < ratio.interval.high


def test_the_report_opens_with_the_answers(tmp_path):
    with Store.open(str(tmp_path / "report.db")) as store:
        stored = store.load(store.add_run(read_run_file(REFERENCE), origin="import"))
    html = render([stored])
    summary = html.split('id="summary"')[1]
    assert summary.index('id="summary-answers"') < summary.index('id="summary-ladder"')
    assert "thread hand-off / fiber = 23.3× (CI 22.6–24.0×)" in summary


def test_the_message_rate_is_round_trips_per_second_on_screen_and_in_the_json(shown, tmp_path):
    """msgrate.pipe's figure counts round trips (a message there and one
    back): show says so, and show --json carries the unit with the figure."""
    import json

    import jsonschema

    first = " ".join(" ".join(shown.splitlines()[:25]).split())
    assert "round trips per second" in first and "messages per second" not in first
    db = str(tmp_path / "json.db")
    invoke("import", str(REFERENCE), "--db", db)
    data = json.loads(invoke("show", "latest", "--json", "--db", db).stdout)
    schema = json.loads((REFERENCE.parents[2] / "schema" / "show.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    handoff = next(a for a in data["summary"]["answers"] if a["question"] == "handoff")
    units = {f["label"]: f["point"]["unit"] for f in handoff["figures"]}
    assert units["pipe, 1 byte each way, one CPU"] == "round trips/s"
    assert units["pipe"] == "ns"
