"""A CI runner's other jobs, reproducible: the load mix of the bench scripts' `--load mix`.

    from load_mix import load_mix
    with load_mix():
        ...  # the measurement

    python3 bench/load_mix.py [--seconds N]    # until killed without --seconds

What runs beside the measurement, all of it in one process group under a
supervisor of its own (a new session):

* **Compiles**: three workers, each compiling a generated C file (300
  small functions with loops) with `gcc -O2 -c` one to three times (a
  job's build; a compile takes about 2 s of CPU here), then pausing 1-4 s
  (the job ends, the next starts): compilers start and stop, one to three
  at once.
* **A test-like interpreter loop**: two Python workers, each computing for
  10-80 ms, sleeping 5-60 ms, writing a file of 256 KiB and reading it
  back, and passing a message through a pipe to a thread that blocks on it
  and wakes.
* **A writer that syncs**: writes 2 MiB and fsyncs it, then sleeps
  50-200 ms; the file starts again at 64 MiB.

Every file is in one temporary directory (ctxbench-loadmix-*). Stopping
(the block's end, an exception, Ctrl-C, SIGTERM to the script, which
`load_mix` turns into SystemExit while it runs, or exit through atexit)
sends SIGTERM to the whole group, then SIGKILL to what is left, and removes
the directory. If the process that started the mix dies without stopping
it (SIGKILL), the supervisor sees its parent change within half a second
and does the same.

Measured: `python3 bench/load_mix.py --seconds 150` on this project's
2-vCPU guest (/proc/cpuinfo model name "AMD EPYC", `systemd-detect-virt`:
docker, a container in a KVM guest), 2026-11-27 18:16-18:19 UTC, while
other helpers were building and testing on the same machine: the mix's own
tasks runnable or in D (sampled each second, what the load average counts)
averaged 4.65; the machine's 1-minute load average, the others' work
included, was 8.3-10.0 after the first minute. The mix alone on a quiet
runner was not measured (the machine was never quiet); contention
stretches its CPU-bound tasks, so alone it counts fewer runnable tasks.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_hog import cpu_hog, stop_group

COMPILERS = 3
INTERPRETERS = 2
PREFIX = "ctxbench-loadmix-"


# ---- the workers (each runs as `load_mix.py --worker KIND DIR SEED`) -------------------
def _c_source(seed: int) -> str:
    lines = ["#include <stddef.h>"]
    for n in range(300):
        lines.append(
            f"long f{n}(long *a, size_t k) {{ long s = {seed + n};"
            f" for (size_t i = 0; i < k; i++) {{ s = s * 31 + a[i] ^ (s >> {n % 13 + 1});"
            f" if (s & {n + 1}) s += a[(i * 7) % k]; }} return s; }}"
        )
    return "\n".join(lines) + "\n"


def _compile_worker(directory: str, rng: random.Random) -> None:
    source = os.path.join(directory, f"unit-{os.getpid()}.c")
    with open(source, "w", encoding="ascii") as handle:
        handle.write(_c_source(rng.randrange(1000)))
    objects = source[:-2] + ".o"
    while True:
        for _ in range(rng.randint(1, 3)):
            subprocess.run(
                ["gcc", "-O2", "-c", source, "-o", objects],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        time.sleep(rng.uniform(1.0, 4.0))


def _interpreter_worker(directory: str, rng: random.Random) -> None:
    path = os.path.join(directory, f"test-{os.getpid()}.dat")
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()

    def echo() -> None:  # blocks on the pipe, wakes, answers
        while True:
            data = os.read(request_r, 64)
            if not data:
                return
            os.write(reply_w, data)

    threading.Thread(target=echo, daemon=True).start()
    block = os.urandom(256 * 1024)
    while True:
        until = time.monotonic() + rng.uniform(0.010, 0.080)
        total = 0
        while time.monotonic() < until:
            total += sum(i * i for i in range(500))
        time.sleep(rng.uniform(0.005, 0.060))
        with open(path, "wb") as handle:
            handle.write(block)
        with open(path, "rb") as handle:
            handle.read()
        os.write(request_w, b"ping")
        os.read(reply_r, 64)


def _writer_worker(directory: str, rng: random.Random) -> None:
    path = os.path.join(directory, "writer.dat")
    chunk = os.urandom(2 * 1024 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    written = 0
    while True:
        os.write(fd, chunk)
        os.fsync(fd)
        written += len(chunk)
        if written >= 64 * 1024 * 1024:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            written = 0
        time.sleep(rng.uniform(0.050, 0.200))


WORKERS = {
    "compile": _compile_worker,
    "interpreter": _interpreter_worker,
    "writer": _writer_worker,
}


def _supervise(directory: str, parent: int) -> None:
    """Start every worker in this process's group; stop them all, and remove
    DIRECTORY, when told to (SIGTERM) or when PARENT is gone."""
    kinds = ["compile"] * COMPILERS + ["interpreter"] * INTERPRETERS + ["writer"]
    children = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", kind, directory, str(n)],
            stdin=subprocess.DEVNULL,
        )
        for n, kind in enumerate(kinds)
    ]

    def end(*_: object) -> None:
        shutil.rmtree(directory, ignore_errors=True)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(0, signal.SIGTERM)
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
        shutil.rmtree(directory, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, end)
    while os.getppid() == parent:
        time.sleep(0.5)
    end()


# ---- starting and stopping ------------------------------------------------------------------
class LoadMix:
    """The mix as an object: start(), stop() (idempotent), or `with LoadMix():`."""

    def __init__(self) -> None:
        self.supervisor: subprocess.Popen[bytes] | None = None
        self.directory: str | None = None

    @property
    def pgid(self) -> int | None:
        return self.supervisor.pid if self.supervisor else None

    def start(self, settle_s: float = 1.0) -> LoadMix:
        if shutil.which("gcc") is None:
            raise RuntimeError("the load mix needs gcc (apt-get install gcc)")
        self.directory = tempfile.mkdtemp(prefix=PREFIX)
        atexit.register(self.stop)
        command = [sys.executable, os.path.abspath(__file__), "--supervise", self.directory]
        self.supervisor = subprocess.Popen(
            [*command, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(settle_s)
        if self.supervisor.poll() is not None:
            code = self.supervisor.returncode
            self.stop()
            raise RuntimeError(f"the load mix's supervisor exited {code} at once")
        return self

    def stop(self) -> None:
        supervisor, self.supervisor = self.supervisor, None
        if supervisor is not None:
            stop_group(supervisor)
            _wait_group_gone(supervisor.pid)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        atexit.unregister(self.stop)

    def __enter__(self) -> LoadMix:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes whose process group is PGID."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def _group_states(pgid: int) -> list[str]:
    states = []
    for pid in group_members(pgid):
        with (
            contextlib.suppress(OSError, IndexError),
            open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle,
        ):
            states.append(handle.read().rsplit(")", 1)[1].split()[0])
    return states


def _wait_group_gone(pgid: int, timeout_s: float = 5.0) -> None:
    until = time.monotonic() + timeout_s
    while group_members(pgid) and time.monotonic() < until:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        time.sleep(0.05)


@contextlib.contextmanager
def load_mix(load: bool = True) -> Iterator[LoadMix | None]:
    """The mix beside the block when `load`; nothing otherwise. SIGTERM to
    this process while the block runs ends it through SystemExit, so the
    mix is stopped on the way out."""
    if not load:
        yield None
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    mix = LoadMix()
    try:
        mix.start()
        yield mix
    finally:
        mix.stop()
        signal.signal(signal.SIGTERM, previous)


# The bench scripts' --load: what each kind runs beside the measurement.
LOADS = {
    "hog": "beside stress-ng --cpu 1",
    "mix": "under the load mix (bench/load_mix.py)",
}


def add_load_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--load [hog|mix]: bare --load is the CPU hog, as before the mix."""
    parser.add_argument(
        "--load",
        nargs="?",
        const="hog",
        choices=sorted(LOADS),
        help=f"{what}: hog = stress-ng --cpu 1 (bare --load), mix = bench/load_mix.py",
    )


