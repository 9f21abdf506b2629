"""The env record's sandbox block: schema, warnings, environment diff, summary.

The runs are real engine output (fixtures/run_a.jsonl, run_b.jsonl) whose env
gets a sandbox block as the engine writes it; the engine's own test of the
block (a filter installed by ctxbench-seccomp-exec) is in
engine/tests/system/test_sandbox.py.
"""

from __future__ import annotations

import copy

import pytest

from conftest import real_environment, real_run
from ctxbench.analysis.summary.build import summarize
from ctxbench.errors import RecordError
from ctxbench.records import sandbox
from ctxbench.records.envdiff import env_diff
from ctxbench.records.environment import environment_of
from ctxbench.records.runs import group_run
from ctxbench.records.schema import validate
from ctxbench.store.db import Store
from ctxbench.views.machines import machine_lines
from ctxbench.views.report import render
from ctxbench.views.summary.text import as_dict, plain, run_lines

UNFILTERED = {
    "seccomp": {"mode": "disabled", "filters": 0, "source": "/proc/thread-self/status"},
    "no_new_privs": 0,
    "tracer_pid": 0,
    "traced": False,
    "audit": {
        "state": "unknown",
        "rules": None,
        "auditd_pid": None,
        "why": "the kernel refused the audit status request (Operation not permitted)",
    },
}
TRACING = {
    **UNFILTERED,
    "tracepoints": {"source": "/sys/kernel/tracing", "enabled": 2, "recording": True},
}
FILTERED = {
    **UNFILTERED,
    "seccomp": {"mode": "filter", "filters": 1, "source": "/proc/thread-self/status"},
    "no_new_privs": 1,
}


def with_sandbox(name: str, block: dict | None):
    run = real_run(name)
    records = [copy.deepcopy(run.env), *copy.deepcopy(run.results)]
    if run.end is not None:
        records.append(copy.deepcopy(run.end))
    if block is None:
        records[0].pop("sandbox", None)
    else:
        records[0]["sandbox"] = copy.deepcopy(block)
    return group_run(records)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "sandbox.db") as opened:
        yield opened


def test_the_schema_takes_the_block_and_refuses_a_mode_it_does_not_know():
    env = copy.deepcopy(real_run().env)
    env["sandbox"] = copy.deepcopy(FILTERED)
    validate(env)
    env["sandbox"]["seccomp"]["mode"] = "sort of"
    with pytest.raises(RecordError):
        validate(env)
    env["sandbox"] = {**copy.deepcopy(FILTERED), "extra": 1}
    with pytest.raises(RecordError):
        validate(env)


def test_the_schema_takes_tracepoints_and_refuses_what_it_does_not_know():
    env = copy.deepcopy(real_run("run_a.jsonl").env)
    env["sandbox"] = copy.deepcopy(TRACING)
    validate(env)
    unknown = {"source": None, "enabled": None, "recording": None, "why": "not mounted"}
    env["sandbox"]["tracepoints"] = unknown
    validate(env)
    env["sandbox"]["tracepoints"] = {**unknown, "instances": 3}
    with pytest.raises(RecordError):
        validate(env)
    env["sandbox"]["tracepoints"] = {
        "source": "/sys/kernel/tracing",
        "enabled": -1,
        "recording": False,
    }
    with pytest.raises(RecordError):
        validate(env)


def test_recording_tracepoints_give_a_warning_and_enabled_but_stopped_ones_none():
    [line] = sandbox.warnings(real_environment(sandbox=TRACING))
    assert "2 tracepoint event(s)" in line and "recording" in line
    stopped = copy.deepcopy(TRACING)
    stopped["tracepoints"]["recording"] = False
    assert sandbox.warnings(real_environment(sandbox=stopped)) == []


