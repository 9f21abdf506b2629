"""A failed gate measured again: `compare --fail-above PCT --confirm` and `--confirm-with RUN`.

The rule (analysis.compare.gate.confirm) on recorded figures: a row called slower
stays slower only when the run that measured it again calls it slower too;
otherwise it is inconclusive, "not repeated"; the rows the first run did not
call slower keep their outcome. Then the command on recorded runs
(fixtures/README.md), and --confirm's own run with the fake engine, which
replays a recorded run: every verdict here is decided by recorded samples.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, invoke, real_run
from ctxbench.analysis.compare.comparison import compare_runs
from ctxbench.analysis.compare.gate import (
    FAILED,
    INCONCLUSIVE,
    NOT_REPEATED,
    NOT_SLOWER,
    PASSED,
    SLOWER,
    Gate,
    confirm,
    decide,
    gate,
    third_variants,
)
from ctxbench.records.naming import params_key
from ctxbench.records.runs import group_run
from ctxbench.store.db import Store
from ctxbench.views.compare.gate import gate_lines
from ctxbench.views.export import comparison_dict

COMPARE_SCHEMA = json.loads((REPO / "schema" / "compare.schema.json").read_text())
HISTORY = [100.0, 101.0, 99.0, 100.5, 99.5]  # the machine's p10s of getpid: a 0.8% spread
TIGHT = (0.999, 1.0, 1.001, 1.0, 0.999, 1.001, 1.0, 0.999, 1.001, 1.0)


def _getpid_run(run_id: str, median: float) -> object:
    """run_a.jsonl reduced to syscall.getpid, its samples tight around MEDIAN."""
    kept = []
    for record in copy.deepcopy(real_run("run_a.jsonl").all()):
        record["run_id"] = run_id
        if record["kind"] != "result":
            kept.append(record)
        elif record["probe"] == "syscall.getpid":
            record["samples"] = [median * f for f in TIGHT]
            record["summary"].update(median=median, min=median * 0.999, max=median * 1.001)
            record["verdict"] = {"status": "ok", "reasons": []}
            kept.append(record)
    return group_run(kept)


def _judged(directory: Path, b_median: float, percent: float = 15) -> tuple[object, Gate]:
    """A (getpid at 100 ns) against B at B_MEDIAN, judged by HISTORY."""
    directory.mkdir(parents=True, exist_ok=True)
    with Store.open(directory / "rules.db") as store:
        runs = [
            store.load(store.add_run(_getpid_run(name, median), origin="import"))
            for name, median in (("a", 100.0), ("b", b_median))
        ]
    key = ("syscall.getpid", params_key(runs[0].results[0].params))
    comparison = compare_runs(runs, history={key: HISTORY})
    return comparison, gate(comparison, percent)


def test_a_slower_row_stays_slower_only_when_it_is_slower_again(tmp_path):
    comparison, first = _judged(tmp_path / "first", 130.0)
    assert first.outcome == FAILED
    _, slower_again = _judged(tmp_path / "again", 128.0)
    repeated = confirm(first, slower_again, "again-1")
    (row,) = repeated.rows
    assert (row.outcome, row.again.outcome, repeated.outcome) == (SLOWER, SLOWER, FAILED)
    assert repeated.confirmed_by == "again-1"

    _, same_again = _judged(tmp_path / "same", 100.5)
    not_repeated = confirm(first, same_again, "again-2")
    (row,) = not_repeated.rows
    assert (row.outcome, row.why, row.again.outcome) == (INCONCLUSIVE, NOT_REPEATED, NOT_SLOWER)
    assert not_repeated.outcome == INCONCLUSIVE  # no row is left not slower: never a pass
    lines = gate_lines(comparison, not_repeated)
    assert any("not in its run again (1.00" in line for line in lines), lines
    assert "measured again (again-2): 0 slower again, 1 not repeated" in lines[-1]
    document = comparison_dict(comparison, not_repeated)
    jsonschema.validate(document, COMPARE_SCHEMA)
    assert document["fail_above"]["confirmed_by"] == "again-2"
    assert document["fail_above"]["rows"][0]["why"] == NOT_REPEATED
    assert document["fail_above"]["rows"][0]["again"]["outcome"] == NOT_SLOWER


def test_only_a_slower_row_is_judged_again(tmp_path):
    _, first = _judged(tmp_path / "first", 100.5)
    assert first.outcome == PASSED
    _, slower = _judged(tmp_path / "again", 130.0)
    kept = confirm(first, slower, "again")
    assert [r.outcome for r in kept.rows] == [NOT_SLOWER] and kept.outcome == PASSED
    assert kept.rows[0].again is None


def test_a_row_not_measured_again_stays_slower(tmp_path):
    comparison, first = _judged(tmp_path / "first", 130.0)
    kept = confirm(first, Gate(first.percent, [], []), "again")
    assert kept.outcome == FAILED and kept.rows[0].again is None
    assert any("not measured again" in line for line in gate_lines(comparison, kept))


def test_two_of_three_runs_decide_a_row_not_repeated(tmp_path):
    comparison, first = _judged(tmp_path / "first", 130.0)
    _, same_again = _judged(tmp_path / "same", 100.5)
    not_repeated = confirm(first, same_again, "again")
    _, slower_third = _judged(tmp_path / "slower-third", 128.0)
    twice = decide(not_repeated, slower_third, "third-1")
    (row,) = twice.rows
    assert (row.outcome, row.why, row.third.outcome, twice.outcome) == (
        SLOWER,
        None,
        SLOWER,
        FAILED,
    )
    assert twice.third_by == "third-1"
    assert any("slower in two of three" in line for line in gate_lines(comparison, twice))

    _, same_third = _judged(tmp_path / "same-third", 99.5)
    passed = decide(not_repeated, same_third, "third-2")
    (row,) = passed.rows
    assert (row.outcome, row.why, row.third.outcome, passed.outcome) == (
        NOT_SLOWER, None, NOT_SLOWER, PASSED
    )  # fmt: skip
    lines = gate_lines(comparison, passed)
    assert any(line.startswith("not slower by 15% in two of three") for line in lines), lines
    document = comparison_dict(comparison, passed)
    jsonschema.validate(document, COMPARE_SCHEMA)
    assert document["fail_above"]["third_by"] == "third-2"
    assert document["fail_above"]["rows"][0]["third"]["outcome"] == NOT_SLOWER


def test_a_third_run_that_is_not_clear_leaves_the_row_not_repeated(tmp_path):
    """Slower, then not slower, then inconclusive (B's third run within-run
    only, wide): no two runs agree, so the row stays inconclusive."""
    _, first = _judged(tmp_path / "first", 130.0)
    _, same_again = _judged(tmp_path / "same", 100.5)
    not_repeated = confirm(first, same_again, "again")
    _, unclear = _judged(tmp_path / "unclear", 112.0)
    assert unclear.rows[0].outcome != SLOWER
    kept = decide(not_repeated, replace(unclear, rows=[replace(unclear.rows[0],
                  outcome=INCONCLUSIVE)]), "third")  # fmt: skip
    (row,) = kept.rows
    assert (row.outcome, row.why, row.third.outcome) == (INCONCLUSIVE, NOT_REPEATED, INCONCLUSIVE)


def test_a_third_run_takes_back_a_row_slower_twice_only_by_calling_it_not_slower(tmp_path):
    """Rule 7: slower in B and in its run again, then a third run: not
    slower there makes the row inconclusive (two runs back to back in one
    slow spell); slower or unclear there keeps it slower."""
    comparison, first = _judged(tmp_path / "first", 130.0)
    _, slower_again = _judged(tmp_path / "again", 128.0)
    twice = confirm(first, slower_again, "again")
    assert twice.rows[0].outcome == SLOWER

    _, same_third = _judged(tmp_path / "same-third", 100.5)
    taken_back = decide(twice, same_third, "third-1")
    (row,) = taken_back.rows
    assert (row.outcome, row.why, row.again.outcome, row.third.outcome) == (
        INCONCLUSIVE, NOT_REPEATED, SLOWER, NOT_SLOWER
    )  # fmt: skip
    assert taken_back.outcome == INCONCLUSIVE
    lines = gate_lines(comparison, taken_back)
    assert any("two runs in one slow spell of the host" in line for line in lines), lines

    _, slower_third = _judged(tmp_path / "slower-third", 131.0)
    kept = decide(twice, slower_third, "third-2")
    assert (kept.rows[0].outcome, kept.outcome) == (SLOWER, FAILED)
    assert any("slower in three of three" in line for line in gate_lines(comparison, kept))

    _, unclear = _judged(tmp_path / "unclear", 112.0)
    unclear = replace(unclear, rows=[replace(unclear.rows[0], outcome=INCONCLUSIVE)])
    still = decide(twice, unclear, "third-3")
    assert (still.rows[0].outcome, still.rows[0].third.outcome) == (SLOWER, INCONCLUSIVE)
    assert any("slower in two of three" in line for line in gate_lines(comparison, still))


def test_a_third_run_measures_the_rows_not_repeated_and_those_slower_twice(tmp_path):
    _, first = _judged(tmp_path / "first", 130.0)
    _, slower_again = _judged(tmp_path / "again", 128.0)
    _, same_again = _judged(tmp_path / "same", 100.5)
    variant = [("syscall.getpid", first.rows[0].row.params)]
    assert third_variants(confirm(first, slower_again, "again")) == variant
    assert third_variants(confirm(first, same_again, "again")) == variant
    _, passed = _judged(tmp_path / "passed", 100.5)
    assert third_variants(confirm(passed, slower_again, "again")) == []


def test_only_a_confirmed_gate_is_decided_by_a_third_run(tmp_path):
    _, first = _judged(tmp_path / "first", 130.0)
    with pytest.raises(ValueError):
        decide(first, first, "third")


# ---- the command, on recorded runs ---------------------------------------------------
def _import(db: str, name: str, run_id: str | None = None) -> str:
    """Fixture NAME into the store, under RUN_ID where given (a second copy)."""
    records = copy.deepcopy(real_run(name).all())
    if run_id is not None:
        for record in records:
            record["run_id"] = run_id
    with Store.open(db) as store:
        return store.add_run(group_run(records), origin="import")


def test_confirm_with_a_run_that_is_slower_again_keeps_the_gate_failed(db):
    """gate_seccomp2.jsonl: getpid 2.07x gate_a.jsonl's under two seccomp
    filters; a second copy of it stands for the run measured again."""
    a, b = _import(db, "gate_a.jsonl"), _import(db, "gate_seccomp2.jsonl")
    again = _import(db, "gate_seccomp2.jsonl", "20261126T141200Z-again")
    done = invoke("compare", a, b, "--fail-above", "10", "--confirm-with", again, "--json",
                  "--db", db)  # fmt: skip
    assert done.exit_code == 1, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, COMPARE_SCHEMA)
    assert data["fail_above"]["confirmed_by"] == again
    row = next(r for r in data["fail_above"]["rows"] if r["variant"] == "syscall.getpid")
    assert row["outcome"] == SLOWER and row["again"]["outcome"] == SLOWER
    assert "confirmed by its run again" in done.stderr


def test_confirm_with_a_run_that_is_not_slower_again_keeps_only_what_repeated(db):
    """The run measured again is gate_samples12.jsonl: the same selection
    without the filters, a second after gate_a.jsonl, in the same loaded
    spell: its getpid is A's again, its switch.pipe (normal) as slow as B's."""
    a, b = _import(db, "gate_a.jsonl"), _import(db, "gate_seccomp2.jsonl")
    again = _import(db, "gate_samples12.jsonl")
    first = invoke("compare", a, b, "--fail-above", "10", "--json", "--db", db)
    assert first.exit_code == 1
    slower = [r["variant"] for r in json.loads(first.stdout)["fail_above"]["rows"]
              if r["outcome"] == SLOWER]  # fmt: skip
    done = invoke("compare", a, b, "--fail-above", "10", "--confirm-with", again, "--json",
                  "--db", db)  # fmt: skip
    rows = {r["variant"]: r for r in json.loads(done.stdout)["fail_above"]["rows"]}
    repeated = [v for v in slower if rows[v]["again"]["outcome"] == SLOWER]
    for variant in slower:
        expected = SLOWER if variant in repeated else INCONCLUSIVE
        assert rows[variant]["outcome"] == expected, rows[variant]
    assert rows["syscall.getpid"]["why"] == NOT_REPEATED
    assert done.exit_code == (1 if repeated else 4), done.stderr
    not_repeated = len(slower) - len(repeated)
    assert f"{len(repeated)} slower again, {not_repeated} not repeated" in done.stderr


def test_confirm_with_twice_takes_the_second_run_as_the_third(db):
    """gate_samples12.jsonl as the run again and a copy of it as the third:
    the rows not repeated are judged by the third too (it says what the run
    again said, so nothing is decided that the run again left open), a
    third run already given is refused, and three --confirm-with are a
    usage error."""
    a, b = _import(db, "gate_a.jsonl"), _import(db, "gate_seccomp2.jsonl")
    again = _import(db, "gate_samples12.jsonl")
    third = _import(db, "gate_samples12.jsonl", "20261126T141300Z-third")
    done = invoke("compare", a, b, "--fail-above", "10", "--confirm-with", again,
                  "--confirm-with", third, "--json", "--db", db)  # fmt: skip
    data = json.loads(done.stdout)
    jsonschema.validate(data, COMPARE_SCHEMA)
    assert data["fail_above"]["third_by"] == third
    rows = {r["variant"]: r for r in data["fail_above"]["rows"]}
    getpid = rows["syscall.getpid"]
    assert getpid["third"] is not None
    assert getpid["third"]["outcome"] == getpid["again"]["outcome"] != SLOWER
    assert (getpid["outcome"], getpid["why"]) == (INCONCLUSIVE, NOT_REPEATED)
    assert "measured a third time (" + third + ")" in done.stderr
    twice = invoke("compare", a, b, "--fail-above", "10", "--confirm-with", again,
                   "--confirm-with", again, "--db", db)  # fmt: skip
    assert twice.exit_code == 2 and "already taken" in twice.stderr
    three = invoke("compare", a, b, "--fail-above", "10", "--confirm-with", again,
                   "--confirm-with", third, "--confirm-with", third, "--db", db)  # fmt: skip
    assert three.exit_code == 2


def test_confirm_refuses_a_run_of_another_machine_and_stores_nothing(db, monkeypatch):
    monkeypatch.setattr("ctxbench.cli.confirm_run.platform.node", lambda: "another-host")
    a, b = _import(db, "gate_a.jsonl"), _import(db, "gate_seccomp2.jsonl")
    done = invoke("compare", a, b, "--fail-above", "10", "--confirm", "--db", db)
    assert done.exit_code == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--confirm measures here" in line and "--confirm-with RUN" in line
    with Store.open(db) as store:
        assert [info.run_id for info in store.runs()] == [a, b]


def test_confirm_and_confirm_with_need_a_gate_of_two_runs(db):
    a, b = _import(db, "gate_a.jsonl"), _import(db, "gate_seccomp2.jsonl")
    for args in (["--confirm"], ["--confirm-with", a, "--fail-above", "10", "--confirm"],
                 ["--confirm-with", b, "--fail-above", "10", "--pair", "cpus"]):  # fmt: skip
        done = invoke("compare", a, b, *args, "--db", db)
        assert done.exit_code == 2, (args, done.stderr)


def _with_tight_getpid(run_id: str, median: float) -> list[dict]:
    """run_a.jsonl's records as RUN_ID, its getpid samples tight around MEDIAN."""
    records = copy.deepcopy(real_run("run_a.jsonl").all())
    for record in records:
        record["run_id"] = run_id
        if record.get("probe") == "syscall.getpid":
            record["samples"] = [median * f for f in TIGHT]
            summary = record["summary"]
            summary.update(median=median, mean=median, min=median * 0.999, max=median * 1.001)
            summary.update(p90=median * 1.001, p99=median * 1.001, stddev=median * 0.0008)
            summary["median_ci"].update(low=median * 0.999, high=median * 1.001)
    return records