def check_load(parser: argparse.ArgumentParser, kind: str | None) -> None:
    if kind == "hog" and shutil.which("stress-ng") is None:
        parser.error("--load hog needs stress-ng (apt-get install stress-ng)")
    if kind == "mix" and shutil.which("gcc") is None:
        parser.error("--load mix needs gcc (apt-get install gcc)")


def load_words(kind: str | bool | None) -> str:
    """How a kept manifest's load reads (True: a manifest from before --load mix)."""
    if not kind:
        return ""
    return LOADS["hog" if kind is True else kind]


@contextlib.contextmanager
def background_load(kind: str | bool | None) -> Iterator[None]:
    """The --load of the bench scripts beside the block: None, "hog" or "mix"."""
    if kind == "mix":
        with load_mix():
            yield
    else:
        with cpu_hog(bool(kind)):
            yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, help="stop after N seconds (default: when killed)")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--supervise", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        kind, directory, seed = options.worker
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides
        with contextlib.suppress(BrokenPipeError, FileNotFoundError):
            WORKERS[kind](directory, random.Random(int(seed) * 7919 + os.getpid()))
        return 0
    if options.supervise:
        _supervise(options.supervise[0], int(options.supervise[1]))
        return 0
    if options.seconds is not None and options.seconds <= 0:
        parser.error("--seconds must be above 0")
    # Ctrl-C (SIGINT) stops the mix even when it was started ignoring SIGINT:
    # a shell starts a background job so, and Python then keeps it ignored
    # (a fresh-clone `make test` run in the background waited 30 s for it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    own: list[int] = []
    system: list[float] = []
    started = time.monotonic()
    try:
        with load_mix() as mix:
            assert mix is not None and mix.pgid is not None
            print(f"load mix started: process group {mix.pgid}, files in {mix.directory}",
                  file=sys.stderr, flush=True)  # fmt: skip
            while options.seconds is None or time.monotonic() - started < options.seconds:
                time.sleep(1.0)
                states = _group_states(mix.pgid)
                # The supervisor sleeps; only the workers and their compilers count.
                own.append(sum(state in ("R", "D") for state in states))
                with open("/proc/loadavg", encoding="ascii") as handle:
                    system.append(float(handle.read().split()[0]))
    except KeyboardInterrupt:
        pass
    # The 1-minute load average lags by about a minute: report the samples after it.
    settled = system[60:] or system
    if own:
        print(
            f"{len(own)} s: mix tasks runnable or in D (sampled each second) "
            f"mean {statistics.fmean(own):.2f}; 1-minute load average "
            f"{'after the first minute' if len(system) > 60 else 'throughout'}: "
            f"median {statistics.median(settled):.2f}, range {min(settled):.2f}-{max(settled):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