def test_the_environment_diff_names_the_tracepoints_that_differ():
    a = with_sandbox(
        "run_a.jsonl",
        {
            **UNFILTERED,
            "tracepoints": {"source": "/sys/kernel/tracing", "enabled": 0, "recording": False},
        },
    ).env
    b = with_sandbox("run_b.jsonl", TRACING).env
    diff = env_diff([environment_of(a), environment_of(b)])
    assert diff.values["sandbox.tracepoints.enabled"] == ["0", "2"]
    assert diff.values["sandbox.tracepoints.recording"] == ["no", "yes"]
    assert {"sandbox.tracepoints.enabled", "sandbox.tracepoints.recording"} <= set(diff.differing)


def test_a_filter_tracer_or_audit_rules_give_one_warning_each():
    assert sandbox.warnings(real_environment(sandbox=UNFILTERED)) == []
    # an engine before the block: nothing is said
    assert sandbox.warnings(real_environment(sandbox=None)) == []
    [filtered] = sandbox.warnings(real_environment(sandbox=FILTERED))
    assert "1 seccomp filter(s)" in filtered
    assert "every system call here pays the filter" in filtered
    traced = {**UNFILTERED, "tracer_pid": 4321, "traced": True}
    [line] = sandbox.warnings(real_environment(sandbox=traced))
    assert "4321" in line
    audited = {**UNFILTERED, "audit": {"state": "enabled", "rules": 3, "auditd_pid": 77}}
    [line] = sandbox.warnings(real_environment(sandbox=audited))
    assert "3 rule(s)" in line
    no_rules = {**UNFILTERED, "audit": {"state": "enabled", "rules": 0, "auditd_pid": 77}}
    assert sandbox.warnings(real_environment(sandbox=no_rules)) == []


def test_the_environment_diff_names_the_filter_before_the_mitigations():
    a = with_sandbox("run_a.jsonl", UNFILTERED).env
    b = copy.deepcopy(a)
    b["sandbox"] = copy.deepcopy(FILTERED)
    b["mitigations"] = {**a.get("mitigations", {}), "spectre_v2": "something else"}
    diff = env_diff([environment_of(a), environment_of(b)])
    assert "sandbox.seccomp.mode" in diff.differing
    assert diff.values["sandbox.seccomp.mode"] == ["disabled", "filter"]
    assert diff.differing.index("sandbox.seccomp.mode") < diff.differing.index(
        "mitigations.spectre_v2"
    )
    assert "sandbox.audit.state" not in diff.differing


def test_the_summary_warns_when_the_run_was_measured_under_a_filter(store):
    run = store.load(store.add_run(with_sandbox("run_a.jsonl", FILTERED), origin="import"))
    summary = summarize([run])
    assert summary.runs[0].sandbox == sandbox.warnings(real_environment(sandbox=FILTERED))
    text = plain(run_lines(summary, 100))
    assert text.startswith("warning: the measuring process ran under 1 seccomp filter(s)")
    assert as_dict(summary.runs[0])["sandbox"] == summary.runs[0].sandbox
    quiet = store.load(store.add_run(with_sandbox("run_b.jsonl", UNFILTERED), origin="import"))
    assert summarize([quiet]).runs[0].sandbox == []
    assert "warning:" not in plain(run_lines(summarize([quiet]), 100))


def test_comparing_a_filtered_run_names_the_filter_among_what_may_explain(store):
    a = store.load(store.add_run(with_sandbox("run_a.jsonl", UNFILTERED), origin="import"))
    b = store.load(store.add_run(with_sandbox("run_b.jsonl", FILTERED), origin="import"))
    summary = summarize([a, b])
    labels = {difference.label: difference.values for difference in summary.machines.env}
    assert labels["seccomp filter"] == ["disabled", "filter"]
    assert labels["seccomp filters"] == ["0", "1"]
    text = plain(machine_lines(summary, 120))
    assert "seccomp filter" in text


def test_the_report_warns_of_a_filtered_run_and_not_of_an_unfiltered_one(store):
    filtered = store.load(store.add_run(with_sandbox("run_a.jsonl", FILTERED), origin="import"))
    page = render([filtered])
    assert page.count('class="status-suspect sandbox-warning"') == 1
    assert "every system call here pays the filter" in page
    quiet = store.load(store.add_run(with_sandbox("run_b.jsonl", UNFILTERED), origin="import"))
    assert "sandbox-warning" not in render([quiet])
