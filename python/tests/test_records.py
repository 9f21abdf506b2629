"""The record contract: the packaged schema, real engine output, and bad input."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, fixture_path, real_run
from ctxbench.errors import RecordError
from ctxbench.records.naming import params_key
from ctxbench.records.reading import parse_jsonl, read_run_file
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem, schema, schema_path
from ctxbench.units import params_text


def test_a_source_checkout_reads_the_repository_schema():
    # The installed package's copy is checked by test_smoke.
    assert schema_path() == REPO / "schema" / "record.schema.json"
    assert schema() == json.loads(schema_path().read_text())
    assert schema()["$defs"]["result"]["properties"]["schema"] == {"const": 1}


@pytest.mark.parametrize("name", ["run_a.jsonl", "run_b.jsonl"])
def test_fixtures_are_valid_engine_runs(name):
    run = real_run(name)
    assert run.env["producer"]["name"] == "ctxbench-engine"
    assert run.end is not None and run.end["interrupted"] is False
    assert {r["probe"] for r in run.results} >= {"syscall.getpid", "switch.pipe"}
    for result in run.results:
        assert record_problem(result) is None
        if result["verdict"]["status"] in ("ok", "suspect"):
            assert result["summary"]["n"] == len(result["samples"])


def test_a_record_missing_a_field_is_named():
    result = next(r for r in real_run().results if r["probe"] == "switch.pipe")
    broken = dict(result)
    del broken["unit"]
    assert "'unit' is a required property" in record_problem(broken)


@pytest.mark.parametrize("name", ["run_a.jsonl", "default_quick.jsonl", "matrix_a.jsonl"])
def test_a_result_is_read_into_its_type_once_and_says_what_the_record_says(tmp_path, name):
    from ctxbench.store.db import Store

    records = real_run(name)
    with Store.open(tmp_path / "types.db") as store:
        run = store.load(store.add_run(records, origin="import"))
    assert run.results is run.results  # read once
    assert len(run.results) == len(records.results)
    for result, record in zip(run.results, records.results, strict=True):
        assert (result.probe, result.family, result.unit) == (
            record["probe"],
            record["family"],
            record["unit"],
        )
        assert result.params == record["params"] and result.raw == record
        assert result.verdict.status == record["verdict"]["status"]
        assert result.verdict.codes == tuple(r["code"] for r in record["verdict"]["reasons"])
        assert list(result.samples) == record["samples"]
        if record.get("summary"):
            assert result.median == record["summary"]["median"]
            assert result.figure("p99") == record["summary"]["p99"]
        else:
            assert result.summary is None and result.median is None
        assert result.block("interference") == (record.get("interference") or {})


def test_a_result_record_missing_a_key_is_refused_where_it_is_read():
    from ctxbench.records.result import result_of

    record = dict(next(r for r in real_run().results if r["probe"] == "switch.pipe"))
    record["verdcit"] = record.pop("verdict")  # misspelt: an error here, not a None later
    with pytest.raises(RecordError, match=r"switch\.pipe: missing or malformed 'verdict'"):
        result_of(record)


@pytest.mark.parametrize("name", ["run_a.jsonl", "seccomp_quick.jsonl", "no_idle_driver.jsonl"])
def test_an_env_record_reads_into_its_type(name):
    from ctxbench.records.environment import environment_of

    record = real_run(name).env
    env = environment_of(record)
    assert (env.run_id, env.hostname, env.arch) == (
        record["run_id"],
        record.get("hostname"),
        record["arch"],
    )
    assert env.producer_name == record["producer"]["name"]
    assert env.cpu_model == record["cpu"]["model"]
    assert env.cpu_allowed == tuple(record["cpu"]["allowed"])
    assert env.kernel_release == record["kernel"]["release"]
    assert env.virtualization.detected == record["virtualization"]["detected"]
    assert env.idle_driver == (record.get("frequency") or {}).get("cpuidle_driver")
    assert env.options == (record.get("options") or {})
    assert env.block("mitigations") == record["mitigations"] and env.raw is record
    sandbox = record.get("sandbox")
    if sandbox is None:
        assert env.sandbox is None
    else:
        assert env.sandbox is not None
        assert env.sandbox.seccomp_mode == sandbox["seccomp"]["mode"]
        assert env.sandbox.traced == sandbox["traced"]


def test_an_env_record_missing_a_key_is_refused_where_the_run_is_read():
    run = real_run()
    del run.env["kernel"]["release"]
    with pytest.raises(RecordError, match=r"env record of run .*: missing or malformed 'release'"):
        group_run([run.env, *run.results])


def test_the_kernel_counters_and_each_set_aside_reason_are_read():
    result = next(r for r in real_run().results if r["probe"] == "switch.pipe")
    kept = result["summary"]
    aside = {
        "samples": [kept["max"] * 1.3, kept["max"] * 1.5],
        "summary_with_them": dict(kept, n=kept["n"] + 2),
        "reasons": ["cpu_taken", "host_reference"],
    }
    counters = {
        "sharing": "one_cpu",
        "tasks": 2,
        "cpus": [1],
        "other_share_limit": 0.03,
        "own_cpus_wait_limit": 0.1,
        "kept_interfered_limit": 0.2,
        "kept": {
            "samples": 30,
            "wall_ns": 6.0e7,
            "exec_ns": 5.98e7,
            "run_delay_ns": 2.7e7,
            "steal_ns": 0.0,
            "interfered": 0,
            "other_share": 0.0033,
        },
        "set_aside": {"host_reference": 1, "cpu_taken": 1, "preempted": 0, "steal": 0},
        "read_ns": 14000.0,
    }
    placement = dict(result["placement"], why="CPU 1: the least busy (CPU 0 100%, CPU 1 0%)")
    record = dict(result, set_aside=aside, counters=counters, placement=placement)
    assert record_problem(record) is None
    # A slowed variant is suspect with reason interference, a code of the closed set.
    slowed = dict(
        record,
        verdict={
            "status": "suspect",
            "reasons": [{"code": "interference", "detail": "10 of 10 kept samples"}],
        },
    )
    assert record_problem(slowed) is None
    # Reasons, sharing and counts are closed sets and counts.
    assert record_problem(dict(record, set_aside=dict(aside, reasons=["gremlins"]))) is not None
    assert record_problem(dict(record, counters=dict(counters, sharing="half"))) is not None
    bad_kept = dict(counters, kept=dict(counters["kept"], interfered=-1))
    assert record_problem(dict(record, counters=bad_kept)) is not None
    missing = dict(counters)
    del missing["kept"]
    assert "'kept' is a required property" in record_problem(dict(record, counters=missing))
    # A record written before the counters existed is still read.
    older = {k: aside[k] for k in aside if k != "reasons"}
    assert record_problem(dict(result, set_aside=older)) is None
    assert record_problem(dict(result)) is None
    # Nor is one written before own_cpus_wait_limit was (schema v1 all along):
    # a store holds runs of every engine that wrote v1.
    before_wait_limit = {k: v for k, v in counters.items() if k != "own_cpus_wait_limit"}
    assert record_problem(dict(record, counters=before_wait_limit)) is None


def test_an_unstable_record_keeps_its_modes():
    result = next(r for r in real_run().results if r["probe"] == "switch.pipe")
    unstable = dict(
        result,
        verdict={
            "status": "suspect",
            "reasons": [{"code": "unstable", "detail": "the samples are not one figure"}],
        },
        stability={
            "method": "gap split",
            "middle_spread": 5.6,
            "modes": [{"center": 2001.0, "low": 1973.0, "high": 2024.0, "share": 0.5}],
            "outside_modes": 0.5,
            "unstable": True,
        },
    )
    assert record_problem(unstable) is None
    without_modes = dict(unstable, stability={**unstable["stability"]})
    del without_modes["stability"]["modes"]
    assert "'modes' is a required property" in record_problem(without_modes)
    unknown = dict(
        unstable, verdict={"status": "suspect", "reasons": [{"code": "wobbly", "detail": "x"}]}
    )
    assert record_problem(unknown) is not None


def test_interleaved_records_carry_each_rounds_figure():
    result = next(r for r in real_run().results if r["probe"] == "switch.pipe")
    figures = [
        {"round": 0, "n": 6, "median": 2001.5, "set_aside": 0},
        {"round": 1, "n": 0, "median": None, "set_aside": 2},
    ]
    schedule = {"interleave": "rounds", "rounds": 2, "seed": 7, "round_figures": figures}
    assert record_problem(dict(result, schedule=schedule)) is None
    unnumbered = dict(schedule, round_figures=[{"n": 6, "median": 2001.5, "set_aside": 0}])
    assert "'round' is a required property" in record_problem(dict(result, schedule=unnumbered))
    negative = dict(schedule, round_figures=[dict(figures[0], round=-1)])
    assert record_problem(dict(result, schedule=negative)) is not None


def test_the_host_reference_and_its_set_aside_samples_are_read():
    result = next(r for r in real_run().results if r["probe"] == "switch.pipe")
    attempt = {"median": 3100.0, "reference_ratio": 1.04, "slowed_share": 0.0, "samples": 30}
    interference = {
        "reference": "128 getppid system calls",
        "best_ns": 20000.0,
        "slowed_ratio": 1.2,
        "retries": 2,
        "attempts": [dict(attempt, set_aside=4, set_aside_median=4300.0)],
        "kept": 0,
        "slowed": False,
    }
    assert record_problem(dict(result, interference=interference)) is None
    # A record written before set-aside samples existed is still read.
    older = dict(interference, attempts=[attempt])
    assert record_problem(dict(result, interference=older)) is None
    negative = dict(interference, attempts=[dict(attempt, set_aside=-1)])
    assert record_problem(dict(result, interference=negative)) is not None
    # The set-aside samples are values, on the result and on its baseline,
    # with the summary they make together with the kept ones.
    kept = result["summary"]
    aside = {"samples": [kept["max"] * 1.3], "summary_with_them": dict(kept, n=kept["n"] + 1)}
    assert record_problem(dict(result, set_aside=aside)) is None
    if result["baseline"] is not None:
        baseline = dict(result["baseline"], set_aside=aside)
        assert record_problem(dict(result, baseline=baseline)) is None
    assert record_problem(dict(result, set_aside=dict(aside, samples=[]))) is not None
    assert record_problem(dict(result, set_aside={"samples": [1.0]})) is not None
    # How the run scheduled the variant: whole, or in seeded interleaved rounds.
    for schedule in ({"interleave": "off"}, {"interleave": "rounds", "rounds": 5, "seed": 7}):
        assert record_problem(dict(result, schedule=schedule)) is None
    assert record_problem(dict(result, schedule={"interleave": "sideways"})) is not None
    assert record_problem(dict(result, schedule={"interleave": "rounds", "rounds": 0})) is not None
    # Whether the host reference judged the samples: on or off, nothing else.
    for state in ("on", "off"):
        assert record_problem(dict(result, host_reference=state)) is None
    assert "host_reference" in record_problem(dict(result, host_reference="maybe"))


def test_results_are_listed_in_the_selections_order():
    run = real_run()
    # As the engine writes them when the first variant was measured again
    # after host interference: it comes last.
    indexed = [dict(r, variant_index=i + 1) for i, r in enumerate(run.results)]
    written = [run.env, *indexed[1:], indexed[0], *([run.end] if run.end else [])]
    assert all(record_problem(r) is None for r in written)
    assert group_run(written).results == indexed
    # Records from before the index keep the order they came in.
    assert group_run([run.env, *run.results[::-1]]).results == run.results[::-1]


def test_an_ok_verdict_needs_a_summary():
    result = dict(real_run().results[0], summary=None)
    assert record_problem(result) is not None


@pytest.mark.parametrize(
    "record, expected",
    [
        ([1, 2], "expected a JSON object"),
        ({"kind": "banana"}, "'kind' is 'banana'"),
        ({"kind": "env", "schema": 2}, "this ctxbench reads schema 1"),
    ],
)
def test_obviously_wrong_records(record, expected):
    assert expected in record_problem(record)


def test_parse_jsonl_names_the_line():
    lines = fixture_path("run_a.jsonl").read_text().splitlines()
    lines.insert(2, "{not json")
    with pytest.raises(RecordError, match="line 3: not JSON"):
        parse_jsonl("\n".join(lines), "f.jsonl")
    with pytest.raises(RecordError, match="no records"):
        parse_jsonl("\n\n", "empty.jsonl")


def test_group_run_refuses_mixed_or_headless_runs():
    a, b = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    with pytest.raises(RecordError, match="different runs"):
        group_run([a.env, *b.results])
    with pytest.raises(RecordError, match="more than one env"):
        group_run([a.env, a.env])
    with pytest.raises(RecordError, match="no env record"):
        group_run(a.results)


def test_read_run_file_errors(tmp_path):
    with pytest.raises(RecordError, match="cannot read"):
        read_run_file(tmp_path / "absent.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(RecordError, match="not UTF-8"):
        read_run_file(binary)


def test_params_helpers():
    assert params_key({"b": 1, "a": "x"}) == params_key({"a": "x", "b": 1})
    assert params_text({"cpus": "same", "between": "threads", "on": True}) == (
        "between=threads cpus=same on=true"
    )
