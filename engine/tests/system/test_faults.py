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