def _stored_with_getpid(db: str, run_id: str, median: float) -> str:
    with Store.open(db) as store:
        return store.add_run(group_run(_with_tight_getpid(run_id, median)), origin="import")


def _confirmed_by_replays(db: str, monkeypatch) -> tuple[object, dict, dict, str]:
    """A and B are run_a.jsonl with getpid's samples tight at 150 and 450
    ns; `compare --confirm --json` with the fake engine replaying its
    FAKE_ENGINE_RECORDS for the runs it takes: its result, its JSON, the
    getpid gate row, and B's run id."""
    a = _stored_with_getpid(db, "20260101T000000Z-tighta", 150.0)
    b = _stored_with_getpid(db, "20260101T000001Z-slowb", 450.0)
    monkeypatch.setenv("FAKE_ENGINE_RUN_ID", f"{AGAIN_ID},{THIRD_ID}")
    monkeypatch.setenv("PYTHONPATH", str(REPO / "python" / "src"))
    monkeypatch.setattr("ctxbench.cli.confirm_run.platform.node", lambda: "vm")
    first = invoke("compare", a, b, "--fail-above", "15", "--db", db)
    assert first.exit_code == 1, first.stdout
    done = invoke("compare", a, b, "--fail-above", "15", "--confirm", "--json", "--db", db)
    data = json.loads(done.stdout)
    jsonschema.validate(data, COMPARE_SCHEMA)
    assert data["fail_above"]["confirmed_by"] == AGAIN_ID
    row = next(r for r in data["fail_above"]["rows"] if r["variant"] == "syscall.getpid")
    return done, data, row, b


