"""run --repeat: the repeats' records merged into one run (on two real recorded
runs of one selection, fixtures/run_a.jsonl and run_b.jsonl), and validated by
schema/record.schema.json."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from conftest import real_run
from ctxbench import stats
from ctxbench.acquire import repeats
from ctxbench.records.naming import params_key
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem


def _two_repeats():
    return [copy.deepcopy(real_run(name).all()) for name in ("run_a.jsonl", "run_b.jsonl")]


def _by_variant(records):
    return {(r["probe"], params_key(r["params"])): r for r in records if r["kind"] == "result"}


def test_merged_records_are_valid_and_form_one_run():
    merged = repeats.merge_repeats(_two_repeats())
    for record in merged:
        assert record_problem(record) is None, record_problem(record)
    run = group_run(merged)
    first = real_run("run_a.jsonl")
    assert run.run_id == first.run_id
    assert run.env["options"]["repeat"] == 2
    assert real_run("run_b.jsonl").run_id in run.env["notes"][-1]
    assert len(run.results) == len(first.results)
    assert [r["variant_index"] for r in run.results] == list(range(1, len(run.results) + 1))
    assert sum(run.end["counts"].values()) == len(run.results)


def test_each_record_keeps_every_repeat_and_pools_their_samples():
    a, b = (_by_variant(records) for records in _two_repeats())
    merged = _by_variant(repeats.merge_repeats(_two_repeats()))
    key = next(k for k, r in a.items() if k[0] == "syscall.getpid")
    record = merged[key]
    assert record["samples"] == a[key]["samples"] + b[key]["samples"]
    assert record["summary"]["median"] == pytest.approx(np.median(record["samples"]))
    assert record["repeats"]["count"] == 2
    assert [run["median"] for run in record["repeats"]["runs"]] == [
        a[key]["summary"]["median"],
        b[key]["summary"]["median"],
    ]
    index = list(merged).index(key)
    expected = stats.hierarchical_bootstrap_median(
        [a[key]["samples"], b[key]["samples"]], resamples=repeats.RESAMPLES, seed=index
    )
    ci = record["summary"]["median_ci"]
    assert (ci["low"], ci["high"], ci["method"]) == (expected.low, expected.high, expected.method)
    # Deterministic: the same repeats give the same record.
    assert _by_variant(repeats.merge_repeats(_two_repeats()))[key] == record


def test_the_verdict_is_the_worst_of_the_repeats():
    runs = _two_repeats()
    merged = _by_variant(repeats.merge_repeats(runs))
    a, b = (_by_variant(records) for records in runs)
    suspect_in_one = [
        k for k in a if {a[k]["verdict"]["status"], b[k]["verdict"]["status"]} == {"ok", "suspect"}
    ]
    assert suspect_in_one, "the fixtures have a variant suspect in one run only"
    for key in suspect_in_one:
        assert merged[key]["verdict"]["status"] == "suspect"
        statuses = {run["status"] for run in merged[key]["repeats"]["runs"]}
        assert statuses == {"ok", "suspect"}


def test_a_repeat_without_a_figure_is_named_and_left_out_of_the_figure():
    runs = _two_repeats()
    victim = next(r for r in runs[1] if r["kind"] == "result" and r["probe"] == "syscall.getpid")
    victim.update(samples=[], summary=None, baseline=None, corrected=None)
    victim["verdict"] = {
        "status": "failed",
        "reasons": [{"code": "error", "detail": "the variant's process was killed"}],
    }
    merged = _by_variant(repeats.merge_repeats(runs))
    key = ("syscall.getpid", params_key(victim["params"]))
    record = merged[key]
    assert record_problem(record) is None
    assert record["verdict"]["status"] == "failed"
    assert record["samples"] == _by_variant(runs[0])[key]["samples"]
    assert any("repeat(s) 2 gave no figure" in note for note in record["notes"])


def test_even_repeats_run_the_selection_in_reverse():
    assert repeats.repeat_selectors(["a", "b", "c"], 1) == ["a", "b", "c"]
    assert repeats.repeat_selectors(["a", "b", "c"], 2) == ["c", "b", "a"]
    assert repeats.repeat_selectors(["a", "b", "c"], 3) == ["a", "b", "c"]


def test_the_schema_refuses_a_malformed_repeats_block():
    record = _by_variant(repeats.merge_repeats(_two_repeats()))
    result = next(iter(record.values()))
    assert record_problem(result) is None
    assert "repeats" in record_problem(dict(result, repeats={"count": 1, "runs": []}))
    entry = dict(result["repeats"]["runs"][0], median="fast")
    assert "repeats" in record_problem(dict(result, repeats={"count": 2, "runs": [entry]}))


def test_set_aside_samples_of_every_repeat_are_kept_together():
    runs = _two_repeats()
    extra = []
    for records in runs:
        result = next(
            r for r in records if r["kind"] == "result" and r["probe"] == "syscall.getpid"
        )
        aside = [max(result["samples"]) * 2.0]
        result["set_aside"] = {
            "samples": aside,
            "summary_with_them": stats.summarize(result["samples"] + aside),
            "reasons": ["cpu_taken"],
        }
        extra += aside
    merged = next(
        r
        for r in repeats.merge_repeats(runs)
        if r["kind"] == "result" and r["probe"] == "syscall.getpid"
    )
    assert record_problem(merged) is None
    assert merged["set_aside"]["samples"] == extra
    assert merged["set_aside"]["summary_with_them"]["n"] == len(merged["samples"]) + 2
    # Each sample keeps its reason, where every repeat recorded them.
    assert merged["set_aside"]["reasons"] == ["cpu_taken", "cpu_taken"]


def test_a_variant_in_one_repeat_only_keeps_its_record():
    runs = _two_repeats()
    runs[1] = [r for r in runs[1] if r.get("probe") != "syscall.getpid"]
    merged = _by_variant(repeats.merge_repeats(runs))
    record = next(r for k, r in merged.items() if k[0] == "syscall.getpid")
    assert record_problem(record) is None
    assert "repeats" not in record
    assert (
        record["samples"]
        == _by_variant(_two_repeats()[0])[next(k for k in merged if k[0] == "syscall.getpid")][
            "samples"
        ]
    )
    assert record["notes"][-1] == "measured in repeat 1 only, of 2 asked"


def test_fewer_repeats_than_asked_make_an_interrupted_run():
    merged = repeats.merge_repeats(_two_repeats()[:1], asked=3)
    run = group_run(merged)
    assert run.end["interrupted"] and run.env["options"]["repeat"] == 3
    assert "1 of 3 repeats" in run.env["notes"][-1]
    assert all(record_problem(record) is None for record in merged)
    assert not group_run(repeats.merge_repeats(_two_repeats())).end["interrupted"]
