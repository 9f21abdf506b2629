"""Shared test helpers.

Two kinds of test data:
* ``fixtures/run_a.jsonl`` and ``fixtures/run_b.jsonl``: real engine output
  (``ctxbench-engine run --quick --json ...``, see fixtures/README.md), used
  wherever a test is about what the engine writes (compare, report, CLI).
* ``synthetic_run()``: small schema-valid records built here, labelled as
  made by "ctxbench-tests", for store mechanics (transactions, migrations,
  concurrency) where the figures do not matter.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxbench.records.environment import Environment, environment_of
from ctxbench.records.reading import read_run_file
from ctxbench.records.result import Result, result_of
from ctxbench.records.runs import RunRecords, group_run
from servers import PostgresServer, SSHServer, postgres_bindir, sshd_binary

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


FAKE_ENGINE = Path(__file__).parent / "fake_engine.py"


def invoke(*args: str, input: str | None = None) -> Any:
    """The CLI in this process, as every test runs it. One exception policy:
    an exception the CLI does not turn into its one-line error propagates
    (catch_exceptions=False), so a traceback fails the test instead of
    passing for a non-zero exit."""
    from click.testing import CliRunner

    from ctxbench.cli.main import cli

    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def import_runs(db: str, *names: str, labels: tuple[str, ...] = ()) -> list[str]:
    """The recorded runs NAMES (fixture files) imported into DB, in order, with
    LABELS if given; their run ids."""
    for index, name in enumerate(names):
        label = ["--label", labels[index]] if labels else []
        done = invoke("import", str(fixture_path(name)), *label, "--db", db)
        assert done.exit_code == 0, done.stderr
    return [real_run(name).run_id for name in names]


@pytest.fixture
def db(tmp_path) -> str:
    """A fresh store's path for the CLI's --db."""
    return str(tmp_path / "test.db")


@pytest.fixture
def store(tmp_path) -> Iterator[Any]:
    """A fresh store, open."""
    from ctxbench.store.db import Store

    with Store.open(tmp_path / "store.db") as opened:
        yield opened


@pytest.fixture
def two_runs(db) -> list[str]:
    """run_a and run_b (two runs of one machine, a second apart:
    fixtures/README.md) in the store at `db`, labelled A and B; their ids."""
    return import_runs(db, "run_a.jsonl", "run_b.jsonl", labels=("A", "B"))


def fake_engine_wrapper(directory: Path) -> Path:
    """An executable ctxbench-engine in DIRECTORY that runs fake_engine.py
    (its FAKE_ENGINE_* variables say what it replays and how it fails)."""
    wrapper = directory / "ctxbench-engine"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_ENGINE}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture
def fake_engine(tmp_path, monkeypatch) -> Path:
    """The fake engine as CTXBENCH_ENGINE, replaying run_a; the file it
    appends the arguments it received to."""
    monkeypatch.setenv("CTXBENCH_ENGINE", str(fake_engine_wrapper(tmp_path)))
    monkeypatch.setenv("FAKE_ENGINE_RECORDS", str(fixture_path("run_a.jsonl")))
    monkeypatch.setenv("FAKE_ENGINE_ARGS", str(tmp_path / "engine-args.jsonl"))
    return tmp_path / "engine-args.jsonl"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path, monkeypatch):
    """No test touches the user's real store."""
    monkeypatch.setenv("CTXBENCH_DB", str(tmp_path / "default-store.db"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "240")


def built_engine() -> Path:
    """The real engine (ctxbench's own lookup). Not built (`make engine`): the
    test is skipped, but under CI, where `make test` builds it first, a
    missing engine is a failure, never a silent skip."""
    from ctxbench.acquire.runner import find_engine
    from ctxbench.errors import EngineError

    try:
        return find_engine()
    except EngineError as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The environment of a ctxbench process run as a real process: its own
    store, tests/fake_engine.py (replaying run_a) as the engine."""
    wrapper = fake_engine_wrapper(tmp_path)
    return dict(
        os.environ,
        PYTHONPATH=str(Path(__file__).parents[1] / "src"),
        CTXBENCH_DB=str(tmp_path / "store.db"),
        CTXBENCH_ENGINE=str(wrapper),
        FAKE_ENGINE_RECORDS=str(fixture_path("run_a.jsonl")),
        FAKE_ENGINE_ARGS=str(tmp_path / "engine-args.jsonl"),  # marks our engines in /proc
        FAKE_ENGINE_RUN_ID="20260101T000000Z-0000beef",  # not one of the fixtures' runs
    )


def _session_server(server: Any, missing: str) -> Iterator[Any]:
    """Start SERVER for the test session and stop it at the end; skip with
    MISSING (which binary, which Debian package) when it is None."""
    if server is None:
        pytest.skip(missing)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL server of this test session (initdb in a temp dir, unix socket)."""
    bindir = postgres_bindir()
    yield from _session_server(
        PostgresServer(bindir) if bindir else None,
        "PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
        "install Debian's postgresql (scripts/deps.sh servers)",
    )


@pytest.fixture(scope="session")
def ssh_server():
    """An sshd of this test session on 127.0.0.1 (see servers.SSHServer)."""
    sshd = sshd_binary()
    yield from _session_server(
        SSHServer(sshd) if sshd else None,
        "OpenSSH server (sshd) is not installed: install Debian's openssh-server "
        "(scripts/deps.sh servers)",
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path) -> str:
    """Where a fresh store goes: an SQLite file, or an empty PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_server").new_database()


def fixture_path(name: str) -> Path:
    return FIXTURES / name


# The RISC-V lab's recorded run (fixtures/README.md), in a directory of its own.
LAB_FIXTURE = FIXTURES / "riscv" / "lab_run.jsonl"


@functools.cache
def _read_fixture(path: Path) -> RunRecords:
    """A recorded run read (and each record validated) once per test
    process: validation is most of a read, and the tests read the same few
    files hundreds of times (module-level parametrizations too)."""
    return read_run_file(path)


def _fixture_run(path: Path) -> RunRecords:
    """A copy of the recorded run at PATH, the test's own to change."""
    return copy.deepcopy(_read_fixture(path))


def lab_run() -> RunRecords:
    return _fixture_run(LAB_FIXTURE)


def real_run(name: str = "run_a.jsonl") -> RunRecords:
    return _fixture_run(fixture_path(name))


def real_environment(name: str = "run_a.jsonl", **edits: Any) -> Environment:
    """The env of a recorded run as a type, its top-level keys replaced by
    EDITS (None: the key taken out, as an engine before it wrote)."""
    record = real_run(name).env
    for key, value in edits.items():
        if value is None:
            record.pop(key, None)
        else:
            record[key] = value
    return environment_of(record)


# Ten samples within 0.1% of one another: a figure with no spread to speak of.
TIGHT = (0.999, 1.0, 1.001, 1.0, 0.999, 1.001, 1.0, 0.999, 1.001, 1.0)


def tight_getpid(median: float) -> dict[str, Any]:
    """run_a.jsonl's syscall.getpid result (a real record), its samples
    TIGHT around MEDIAN."""
    record = copy.deepcopy(
        next(r for r in real_run("run_a.jsonl").results if r["probe"] == "syscall.getpid")
    )
    record["samples"] = [median * f for f in TIGHT]
    record["summary"].update(median=median, min=median * 0.999, max=median * 1.001)
    return record


def summary_figures(median: float, low: float, high: float) -> dict[str, Any]:
    """A summary block with MEDIAN and its interval, the other figures the
    median: a synthetic record's, complete as the result type reads it."""
    flat = dict.fromkeys(("min", "mean", "p90", "p99", "max"), median)
    return {
        "n": 10,
        **flat,
        "stddev": 0.0,
        "median": median,
        "median_ci": {"low": low, "high": high},
    }


def a_result(probe: str, params: dict[str, Any], **rest: Any) -> Result:
    """A result of PROBE with PARAMS as the type analysis takes, the rest of
    its record made up (ok, no figure) unless REST gives it: for tests of
    which record is chosen, where no figure matters."""
    record = {
        "probe": probe,
        "family": probe.split(".", 1)[0],
        "params": params,
        "unit": "ns",
        "verdict": {"status": "ok", "reasons": []},
        "summary": None,
        "samples": [],
        **rest,
    }
    return result_of(record)


def synthetic_run(run_id: str, n_results: int = 3, interrupted: bool = False) -> RunRecords:
    """A schema-valid run with made-up figures (for store mechanics only)."""
    env = {
        "schema": 1,
        "kind": "env",
        "run_id": run_id,
        "producer": {"name": "ctxbench-tests", "version": "0"},
        "started_at": "2026-01-01T00:00:00Z",
        "hostname": "test-host",
        "arch": "x86_64",
        "cpu": {"model": "synthetic", "logical": 2, "online": [0, 1], "allowed": [0, 1]},
        "kernel": {"release": "0.0-test"},
        "virtualization": {"detected": "none"},
        "mitigations": {},
        "build": {},
    }
    results = []
    for index in range(n_results):
        samples = [100.0 + index + 0.1 * k for k in range(5)]
        results.append(
            {
                "schema": 1,
                "kind": "result",
                "run_id": run_id,
                "probe": f"test.probe_{index}",
                "family": "test",
                "params": {"index": index},
                "unit": "ns",
                "op": "one synthetic operation",
                "samples": samples,
                "summary": {
                    "n": 5,
                    "min": samples[0],
                    "median": samples[2],
                    "mean": samples[2],
                    "stddev": 0.158,
                    "p90": samples[4],
                    "p99": samples[4],
                    "max": samples[4],
                    "median_ci": None,
                },
                "baseline": None,
                "corrected": None,
                "derived": {},
                "timer": {
                    "source": "test",
                    "overhead_ns": None,
                    "resolution_ns": None,
                    "corrected": False,
                },
                "placement": {"requested": "none"},
                "checks": [],
                "verdict": {"status": "ok", "reasons": []},
            }
        )
    end = {
        "schema": 1,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": "2026-01-01T00:00:01Z",
        "counts": {"ok": n_results, "suspect": 0, "unsupported": 0, "failed": 0},
        "interrupted": interrupted,
    }
    return group_run([env, *results, end])


def with_run_id(run: RunRecords, run_id: str) -> RunRecords:
    records = copy.deepcopy(run.all())
    for record in records:
        record["run_id"] = run_id
    return group_run(records)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CTXBENCH_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def require_chromium() -> str:
    """The browser for the report's tests: skip without it (fail under CI)."""
    browser_path = chromium_path()
    if browser_path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; `scripts/deps.sh browser` installs it")
        pytest.skip("chromium is not installed (scripts/deps.sh browser)")
    return browser_path


# ---- ctxbench as a process of its own (with the ``env`` fixture) ------------
def ctxbench(env, *args, stdout=subprocess.PIPE, input: bytes | None = None):
    """`ctxbench ARGS` as a process of its own with ENV (see ``env``); its
    output as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        input=input,
        env=env,
        timeout=120,
        check=False,
    )


def error_line(process) -> str:
    """stderr holds no traceback and exactly one error line; returns it."""
    stderr = process.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("ctxbench: error: ") and "unexpected" not in errors[0], errors[0]
    return errors[0]


def stored_runs(env) -> list[str]:
    """The ids of the runs in the store of ENV (CTXBENCH_DB)."""
    from ctxbench.store.db import Store

    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        return [info.run_id for info in store.runs()]


def engine_calls(env) -> list[list[str]]:
    """The argument lists the fake engine was started with, in order."""
    path = Path(env["FAKE_ENGINE_ARGS"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def our_engines(env) -> list[int]:
    """Processes still alive that were started as this test's fake engine."""
    marker = f"FAKE_ENGINE_ARGS={env['FAKE_ENGINE_ARGS']}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ.split(b"\0") and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found
