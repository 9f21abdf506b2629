"""Faults: a killed child fails only its own record and the run goes on; Ctrl-C
keeps the records written so far; neither leaves a process or an fd behind.

The test process makes itself a child subreaper, so any process the engine
leaves behind is re-parented here, where os.waitpid can see it."""

import ctypes
import os
import pathlib
import re
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
    """The engine run with --json --progress; its stdout and stderr read as
    they come. The pipes are read raw (os.read on the descriptors): a buffered
    readline can take several lines into its buffer at once, and the selector
    would then not wake for the ones it holds."""

    def __init__(self, engine, *args):
        self.proc = subprocess.Popen(
            [engine, "run", "--json", "--progress", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.selector.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.data = {"out": bytearray(), "err": bytearray()}

    @property
    def out(self):
        return self.data["out"].decode()

    @property
    def err(self):
        """stderr so far, one whole line per item (a line still being written is left out)."""
        text = self.data["err"].decode(errors="replace")
        return [line + "\n" for line in text.split("\n")[:-1]]

    def _read(self, timeout):
        for key, _ in self.selector.select(timeout=timeout):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if chunk:
                self.data[key.data] += chunk
            else:
                self.selector.unregister(key.fileobj)

    def wait_for(self, predicate, timeout=300):
        # The timeout only stops a hung engine: on a loaded machine a variant
        # can take many times as long as on a quiet one.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return
            self._read(0.05)
        raise AssertionError(f"timed out; stderr so far: {''.join(self.err)}")

    def progress(self):
        return progress("".join(self.err))

    def finish(self, timeout=120):
        deadline = time.monotonic() + timeout
        while self.selector.get_map() and time.monotonic() < deadline:
            self._read(0.1)
        self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, parse_records(self.out)


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
        *("--interleave", "off"),  # switch.pipe whole, then getpid
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
    run.wait_for(lambda r: '"kind":"result"' in r.out and children_of(r.proc.pid))
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


def strace_usable():
    try:
        proc = subprocess.run(
            ["strace", "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if proc.returncode == 0 else proc.stderr.decode(errors="replace").strip()


TRACED = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+= (-?\d+)")


def traced_held(engine, tmp_path, kind, *args):
    """Runs HELD and args under strace, which logs, in the order they
    happened, every system call of the engine or of any child of it that
    touches the latency device or the file stderr goes to. Returns the
    events [(what, detail)] and the records. The order comes from the kernel,
    not from when this process got round to looking: a round lasts a few
    milliseconds, far less than one look at /proc takes under load."""
    if not two_cpus():
        pytest.skip("cpus=cross needs two allowed CPUs")
    why = strace_usable()
    if why is not None:
        pytest.skip(f"strace cannot trace here: {why}")
    become_subreaper()
    path, env = latency_device(kind, tmp_path)
    log, err = tmp_path / "strace.log", tmp_path / "stderr"
    with open(err, "w") as stderr:
        proc = subprocess.run(
            [
                *(
                    "strace",
                    "-f",
                    "-qq",
                    "--seccomp-bpf",
                    "-y",
                    "-s",
                    "100000",
                    "-e",
                    "signal=none",
                ),
                *("-P", path, "-P", str(err), "-o", str(log)),
                *(engine, "run", "--json", "--progress", *HELD, *args),
                # One attempt: strace slows the engine, which may then judge the
                # host slowed and measure the selection again (--retries).
                *("--retries", "0"),
            ],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=stderr,
            timeout=300,
        )
    assert proc.returncode == 0, err.read_text()
    events, engine_pid = [], None
    for line in log.read_text().splitlines():
        m = TRACED.match(line)
        if not m:
            continue
        pid, call, call_args, ret = int(m[1]), m[2], m[3], int(m[4])
        if call == "write" and call_args.startswith(f"2<{err}>") and "@progress " in call_args:
            engine_pid = engine_pid or pid
            probe = re.search(r'\\"probe\\":\\"([^\\]+)', call_args)[1]
            rnd = re.search(r'\\"round\\":(\d+)', call_args)
            events.append(("progress", (pid, probe, int(rnd[1]) if rnd else None)))
        elif path in call_args and (call != "write" or not call_args.startswith("2<")):
            if call == "openat" and ret >= 0:
                events.append(("open", (pid, ret)))
            elif call == "write":
                events.append(("request", (pid, call_args.split(", ")[1])))
            elif call == "pread64":
                events.append(("effective", (pid, call_args.split(", ")[1])))
            elif call == "close":
                events.append(("close", (pid, int(call_args.split("<", 1)[0]))))
            else:
                events.append((call, pid))
    assert engine_pid is not None, log.read_text()[-4000:]
    # Only the engine itself touches the device: no child opens or closes it.
    assert {detail[0] for what, detail in events} == {engine_pid}
    return events, parse_records(proc.stdout.decode())


def own_descriptor_released(events):
    """The engine's own descriptor on the device lives within the held
    variant: each one opened is the one closed, and no request follows the
    last close. (The device's machine-wide value is not asserted: another
    program, another ctxbench run, may hold a request of its own.)"""
    opened = [detail[1] for what, detail in events if what == "open"]
    closed = [detail[1] for what, detail in events if what == "close"]
    assert opened and opened == closed, events
    last_close = max(i for i, (what, _) in enumerate(events) if what == "close")
    assert "request" not in [what for what, _ in events[last_close:]], events


def held_spans(events):
    """For each progress line: (probe, round, the device calls made before the next one)."""
    spans = []
    for what, detail in events:
        if what == "progress":
            spans.append((detail[1], detail[2], []))
        else:
            assert spans, f"the device was touched before any round began: {events}"
            spans[-1][2].append(what)
    return spans


def check_held_record(records):
    (held,) = [r for r in results(records) if r["probe"] == "switch.pipe"]
    assert held["params"]["idle"] == "held"
    assert held["verdict"]["status"] != "unsupported", held["verdict"]
    assert held["derived"]["idle_latency_bound_us"] == 0
    assert "cpuidle_driver" in held["derived"]
    return held


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_when_its_variant_ends(engine, tmp_path, kind):
    # Each variant measured whole, in the selection's order: the held one first.
    events, records = traced_held(
        engine,
        tmp_path,
        kind,
        "syscall.getpid",
        *("--interleave", "off", "--samples", "30"),
    )
    spans = held_spans(events)
    # The held variant whole, then getpid whole: the device is opened, asked
    # for 0 us and closed within the held variant, and left alone in getpid's.
    assert [(probe, rnd) for probe, rnd, _ in spans] == [
        ("switch.pipe", None),
        ("syscall.getpid", None),
    ]
    assert spans[0][2][:2] == ["open", "request"] and spans[0][2][-1] == "close", spans
    assert spans[0][2].count("open") == 1 and spans[0][2].count("close") == 1, spans
    assert spans[1][2] == []  # nothing held, nothing touched
    assert ("request", (events[0][1][0], '"\\0\\0\\0\\0"')) in events
    if kind == "real":
        # What the kernel answered while it was held: the effective bound was 0.
        assert [d[1] for w, d in events if w == "effective"] == ['"\\0\\0\\0\\0"']
    own_descriptor_released(events)  # its own descriptor, closed: released
    check_held_record(records)
    assert leftover_children() == 0


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_after_each_round(engine, tmp_path, kind):
    """In interleaved rounds (the default) a held variant takes the request in
    each of its rounds and releases it when the round ends: the other
    variant's rounds run with nothing held."""
    events, records = traced_held(
        engine,
        tmp_path,
        kind,
        "syscall.getpid",
        *("--rounds", "3", "--samples", "30"),
    )
    spans = held_spans(events)
    assert [r for probe, r, _ in spans if probe == "switch.pipe"] == [1, 2, 3]
    assert [r for probe, r, _ in spans if probe == "syscall.getpid"] == [1, 2, 3]
    for probe, rnd, calls in spans:
        if probe == "switch.pipe":  # each of its rounds takes the request and lets go of it
            assert calls[:2] == ["open", "request"] and calls[-1] == "close", (rnd, calls)
            assert calls.count("open") == 1 and calls.count("close") == 1, (rnd, calls)
            if kind == "real":  # the kernel's effective bound while held
                assert "effective" in calls
        else:
            assert calls == [], (rnd, calls)
    held = check_held_record(records)
    assert held["schedule"]["interleave"] == "rounds" and held["schedule"]["rounds"] == 3
    if kind == "real":
        assert {d[1] for w, d in events if w == "effective"} == {'"\\0\\0\\0\\0"'}
    own_descriptor_released(events)
    assert leftover_children() == 0


@pytest.mark.parametrize("kind", list(devices()))
def test_idle_hold_is_released_on_ctrl_c(engine, tmp_path, kind):
    path, run = start_held(engine, tmp_path, kind, "--samples", "100000", "--min-time", "0.05")
    run.wait_for(lambda r: r.proc.pid in holders(path))  # its own; others may hold it too
    run.proc.send_signal(signal.SIGINT)
    run.finish()
    assert run.proc.returncode != 0
    # Its own descriptor went with it, and no child of it holds one (other
    # programs may hold the device: only the engine's own are asserted).
    assert run.proc.pid not in holders(path)
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
