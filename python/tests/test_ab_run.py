"""`run --ab-wrapper`: the rounds as processes. A stop signal keeps the whole
rounds and leaves no engine (the fake engine, slowed); a live smoke run of
the real engine gives both arms with a figure per round (record shape only,
never a verdict: run serially)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built_engine, our_engines
from ctxbench.records.schema import record_problem
from ctxbench.store.db import Store

SOURCE = Path(__file__).parents[1] / "src"


def test_a_stop_signal_keeps_the_whole_rounds_and_leaves_no_engine(env):
    env = dict(env, FAKE_ENGINE_DELAY="0.3")
    command = ["run", "syscall.getppid", "syscall.getpid", "--ab-wrapper", "env AB_ARM=B"]
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxbench", *command, "--ab-rounds", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    seen = []
    try:
        for line in process.stderr:
            seen.append(line)
            if line.startswith("round 3 of 20"):
                break
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = "".join(seen) + rest
    assert process.returncode == 128 + signal.SIGINT, stderr
    assert "Traceback" not in stderr and "stored partial run" in stderr
    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        stored = store.load("latest")
    assert stored.info.interrupted
    assert stored.env.options["ab_wrapper"] == "env AB_ARM=B"
    # Rounds 1 and 2 were whole; round 3, stopped, is left out of both arms.
    assert sorted((r["probe"], r["params"]["arm"]) for r in stored.records.results) == [
        (probe, arm) for probe in ("syscall.getpid", "syscall.getppid") for arm in "AB"
    ]
    for result in stored.records.results:
        assert [f["round"] for f in result["schedule"]["round_figures"]] == [0, 1]
    assert our_engines(env) == []
    assert not list(Path(env["CTXBENCH_DB"]).parent.glob(".ctxbench-unstored-*"))  # no spool left
    # The order alternated: A B, then B A, then the stopped round's first arm, B.
    with open(env["FAKE_ENGINE_ARGS"], encoding="utf-8") as handle:
        assert len(handle.readlines()) >= 5


@pytest.mark.measures
def test_a_live_ab_run_has_both_arms_and_each_rounds_figure(tmp_path):
    engine = built_engine()
    out = tmp_path / "ab.jsonl"
    env = dict(os.environ, PYTHONPATH=str(SOURCE), CTXBENCH_ENGINE=str(engine))
    command = ["run", "syscall.getppid", "--quick", "--ab-wrapper", "env CTXBENCH_AB_SMOKE=1"]
    command += ["--ab-rounds", "2", "--db", str(tmp_path / "ab.db"), "--json", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["env", "result", "result", "run_end"]
    assert all(record_problem(r) is None for r in records)
    assert records[0]["options"]["ab_wrapper"] == "env CTXBENCH_AB_SMOKE=1"
    results = records[1:3]
    assert [r["params"]["arm"] for r in results] == ["A", "B"]
    for result in results:
        assert result["probe"] == "syscall.getppid"
        assert [f["round"] for f in result["schedule"]["round_figures"]] == [0, 1]
        assert result["repeats"]["count"] == 2