AGAIN_ID, THIRD_ID = "20260101T000002Z-again", "20260101T000003Z-third"


def test_confirm_measures_the_slower_rows_again_with_b_s_options(db, fake_engine, monkeypatch):
    """--confirm runs `ctxbench run` for getpid alone with run_a's options;
    the fake engine replays run_a (getpid's median 154 ns, its interval
    wide): getpid is not slower again, so it is measured a third time (the
    same replay); neither run decides it, so it stays not repeated and the
    gate is inconclusive (4), not failed."""
    done, data, row, b = _confirmed_by_replays(db, monkeypatch)
    assert done.exit_code == 4, (done.exit_code, done.stderr)
    assert data["fail_above"]["third_by"] == THIRD_ID
    assert row["why"] == NOT_REPEATED and row["again"]["time_ratio"] < 1.05
    assert row["third"]["outcome"] != SLOWER
    runs = [json.loads(line) for line in fake_engine.read_text().splitlines()]
    measured = [args for args in runs if args[0] == "run" and "--dry-run" not in args]
    assert len(measured) == 2
    for args in measured:
        assert args[1 : args.index("--quick")] == ["syscall.getpid"]
    with Store.open(db) as store:
        stored = {info.run_id: info.label for info in store.runs()}
    assert (stored[AGAIN_ID], stored[THIRD_ID]) == (f"again: {b}", f"third: {b}")


