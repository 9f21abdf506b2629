"""The traced pass's phases (record.trace, explain_phases) on recorded runs.

traced.jsonl is a real `ctxbench-engine run --trace` as root;
traced_unprivileged.jsonl the same engine as nobody (fixtures/README.md)."""

from __future__ import annotations

import copy

import pytest

from conftest import real_run
from ctxbench.explain import explain
from ctxbench.explain_phases import render_traced, traced_view
from ctxbench.explain_view import render_text


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
    assert "42.00 ns per switch" in idle and "50.00 ns" in idle and "3 switches" in idle


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
