"""The runner: finding the engine, streaming its records, progress and diagnostics."""

from __future__ import annotations

import pytest

from conftest import fake_engine_wrapper, fixture_path, real_run
from ctxbench.acquire.runner import EngineRun, RunOptions, find_engine, plan_variants
from ctxbench.errors import BadInput, EngineError


@pytest.fixture
def fake(tmp_path, monkeypatch):
    wrapper = fake_engine_wrapper(tmp_path)
    monkeypatch.setenv("CTXBENCH_ENGINE", str(wrapper))
    monkeypatch.setenv("FAKE_ENGINE_RECORDS", str(fixture_path("run_a.jsonl")))
    return wrapper


def test_ctxbench_engine_variable_wins(fake):
    assert find_engine() == fake


def test_ctxbench_engine_variable_must_be_executable(tmp_path, monkeypatch):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    monkeypatch.setenv("CTXBENCH_ENGINE", str(script))
    with pytest.raises(EngineError, match="not an executable file"):
        find_engine()


def test_engine_args_follow_the_contract():
    options = RunOptions(
        selectors=["switch.*"], quick=True, samples=5, min_time=0.01, cpus="same",
        between="threads", params=["procs=2,8", "size_kib=0"], timeout=9.5, retries=0,
    )  # fmt: skip
    selection = [
        "run", "switch.*", "--quick", "--samples", "5", "--min-time", "0.01", "--timeout", "9.5",
        "--retries", "0", "--cpus", "same", "--between", "threads",
        "--param", "procs=2,8", "--param", "size_kib=0",
    ]  # fmt: skip
    assert options.engine_args() == [*selection, "--json", "--progress", "--die-with-parent"]
    assert options.engine_args(dry_run=True) == [*selection, "--dry-run"]
    preset = RunOptions(preset="fibers-vs-threads").engine_args()
    assert preset[:3] == ["run", "--preset", "fibers-vs-threads"]


def test_plan_is_the_engines_expansion(fake):
    planned = plan_variants(RunOptions(selectors=["switch.*"]))
    switches = [r for r in real_run().results if r["probe"].startswith("switch.")]
    assert planned == [{"probe": r["probe"], "params": r["params"]} for r in switches]


def test_plan_usage_error_becomes_bad_input(fake, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "usage")
    with pytest.raises(BadInput, match="'sideways'"):
        plan_variants(RunOptions(cpus="sideways"))


def test_records_progress_and_diagnostics_stream(fake):
    progress, diagnostics = [], []
    run = EngineRun(RunOptions(), on_progress=progress.append, on_diagnostic=diagnostics.append)
    records = list(run.records())
    assert records == real_run().all()
    assert run.returncode == 0 and run.failure() is None and not run.interrupted
    results = real_run().results
    assert [p.number for p in progress] == list(range(1, len(results) + 1))
    assert {p.total for p in progress} == {len(results)}
    assert [(p.probe, p.params) for p in progress] == [(r["probe"], r["params"]) for r in results]
    assert diagnostics == ["ctxbench-engine: note: replaying recorded output"]


def test_zero_based_progress_is_shown_one_based():
    run = EngineRun.__new__(EngineRun)
    run._first_index = None
    first = run._parse_progress('{"index": 0, "total": 3, "probe": "a.b", "params": {}}')
    second = run._parse_progress('{"index": 1, "total": 3, "probe": "a.c", "params": {}}')
    assert (first.number, second.number) == (1, 2)
    assert run._parse_progress("not json") is None


def test_a_variant_measured_again_says_its_attempt():
    run = EngineRun.__new__(EngineRun)
    run._first_index = None
    first = run._parse_progress('{"index": 1, "total": 2, "probe": "a.b", "params": {}}')
    again = run._parse_progress(
        '{"index": 1, "total": 2, "probe": "a.b", "params": {}, "attempt": 2}'
    )
    assert (first.number, first.attempt) == (1, 1)
    assert (again.number, again.attempt) == (1, 2)


def test_usage_error_becomes_bad_input(fake, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "usage")
    run = EngineRun(RunOptions())
    assert list(run.records()) == []
    failure = run.failure()
    assert isinstance(failure, BadInput) and "'sideways'" in str(failure)


def test_invalid_lines_are_kept_aside(fake, monkeypatch):
    monkeypatch.setenv("FAKE_ENGINE_MODE", "garbage")
    run = EngineRun(RunOptions())
    records = list(run.records())
    assert len(records) == len(real_run().all())
    assert len(run.problems) == 1 and "not JSON" in run.problems[0]


def test_progress_under_rounds_counts_visits_in_order(capsys):
    # Issue 30: interleaved rounds visit the variants in a drawn order, and the
    # lines printed '[2/2]' before '[1/2]'. They count visits now, in order, and
    # name the variant and its round beside; without rounds, '[n/N]' as before.
    from ctxbench.acquire.runner import Progress
    from ctxbench.cli.run_lifecycle import ProgressView

    view = ProgressView()
    view.live = False  # the line per variant, as on a pipe or in CI
    with view:
        view.update(Progress(2, 2, "switch.pipe", {}, 1, 1, 5))
        view.update(Progress(1, 2, "syscall.getpid", {}, 1, 1, 5))
        view.update(Progress(1, 2, "syscall.getpid", {}))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert lines[0].startswith("[visit 1] switch.pipe (variant 2 of 2, round 1 of 5, elapsed")
    assert lines[1].startswith("[visit 2] syscall.getpid (variant 1 of 2, round 1 of 5, elapsed")
    assert lines[2].startswith("[1/2] syscall.getpid (elapsed")


def test_progress_lines_on_a_pipe_are_whole_lines_at_any_columns(capsys, monkeypatch):
    # Issue 40: on a non-terminal stderr the lines were hard-wrapped at
    # COLUMNS, so a log parser saw half lines.
    from ctxbench.acquire.runner import Progress
    from ctxbench.cli.run_lifecycle import ProgressView

    monkeypatch.setenv("COLUMNS", "40")
    view = ProgressView()
    view.live = False
    params = {"between": "processes", "cpus": "cross", "idle": "held", "policy": "normal"}
    with view:
        view.update(Progress(7, 120, "switch.socketpair", params, 1, 2, 5))
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(line) > 40 and line.endswith(")") and "policy=normal" in line
