"""The store when things go wrong: full disk, file size limit, write lock held
too long, store deleted while open, read-only store; and the CLI's
import/export round trip on both SQLite and PostgreSQL.

The failure is always one line (no traceback), nothing of the failed write is
stored, and the runs stored before are intact.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from conftest import (
    REPO,
    fake_engine_wrapper,
    fixture_path,
    invoke,
    real_run,
    synthetic_run,
    write_jsonl,
)
from ctxbench.errors import StoreWriteError
from ctxbench.store.db import Store
from ctxbench.store.schema import APPLICATION_ID
from servers import PostgresServer, postgres_bindir


def ctxbench_process(*args: str, **popen: object) -> subprocess.CompletedProcess[str]:
    """`ctxbench ARGS` in a process of its own (for limits and other users)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python" / "src"))
    return subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        **popen,  # type: ignore[call-overload]
    )


def assert_one_error_line(stderr: str, *fragments: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("ctxbench: error: ")]
    assert len(errors) == 1, stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def big_run_file(path: Path, run_id: str = "big-run-0001", n_results: int = 2000) -> Path:
    """A valid run of a few MB: more than the small file systems below can take."""
    return write_jsonl(path, synthetic_run(run_id, n_results=n_results).all())


# ---- import / export on both backends ----------------------------------------------
def test_cli_import_export_round_trip(store_target, tmp_path):
    for name, label in (("run_a.jsonl", "A"), ("run_b.jsonl", "B")):
        result = invoke("import", str(fixture_path(name)), "--label", label, "--db", store_target)
        assert result.exit_code == 0, result.stderr
    history = invoke("history", "--db", store_target)
    assert history.exit_code == 0 and "A" in history.stdout and "B" in history.stdout
    run_a = real_run("run_a.jsonl")
    exported = invoke("export", run_a.run_id, "--format", "json", "--db", store_target)
    assert exported.exit_code == 0, exported.stderr
    assert [json.loads(line) for line in exported.stdout.splitlines()] == run_a.all()
    run_b = real_run("run_b.jsonl")
    compared = invoke("compare", run_a.run_id, run_b.run_id, "--db", store_target)
    assert compared.exit_code == 0, compared.stderr
    latest = invoke("show", "latest", "--db", store_target)
    assert latest.exit_code == 0 and run_b.run_id in latest.stdout