def test_a_row_not_slower_in_its_second_and_third_runs_is_not_slower(
    db, fake_engine, monkeypatch, tmp_path
):
    """The fake engine replays run_a with getpid tight at 151 ns: not slower
    than A's 150 in the run again nor in the third: not slower in two of
    three, and the gate no longer fails."""
    replay = tmp_path / "tight.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in _with_tight_getpid("x", 151.0)))
    monkeypatch.setenv("FAKE_ENGINE_RECORDS", str(replay))
    for k, median in enumerate([149.0, 150.5, 151.0, 149.5, 150.0]):  # the machine's history
        _stored_with_getpid(db, f"20251231T00000{k}Z-earlier", median)
    done, data, row, _ = _confirmed_by_replays(db, monkeypatch)
    assert done.exit_code != 1, (done.exit_code, done.stderr)
    assert data["fail_above"]["third_by"] == THIRD_ID
    assert (row["outcome"], row["why"]) == (NOT_SLOWER, None), done.stderr
    assert row["again"]["outcome"] == row["third"]["outcome"] == NOT_SLOWER
    assert "1 measured a third time" in done.stderr
    assert "0 slower and 1 not slower by at least two of three, 0 not repeated" in done.stderr
    assert "not slower by 15% in two of three: syscall.getpid" in done.stderr
