"""compare on two real recorded runs: matching, statistics per variant, environment diff."""

from __future__ import annotations

import copy

import pytest

from conftest import real_run
from ctxbench import stats
from ctxbench.compare import compare_runs, describe, env_diff
from ctxbench.records import group_run, params_key
from ctxbench.store import Store


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "compare.db") as opened:
        yield opened


def stored(store, run, label=None):
    store.add_run(run, origin="import", label=label)
    return store.load(run.run_id)


def test_every_shared_variant_gets_ratio_test_and_decision(store):
    a, b = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    comparison = compare_runs([stored(store, a), stored(store, b)])
    assert len(comparison.rows) == len(a.results)
    compared = 0
    for row in comparison.rows:
        reference, other = row.cells
        assert reference.difference is None
        if reference.status not in ("ok", "suspect"):
            # Unsupported here (create.pthread_scope_process on Linux): listed, not compared.
            assert reference.note == reference.status and other.difference is None
            continue
        compared += 1
        difference = other.difference
        assert difference is not None, row.probe
        expected = stats.compare_samples(
            next(r for r in a.results if r["probe"] == row.probe and r["params"] == row.params)[
                "samples"
            ],
            other.result["samples"],
        )
        assert difference == expected
        assert difference.ratio.low <= difference.ratio.ratio <= difference.ratio.high
        assert difference.significant or difference.why_not
        assert describe(difference, row.unit).endswith(("slower", "faster", "not significant"))
    assert compared >= len(a.results) - 1


def test_unsupported_and_missing_variants_are_not_compared(store):
    a = real_run("run_a.jsonl")
    records = copy.deepcopy(real_run("run_b.jsonl").all())
    results = [r for r in records if r["kind"] == "result"]
    first, last = results[0], results[-1]
    first.update(
        samples=[],
        summary=None,
        baseline=None,
        corrected=None,
        verdict={
            "status": "unsupported",
            "reasons": [{"code": "not_supported_here", "detail": "test: pretend"}],
        },
    )
    records.remove(last)
    b = group_run(records)
    comparison = compare_runs([stored(store, a), stored(store, b)])
    by_key = {(row.probe, params_key(row.params)): row for row in comparison.rows}
    unsupported = by_key[(first["probe"], params_key(first["params"]))].cells[1]
    assert unsupported.note == "unsupported" and unsupported.difference is None
    missing = by_key[(last["probe"], params_key(last["params"]))].cells[1]
    assert missing.note == "not in this run" and missing.result is None


def test_a_run_with_itself_is_not_significant(store):
    a = stored(store, real_run("run_a.jsonl"))
    comparison = compare_runs([a, a])
    for row in comparison.rows:
        difference = row.cells[1].difference
        if difference is None:  # unsupported here
            continue
        assert not difference.significant
        assert difference.ratio.ratio == 1.0


def test_environment_diff_orders_what_explains_first():
    env_a = real_run("run_a.jsonl").env
    env_b = copy.deepcopy(real_run("run_b.jsonl").env)
    env_b["kernel"]["release"] = "6.1.0-other"
    env_b["mitigations"]["spectre_v2"] = "Vulnerable"
    env_b["virtualization"]["detected"] = "kvm"
    env_b["hostname"] = "other-host"
    diff = env_diff([env_a, env_b])
    assert diff.differing[:4] == [
        "hostname",
        "kernel.release",
        "virtualization.detected",
        "mitigations.spectre_v2",
    ]
    assert diff.values["kernel.release"] == [env_a["kernel"]["release"], "6.1.0-other"]
    # Measured decimals (TSC calibration) differ run to run; that is not a difference.
    assert not any(key.startswith("cpu.tsc.") for key in diff.differing)
    assert "run_id" not in diff.keys and "started_at" not in diff.keys


def test_describe_follows_the_unit():
    slower = stats.compare_samples([99.0, 100.0, 101.0] * 5, [199.0, 200.0, 201.0] * 5)
    assert describe(slower, "ns") == "2.00× slower"
    assert describe(slower, "msgs/s") == "2.00× faster"
    faster = stats.compare_samples([199.0, 200.0, 201.0] * 5, [99.0, 100.0, 101.0] * 5)
    assert describe(faster, "ns") == "2.00× faster"
    assert describe(None, "ns") == "no ratio"


def test_compare_needs_two_runs(store):
    with pytest.raises(ValueError):
        compare_runs([stored(store, real_run("run_a.jsonl"))])
