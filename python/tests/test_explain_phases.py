"""The traced pass's phases (record.trace, explain_phases) on recorded runs.

traced.jsonl is a real `ctxbench-engine run --trace` as root;
traced_unprivileged.jsonl the same engine as nobody (fixtures/README.md)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import fixture_path, real_run
from ctxbench import fmt
from ctxbench.cli import cli
from ctxbench.explain import explain
from ctxbench.explain_phases import measured_placement, render_traced, traced_view
from ctxbench.explain_view import render_text
from ctxbench.report import render
from ctxbench.runner import RunOptions
from ctxbench.store import Store
from test_cli import fake_engine  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def traced():
    return real_run("traced.jsonl").results  # read_run_file validates every line


def switch_records(results):
    return [r for r in results if r["family"] == "switch"]


def test_every_switch_record_has_a_trace_block_that_validates(traced):
    records = switch_records(traced)
    assert records
    for r in records:
        assert r["trace"]["status"] in ("ok", "unsupported", "failed")


def test_view_sums_the_corrected_phases_and_names_the_rest(traced):
    for r in switch_records(traced):
        view = traced_view(r)
        if view.status != "ok":
            continue
        corrected = sum(p.corrected_ns for p in view.phases)
        assert corrected == pytest.approx(r["trace"]["corrected_per_switch_ns"])
        assert view.rest_ns == pytest.approx(r["summary"]["median"] - corrected)
        assert view.explained_share == pytest.approx(corrected / r["summary"]["median"])
        assert view.overhead_ratio == pytest.approx(
            r["trace"]["traced_summary"]["median"] / r["summary"]["median"]
        )


def test_the_phases_follow_the_kernel_order_of_a_wake_up(traced):
    same = next(
        r
        for r in switch_records(traced)
        if r["params"].get("cpus") == "same" and r["trace"]["status"] == "ok"
    )
    names = [p.name for p in traced_view(same).phases]
    assert "call entry → waking" in names
    assert "waking → wakeup" in names
    assert not any("IPI" in n for n in names)  # one CPU: no interrupt between the two tasks


def test_explain_shows_the_phases_and_a_rest_the_events_cannot_attribute(traced):
    text = render_text(explain(traced))
    assert "traced pass, from the kernel's events" in text
    assert "not attributed by the events" in text
    assert "call entry → waking" in text
    # With the phases measured, the rest is no longer said to be unseparated.
    assert "are not separated by this run" not in text


def test_idle_exit_is_set_beside_the_free_minus_held_difference():
    (r,) = [
        r
        for r in switch_records(real_run("traced.jsonl").results)
        if r["params"] == {"between": "threads", "cpus": "same", "idle": "free", "policy": "normal"}
        and r["probe"] == "switch.pipe"
    ]
    r = copy.deepcopy(r)
    phases = r["trace"]["phases"]
    phases.append({**phases[0], "from": "IPI exit", "to": "idle exit", "count": 3})
    phases[-1]["corrected_per_switch_ns"] = 42.0
    lines = render_traced(traced_view(r), idle_difference_ns=50.0)
    (idle,) = [line for line in lines if line.strip().startswith("idle exit:")]
    assert "42.00 ns per switch" in idle and "3 switches" in idle
    # From the waking to the switch-in: every phase between the two marks.
    (wake,) = [line for line in lines if line.strip().startswith("from the waking")]
    between = [
        p["corrected_per_switch_ns"]
        for p in phases[:-1]
        if (p["from"], p["to"]) in {("waking", "wakeup"), ("wakeup", "switch")}
    ]
    assert fmt.value(42.0 + sum(between), "ns") in wake
    assert "50.00 ns" in wake


def test_unsupported_says_why_and_keeps_the_subtraction_view():
    results = real_run("traced_unprivileged.jsonl").results
    (r,) = switch_records(results)
    assert r["trace"]["status"] == "unsupported"
    view = traced_view(r)
    assert view.status == "unsupported" and view.reason
    text = render_text(explain(results))
    assert f"traced pass: unsupported: {view.reason}" in text
    assert "scheduler wake-up and switch (the rest)" in text


def test_records_without_a_trace_block_have_no_view():
    for r in real_run("run_a.jsonl").results:
        assert traced_view(r) is None


def cli_invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.usefixtures("fake_engine")
def test_run_trace_asks_the_engine_for_the_traced_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_RECORDS", str(fixture_path("traced.jsonl")))
    db = str(tmp_path / "t.db")
    done = cli_invoke("run", "switch.pipe", "--trace", "--db", db)
    assert done.exit_code == 0, done.stderr
    args_log = Path(os.environ["FAKE_ENGINE_ARGS"])
    calls = [json.loads(line) for line in args_log.read_text().splitlines()]
    (measured,) = [c for c in calls if c[0] == "run" and "--dry-run" not in c]
    assert "--trace" in measured
    assert RunOptions(trace=False).engine_args().count("--trace") == 0


def test_explain_trace_prints_each_phase_in_full(tmp_path):
    db = str(tmp_path / "t.db")
    assert cli_invoke("import", str(fixture_path("traced.jsonl")), "--db", db).exit_code == 0
    shown = cli_invoke("explain", "--trace", "--db", db)
    assert shown.exit_code == 0, shown.stderr
    text = shown.stdout
    same = next(r for r in real_run("traced.jsonl").results if r["params"]["cpus"] == "same")
    first = same["trace"]["phases"][0]
    assert f"{first['from']} → {first['to']}" in text
    assert f"{same['trace']['switches']['matched']} switches followed" in text
    assert "95% CI" in text and "rule:" in text


def test_explain_trace_without_a_traced_pass_says_how_to_get_one(tmp_path):
    db = str(tmp_path / "t.db")
    assert cli_invoke("import", str(fixture_path("run_a.jsonl")), "--db", db).exit_code == 0
    shown = cli_invoke("explain", "--trace", "--db", db)
    assert shown.exit_code == 0
    assert "ctxbench run --trace" in shown.stdout


def traced_report(tmp_path):
    """The HTML report of the recorded traced run, and the run as stored."""
    store = Store.open(tmp_path / "t.db")
    store.add_run(real_run("traced.jsonl"), origin="import")
    stored = store.load("latest")
    store.close()
    return render([stored]).replace("&#39;", "'"), stored


def test_the_report_shows_the_traced_phases(tmp_path):
    page, stored = traced_report(tmp_path)
    section = page[page.index('<section id="explain">') :]
    same = next(r for r in stored.results if r["params"].get("cpus") == "same")
    assert f"kernel events ({same['trace']['switches']['matched']} switches followed)" in section
    assert "call entry → waking" in section


def any_pipe(between: str, median: float, start: list[int], end: list[int], trace=None):
    record = {
        "kind": "result",
        "probe": "switch.pipe",
        "family": "switch",
        "unit": "ns",
        "params": {"between": between, "cpus": "any", "policy": "normal", "idle": "free"},
        "summary": {"median": median},
        "baseline": None,
        "derived": {},
        "placement": {"requested": "any", "cpus": [], "observed_start": start, "observed_end": end},
        "verdict": {"status": "ok", "reasons": []},
    }
    if trace is not None:
        record["trace"] = trace
    return record


def test_a_difference_of_two_placements_is_not_an_address_space_part():
    # The processes ran on one CPU, their threads twin across two (the CPUs seen).
    run = [
        any_pipe("processes", 1000.0, [0, 0], [0, 0]),
        any_pipe("threads", 6000.0, [0, 1], [1, 0]),
    ]
    processes = explain(run).explanations[0]
    assert "address-space switch" not in {p.name for p in processes.parts}
    (why,) = [w for w in processes.not_explained if w.startswith("address-space switch")]
    assert "on same CPUs" in why and "on cross CPUs" in why


def test_the_traced_pass_says_where_the_tasks_ran():
    # Seen on two CPUs at start and end, but the traced switches stayed on one.
    stayed = {"status": "ok", "switches": {"matched": 100, "cross_cpu": 3}}
    run = [
        any_pipe("processes", 1200.0, [0, 0], [0, 0]),
        any_pipe("threads", 1000.0, [0, 1], [0, 1], trace=stayed),
    ]
    assert measured_placement(run[1]) == "same"
    processes = explain(run).explanations[0]
    assert {p.name: p.ns for p in processes.parts}["address-space switch"] == 200.0
    # Sightings that disagree say nothing.
    assert measured_placement(any_pipe("threads", 1.0, [0, 1], [0, 0])) is None


def test_the_summary_waterfall_draws_the_phases_of_a_traced_figure(tmp_path):
    page, _ = traced_report(tmp_path)
    summary = page[: page.index('<section id="explain">')]
    assert "(the kernel's events)" in summary
    assert "not attributed by the events" in summary
    assert "the bars are the traced pass's phases" in summary
