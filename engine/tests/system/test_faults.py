"""Faults: a killed child fails only its own record and the run goes on; Ctrl-C
keeps the records written so far; neither leaves a process or an fd behind.

The test process makes itself a child subreaper, so any process the engine
leaves behind is re-parented here, where os.waitpid can see it."""

import ctypes
import os
import pathlib
import selectors
import signal
import subprocess
import time

import pytest

from conftest import parse_records, progress, results

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def children_of(pid):
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def leftover_children():
    """Reaps whatever was re-parented to us; returns how many there were."""
    count = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return count
        if pid == 0:
            time.sleep(0.05)
            continue
        count += 1
    return count + 1000  # still some alive after 5 s


def ipc_fds(pid):
    """The engine's pipe/socket/eventfd fds other than stdin/stdout/stderr."""
    fds = []
    for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
        if int(fd.name) <= 2:
            continue
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(("pipe:", "socket:", "anon_inode:[eventfd]")):
            fds.append(target)
    return fds


class Engine:
    def __init__(self, engine, *args):
        self.proc = subprocess.Popen(
            [engine, "run", "--json", "--progress", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.selector.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.out, self.err = [], []

    def wait_for(self, predicate, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for key, _ in self.selector.select(timeout=0.1):
                line = key.fileobj.readline()
                if line:
                    (self.out if key.data == "out" else self.err).append(line)
            if predicate(self):
                return
        raise AssertionError(f"timed out; stderr so far: {''.join(self.err)}")

    def progress(self):
        return progress("".join(self.err))

    def finish(self, timeout=120):
        out, err = self.proc.communicate(timeout=timeout)
        self.out.append(out)
        self.err.append(err)
        return self.proc.returncode, parse_records("".join(self.out))


def test_killed_child_fails_its_record_and_the_run_continues(engine):
    become_subreaper()
    run = Engine(
        engine,
        "switch.pipe",
        "syscall.getpid",
        "--between",
        "processes",
        "--cpus",
        "same",
        "--param",
        "policy=normal",  # one switch.pipe variant (batch also runs beside same by default)
        "--samples",
        "400",
        "--min-time",
        "0.01",
    )
    run.wait_for(lambda r: r.progress() and children_of(r.proc.pid))
    time.sleep(0.3)
    (child,) = children_of(run.proc.pid)
    os.kill(child, signal.SIGKILL)
    # The next probe starts: by then the failed variant has released everything.
    run.wait_for(lambda r: any(p["probe"] == "syscall.getpid" for p in r.progress()))
    assert ipc_fds(run.proc.pid) == []
    assert children_of(run.proc.pid) == []
    code, records = run.finish()
    assert code == 0
    by_probe = {r["probe"]: r for r in results(records)}
    failed = by_probe["switch.pipe"]
    assert failed["verdict"]["status"] == "failed"
    assert failed["verdict"]["reasons"][0]["code"] == "child_failed"
    assert (
        "killed by signal 9" in failed["verdict"]["reasons"][0]["detail"]
        or "closed" in failed["verdict"]["reasons"][0]["detail"]
    )
    assert by_probe["syscall.getpid"]["verdict"]["status"] in ("ok", "suspect")  # measured
    assert records[-1]["kind"] == "run_end" and not records[-1]["interrupted"]
    assert leftover_children() == 0


def test_sigint_keeps_finished_records_and_reaps_children(engine):
    become_subreaper()
    run = Engine(
        engine,
        *("switch.pipe", "--between", "processes", "--interleave", "off"),
        *("--samples", "300", "--min-time", "0.01"),
    )
    run.wait_for(
        lambda r: any('"kind":"result"' in line for line in r.out) and children_of(r.proc.pid)
    )
    run.proc.send_signal(signal.SIGINT)
    code, records = run.finish()
    assert code == 130
    assert records[0]["kind"] == "env"
    assert len(results(records)) >= 1
    assert records[-1]["kind"] == "run_end" and records[-1]["interrupted"] is True
    assert leftover_children() == 0


def test_sigint_in_rounds_keeps_the_rounds_taken_and_reaps_children(engine):
    """In interleaved rounds (the default) a variant's record is written after
    its last round; interrupted, every variant begun is written with the rounds
    it had, and says so."""
    become_subreaper()
    run = Engine(
        engine,
        *("switch.pipe", "--between", "processes", "--rounds", "3"),
        *("--samples", "300", "--min-time", "0.01"),
    )
    # A second round begun: every variant has one round done.
    run.wait_for(lambda r: any(p["round"] == 2 for p in r.progress()) and children_of(r.proc.pid))
    run.proc.send_signal(signal.SIGINT)
    code, records = run.finish()
    assert code == 130
    assert records[-1]["kind"] == "run_end" and records[-1]["interrupted"] is True
    begun = {p["index"] for p in run.progress()}
    written = results(records)
    assert {r["variant_index"] for r in written} == begun
    for r in written:
        assert r["schedule"]["interleave"] == "rounds" and r["schedule"]["rounds"] == 3
    # The variants whose rounds were not all taken (at least the one whose
    # second round was under way) say so, and hold the samples they had.
    early = [
        r for r in written if any(n.startswith("the run ended after") for n in r.get("notes", []))
    ]
    assert early
    for r in early:
        assert 0 < len(r["samples"]) < 300
    assert leftover_children() == 0


def test_sigkill_in_rounds_leaves_each_variant_as_it_stood_on_stderr(engine):
    """A hard kill writes nothing more: in rounds a variant's record comes
    after its last round, so everything measured was lost. With --progress,
    after each round that is not its variant's last, the engine writes
    `@partial {record}`: the variant as it stands, a valid result record with
    the note a Ctrl-C would give it, which the front end keeps."""
    become_subreaper()
    run = Engine(
        engine,
        *("syscall.getppid", "syscall.getpid", "--rounds", "4"),
        *("--samples", "400", "--min-time", "0.02"),  # some 16 s: the kill falls inside it
    )
    # Round 3 begun: every variant has two rounds taken.
    run.wait_for(lambda r: any(p["round"] == 3 for p in r.progress()))
    run.proc.send_signal(signal.SIGKILL)
    code, records = run.finish()
    assert code == -signal.SIGKILL
    assert results(records) == [] and records[-1]["kind"] == "env"  # nothing written: rounds
    partial = [line.split(" ", 1)[1] for line in run.err if line.startswith("@partial ")]
    kept = {}
    for record in parse_records("".join(partial)):  # each one schema-valid
        assert record["kind"] == "result" and record["run_id"] == records[0]["run_id"]
        kept[record["variant_index"]] = record
    assert sorted(kept) == [1, 2]
    for record in kept.values():
        done = len(record["samples"])
        assert 0 < done < 400
        assert any(
            note.startswith("the run ended after") and note.endswith("the record holds those")
            for note in record["notes"]
        )
    assert leftover_children() == 0


def test_no_partial_lines_without_rounds_or_progress(engine):
    proc = subprocess.run(
        [
            engine,
            "run",
            "syscall.getppid",
            "--quick",
            "--json",
            "--progress",
            "--interleave",
            "off",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "@partial" not in proc.stderr
    proc = subprocess.run(
        [engine, "run", "syscall.getppid", "--quick", "--json", "--rounds", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "@partial" not in proc.stderr


# ---- idle=held: the /dev/cpu_dma_latency request is released -----------------------
# The device path can be redirected (CTXBENCH_CPU_DMA_LATENCY) to a plain file,
# so the hold/release logic is tested as any user; as root the real device is
# tested too, including the kernel's effective value while held and after.

REAL_DEVICE = "/dev/cpu_dma_latency"


def holders(path):
    """Pids of every process with an open descriptor on path."""
    found = []
    for fd in pathlib.Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) == path:
                found.append(int(fd.parent.parent.name))
        except OSError:
            continue
    return sorted(set(found))


def devices():
    yield "file"
    if os.access(REAL_DEVICE, os.W_OK):
        yield "real"


def latency_device(kind, tmp_path):
    if kind == "real":
        return REAL_DEVICE, {}
    path = tmp_path / "cpu_dma_latency"
    path.write_bytes((2000000000).to_bytes(4, "little"))
    return str(path), {"CTXBENCH_CPU_DMA_LATENCY": str(path)}


def effective_latency_us():
    with open(REAL_DEVICE, "rb") as f:  # opening adds a default (no-constraint) request only
        return int.from_bytes(f.read(4), "little")


def two_cpus():
    return len(os.sched_getaffinity(0)) >= 2


class HeldEngine(Engine):
    def __init__(self, engine, env, *args):
        old = dict(os.environ)
        os.environ.update(env)
        try:
            super().__init__(engine, *args)
        finally:
            os.environ.clear()
            os.environ.update(old)


HELD = ["switch.pipe", "--between", "processes", "--cpus", "cross", "--param", "idle=held"]
HELD += ["--param", "policy=normal"]


def start_held(engine, tmp_path, kind, *args):
    """Runs HELD and args with the latency device of `kind`; its path and the run."""
    if not two_cpus():
        pytest.skip("cpus=cross needs two allowed CPUs")
    become_subreaper()
    path, env = latency_device(kind, tmp_path)
    return path, HeldEngine(engine, env, *HELD, *args)


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_when_its_variant_ends(engine, tmp_path, kind):
    # Each variant measured whole, in the selection's order: the held one first.
    path, run = start_held(
        engine,
        tmp_path,
        kind,
        "syscall.getpid",
        "--interleave",
        "off",
        "--samples",
        "300",
        "--min-time",
        "0.01",
    )
    # While the held variant runs, the engine (and no child of it) holds the request.
    run.wait_for(lambda r: holders(path) != [])
    assert holders(path) == [run.proc.pid]
    if kind == "real":
        assert effective_latency_us() == 0
    run.wait_for(lambda r: any(p["probe"] == "syscall.getpid" for p in r.progress()))
    assert holders(path) == []
    code, records = run.finish()
    assert code == 0, "".join(run.err)
    (held,) = [r for r in results(records) if r["probe"] == "switch.pipe"]
    assert held["params"]["idle"] == "held"
    assert held["verdict"]["status"] != "unsupported", held["verdict"]
    assert held["derived"]["idle_latency_bound_us"] == 0
    assert "cpuidle_driver" in held["derived"]
    if kind == "real":
        assert effective_latency_us() > 0  # back to the system's own value
    assert leftover_children() == 0


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_after_each_round(engine, tmp_path, kind):
    """In interleaved rounds (the default) a held variant takes the request in
    each of its rounds and releases it when the round ends: whenever the other
    variant's round follows one of the held variant's, nothing holds it."""
    path, run = start_held(
        engine,
        tmp_path,
        kind,
        "syscall.getpid",
        "--rounds",
        "3",
        "--samples",
        "300",
        "--min-time",
        "0.01",
    )
    seen, held_rounds, released = 0, 0, 0
    while True:
        # One progress line at a time: each announces a round about to start.
        run.wait_for(lambda r, n=seen: len(r.progress()) > n or r.proc.poll() is not None)
        lines = run.progress()
        if len(lines) == seen:
            break  # the run ended
        seen = len(lines)
        if lines[-1]["probe"] == "switch.pipe":
            # Its round takes the request once its partner is forked; only the engine holds it.
            run.wait_for(lambda r: holders(path) != [])
            assert holders(path) == [run.proc.pid]
            if kind == "real":
                assert effective_latency_us() == 0
            held_rounds += 1
        elif seen >= 2 and lines[-2]["probe"] == "switch.pipe":
            assert holders(path) == [], lines[-2:]  # the held round ended and let go
            released += 1
    code, records = run.finish()
    assert code == 0, "".join(run.err)
    assert [p["round"] for p in lines if p["probe"] == "switch.pipe"] == [1, 2, 3]
    # Every round of the held variant held; with 3 rounds of each variant,
    # some round of getpid follows one of switch.pipe's (the seed drawn).
    assert held_rounds == 3 and released >= 1
    assert holders(path) == []
    (held,) = [r for r in results(records) if r["probe"] == "switch.pipe"]
    assert held["schedule"]["interleave"] == "rounds" and held["schedule"]["rounds"] == 3
    assert held["derived"]["idle_latency_bound_us"] == 0
    if kind == "real":
        assert effective_latency_us() > 0
    assert leftover_children() == 0


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_on_ctrl_c(engine, tmp_path, kind):
    path, run = start_held(engine, tmp_path, kind, "--samples", "100000", "--min-time", "0.05")
    run.wait_for(lambda r: holders(path) == [r.proc.pid])
    run.proc.send_signal(signal.SIGINT)
    run.finish()
    assert run.proc.returncode != 0
    assert holders(path) == []
    if kind == "real":
        assert effective_latency_us() > 0
    assert leftover_children() == 0


def test_idle_hold_unsupported_with_the_reason_when_the_device_cannot_be_opened(engine, tmp_path):
    missing = tmp_path / "no" / "cpu_dma_latency"
    run = HeldEngine(engine, {"CTXBENCH_CPU_DMA_LATENCY": str(missing)}, *HELD, "--quick")
    code, records = run.finish()
    assert code == 0
    (r,) = results(records)
    assert r["verdict"]["status"] == "unsupported"
    reason = r["verdict"]["reasons"][0]
    assert reason["code"] == "not_supported_here"
    assert str(missing) in reason["detail"] and "No such file" in reason["detail"]
    assert r["summary"] is None
