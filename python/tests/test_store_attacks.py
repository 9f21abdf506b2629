"""The store's neighbourhood, attacked as in the hostile pass of issue 37
(the steps: docs of each test). A store directory shared with another user
(mode 1777), the attacker a real second user (``nobody``) where the test
runs as root; the victim's commands are real ctxbench processes.

Each test failed on the main of 2026-11-27 (before these refusals) and
passes now: the store is refused in one line naming what was planted, and
left as it was, byte for byte.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ctxbench, error_line, fixture_path, real_run

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the attacker is nobody")
NOBODY = 65534


def as_nobody(script: str, *args: str) -> str:
    """SCRIPT (Python) run as nobody; its stdout."""
    # Every module is imported before the drop: the interpreter's own
    # library may lie where nobody cannot read.
    prelude = (
        "import os, shutil, signal, sqlite3, sys\n"
        "sqlite3.connect(':memory:').close()\n"
        "os.setgid(65534)\nos.setuid(65534)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + script, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextlib.contextmanager
def shared_directory(env):
    """A directory every user may write (1777) with a store of two runs;
    (directory, store, env for the victim's commands)."""
    shared = Path(tempfile.mkdtemp(prefix="ctxbench-shared-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        store = shared / "store.db"
        env = dict(env, CTXBENCH_DB=str(store))
        for name in ("run_a.jsonl", "run_b.jsonl"):
            assert ctxbench(env, "import", str(fixture_path(name))).returncode == 0
        yield shared, store, env
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def refused(env, *args: str) -> str:
    """The command's one error line, after checking it exited 2 (usage)."""
    done = ctxbench(env, *args)
    assert done.returncode == 2, done.stderr
    assert b"[1/" not in done.stderr and b"[visit" not in done.stderr  # nothing measured
    return error_line(done)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runs_and_check(store: Path) -> tuple[list[str], str]:
    """The stored run ids and SQLite's integrity_check, read without ctxbench."""
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as db:
        runs = [row[0] for row in db.execute("SELECT run_id FROM runs ORDER BY run_id")]
        return runs, db.execute("PRAGMA integrity_check").fetchone()[0]


# The store-attacks recipe: on a copy of the store emptied and vacuumed, a
# transaction is opened (one row in each table, one label changed) and the
# process killed in it; its journal, copied beside the real store, is hot.
CRAFT_JOURNAL = r"""
import shutil, signal, sqlite3, sys
store, planted = sys.argv[1], sys.argv[2]
work = planted + ".x.db"
shutil.copyfile(store, work)
child = os.fork()
if child == 0:
    db = sqlite3.connect(work, isolation_level=None)
    db.execute("DELETE FROM results")
    db.execute("DELETE FROM runs")
    db.execute("VACUUM")
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA cache_size=1")
    db.execute("BEGIN")
    db.execute("INSERT INTO runs (run_id, origin, complete, interrupted, stored_at, env, "
               "stored_seq) VALUES ('x', 'x', 1, 0, 'x', '{}', 99)")
    db.execute("INSERT INTO results (run_id, seq, probe, family, params, unit, status, "
               "record) VALUES ('x', 0, 'p', 'f', '', 'ns', 'ok', '{}')")
    db.execute("UPDATE runs SET label = 'planted'")
    os.kill(os.getpid(), signal.SIGKILL)
os.waitpid(child, 0)
shutil.copyfile(work + "-journal", planted)
os.unlink(work)
os.unlink(work + "-journal")
print(os.path.getsize(planted))
"""


@needs_root
@pytest.mark.parametrize("command", [["history"], ["show", "latest"], ["import", "OTHER"]])
def test_a_hot_journal_planted_by_another_user_is_refused_and_the_store_untouched(env, command):
    """nobody crafts a hot rollback journal for the store's page size and
    plants it as <store>-journal (a regular file of nobody's). Root's command
    (a read one included) is refused in one line naming it; the store is
    byte for byte as it was, its runs all there, integrity_check ok. On the
    old main `history` let SQLite replay it: two runs lost, the file damaged."""
    with shared_directory(env) as (_shared, store, env):
        runs = runs_and_check(store)[0]
        journal = Path(f"{store}-journal")
        size = int(as_nobody(CRAFT_JOURNAL, str(store), str(journal)))
        assert size > 0 and journal.stat().st_uid == NOBODY
        before = digest(store)
        args = [str(fixture_path("other_machine.jsonl")) if a == "OTHER" else a for a in command]
        line = refused(env, *args)
        assert str(journal) in line and "left untouched" in line, line
        assert digest(store) == before
        journal.unlink()
        assert runs_and_check(store) == (runs, "ok")
        assert len(runs) == 2


@needs_root
def test_a_hot_journal_of_the_stores_own_user_is_refused_too(env, tmp_path):
    """No other user needed: a journal with content beside a store nobody is
    writing is replayed by SQLite on its first read. Refused, file unchanged."""
    store = tmp_path / "store.db"
    env = dict(env, CTXBENCH_DB=str(store))
    assert ctxbench(env, "import", str(fixture_path("run_a.jsonl"))).returncode == 0
    journal = Path(f"{store}-journal")
    subprocess.run(
        [sys.executable, "-c", "import os\n" + CRAFT_JOURNAL, str(store), str(journal)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    before = digest(store)
    assert "while no writer has the store open" in refused(env, "history")
    assert digest(store) == before


@needs_root
@pytest.mark.parametrize("command", ["run", "import"])
def test_a_dangling_link_planted_as_the_store_creates_nothing(env, command):
    """nobody plants `s.db -> /elsewhere/created.db` in the shared directory;
    root's `--db <dir>/s.db` is refused in one line and nothing is created
    where the link points (the old main created the file, exit 0)."""
    with shared_directory(env) as (shared, _store, env):
        elsewhere = Path(tempfile.mkdtemp(prefix="ctxbench-elsewhere-"))
        try:
            target = elsewhere / "created.db"
            link = shared / "s.db"
            as_nobody("import sys\nos.symlink(sys.argv[1], sys.argv[2])\n", str(target), str(link))
            args = ["run", "syscall.getpid", "--quick"] if command == "run" else ["import"]
            if command == "import":
                args.append(str(fixture_path("other_machine.jsonl")))
            line = refused(env, *args, "--db", str(link))
            assert "s.db is a link" in line, line
            assert not target.exists() and list(elsewhere.iterdir()) == []
        finally:
            shutil.rmtree(elsewhere, ignore_errors=True)


@needs_root
def test_a_link_of_another_user_to_an_existing_file_is_not_followed(env):
    """nobody's link to root's empty 0600 file: `history --db link` is
    refused and the file stays empty (the old main made a store of it)."""
    with shared_directory(env) as (shared, _store, env):
        victim = shared / "root-file"
        victim.touch(mode=0o600)
        link = shared / "linked.db"
        as_nobody("import sys\nos.symlink(sys.argv[1], sys.argv[2])\n", str(victim), str(link))
        for command in (["history"], ["import", str(fixture_path("other_machine.jsonl"))]):
            assert "owned by another user" in refused(env, *command, "--db", str(link))
        assert victim.stat().st_size == 0


def test_a_link_of_ones_own_is_followed_once(env, tmp_path):
    """The user's own link to a store is followed: the runs are read through it."""
    store = tmp_path / "real.db"
    env = dict(env, CTXBENCH_DB=str(store))
    assert ctxbench(env, "import", str(fixture_path("run_a.jsonl"))).returncode == 0
    link = tmp_path / "link.db"
    link.symlink_to(store)
    done = ctxbench(env, "history", "--db", str(link))
    assert done.returncode == 0, done.stderr
    assert real_run("run_a.jsonl").run_id in done.stdout.decode()


@pytest.mark.parametrize("command", [["history"], ["show", "latest"], ["export", "latest"]])
def test_a_read_command_never_makes_a_store_of_an_empty_file(env, tmp_path, command):
    """`history --db EMPTY` turned a 0-byte file into a 28 KB store on the
    old main. Now: exit 2, one line, the file still empty."""
    empty = tmp_path / "empty.db"
    empty.touch()
    assert "is an empty file" in refused(env, *command, "--db", str(empty))
    assert empty.stat().st_size == 0


def test_a_read_command_on_a_missing_store_creates_nothing(env, tmp_path):
    missing = tmp_path / "missing.db"
    assert "no store at" in refused(env, "history", "--db", str(missing))
    assert not missing.exists()


# ---- outputs onto the store, and FIFOs ------------------------------------------------------
# The commands that write an output file, the path to come after each.
WRITERS = {
    "export -o": ["export", "latest", "-o"],
    "report -o": ["report", "latest", "-o"],
    "run --report": ["run", "syscall.getpid", "--report"],
    "run --json": ["run", "syscall.getpid", "--json"],
}


@pytest.mark.parametrize("target", ["STORE", "LINK", "JOURNAL"])
@pytest.mark.parametrize("command", WRITERS.values(), ids=WRITERS.keys())
def test_an_output_naming_the_store_is_refused_before_anything_is_written(
    env, tmp_path, command, target
):
    """The old main wrote the export, the report or the records over the
    store (exit 0; `run --json STORE` truncated it before measuring, then
    failed), through a link too. Each is now refused in one line, exit 2,
    before measuring; the store is byte for byte as it was."""
    store = Path(env["CTXBENCH_DB"])
    assert ctxbench(env, "import", str(fixture_path("run_b.jsonl"))).returncode == 0
    link = tmp_path / "link-to-store"
    link.symlink_to(store)
    path = {"STORE": str(store), "LINK": str(link), "JOURNAL": f"{store}-journal"}[target]
    before = digest(store)
    line = refused(env, *command, path, "--db", str(store))
    assert "ctxbench never writes an output over it" in line, line
    assert digest(store) == before
    assert not Path(f"{store}-journal").exists()
    assert runs_and_check(store) == ([real_run("run_b.jsonl").run_id], "ok")


FIFO_OUTPUTS = {name: [*command, "FIFO"] for name, command in WRITERS.items()}
FIFO_OUTPUTS["import FIFO"] = ["import", "FIFO"]


@pytest.mark.parametrize("command", FIFO_OUTPUTS.values(), ids=FIFO_OUTPUTS.keys())
def test_a_fifo_as_an_output_or_input_is_refused_not_waited_on(env, tmp_path, command):
    """The old main opened the FIFO and waited for a reader (or writer) for
    ever, silently. Now one line naming it, exit 2, before measuring."""
    assert ctxbench(env, "import", str(fixture_path("run_b.jsonl"))).returncode == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = [str(fifo) if word == "FIFO" else word for word in command]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ctxbench", *args],
            capture_output=True,
            env=env,
            timeout=30,  # a hang guard: the refusal takes about a second
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ctxbench {' '.join(command)}` waited on the FIFO")
    assert done.returncode == 2, done.stderr
    assert "FIFO" in error_line(done)
    assert b"[1/" not in done.stderr and b"[visit" not in done.stderr


def test_a_json_copy_is_left_as_it_was_until_the_first_record(env, tmp_path):
    """--json is opened before the run and truncated only when the first
    record arrives: an engine that writes nothing leaves the file as it was
    (the old main emptied it at once)."""
    copy = tmp_path / "records.jsonl"
    copy.write_text("earlier records\n")
    done = ctxbench(dict(env, FAKE_ENGINE_MODE="silent"), "run", "--json", str(copy))
    assert done.returncode != 0
    assert copy.read_text() == "earlier records\n"
    done = ctxbench(env, "run", "--json", str(copy))
    assert done.returncode == 0, done.stderr
    assert copy.read_text().startswith('{"')


def test_no_output_lands_on_the_spool(tmp_path):
    """The spool is kept apart as the store is: an output path naming it,
    through a link too, is refused."""
    from ctxbench.cli.output_files import check_output_path
    from ctxbench.cli.run_lifecycle import SpoolFile
    from ctxbench.errors import BadInput

    spool = SpoolFile(tmp_path, reserve=0)
    try:
        spool.name_it()  # a spool is named once a result arrives
        link = tmp_path / "link"
        link.symlink_to(spool.path)
        for path in (spool.path, link):
            with pytest.raises(BadInput, match="is the run's spool"):
                check_output_path(path, "--report")
    finally:
        spool.close(remove=True)


def test_a_read_command_migrates_an_older_store_through_a_second_open(tmp_path):
    """A command that reads opens the store read-only; one of an older schema
    is opened again, its neighbourhood checked again, to be migrated, and
    then read."""
    from conftest import synthetic_run
    from ctxbench.store.db import Store
    from ctxbench.store.schema import LATEST_VERSION
    from test_store import _make_v1_store

    target = str(tmp_path / "old.db")
    _make_v1_store(target, [("2026-01-02T00:00:00Z", synthetic_run("old-run-0001", 0))])
    with Store.open(target, create=False) as store:
        assert store.schema_version() == LATEST_VERSION
        assert [info.run_id for info in store.runs()] == ["old-run-0001"]


def test_a_live_writers_journal_is_not_taken_for_a_planted_one(env, tmp_path):
    """While another process is inside a write transaction (its journal
    beside the store, with content, and SQLite's RESERVED lock held), a
    reader is not refused: the journal is that writer's. (F_GETLK sees the
    lock of another process only, so the writer is a process of its own.)"""
    store = tmp_path / "store.db"
    env = dict(env, CTXBENCH_DB=str(store))
    assert ctxbench(env, "import", str(fixture_path("run_a.jsonl"))).returncode == 0
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('BEGIN IMMEDIATE')\n"
            "db.execute(\"UPDATE runs SET label = 'being written'\")\n"
            "print('in', flush=True)\n"
            "sys.stdin.read()\n"
            "db.execute('ROLLBACK')\n",
            str(store),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "in"
        assert Path(f"{store}-journal").stat().st_size > 0
        done = ctxbench(env, "history")
        assert done.returncode == 0, done.stderr
        assert real_run("run_a.jsonl").run_id in done.stdout.decode()
    finally:
        writer.communicate("", timeout=60)
    assert not Path(f"{store}-journal").exists()
