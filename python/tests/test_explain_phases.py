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

from conftest import fixture_path, real_run, summary_figures
from ctxbench.acquire.runner import RunOptions
from ctxbench.analysis.explain.explanation import explain
from ctxbench.analysis.explain.phases import (
    compare_idle,
    measured_placement,
    traced_view,
)
from ctxbench.cli.main import cli
from ctxbench.records.result import result_of
from ctxbench.store.db import Store
from ctxbench.views.explain.explanation import explanation_lines, not_explained_words, render_text
from ctxbench.views.explain.phases import render_traced
from ctxbench.views.report import render


@pytest.fixture(scope="module")
def traced():
    return real_run("traced.jsonl").results  # read_run_file validates every line


# Ways a block names the idle share: each may appear at most once per block.
IDLE_QUANTITIES = (("waking an idle CPU", "idle exit:", "from the events (as traced)"),)


def assert_said_once(text, quantities):
    """Each quantity (its names) appears on at most one line of TEXT."""
    for names in quantities:
        lines = [line for line in text.splitlines() if any(n in line for n in names)]
        assert len(lines) <= 1, "\n".join(lines)


def switch_records(results):
    return [r for r in results if r["family"] == "switch"]


def test_every_switch_record_has_a_trace_block_that_validates(traced):
    records = switch_records(traced)
    assert records
    for r in records:
        assert r["trace"]["status"] in ("ok", "unsupported", "failed")


def test_each_phase_is_its_share_of_the_traced_samples_times_the_untraced_median(traced):
    views = [(r, traced_view(result_of(r))) for r in switch_records(traced)]
    assert any(v.status == "ok" for _, v in views)
    for r, view in views:
        if view.status != "ok":
            continue
        median = r["summary"]["median"]
        tiling = r["trace"]["tiling"]
        for p, t in zip(view.phases, tiling["phases"], strict=True):
            assert p.ns == pytest.approx(t["share"] * median)
            # the same as its traced time scaled by untraced / traced mean
            assert p.ns == pytest.approx(
                t["per_switch_ns"] * median / tiling["traced_per_switch_ns"]
            )
            assert 0 <= p.ns <= median
        assert view.rest_ns == pytest.approx(median * (1 - tiling["covered_share"]))
        assert 0 <= view.rest_ns <= median * (1 + 1e-9)
        assert view.overhead_ratio == pytest.approx(r["trace"]["traced_summary"]["median"] / median)


def tiled_record(covered: list[float], median: float = 1000.0, mean: float = 2000.0):
    """A switch record whose traced pass's phases have the given shares."""
    names = [("call entry", "waking"), ("waking", "wakeup"), ("wakeup", "switch")]
    return {
        "kind": "result",
        "probe": "switch.pipe",
        "family": "switch",
        "unit": "ns",
        "params": {"between": "threads", "cpus": "same", "idle": "free", "policy": "normal"},
        "summary": summary_figures(median, median - 10, median + 10),
        "baseline": None,
        "derived": {},
        "verdict": {"status": "ok", "reasons": []},
        "trace": {
            "status": "ok",
            "switches": {"matched": 10, "cross_cpu": 0, "direct": 0, "without_switch": 0},
            "phases": [],
            "traced_summary": {"median": mean},
            "tiling": {
                "rule": "r",
                "samples": 5,
                "batches": 1,
                "switches": 50,
                "batch_ns": 50 * mean,
                "traced_per_switch_ns": mean,
                "covered_share": sum(covered),
                "overlap_ns": 0,
                "chains": 50,
                "phases": [
                    {"from": f, "to": t, "per_switch_ns": share * mean, "share": share}
                    for (f, t), share in zip(names, covered, strict=False)
                ],
            },
        },
    }


def test_what_the_chains_do_not_cover_is_the_rest_and_can_be_large():
    # Tracing doubled the figure (2000 against 1000 ns): the phases are
    # scaled by half; the chains covered 40% of the tiled sample, so 60% is left.
    view = traced_view(result_of(tiled_record([0.1, 0.1, 0.2])))
    assert [p.ns for p in view.phases] == pytest.approx([100.0, 100.0, 200.0])
    assert [p.traced_ns for p in view.phases] == pytest.approx([200.0, 200.0, 400.0])
    assert view.scale == pytest.approx(0.5)
    assert view.rest_ns == pytest.approx(600.0)
    text = "\n".join(render_traced(view))
    assert "60%  not attributed by the events" in text
    assert "the phases explain 40% of the untraced figure" in text


def test_a_traced_pass_before_the_tiling_is_not_set_against_the_figure(traced):
    r = copy.deepcopy(next(r for r in switch_records(traced) if r["trace"]["status"] == "ok"))
    del r["trace"]["tiling"]
    view = traced_view(result_of(r))
    assert view.status == "not tiled" and view.reason is None  # a code: the view says why
    (line,) = render_traced(view)
    assert (
        line.startswith("  traced pass: not tiled: recorded by an engine")
        and "trace.tiling" in line
    )


