"""history --changes on two recorded histories of 20 quick runs of one machine
(fixtures/why/README.md): one with a seccomp filter from run 11 on, one of 20
identical runs. The filter runs on every system call, so it reaches the
system calls and the pipe switch; it cannot reach the user-level switch
(uswitch.asm) or the timer read (timer.rdtscp), which make none."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from conftest import FIXTURES, invoke
from ctxbench.analysis.changes import change_points, find_changes
from ctxbench.records.core import read_run_file
from ctxbench.store.db import Store

WHY = FIXTURES / "why"
SCHEMA = json.loads((FIXTURES.parent.parent.parent / "schema/changes.schema.json").read_text())
UNREACHABLE = ("uswitch.", "timer.")


def stored(tmp_path, history: str):
    path = tmp_path / f"{history}.db"
    with Store.open(path) as store:
        for name in sorted(os.listdir(WHY / history)):
            store.add_run(read_run_file(WHY / history / name, []), origin="import")
        runs = [store.load(info.run_id) for info in store.runs()]
    return path, runs


def test_the_filter_from_run_11_is_found_there_on_the_rows_it_reaches(tmp_path):
    _, runs = stored(tmp_path, "history_change")
    assert len(runs) == 20
    found = find_changes(runs)
    assert found.examined >= 5
    changed = {c.probe for c in found.changes}
    assert {"syscall.enosys", "syscall.getppid", "syscall.read"} <= changed
    for change in found.changes:
        assert 10 <= change.position <= 12, change
        assert not change.probe.startswith(UNREACHABLE)
        assert change.ratio > 1.0  # the filter adds to every call
        assert change.environment[0].key.startswith("sandbox.seccomp.")


def test_twenty_identical_runs_have_no_change(tmp_path):
    _, runs = stored(tmp_path, "history_same")
    found = find_changes(runs)
    assert found.examined >= 5
    assert found.changes == []


def test_the_json_follows_the_schema_and_a_probe_selects(tmp_path):
    path, _ = stored(tmp_path, "history_change")
    result = invoke("history", "--changes", "--json", "--probe", "syscall.*", "--db", str(path))
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    jsonschema.validate(document, SCHEMA)
    [machine] = document["machines"]
    assert machine["changes"]
    assert all(c["probe"].startswith("syscall.") for c in machine["changes"])
    assert len(machine["runs"]) == 20


def test_the_text_names_the_run_and_what_differs_across_it(tmp_path):
    path, _ = stored(tmp_path, "history_change")
    result = invoke("history", "--changes", "--db", str(path))
    assert result.exit_code == 0, result.output
    assert "from run 11 of 20" in result.output or "from run 10 of 20" in result.output
    assert "across it: sandbox.seccomp." in result.output


def test_an_unknown_machine_is_bad_input_and_options_need_changes(tmp_path):
    path, _ = stored(tmp_path, "history_same")
    result = invoke("history", "--changes", "--machine", "nowhere", "--db", str(path))
    assert result.exit_code == 2 and "nowhere" in result.output
    result = invoke("history", "--probe", "x", "--db", str(path))
    assert result.exit_code == 2


def test_a_step_is_found_where_it_is_and_flat_noise_gives_none():
    step = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 120.0, 121.0, 119.0, 120.5, 119.5, 120.0]
    assert change_points(step) == [6]
    flat = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8, 100.1, 99.9]
    assert change_points(flat) == []
    assert change_points([1.0, 2.0, 3.0]) == []  # too short for two segments of 4
    assert change_points([5.0] * 12) == []  # no spread at all
    # One slow run is not a level: a segment needs 4 runs.
    spike = [100.0, 101.0, 99.0, 100.5, 400.0, 100.0, 100.2, 99.8, 100.1, 99.9]
    assert change_points(spike) == []


@pytest.mark.parametrize("history", ["history_change", "history_same"])
def test_every_variant_is_counted_as_looked_at_or_too_short(tmp_path, history):
    _, runs = stored(tmp_path, history)
    found = find_changes(runs)
    variants = {(r["probe"], json.dumps(r["params"], sort_keys=True)) for r in runs[0].results}
    assert found.examined + found.too_short <= len(variants)
