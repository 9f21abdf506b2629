"""What a seccomp filter adds (analysis.explain.seccomp_cost and explain's section), on
a real recorded run of the seccomp axis: fixtures/seccomp_quick.jsonl, made by

    ctxbench-engine run syscall.getppid syscall.read switch.pipe --quick --json \\
        --param seccomp=none,allow,profile --cpus same

(see fixtures/README.md). Every number checked is a difference of the
records' own medians; nothing about how large the filter's cost is.
"""

from __future__ import annotations

import copy

import pytest

from conftest import real_run
from ctxbench.analysis.explain.explanation import explain
from ctxbench.analysis.explain.seccomp_cost import filter_costs
from ctxbench.records.result import results_of
from ctxbench.views.explain.explanation import (
    cost_lines,
    explained_dict,
    headline,
    render_text,
    run_dict,
    run_text,
)


@pytest.fixture(scope="module")
def results():
    return real_run("seccomp_quick.jsonl").results


def _median(record):
    return record["summary"]["median"]


def _twin(results, record):
    others = {k: v for k, v in record["params"].items() if k != "seccomp"}
    [twin] = [
        r
        for r in results
        if r["probe"] == record["probe"]
        and r["params"].get("seccomp") == "none"
        and {k: v for k, v in r["params"].items() if k != "seccomp"} == others
    ]
    return twin


def test_the_recorded_run_measured_each_filter_and_says_what_was_installed(results):
    filtered = [r for r in results if r["params"].get("seccomp") in ("allow", "profile")]
    assert {r["probe"] for r in filtered} == {"syscall.getppid", "syscall.read", "switch.pipe"}
    for r in filtered:
        derived = r["derived"]
        assert derived["seccomp_instructions"] > 0
        if r["params"]["seccomp"] == "allow":
            assert derived["seccomp_instructions"] == 2
            assert derived["seccomp_calls_cached"] == 0
        else:
            assert derived["seccomp_rules"] > 200


def test_each_filtered_figure_is_its_median_less_its_unfiltered_twins(results):
    costs = filter_costs(results_of(results))
    filtered = [
        r
        for r in results
        if r["params"].get("seccomp") in ("allow", "profile")
        and r["verdict"]["status"] in ("ok", "suspect")
    ]
    assert len(costs) == len(filtered)
    for cost, record in zip(costs, filtered, strict=True):
        twin = _twin(results, record)
        assert cost.probe == record["probe"] and cost.mode == record["params"]["seccomp"]
        assert cost.added_ns == pytest.approx(_median(record) - _median(twin))
        assert "seccomp" not in cost.params
        if cost.probe == "switch.pipe":
            assert cost.syscalls_per_op == 2  # a write and a read per switch
            assert cost.per_call_ns == pytest.approx(cost.added_ns / 2)
        else:
            assert cost.syscalls_per_op == 1 and cost.per_call_ns == cost.added_ns


def test_a_switch_is_set_beside_the_per_call_cost_of_getppid_under_the_same_filter(results):
    costs = filter_costs(results_of(results))
    per_call = {c.mode: c.added_ns for c in costs if c.probe == "syscall.getppid"}
    switches = [c for c in costs if c.probe == "switch.pipe"]
    assert switches
    for c in switches:
        assert c.expected_from == "syscall.getppid"
        assert c.expected_ns == pytest.approx(2 * per_call[c.mode])


def test_explain_prints_the_section_with_calls_per_switch(results):
    text = render_text(explain(results, "run"))
    assert "what a seccomp filter adds" in text
    assert "per system call (" in text
    assert "2 system calls per switch" in text
    assert "the filter runs on every call" in text  # allow: never answered by the cache
    lines = cost_lines(filter_costs(results_of(results)))
    figures = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
    assert len(figures) == len(filter_costs(results_of(results)))


def test_a_filtered_figure_without_its_twin_or_with_untimed_calls_is_said_so(results):
    kept = [
        r for r in results if r["params"] != {"seccomp": "none"} or r["probe"] != "syscall.read"
    ]
    assert not any(c.probe == "syscall.read" for c in filter_costs(results_of(kept)))
    futex_like = copy.deepcopy(results)
    for r in futex_like:
        r["derived"].pop("syscalls_per_op", None)
    [line] = [
        line
        for line in cost_lines(filter_costs(results_of(futex_like)))
        if "switch.pipe" in line
        and "between=threads" in line
        and "policy=normal" in line
        and ", allow:" in line
    ]
    assert "depends on timing" in line


def test_the_headline_switch_is_the_unfiltered_one(results):
    chosen = headline(explain(results).explanations)
    assert chosen
    assert all(e.params.get("seccomp") == "none" for e in chosen)


def test_a_run_without_the_axis_has_no_section():
    run = real_run("run_a.jsonl")
    explained = explain(run.results)
    assert explained.seccomp == []
    assert "seccomp filter adds" not in render_text(explained)


def test_a_difference_inside_both_medians_intervals_is_called_noise(results):
    for cost in filter_costs(results_of(results)):
        record = next(
            r
            for r in results
            if r["probe"] == cost.probe
            and r["params"].get("seccomp") == cost.mode
            and {k: v for k, v in r["params"].items() if k != "seccomp"} == cost.params
        )
        mine, theirs = (
            record["summary"]["median_ci"],
            _twin(results, record)["summary"]["median_ci"],
        )
        overlap = mine["low"] <= theirs["high"] and theirs["low"] <= mine["high"]
        assert cost.beyond_noise is (not overlap)
    same = copy.deepcopy(results)
    for r in same:  # every interval wide: nothing is beyond noise
        r["summary"]["median_ci"] = {**r["summary"]["median_ci"], "low": 0.0, "high": 1e12}
    lines = cost_lines(filter_costs(results_of(same)))
    assert all("within this run's noise" in line for line in lines if ", allow:" in line)


def test_explain_json_carries_each_filters_cost(results):
    as_json = explained_dict(explain(results, "run"))
    costs = filter_costs(results_of(results))
    assert [d["added_ns"] for d in as_json["seccomp"]] == [c.added_ns for c in costs]
    assert [d["per_call_ns"] for d in as_json["seccomp"]] == [c.per_call_ns for c in costs]
    assert {d["mode"] for d in as_json["seccomp"]} == {"allow", "profile"}


def test_explain_as_the_cli_prints_it_keeps_the_section_beside_the_headline(results):
    # By default explain prints the headline switches only; the filter's costs stay.
    text = run_text(results_of(results), "run")
    assert "more switch figure" in text
    assert "what a seccomp filter adds" in text
    assert text.count(", allow: ") == len(
        [c for c in filter_costs(results_of(results)) if c.mode == "allow"]
    )


def test_globs_and_params_narrow_the_section_too(results):
    text = run_text(results_of(results), "run", ["syscall.*"], {"seccomp": "allow"})
    costs = [line for line in text.splitlines() if ", allow: " in line or ", profile: " in line]
    assert [line.split(",")[0].strip() for line in costs] == ["syscall.getppid", "syscall.read"]
    assert "no switch figure of this run matches" not in text
    assert "what a seccomp filter adds" not in run_text(
        results_of(results), "run", ["switch.futex"]
    )
    data = run_dict(results_of(results), "run", ["syscall.read"])
    assert {(d["probe"], d["mode"]) for d in data["seccomp"]} == {
        ("syscall.read", "allow"),
        ("syscall.read", "profile"),
    }