def test_the_phases_follow_the_kernel_order_of_a_wake_up(traced):
    same = next(
        r
        for r in switch_records(traced)
        if r["params"].get("cpus") == "same" and r["trace"]["status"] == "ok"
    )
    names = [p.name for p in traced_view(result_of(same)).phases]
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


def idle_pair(free_shares, held_shares, free_median, held_median):
    """An idle=free cross-CPU pipe record and its idle=held twin, each traced
    at its untraced median (an overhead ratio of 1)."""
    free = tiled_record([], free_median, free_median)
    held = tiled_record([], held_median, held_median)
    names = [("waking", "IPI entry"), ("IPI exit", "idle exit"), ("idle exit", "switch")]
    for record, shares, idle, median in (
        (free, free_shares, "free", free_median),
        (held, held_shares, "held", held_median),
    ):
        record["params"] = {**record["params"], "cpus": "cross", "idle": idle}
        record["trace"]["tiling"]["phases"] = [
            {"from": f, "to": t, "per_switch_ns": s * median, "share": s}
            for (f, t), s in zip(names, shares, strict=True)
        ]
        record["trace"]["tiling"]["covered_share"] = sum(shares)
    return free, held


def test_the_idle_exit_is_set_beside_idle_free_minus_idle_held():
    # Events: waking → switch-in 0.8 x 10 us free, 0.5 x 4 us held: 8 - 2 = 6 us.
    free, held = idle_pair([0.5, 0.1, 0.2], [0.3, 0.0, 0.2], 10000.0, 4000.0)
    view = traced_view(result_of(free))
    assert view.idle_exit_ns == pytest.approx(1000.0)  # the phase ending at the idle exit
    comparison = compare_idle(result_of(free), result_of(held), view)
    assert comparison.events_ns == pytest.approx(6000.0)
    assert comparison.subtraction_ns == pytest.approx(6000.0)
    # the subtraction's interval from the medians' intervals (each +-10 ns)
    assert (comparison.low_ns, comparison.high_ns) == pytest.approx((5980.0, 6020.0))
    assert comparison.agree
    # Through explain: the free figure's block states the idle share once, both
    # methods on the part's own line.
    (e,) = [e for e in explain([free, held]).explanations if e.params["idle"] == "free"]
    text = "\n".join(explanation_lines(e))
    assert "the kernel's events agree: waking → switch-in 6.000 µs longer" in text
    assert "1.000 µs per switch in the phases ending at it" in text
    assert_said_once(text, IDLE_QUANTITIES)


def test_the_idle_comparison_takes_the_events_as_traced():
    # Traced twice as slow as untraced, both: scaled, the events would say
    # 6 us like the subtraction whatever they saw; as traced they say 12 us.
    free, held = idle_pair([0.5, 0.1, 0.2], [0.3, 0.0, 0.2], 10000.0, 4000.0)
    for record in (free, held):
        tiling = record["trace"]["tiling"]
        tiling["traced_per_switch_ns"] *= 2
        for p in tiling["phases"]:
            p["per_switch_ns"] *= 2
    comparison = compare_idle(result_of(free), result_of(held), traced_view(result_of(free)))
    assert comparison.events_ns == pytest.approx(12000.0)
    assert comparison.agree is False


def test_a_free_figure_whose_target_never_idled_says_so():
    free, held = idle_pair([0.5, 0.0, 0.0], [0.5, 0.0, 0.0], 10000.0, 4000.0)
    for record in (free, held):
        record["trace"]["tiling"]["phases"] = record["trace"]["tiling"]["phases"][:1]
    (e,) = [e for e in explain([free, held]).explanations if e.params["idle"] == "free"]
    # The events saw no idle exit: trusted over the subtraction, it is no share.
    assert e.idle.verdict == "not idle" and e.idle.trusted == "events"
    assert "waking an idle CPU" not in [p.name for p in e.parts]
    text = "\n".join(explanation_lines(e))
    assert "none in this figure, by the kernel's events (trusted" in text
    assert "so the target CPU was not idle" in text
    assert_said_once(text, IDLE_QUANTITIES)


def test_an_idle_exit_the_events_do_not_see_disagrees():
    # The same medians, but the events put the same waking → switch-in on both.
    free, held = idle_pair([0.2, 0.0, 0.0], [0.5, 0.0, 0.0], 10000.0, 4000.0)
    comparison = compare_idle(result_of(free), result_of(held), traced_view(result_of(free)))
    assert comparison.events_ns == pytest.approx(0.0)
    assert comparison.agree is False
    (e,) = [e for e in explain([free, held]).explanations if e.params["idle"] == "free"]
    text = "\n".join(explanation_lines(e))
    assert "outside its interval: trusted here is the subtraction" in text
    assert "agree" not in text
    assert_said_once(text, IDLE_QUANTITIES)