# ---- lock held past the timeout ------------------------------------------------------
def _hold_write_lock(target: str):
    """Another writer holding the store's write lock; close() releases it."""
    if target.startswith("postgresql://"):
        holder = psycopg.connect(target, autocommit=True)
        holder.execute("SELECT pg_advisory_lock(%s)", (APPLICATION_ID,))
        return holder
    holder = sqlite3.connect(target, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_write_lock_held_too_long_is_a_clean_error(store_target):
    with Store.open(store_target) as store:
        store.add_run(synthetic_run("before-0001"), origin="run")
    holder = _hold_write_lock(store_target)
    try:
        with Store.open(store_target, lock_timeout=0.3) as store:
            with pytest.raises(StoreWriteError, match="locked by another writer") as caught:
                store.add_run(synthetic_run("blocked-0002"), origin="run")
            assert caught.value.reason == "locked"
    finally:
        holder.close()
    with Store.open(store_target) as store:
        assert [info.run_id for info in store.runs()] == ["before-0001"]
        store.add_run(synthetic_run("after-0003"), origin="run")  # the lock is free again
        assert len(store.runs()) == 2


def _fake_engine(tmp_path: Path, monkeypatch) -> None:
    """`run` replays a recorded engine run (tests/fake_engine.py)."""
    monkeypatch.setenv("CTXBENCH_ENGINE", str(fake_engine_wrapper(tmp_path)))
    monkeypatch.setenv("FAKE_ENGINE_RECORDS", str(fixture_path("run_a.jsonl")))


def _after_the_engine(monkeypatch, action: Callable[[], object]) -> None:
    """`run` does ACTION once the engine's records are in, before it stores them."""
    import ctxbench.cli.commands.run as run_command

    stream = run_command.stream_engine_run

    def stream_then_act(*args, **kwargs):
        records = stream(*args, **kwargs)
        action()
        return records

    monkeypatch.setattr(run_command, "stream_engine_run", stream_then_act)


def _kept_for_import(stderr: str, directory: Path) -> Path:
    """The run's records are in the spool, and the message says how to store them."""
    spools = list(directory.glob(".ctxbench-unstored-*.jsonl"))
    assert len(spools) == 1 and f"ctxbench import {spools[0]}" in stderr, stderr
    return spools[0]


def test_run_while_the_lock_is_held_keeps_the_measured_run(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch)
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        store.add_run(synthetic_run("before-0001"), origin="run")
    monkeypatch.setattr("ctxbench.store.db.LOCK_TIMEOUT_S", 0.3)
    holder = _hold_write_lock(str(db))
    try:
        result = invoke("run", "--db", str(db))
    finally:
        holder.close()
    assert result.exit_code == 1
    assert_one_error_line(result.stderr, "locked by another writer", "store the run again")
    spool = _kept_for_import(result.stderr, tmp_path)
    assert invoke("import", str(spool), "--db", str(db)).exit_code == 0
    with Store.open(db) as store:
        assert [info.run_id for info in store.runs()] == ["before-0001", real_run().run_id]


def test_store_deleted_during_a_run_keeps_the_measured_run(tmp_path, monkeypatch):
    _fake_engine(tmp_path, monkeypatch)
    db = tmp_path / "s.db"
    Store.open(db).close()
    _after_the_engine(monkeypatch, db.unlink)
    result = invoke("run", "--db", str(db))
    assert result.exit_code == 1
    assert_one_error_line(result.stderr, "was deleted")
    assert not db.exists()
    spool = _kept_for_import(result.stderr, tmp_path)
    assert invoke("import", str(spool), "--db", str(db)).exit_code == 0


# ---- deleted while open --------------------------------------------------------------
def test_store_deleted_while_open_is_a_clean_error(tmp_path):
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        store.add_run(synthetic_run("before-0001"), origin="run")
        path.unlink()
        with pytest.raises(StoreWriteError, match="was deleted") as caught:
            store.add_run(synthetic_run("lost-0002"), origin="run")
        assert caught.value.reason == "gone"
    assert not path.exists()  # not silently re-created empty


def test_store_replaced_while_open_is_not_written(tmp_path):
    path = tmp_path / "s.db"
    other = tmp_path / "other.db"
    with Store.open(other) as store:
        store.add_run(synthetic_run("other-0001"), origin="run")
    with Store.open(path) as store:
        os.replace(other, path)
        with pytest.raises(StoreWriteError, match="replaced"):
            store.add_run(synthetic_run("lost-0002"), origin="run")
    with Store.open(path) as store:
        assert [info.run_id for info in store.runs()] == ["other-0001"]


# ---- full disk -----------------------------------------------------------------------
def _limit_file_size(limit: int):
    def apply() -> None:
        # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG.
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_file_size_limit_during_import_keeps_earlier_runs(tmp_path):
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        store.add_run(real_run("run_a.jsonl"), origin="import", label="earlier")
    before = path.stat().st_size
    big = big_run_file(tmp_path / "big.jsonl")
    limited = ctxbench_process(
        "import", str(big), "--db", str(path), preexec_fn=_limit_file_size(before + 64 * 1024)
    )
    assert limited.returncode == 1, limited.stderr
    line = assert_one_error_line(limited.stderr, str(path), "earlier runs are intact")
    assert "store the run again" in line
    with Store.open(path) as store:  # opens with an integrity check
        assert [info.label for info in store.runs()] == ["earlier"]
        assert store.result_count() == len(real_run("run_a.jsonl").results)
    assert invoke("import", str(big), "--db", str(path)).exit_code == 0  # room again


def test_full_file_system_during_import_keeps_earlier_runs(tmp_path):
    """ENOSPC for real: a 512 KiB tmpfs in a private mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed: no private tmpfs for this test")
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    big = big_run_file(tmp_path / "big.jsonl")
    user_ns = [] if os.geteuid() == 0 else ["-r"]
    probe = subprocess.run(
        [unshare, *user_ns, "-m", "mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", "/mnt"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs here ({probe.stderr.strip()})")
    # Inside one private mount namespace: mount, store one run, fill it, look.
    script = (
        'set -u; mount -t tmpfs -o size=512k tmpfs "$1" || exit 90; db="$1/s.db"; '
        '"$2" -m ctxbench import "$3" --label earlier --db "$db" 2>/dev/null || exit 91; '
        '"$2" -m ctxbench import "$4" --db "$db" 2> "$5/full.err"; echo "exit=$?"; '
        '"$2" -m ctxbench export latest --db "$db" > "$5/after.jsonl"; echo "export=$?"'
    )
    done = subprocess.run(
        [
            unshare,
            *user_ns,
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(mount_point),
            sys.executable,
            *(str(fixture_path("run_a.jsonl")), str(big), str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "python" / "src")),
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exit=1" in done.stdout and "export=0" in done.stdout, done.stdout
    stderr = (tmp_path / "full.err").read_text()
    assert_one_error_line(stderr, "no space left", "earlier runs are intact")
    after = [json.loads(line) for line in (tmp_path / "after.jsonl").read_text().splitlines()]
    assert after == real_run("run_a.jsonl").all()


# ---- read-only -----------------------------------------------------------------------
def _run_on_read_only(
    directory: Path, out: Path, commands: list[list[str]]
) -> list[tuple[int, str]]:
    """Run ctxbench COMMANDS with DIRECTORY read-only: a read-only bind mount in a
    private mount namespace (root may write any file), else file modes.
    Returns (exit status, stderr) per command."""
    lines = []
    for number, command in enumerate(commands):
        quoted = " ".join(f"'{part}'" for part in [sys.executable, "-m", "ctxbench", *command])
        lines.append(f'{quoted} > /dev/null 2> "{out}/{number}.err"; echo $? > "{out}/{number}.rc"')
    script = "\n".join(lines)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python" / "src"))
    if os.geteuid() == 0:
        unshare = shutil.which("unshare")
        if unshare is None:
            pytest.skip("running as root without unshare (util-linux): no read-only mount")
        mount = (
            f'mount --bind "{directory}" "{directory}" && mount -o remount,ro,bind "{directory}"'
        )
        argv = [unshare, "-m", "sh", "-c", f"{mount} || exit 90\n{script}"]
    else:
        for path in directory.iterdir():
            path.chmod(0o444)
        directory.chmod(0o555)
        argv = ["sh", "-c", script]
    try:
        done = subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True, timeout=300)
    finally:
        directory.chmod(stat.S_IRWXU)
    assert done.returncode == 0, done.stderr
    return [
        (int((out / f"{n}.rc").read_text()), (out / f"{n}.err").read_text())
        for n in range(len(commands))
    ]


def test_read_only_store_opens_read_only_for_reading_commands(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "s.db"
    for name, label in (("run_a.jsonl", "A"), ("run_b.jsonl", "B")):
        assert invoke("import", str(fixture_path(name)), "--label", label, "--db", str(path))
    before = path.read_bytes()
    run_a, run_b = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    reading = [
        ["history"],
        ["show", "latest"],
        ["export", run_a.run_id],
        ["compare", run_a.run_id, run_b.run_id],
    ]
    writing = ["import", str(fixture_path("ring.jsonl"))]
    results = _run_on_read_only(
        directory, tmp_path, [[*args, "--db", str(path)] for args in [*reading, writing]]
    )
    for args, (code, stderr) in zip(reading, results, strict=False):
        assert code == 0, (args, stderr)
        assert "Traceback" not in stderr
    code, stderr = results[-1]
    assert code != 0
    assert_one_error_line(stderr, "cannot write store", str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in directory.iterdir()) == ["s.db"]


def test_read_only_postgresql_database_reads_and_refuses_writes(pg_server):
    url = pg_server.new_database()
    with Store.open(url) as store:
        store.add_run(synthetic_run("before-0001"), origin="run")
    name = url.split("/")[3].split("?")[0]
    pg_server.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    assert invoke("history", "--db", url).exit_code == 0
    with Store.open(url) as store:
        assert [info.run_id for info in store.runs()] == ["before-0001"]
        with pytest.raises(StoreWriteError, match="cannot be written") as caught:
            store.add_run(synthetic_run("refused-0002"), origin="run")
        assert caught.value.reason == "readonly"


def test_unreachable_postgresql_server_is_one_line_without_the_password(tmp_path):
    url = f"postgresql://someone:s3cret@/bench?host={tmp_path}/no-server&connect_timeout=2"
    result = invoke("history", "--db", url)
    assert result.exit_code == 1  # StoreUnreachable: not the input's fault, not a bug
    line = assert_one_error_line(
        result.stderr, "cannot open store", "cannot be reached", "--db URL"
    )
    assert "s3cret" not in result.stderr and "someone:***@" in line


# ---- a PostgreSQL server that goes away --------------------------------------------
def test_postgresql_server_stopped_mid_run_is_one_line_and_keeps_the_records(tmp_path, monkeypatch):
    """Not a bug report: the store cannot be reached, and the line says where
    the records are and how to store them (issue 25: it printed 'unexpected
    OperationalError ... a bug in ctxbench')."""
    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries are not installed (scripts/deps.sh servers)")
    server = PostgresServer(bindir)  # its own: this test stops it
    server.start()
    try:
        url = server.new_database()
        Store.open(url).close()
        _fake_engine(tmp_path, monkeypatch)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the spool's directory
        _after_the_engine(monkeypatch, server.stop)
        result = invoke("run", "--db", url)
    finally:
        server.stop()
    assert result.exit_code == 1
    line = assert_one_error_line(result.stderr, "cannot be reached", "ctxbench import")
    assert "bug" not in line
    _kept_for_import(result.stderr, tmp_path / "data" / "ctxbench")
