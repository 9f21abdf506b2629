"""history --changes on two recorded histories of 20 quick runs of one machine
(fixtures/why/README.md): one with a seccomp filter from run 11 on, one of 20
identical runs. The filter runs on every system call, so it reaches the
system calls and the pipe switch; it cannot reach the user-level switch
(uswitch.asm) or the timer read (timer.rdtscp), which make none."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import pytest

from conftest import FIXTURES, invoke
from ctxbench.analysis.compare.changes import change_points, find_changes
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import group_run
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
    # The part that moved is named once: its group only where it says more (a user read
    # "kernel entry/exit (kernel entry/exit)" here, 2026-11-27).
    assert "moved most between the two runs around it: kernel entry/exit\n" in result.output


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
    variants = {(r.probe, json.dumps(r.params, sort_keys=True)) for r in runs[0].results}
    assert found.examined + found.too_short == found.variants == len(variants)
    assert found.too_short == found.few_runs + found.few_figures


# ---- never an all-clear over what it did not look at (issue 41.6) --------------------
def _stored_edited(tmp_path, history: str, count: int, edit=None):
    """The first COUNT runs of HISTORY stored, EDIT applied to each run's
    result records (with the run's position from 1)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{history}-{count}.db"
    with Store.open(path) as store:
        for position, name in enumerate(sorted(os.listdir(WHY / history))[:count], start=1):
            run = read_run_file(WHY / history / name, [])
            if edit is not None:
                records = copy.deepcopy(run.all())
                for record in records:
                    if record.get("kind") == "result":
                        edit(record, position)
                run = group_run(records)
            store.add_run(run, origin="import")
    return str(path)


def test_a_store_it_cannot_judge_gives_no_all_clear_and_exits_4(tmp_path):
    """Five runs: no variant has the 8 figures a shift needs. The text says
    nothing was judged, never 'No shift that stayed'; --json says
    judged_none, why each variant was left, and the command exits 4."""
    path = _stored_edited(tmp_path, "history_same", 5)
    shown = invoke("history", "--changes", "--db", path)
    assert shown.exit_code == 4, shown.output
    assert "No shift that stayed" not in shown.output
    assert "0 of 9 variants looked at" in shown.output
    assert "9 variant(s) not looked at: 9 measured in fewer than 8 runs" in shown.output
    assert "No variant could be judged" in shown.output
    alert = invoke("history", "--changes", "--json", "--db", path)
    assert alert.exit_code == 4
    document = json.loads(alert.stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["judged_none"] is True and document["variants_examined"] == 0
    [machine] = document["machines"]
    assert machine["changes"] == [] and machine["variants"] == 9
    assert machine["variants_left"] == {"few_runs": 9, "few_figures": 0}


def test_variants_whose_figures_do_not_count_are_named_and_the_all_clear_says_of_what(tmp_path):
    """Twenty identical runs, the pipe switch suspect with interference in
    15 of them: it has 20 runs but 5 figures that count. The others are
    looked at; the all-clear says it is over those only."""

    def interfered(record, position):
        if record["probe"] == "switch.pipe" and position > 5:
            record["verdict"] = {
                "status": "suspect",
                "reasons": [{"code": "interference", "detail": "kept samples interfered"}],
            }

    path = _stored_edited(tmp_path, "history_same", 20, interfered)
    shown = invoke("history", "--changes", "--db", path)
    assert shown.exit_code == 0, shown.output
    assert "8 of 9 variants looked at" in shown.output
    assert "1 variant(s) not looked at: 1 with fewer than 8 figures that count" in shown.output
    assert "No shift that stayed among the 8 variant(s) looked at (not the 1 above)" in shown.output
    document = json.loads(invoke("history", "--changes", "--json", "--db", path).stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["judged_none"] is False
    [machine] = document["machines"]
    assert machine["variants_left"] == {"few_runs": 0, "few_figures": 1}
    # Every variant looked at: the all-clear is a whole one.
    whole = invoke(
        "history", "--changes", "--db", _stored_edited(tmp_path / "x", "history_same", 20)
    )
    assert "No shift that stayed: no variant" in whole.output