def test_agree_is_never_said_for_an_interval_that_spans_zero():
    """An interval that spans zero holds any small figure: agreement there is
    ignorance (issue 40, done-means 2)."""
    free, held = idle_pair([0.5, 0.1, 0.2], [0.3, 0.0, 0.2], 10000.0, 4000.0)
    for record, low, high in ((free, 2000.0, 30000.0), (held, 1000.0, 20000.0)):
        record["summary"]["median_ci"] = {"low": low, "high": high, "level": 0.95}
    comparison = compare_idle(result_of(free), result_of(held), traced_view(result_of(free)))
    assert comparison.low_ns < 0 < comparison.high_ns
    assert comparison.agree is None
    for e in explain([free, held]).explanations:
        text = "\n".join(explanation_lines(e))
        assert "agree" not in text


def test_each_quantity_is_stated_once_per_block_on_the_recorded_traced_run(traced):
    """Done-means 2: in every explain block of the traced run (cross-CPU pipes and
    futexes, idle free and held, threads and processes), the idle share, the
    address-space switch and the scheduler's part are each stated at most once,
    and 'agree' is never printed for an interval that spans zero."""
    quantities = (
        *IDLE_QUANTITIES,
        ("address-space switch",),
        ("scheduler wake-up and switch (the rest)", "inside the rest"),
    )
    for run in (traced, real_run("default_quick.jsonl").results, real_run("run_a.jsonl").results):
        for e in explain(run).explanations:
            text = "\n".join(explanation_lines(e))
            assert_said_once(text, quantities)
            if e.idle is not None and e.idle.spans_zero:
                assert "agree" not in text


def test_unsupported_says_why_and_keeps_the_subtraction_view():
    results = real_run("traced_unprivileged.jsonl").results
    (r,) = switch_records(results)
    assert r["trace"]["status"] == "unsupported"
    view = traced_view(result_of(r))
    assert view.status == "unsupported" and view.reason
    text = render_text(explain(results))
    assert f"traced pass: unsupported: {view.reason}" in text
    assert "scheduler wake-up and switch (the rest)" in text


def test_records_without_a_trace_block_have_no_view():
    for r in real_run("run_a.jsonl").results:
        assert traced_view(result_of(r)) is None


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
    same = next(r for r in stored.records.results if r["params"].get("cpus") == "same")
    assert f"kernel events ({same['trace']['switches']['matched']} switches followed)" in section
    assert "call entry → waking" in section


def any_pipe(between: str, median: float, start: list[int], end: list[int], trace=None):
    record = {
        "kind": "result",
        "probe": "switch.pipe",
        "family": "switch",
        "unit": "ns",
        "params": {"between": between, "cpus": "any", "policy": "normal", "idle": "free"},
        "summary": summary_figures(median, median * 0.99, median * 1.01),
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
    (why,) = [
        w
        for w in map(not_explained_words, processes.not_explained)
        if w.startswith("address-space switch")
    ]
    assert "on same CPUs" in why and "on cross CPUs" in why


def test_the_traced_pass_says_where_the_tasks_ran():
    # Seen on two CPUs at start and end, but the traced switches stayed on one.
    stayed = {"status": "ok", "switches": {"matched": 100, "cross_cpu": 3}}
    run = [
        any_pipe("processes", 1200.0, [0, 0], [0, 0]),
        any_pipe("threads", 1000.0, [0, 1], [0, 1], trace=stayed),
    ]
    assert measured_placement(result_of(run[1])) == "same"
    processes = explain(run).explanations[0]
    assert {p.name: p.ns for p in processes.parts}["address-space switch"] == 200.0
    # Sightings that disagree say nothing.
    assert measured_placement(result_of(any_pipe("threads", 1.0, [0, 1], [0, 0]))) is None


def test_the_summary_waterfall_draws_the_phases_of_a_traced_figure(tmp_path):
    page, _ = traced_report(tmp_path)
    summary = page[: page.index('<section id="explain">')]
    assert "(the kernel's events)" in summary
    assert "not attributed by the events" in summary
    assert "the bars are the traced pass's phases" in summary


def test_every_traced_phase_has_a_plain_name_with_its_event_pair_beside_it():
    # Issue 30.5: 'run-queue wait (wakeup → switch)', not the event pair alone.
    from ctxbench.analysis.explain.phases import traced_view
    from ctxbench.views.explain.phases import PHASE_NAMES

    seen = 0
    for record in real_run("traced.jsonl").results:
        view = traced_view(result_of(record))
        if view is None or view.status != "ok":
            continue
        text = "\n".join(render_traced(view))
        for phase in view.phases:
            source, target = phase.name.split(" → ")
            assert (source, target) in PHASE_NAMES, phase.name
            assert f"{PHASE_NAMES[(source, target)]} ({phase.name})" in text
            seen += 1
    assert seen > 10
