"""Faults: a killed child fails only its own record and the run goes on; Ctrl-C
keeps the records written so far; neither leaves a process or an fd behind.

The test process makes itself a child subreaper, so any process the engine
leaves behind is re-parented here, where os.waitpid can see it."""

import ctypes
import json
import os
import pathlib
import selectors
import signal
import subprocess
import time

import pytest

from conftest import parse_records, results

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
        return [
            json.loads(line.split(" ", 1)[1]) for line in self.err if line.startswith("@progress ")
        ]

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
    assert by_probe["syscall.getpid"]["verdict"]["status"] == "ok"
    assert records[-1]["kind"] == "run_end" and not records[-1]["interrupted"]
    assert leftover_children() == 0


def test_sigint_keeps_finished_records_and_reaps_children(engine):
    become_subreaper()
    run = Engine(
        engine, "switch.pipe", "--between", "processes", "--samples", "300", "--min-time", "0.01"
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


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_when_its_variant_ends(engine, tmp_path, kind):
    if not two_cpus():
        pytest.skip("cpus=cross needs two allowed CPUs")
    become_subreaper()
    path, env = latency_device(kind, tmp_path)
    run = HeldEngine(engine, env, *HELD, "syscall.getpid", "--samples", "300", "--min-time", "0.01")
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
def test_idle_hold_is_released_on_ctrl_c(engine, tmp_path, kind):
    if not two_cpus():
        pytest.skip("cpus=cross needs two allowed CPUs")
    become_subreaper()
    path, env = latency_device(kind, tmp_path)
    run = HeldEngine(engine, env, *HELD, "--samples", "100000", "--min-time", "0.05")
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
