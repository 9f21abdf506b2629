"""The spool, a run's safety copy until the store has it: created as a
temporary file (never a path that exists, never through a link, mode 0600),
never touching an earlier run's, locked while written, moved to a fallback
place when the store's directory has no room (issue 31).

Real processes, real files, real links and a real second user (``nobody``,
where the test runs as root); tests/fake_engine.py replays a recorded run
unless a test needs the real engine.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import built_engine, ctxbench, error_line, fixture_path, real_run, stored_runs
from ctxbench.errors import BadInput
from ctxbench.records.runs import group_run
from ctxbench.stats import summarize
from ctxbench.store.db import Store

SOURCE = Path(__file__).parents[1] / "src"
PREFIX = ".ctxbench-unstored-"
STRACE = ["strace", "-f", "-qq", "-e", "trace=open,openat,creat"]
UNSHARE = ["unshare", "--mount", "--propagation", "private"]


def spools(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{PREFIX}*.jsonl"))


def start_run(env, *args: str, shell_prefix: str = "") -> subprocess.Popen:
    """`ctxbench run` as a real process; SHELL_PREFIX runs first in the same
    process (sh, then exec), so it knows ctxbench's PID as $$."""
    command = f'{shell_prefix}exec "{sys.executable}" -m ctxbench run "$@"'
    return subprocess.Popen(
        ["sh", "-c", command, "sh", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def wait_for_spool_line(directory: Path, process: subprocess.Popen) -> Path:
    """The spool, once it holds a whole result line."""
    deadline = time.monotonic() + 60  # a hang guard, not a measure
    while True:
        for spool in spools(directory):
            text = spool.read_text()
            if '"kind":"result"' in text and text.endswith("\n"):
                return spool
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no result reached the spool"
        time.sleep(0.02)


# ---- 1, 2: a link or an earlier spool at the old, predictable name ----------------------------
def test_a_link_planted_at_the_spool_name_is_never_followed(env, tmp_path):
    """The spool was `.ctxbench-unstored-PID.jsonl`, opened with O_TRUNC and
    following links: a link planted there had its target overwritten with
    records, then the link was removed."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = f'"{tmp_path}/{PREFIX}$$.jsonl"'
    process = start_run(env, shell_prefix=f'ln -s "{victim}" {link}; ')
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert victim.read_text() == "precious\n"
    planted = [p for p in tmp_path.glob(f"{PREFIX}*") if p.is_symlink()]
    assert len(planted) == 1 and planted[0].resolve() == victim  # left as it was
    assert [p for p in spools(tmp_path) if not p.is_symlink()] == []  # ours is gone: stored


def test_an_earlier_runs_spool_is_left_alone(env, tmp_path):
    """A spool left by a killed run, at the name this run's PID gave (PIDs
    come round again after a reboot): it was truncated, overwritten and
    deleted. Only `import` touches it now."""
    kept = fixture_path("run_b.jsonl").read_bytes()
    earlier = f'"{tmp_path}/{PREFIX}$$.jsonl"'
    process = start_run(env, shell_prefix=f'cp "{fixture_path("run_b.jsonl")}" {earlier}; ')
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    (left,) = spools(tmp_path)
    assert left.read_bytes() == kept
    assert ctxbench(env, "import", str(left)).returncode == 0
    assert real_run("run_b.jsonl").run_id in stored_runs(env)


def test_the_spool_is_a_new_private_file_with_a_name_nobody_can_guess(env, tmp_path):
    process = start_run(dict(env, FAKE_ENGINE_DELAY="0.2"))
    spool = wait_for_spool_line(tmp_path, process)
    info = os.lstat(spool)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.getuid()
    assert spool.name != f"{PREFIX}{process.pid}.jsonl"  # a random part follows the PID
    assert spool.name.startswith(f"{PREFIX}{process.pid}-")
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert spools(tmp_path) == []


# ---- the same, across users -------------------------------------------------------------------
ATTACKER = r"""
import os, sys, time
shared, victim, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.setgid(65534)
os.setuid(65534)
for pid in range(first, first + 300):  # the next PIDs: ctxbench will get one of them
    os.symlink(victim, os.path.join(shared, f".ctxbench-unstored-{pid}.jsonl"))
# And a file of nobody's own where the spool would go, to be truncated.
with open(os.path.join(shared, f".ctxbench-unstored-{first}-own.jsonl"), "w") as own:
    own.write("nobody's\n")
print("planted", flush=True)
"""


def _writes(strace_log: Path) -> list[tuple[str, str]]:
    """(path, flags) of every file opened for writing, from strace -f."""
    found = []
    for line in strace_log.read_text().splitlines():
        if "open" not in line or "= -1" in line:
            continue
        if not any(flag in line for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")):
            continue
        start = line.find('"')
        end = line.find('"', start + 1)
        if start < 0 or end < 0:
            continue
        found.append((line[start + 1 : end], line[end + 1 :]))
    return found


@contextlib.contextmanager
def shared_store(env):
    """A store directory shared with every user (mode 1777) holding one run
    and root's 0600 file (the victim): (directory, victim, env for it)."""
    shared = Path(tempfile.mkdtemp(prefix="ctxbench-shared-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        victim = shared / "root-secret"
        victim.write_text("root's\n")
        victim.chmod(0o600)
        env = dict(env, CTXBENCH_DB=str(shared / "store.db"))
        assert ctxbench(env, "import", str(fixture_path("run_b.jsonl"))).returncode == 0
        yield shared, victim, env
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the attacker runs as nobody")
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_shared_store_directory_lets_no_other_user_redirect_a_write(env):
    """A store directory shared with another user (mode 1777): nobody plants
    links at the next 300 PIDs' spool names, pointing at a root-owned 0600
    file. Root's run opens no file there for writing but the store's own
    and a spool it creates new (O_EXCL, O_NOFOLLOW); the victim and nobody's
    own file are as they were."""
    with shared_store(env) as (shared, victim, env):
        db = Path(env["CTXBENCH_DB"])
        with open("/proc/sys/kernel/ns_last_pid") as handle:
            first = int(handle.read()) + 1
        planted = subprocess.run(
            [sys.executable, "-c", ATTACKER, str(shared), str(victim), str(first)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert planted.stdout.strip() == "planted", planted.stderr
        log = shared.parent / f"{shared.name}.strace"
        done = subprocess.run(
            [*STRACE, "-o", str(log), sys.executable, "-m", "ctxbench", "run"],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert victim.read_text() == "root's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
        assert (shared / f"{PREFIX}{first}-own.jsonl").read_text() == "nobody's\n"
        writes = [(path, flags) for path, flags in _writes(log) if path.startswith(str(shared))]
        store_files = {str(db), f"{db}-journal", f"{db}-wal", f"{db}-shm"}
        spool_writes = [(path, flags) for path, flags in writes if path not in store_files]
        assert spool_writes, "the run made no spool in the store's directory"
        for path, flags in spool_writes:
            assert Path(path).name.startswith(PREFIX), (path, flags)
            assert "O_EXCL" in flags and "O_NOFOLLOW" in flags, (path, flags)
            assert not Path(path).is_symlink()
        assert len(stored_runs(env)) == 2
        Path(f"{shared}.strace").unlink(missing_ok=True)


JOURNAL_ATTACKER = r"""
import os, sys
shared, victim = sys.argv[1], sys.argv[2]
os.setgid(65534)
os.setuid(65534)
os.symlink(victim, os.path.join(shared, "store.db-journal"))
print("planted", flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the attacker runs as nobody")
def test_a_link_where_sqlite_keeps_its_journal_is_refused_before_measuring(env):
    """In the shared directory nobody plants a link where SQLite writes the
    store's rollback journal, pointing at root's 0600 file. Root's run is
    refused before it measures, in one line naming the link; the victim and
    the store are as they were."""
    with shared_store(env) as (shared, victim, env):
        planted = subprocess.run(
            [sys.executable, "-c", JOURNAL_ATTACKER, str(shared), str(victim)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert planted.stdout.strip() == "planted", planted.stderr
        done = ctxbench(env, "run", "syscall.getpid", "--quick")
        assert done.returncode == 2, done.stderr
        line = error_line(done)
        assert "store.db-journal is a link" in line and "will not write through it" in line
        assert b"[1/" not in done.stderr  # refused before measuring: no progress
        assert victim.read_text() == "root's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
        (shared / "store.db-journal").unlink()
        assert stored_runs(env) == [real_run("run_b.jsonl").run_id]
        assert spools(shared) == []


# ---- 9: a spool still being written -----------------------------------------------------------
def test_a_spool_still_being_written_is_not_imported(env, tmp_path):
    """Its run holds the spool's lock: `import FILE` is refused in one line
    (exit 2). A copy imported another way (from stdin) is a cut copy of the
    run: the run, when it ends, replaces it and is stored whole."""
    process = start_run(dict(env, FAKE_ENGINE_DELAY="1.0"))  # 21 results: 20 s to act in
    spool = wait_for_spool_line(tmp_path, process)
    refused = ctxbench(env, "import", str(spool))
    assert refused.returncode == 2
    assert "still going" in error_line(refused)
    cut = ctxbench(env, "import", "-", input=spool.read_bytes())
    assert cut.returncode == 0, cut.stderr
    run_id = env["FAKE_ENGINE_RUN_ID"]
    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        assert len(store.load(run_id).results) < len(real_run().results)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        stored = store.load(run_id)
        assert [info.run_id for info in store.runs()] == [run_id]
    assert len(stored.results) == len(real_run().results) and stored.info.complete
    assert spools(tmp_path) == []


def test_a_spool_whose_run_died_is_imported(env, tmp_path):
    """The lock goes with the process: after a SIGKILL the spool imports."""
    process = start_run(dict(env, FAKE_ENGINE_DELAY="0.3"))
    spool = wait_for_spool_line(tmp_path, process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    done = ctxbench(env, "import", str(spool))
    assert done.returncode == 0, done.stderr
    assert stored_runs(env) == [env["FAKE_ENGINE_RUN_ID"]]


def test_a_complete_run_is_never_replaced(env):
    assert ctxbench(env, "import", str(fixture_path("run_a.jsonl"))).returncode == 0
    again = ctxbench(env, "import", str(fixture_path("run_a.jsonl")))
    assert again.returncode == 2 and "already in" in error_line(again)


# ---- 3: no room beside the store --------------------------------------------------------------
FULL_DISK = Path(__file__).with_name("full_disk.py")


@pytest.mark.measures
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: mounts a small tmpfs")
@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is not installed")
def test_a_full_store_disk_keeps_the_run_in_a_fallback_spool(tmp_path):
    """The store on a full tmpfs (in a mount namespace of the test's own):
    `ctxbench run syscall --quick` with the real engine measures, the store
    cannot take the run, and every record is in a spool in the user's state
    directory; the import command the error gives stores the whole run
    once there is room. With every fallback place full as well, the run is
    refused before the engine measures anything."""
    engine = built_engine()
    done = subprocess.run(
        [*UNSHARE, sys.executable, str(FULL_DISK), str(tmp_path), str(engine)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(SOURCE)),
        timeout=500,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    fallback, refused = report["fallback"], report["refused"]
    # The run measured, could not be stored, and said where its records are.
    assert fallback["run"]["returncode"] == 1, fallback
    line = fallback["run"]["error"]
    assert "measured but could not be stored" in line and str(tmp_path / "state") in line, line
    assert fallback["spools_beside_store"] == [], fallback
    assert fallback["import"]["returncode"] == 0, fallback
    assert fallback["stored_results"] == fallback["variants"] > 0, fallback
    assert fallback["stored_complete"], fallback
    # Nowhere to keep a copy: refused before measuring, nothing stored.
    assert refused["run"]["returncode"] == 1, refused
    assert "no safety copy of the records can be kept" in refused["run"]["error"], refused
    assert "nothing was run" in refused["run"]["error"]
    assert not refused["measured"], refused
    # Nothing stays mounted outside the namespace.
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()


def test_the_store_replaces_a_cut_copy_with_the_whole_run(store_target):
    """The rule behind the replacement, on SQLite and a real PostgreSQL: a
    stored copy with no run_end, the same env and its results the first of
    the new run's is replaced; a complete run, or one that differs, never."""
    whole = real_run("run_a.jsonl")
    cut = group_run([whole.env, *whole.results[:5]])
    with Store.open(store_target) as store:
        store.add_run(cut, origin="import")
        store.add_run(whole, origin="run")
        stored = store.load(whole.run_id)
        assert len(stored.results) == len(whole.results) and stored.info.complete
        with pytest.raises(BadInput, match="already in"):
            store.add_run(whole, origin="run")  # complete: never replaced
        other = real_run("run_b.jsonl")
        store.add_run(group_run([other.env, *other.results[:3]]), origin="import")
        changed = copy.deepcopy(other.all())
        changed[1]["notes"] = [*changed[1].get("notes", []), "not the same record"]
        with pytest.raises(BadInput, match="already in"):
            store.add_run(group_run(changed), origin="run")  # not a cut copy of this one
        assert sorted(info.run_id for info in store.runs()) == sorted([whole.run_id, other.run_id])


# ---- issue 37: every measured round survives a kill; no spool without a result ----------------
KILL_LOOP = Path(__file__).resolve().parents[2] / "bench" / "kill_loop.py"


@pytest.mark.measures
def test_a_sigkill_during_rounds_keeps_every_round_the_engine_reported(tmp_path):
    """The issue's run (4 probes, --quick, interleaved rounds), SIGKILL of
    ctxbench after 8 round visits: the rounds recovered from its spool are
    the rounds the engine had written (its @partial lines and records, cut
    at the kill), sample for sample. The old main's spool held the env
    record and no result: every round was lost. (bench/kill_loop.py does
    this 20 times at drawn points.)"""
    built_engine()
    import importlib.util

    spec = importlib.util.spec_from_file_location("kill_loop", KILL_LOOP)
    kill_loop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kill_loop)
    base = dict(
        os.environ,
        PYTHONPATH=str(SOURCE),
        KILL_LOOP_ENGINE=str(kill_loop.engine_path()),
        CI="1",
    )
    kept = tmp_path / "tries"
    kept.mkdir()
    assert kill_loop.one_try(1, 8, base, kept)
    (directory,) = kept.iterdir()
    (spool,) = spools(directory)
    assert "@partial " in spool.read_text()


def _wait_for(condition, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60  # a hang guard, not a measure
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_repeat_runs_spool_is_imported_as_one_run_with_its_repeats(env, tmp_path):
    """`run --repeat 3` killed during its second repeat: the spool holds two
    engine runs (one env each). The old main's import refused it ('more
    than one env record'); now it stores one run with its repeats, as the
    finished run is stored: interrupted, 2 of 3 repeats."""
    process = start_run(dict(env, FAKE_ENGINE_DELAY="0.2"), "--repeat", "3")

    def second_repeat_result() -> bool:
        for spool in spools(tmp_path):
            text = spool.read_text()
            second = text.split('"kind":"env"')[2:]
            if second and '"kind":"result"' in second[0] and text.endswith("\n"):
                return True
        return False

    _wait_for(second_repeat_result, process, "no result of the second repeat reached the spool")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    (spool,) = spools(tmp_path)
    done = ctxbench(env, "import", str(spool))
    assert done.returncode == 0, done.stderr
    (run_id,) = stored_runs(env)
    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        stored = store.load(run_id)
    assert stored.info.interrupted
    assert stored.records.env["options"]["repeat"] == 3
    assert "2 of 3 repeats" in " ".join(stored.records.env["notes"])
    counts = {r.get("repeats", {}).get("count", 1) for r in stored.records.results}
    assert 2 in counts  # the variants the second repeat measured carry both


def test_a_kill_before_the_first_result_leaves_no_spool(env, tmp_path):
    """The old main left a 0-byte or env-only spool (11 of 25 kills) whose
    import failed or stored an empty run. A spool now has a name only once
    a result arrived: a kill before leaves nothing."""
    process = start_run(dict(env, FAKE_ENGINE_DELAY="30"))
    engine_started = Path(env["FAKE_ENGINE_ARGS"])
    _wait_for(lambda: engine_started.exists(), process, "the engine did not start")
    time.sleep(0.5)  # the env record reaches ctxbench
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert spools(tmp_path) == []
    assert not list(tmp_path.glob(f"{PREFIX}*"))


def test_a_spool_without_a_result_stores_nothing_and_says_so(env, tmp_path):
    """The old main stored an env-only file as a run of 0 results, which
    `show latest` then picked."""
    env_only = tmp_path / "env-only.jsonl"
    env_only.write_text(json.dumps(real_run().env) + "\n")
    done = ctxbench(env, "import", str(env_only))
    assert done.returncode == 2, done.stderr
    assert "without a result" in error_line(done) and "nothing was stored" in error_line(done)
    assert not Path(env["CTXBENCH_DB"]).exists() or stored_runs(env) == []


def test_a_partial_is_superseded_by_its_variants_record(env, tmp_path):
    """In a spool, a variant's record replaces its @partial rounds, whichever
    came first (stdout and stderr are read apart); a variant with rounds only
    is stored as its last @partial."""
    run = real_run()
    first, second = run.results[0], run.results[1]

    def rounds(result: dict, count: int) -> dict:
        samples = result["samples"][:count]
        return dict(result, samples=samples, summary={**result["summary"], **summarize(samples)})

    early, late = rounds(first, 2), rounds(second, 3)
    lines = [
        "@partial " + json.dumps(early),
        json.dumps(run.env),
        json.dumps(first),
        "@partial " + json.dumps(late),
    ]
    spool = tmp_path / "spool.jsonl"
    spool.write_text("\n".join(lines) + "\n")
    done = ctxbench(env, "import", str(spool))
    assert done.returncode == 0, done.stderr
    with Store.open(Path(env["CTXBENCH_DB"])) as store:
        stored = store.load(run.run_id)
    assert [r["samples"] for r in stored.records.results] == [first["samples"], late["samples"]]
    assert stored.info.interrupted


def test_a_spool_of_several_runs_without_repeat_marks_is_still_refused(env, tmp_path):
    """Only a --repeat spool (its @repeat marks) is one run of several engine
    runs; two runs in one file are refused as before."""
    first, second = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    spool = tmp_path / "two.jsonl"
    lines = [*map(json.dumps, first.all()), "@partial " + json.dumps(second.results[0])]
    spool.write_text("\n".join([*lines, *map(json.dumps, second.all())]) + "\n")
    done = ctxbench(env, "import", str(spool))
    assert done.returncode == 2 and "more than one env record" in error_line(done)
