"""`ctxbench run --host` against a real sshd on 127.0.0.1 started by the test
session (conftest.ssh_server: throwaway host and user keys, a high port, an
`ssh -F` config whose aliases are the "hosts"). The engine really runs over
ssh (the static one from `make engines` when built, else the local one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from ctxbench.acquire.remote import engine_for
from ctxbench.errors import EngineError
from ctxbench.store.db import Store

# create.posix_spawn runs the engine's exec helper, which must have been copied too.
QUICK = ["syscall.getpid", "create.posix_spawn", "--quick"]
# Long enough (a dozen variants of about a second each) to be stopped midway.
SLOW = ["syscall.*", "--samples", "20", "--min-time", "0.05"]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO / "python" / "src"))


def ctxbench_run(ssh_server, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ctxbench", "run", *args]
    argv += ["--ssh-config", str(ssh_server.config), "--db", str(db)]
    return subprocess.run(
        argv, capture_output=True, text=True, env=_env(), timeout=300, check=False
    )


def remote_engines(ssh_server) -> list[int]:
    """Processes of engines started over ssh (they run from the remote temp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if command.startswith(str(ssh_server.remote_tmp)):
            found.append(int(entry.name))
    return found


def assert_nothing_left(ssh_server) -> None:
    deadline = time.monotonic() + 10
    while remote_engines(ssh_server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert remote_engines(ssh_server) == []
    assert list(ssh_server.remote_tmp.iterdir()) == []


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("ctxbench: error: ")]


@pytest.mark.measures
def test_two_hosts_in_parallel_give_two_runs(ssh_server, tmp_path):
    db = tmp_path / "s.db"
    report = tmp_path / "fleet.html"
    hosts = ["--host", "alpha", "--host", "beta", "--host", "alpha"]  # alpha once
    done = ctxbench_run(ssh_server, db, *QUICK, *hosts, "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert error_lines(done.stderr) == []
    with Store.open(db) as store:
        infos = store.runs()
        assert sorted(info.label for info in infos) == ["alpha", "beta"]
        for info in infos:
            run = store.load(info.run_id)
            assert info.complete and not info.interrupted
            # A variant re-measured after host interference is written last.
            probes = sorted(r.probe for r in run.results)
            assert probes == ["create.posix_spawn", "syscall.getpid"]
            assert {r.verdict.status for r in run.results} <= {"ok", "suspect"}
            assert run.env.hostname == os.uname().nodename  # the remote's env
            assert info.run_id in report.read_text()  # one report of the fleet
    assert "alpha: stored run" in done.stderr and "beta: stored run" in done.stderr
    assert_nothing_left(ssh_server)
    # One table across the hosts, named by their labels, against a chosen baseline.
    compare = ["compare", "alpha", "beta", "--baseline", "beta", "--all", "--db", str(db)]
    compared = subprocess.run(
        [sys.executable, "-m", "ctxbench", *compare],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    assert compared.returncode == 0, compared.stderr
    legend = [
        line for line in compared.stdout.splitlines() if " alpha " in line or " beta " in line
    ]
    assert " beta " in legend[0] and " alpha " in legend[1], compared.stdout
    assert "B/A [CI]" in compared.stdout


@pytest.mark.measures
def test_each_failing_host_is_one_line_and_the_others_finish(ssh_server, tmp_path):
    db = tmp_path / "s.db"
    hosts = ["alpha", "unreachable", "changed", "unknownkey", "notmp"]
    done = ctxbench_run(ssh_server, db, *QUICK, *[part for h in hosts for part in ("--host", h)])
    assert done.returncode == 1
    lines = error_lines(done.stderr)
    assert len(lines) == 4, done.stderr
    by_host = {line.split()[3].rstrip(":"): line for line in lines}
    assert sorted(by_host) == ["changed", "notmp", "unknownkey", "unreachable"]
    assert "unreachable" in by_host["unreachable"] and "refused" in by_host["unreachable"]
    assert "CHANGED" in by_host["changed"] and "ssh-keygen -R changed" in by_host["changed"]
    assert "not known" in by_host["unknownkey"] and "ssh unknownkey" in by_host["unknownkey"]
    assert "temporary directory" in by_host["notmp"]
    with Store.open(db) as store:
        assert [info.label for info in store.runs()] == ["alpha"]
    assert_nothing_left(ssh_server)


def _start_slow_run(ssh_server, db: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "ctxbench", "run", *SLOW, "--host", "alpha"]
    argv += ["--ssh-config", str(ssh_server.config), "--db", str(db)]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    # Wait until a result has arrived (the spool holds env + results as they come).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        spools = list(db.parent.glob(".ctxbench-unstored-*.jsonl"))
        if spools and len(spools[0].read_text().splitlines()) >= 2 and remote_engines(ssh_server):
            return process
        time.sleep(0.05)
    process.kill()
    pytest.fail("the remote run did not produce a result in 60 s")


@pytest.mark.measures
def test_remote_engine_killed_mid_run_keeps_a_partial_run(ssh_server, tmp_path):
    db = tmp_path / "s.db"
    process = _start_slow_run(ssh_server, db)
    for pid in remote_engines(ssh_server):
        os.kill(pid, signal.SIGKILL)
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    lines = error_lines(stderr)
    assert len(lines) == 1 and "host alpha" in lines[0] and "signal 9" in lines[0], stderr
    assert "finished results are stored as partial run" in lines[0]
    with Store.open(db) as store:
        (info,) = store.runs()
        assert info.interrupted and not info.complete and info.n_results >= 1
    assert "stored partial run" in stderr
    assert_nothing_left(ssh_server)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.measures
def test_dropped_connection_keeps_a_partial_run_and_stops_the_remote_engine(ssh_server, tmp_path):
    db = tmp_path / "s.db"
    process = _start_slow_run(ssh_server, db)
    # The daemon's per-connection processes go: the connection drops mid-run.
    sessions = _children(ssh_server.pid)
    assert sessions
    for pid in sessions:
        os.kill(pid, signal.SIGKILL)
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    lines = error_lines(stderr)
    assert len(lines) == 1 and "host alpha: the connection was lost" in lines[0], stderr
    with Store.open(db) as store:
        (info,) = store.runs()
        assert info.interrupted and info.n_results >= 1
    # The wrapper saw the connection go, stopped the engine and removed its directory.
    assert_nothing_left(ssh_server)


@pytest.mark.measures
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_every_host_and_keeps_what_finished(ssh_server, tmp_path, stop):
    db = tmp_path / "s.db"
    process = _start_slow_run(ssh_server, db)
    process.send_signal(stop)
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + stop, stderr
    assert error_lines(stderr) == []
    with Store.open(db) as store:
        (info,) = store.runs()
        # The engine was stopped, wrote its run_end (interrupted) and it came back.
        assert info.interrupted and info.complete and info.n_results >= 1
    assert_nothing_left(ssh_server)


def test_host_options_are_checked_before_anything_runs(tmp_path):
    argv = [sys.executable, "-m", "ctxbench", "run", *QUICK, "--db", str(tmp_path / "s.db")]
    config = tmp_path / "cfg"
    config.write_text("")
    for extra, expected in (
        (["--ssh-config", str(config)], "--ssh-config is for --host"),
        (["--host", "a", "--json", str(tmp_path / "x.jsonl")], "--json takes one run"),
    ):
        done = subprocess.run(argv + extra, capture_output=True, text=True, env=_env(), check=False)
        assert done.returncode == 2
        assert expected in error_lines(done.stderr)[0]


def test_engine_for_another_arch(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBENCH_ENGINES", str(tmp_path))
    with pytest.raises(EngineError, match=r"no ctxbench-engine for mips64: .*make engines"):
        engine_for("mips64")
    engine = tmp_path / "mips64" / "ctxbench-engine"
    engine.parent.mkdir()
    engine.write_bytes(b"\x7fELF")
    engine.chmod(0o755)
    assert engine_for("mips64") == engine
