"""The installed `ctxbench` command with its packaged engine, as a user runs it.

`make test-python` installs the package (`pip install .`, which builds the
engine) before pytest, so the command and ctxbench/bin/ctxbench-engine are
there. Asserts on what was measured and checked, never on how fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from ctxbench.records.reading import read_run_file
from ctxbench.records.schema import record_problem


def installed_command() -> Path:
    command = Path(sys.executable).parent / "ctxbench"
    if not command.exists():
        if os.environ.get("CI"):
            pytest.fail("the ctxbench command is not installed; run `make python-install`")
        pytest.skip("the ctxbench command is not installed (make python-install)")
    return command


def ctxbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed_command()), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.fixture
def user_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CTXBENCH_ENGINE", "PYTHONPATH")}
    env.update(CTXBENCH_DB=str(tmp_path / "smoke.db"), NO_COLOR="1", COLUMNS="200")
    return env


@pytest.mark.measures
def test_installed_command_runs_the_packaged_engine(tmp_path, user_env):
    records_path = tmp_path / "smoke.jsonl"
    report_path = tmp_path / "smoke.html"
    done = ctxbench(
        "run", "syscall.getpid", "switch.pipe", "--quick", "--cpus", "same",
        "--between", "threads", "--json", str(records_path), "--report", str(report_path),
        "--label", "smoke", "--all", env=user_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The summary first (the same-CPU thread switch is a rung), then with
    # --all the full table, which names every probe.
    lines = done.stdout.splitlines()
    titles = [i for i, line in enumerate(lines) if line.strip() == "every result"]
    assert titles, done.stdout
    summary, table = "\n".join(lines[: titles[0]]), "\n".join(lines[titles[0] :])
    assert "thread switch, same CPU" in summary
    assert "syscall.getpid" in table and "switch.pipe" in table
    assert "stored run" in done.stderr

    run = read_run_file(records_path)  # every line validated against the schema
    assert run.env["producer"]["name"] == "ctxbench-engine"
    assert run.end is not None and not run.end["interrupted"]
    by_probe = {result["probe"]: result for result in run.results}
    assert set(by_probe) == {"syscall.getpid", "switch.pipe"}
    switch = by_probe["switch.pipe"]
    assert switch["params"]["between"] == "threads" and switch["params"]["cpus"] == "same"
    assert switch["placement"]["requested"] == "same"
    assert switch["checks"], "a switch probe verifies its switches"
    assert switch["verdict"]["status"] in ("ok", "suspect", "unsupported")
    for result in run.results:
        assert record_problem(result) is None
        if result["verdict"]["status"] in ("ok", "suspect"):
            assert result["summary"]["n"] == len(result["samples"]) >= 1
    assert report_path.read_text().startswith("<!DOCTYPE html>")

    shown = ctxbench("show", "latest", env=user_env)
    assert shown.returncode == 0 and run.run_id in shown.stdout
    history = ctxbench("history", env=user_env)
    assert "smoke" in history.stdout


def test_installed_command_lists_probes_and_env(user_env):
    listed = ctxbench("list", "--json", env=user_env)
    assert listed.returncode == 0, listed.stderr
    names = {probe["name"] for probe in json.loads(listed.stdout)}
    assert {"syscall.getpid", "switch.pipe"} <= names
    env = ctxbench("env", "--json", env=user_env)
    assert env.returncode == 0, env.stderr
    assert record_problem(json.loads(env.stdout)) is None


def test_installed_package_carries_the_repository_schema(user_env, tmp_path):
    python = installed_command().parent / "python"
    done = subprocess.run(
        [
            str(python),
            "-c",
            "from ctxbench.records.schema import schema_path; print(schema_path())",
        ],
        capture_output=True,
        text=True,
        env=user_env,
        cwd=tmp_path,  # not the source tree
        check=True,
    )
    installed = Path(done.stdout.strip())
    assert "site-packages" in installed.parts
    assert installed.read_bytes() == (REPO / "schema" / "record.schema.json").read_bytes()


def test_installed_command_bad_input(user_env, tmp_path):
    unknown = ctxbench("run", "no.such_probe", env=user_env)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines()[-1].startswith("ctxbench: error: unknown probe")
    bad_db = ctxbench("history", "--db", str(tmp_path), env=user_env)
    assert bad_db.returncode == 2 and "is a directory" in bad_db.stderr
