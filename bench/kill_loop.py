"""SIGKILL `ctxbench run` during interleaved rounds: is every round it received recovered?

    .venv/bin/python bench/kill_loop.py [--tries 20] [--seed N] [--keep DIR]

Each try runs

    ctxbench run syscall.getppid syscall.getpid syscall.enosys switch.pipe \\
        --quick --cpus same --between threads

(the current checkout: PYTHONPATH=python/src, the engine `make engine`
built) in a store of its own, and kills ctxbench with SIGKILL after a drawn
number of `[visit N]` progress lines, inside the rounds. Before the kill the
engine is stopped (SIGSTOP) and ctxbench is let read all the engine has
written (no byte left in the pipes, its files still for half a second), so
"received" is exactly what the engine wrote up to then: a copy of its
stdout and stderr (`tee`, through a wrapper named as CTXBENCH_ENGINE) cut
at the sizes they had at the kill. Received: per
variant, its record where stdout had it, else its last `@partial` on stderr.
Recovered: the run `ctxbench import` stores from the spool the kill left.
A try passes when both hold the same variants with the same samples, and a
kill before any result leaves no spool.

Prints one line per try and the totals; exit 1 if any try failed.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "python" / "src"
COMMAND = [
    "run",
    "syscall.getppid",
    "syscall.getpid",
    "syscall.enosys",
    "switch.pipe",
    "--quick",
    "--cpus",
    "same",
    "--between",
    "threads",
]
VISITS = 25  # 5 variants x 5 rounds (--quick)
DRAIN_LIMIT_S = 30.0  # a hang guard for the drain below, not a measure

WRAPPER = """#!/bin/bash
case " $* " in
  *" --progress "*) exec "$KILL_LOOP_ENGINE" "$@" \\
      2> >(exec tee -a "$KILL_LOOP_LOG/err" >&2) > >(exec tee -a "$KILL_LOOP_LOG/out") ;;
  *) exec "$KILL_LOOP_ENGINE" "$@" ;;
esac
"""


def engine_path() -> Path:
    sys.path.insert(0, str(SOURCE))
    from ctxbench.acquire.runner import find_engine

    return find_engine()


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    with contextlib.suppress(OSError):
        return [int(word) for word in path.read_text().split()]
    return []


def the_engine(pid: int) -> int | None:
    for child in children(pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{child}/comm").read_text().strip().startswith("ctxbench-engin"):
                return child
    return None


def unread_bytes(pid: int, fds: list[str]) -> int:
    """Bytes waiting in the pipes PID holds at FDS (every pipe it holds: [])."""
    total = 0
    try:
        held = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # it ended
        return 0
    for fd in held:
        with contextlib.suppress(OSError):
            if (fds and fd.name not in fds) or not os.readlink(fd).startswith("pipe:"):
                continue
            reader = os.open(fd, os.O_RDONLY | os.O_NONBLOCK)
            try:
                total += struct.unpack("i", fcntl.ioctl(reader, termios.FIONREAD, b"\0" * 4))[0]
            finally:
                os.close(reader)
    return total


def drain(engine: int, ctxbench: int, directory: Path) -> None:
    """With the engine stopped: wait until ctxbench has read all it wrote
    (no byte left in the pipes between them, the tees' included) and has
    written it (the spool, or the store, no longer changing for half a
    second). Under load a fixed wait was too short: 2 @partial lines were
    still in a pipe when ctxbench was killed."""
    tees = children(engine)
    deadline = time.monotonic() + DRAIN_LIMIT_S
    last, still_since = None, time.monotonic()
    while time.monotonic() < deadline:
        pending = unread_bytes(engine, ["1", "2"]) + unread_bytes(ctxbench, [])
        pending += sum(unread_bytes(tee, ["0"]) for tee in tees)
        files = [*sorted(directory.glob(".ctxbench-unstored-*")), directory / "store.db"]
        state = [(f.name, f.stat().st_size) for f in files if f.exists()]
        if state != last or pending:
            last, still_since = state, time.monotonic()
        elif time.monotonic() - still_since >= 0.5:
            return
        time.sleep(0.05)


def received(log: Path, sizes: tuple[int, int]) -> tuple[dict[int, dict[str, Any]], int, int]:
    """What ctxbench had read at the kill: per variant, its record or last
    @partial; and how many @partial and result lines that was."""
    out = (log / "out").read_bytes()[: sizes[0]].decode("utf-8", "replace")
    err = (log / "err").read_bytes()[: sizes[1]].decode("utf-8", "replace")
    partials, finals = {}, {}
    partial_lines = 0
    for line in err.splitlines(keepends=True):
        if line.startswith("@partial ") and line.endswith("\n"):
            record = json.loads(line[len("@partial ") :])
            partials[record["variant_index"]] = record
            partial_lines += 1
    for line in out.splitlines(keepends=True):
        if line.endswith("\n") and line.strip():
            record = json.loads(line)
            if record["kind"] == "result":
                finals[record["variant_index"]] = record
    return {**partials, **finals}, partial_lines, len(finals)


def recovered(env: dict[str, str], directory: Path) -> tuple[dict[int, dict[str, Any]], list[Path]]:
    sys.path.insert(0, str(SOURCE))
    from ctxbench.store.db import Store

    spools = sorted(directory.glob(".ctxbench-unstored-*.jsonl"))
    if not spools:
        # No spool: the run was stored before the kill (it had ended), or nothing came.
        if not (directory / "store.db").exists():
            return {}, spools
        with Store.open(directory / "store.db", create=False) as store:
            runs = store.runs()
            stored = store.load(runs[-1].run_id).records.results if runs else []
        return {r["variant_index"]: r for r in stored}, spools
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", "import", str(spools[0]), "--db", f"{directory}/r.db"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"import failed: {done.stderr.strip()}")
    with Store.open(directory / "r.db", create=False) as store:
        stored = store.load("latest")
    return {r["variant_index"]: r for r in stored.records.results}, spools


def one_try(number: int, visits: int, base: dict[str, str], keep: Path | None) -> bool | None:
    """True: received = recovered; False: not; None: the run ended before
    the kill point (no kill, not counted)."""
    directory = Path(tempfile.mkdtemp(prefix=f"kill-loop-{number}-", dir=keep))
    log = directory / "log"
    log.mkdir()
    wrapper = directory / "engine"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    env = dict(
        base,
        CTXBENCH_ENGINE=str(wrapper),
        KILL_LOOP_LOG=str(log),
        CTXBENCH_DB=str(directory / "store.db"),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxbench", *COMMAND],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert process.stderr is not None
    seen = 0
    for line in process.stderr:
        seen += line.startswith("[visit ")
        if seen >= visits:
            break
    # Its stderr keeps being read, so ctxbench never waits on a full pipe.
    threading.Thread(target=process.stderr.read, daemon=True).start()
    engine = the_engine(process.pid)
    if engine is None or process.poll() is not None:
        process.kill()
        process.wait()
        tail = process.stderr.read().strip().splitlines()[-1:] if process.stderr else []
        print(f"try {number}: the run ended before visit {visits}; not counted {tail}", flush=True)
        return None
    os.kill(engine, signal.SIGSTOP)
    drain(engine, process.pid, directory)
    sizes = ((log / "out").stat().st_size, (log / "err").stat().st_size)
    process.kill()
    process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.kill(engine, signal.SIGCONT)  # it then ends on its --die-with-parent SIGTERM
    deadline = time.monotonic() + 30
    while Path(f"/proc/{engine}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    got, partial_lines, result_lines = received(log, sizes)
    kept, spools = recovered(env, directory)
    same = {i: r["samples"] for i, r in got.items()} == {i: r["samples"] for i, r in kept.items()}
    rounds_got = sum(len(r["samples"]) for r in got.values())
    rounds_kept = sum(len(r["samples"]) for r in kept.values())
    litter = not got and spools
    ok = same and not litter
    print(
        f"try {number}: killed after visit {visits}; received {partial_lines} @partial + "
        f"{result_lines} result lines = {len(got)} variants, {rounds_got} samples; recovered "
        f"{len(kept)} variants, {rounds_kept} samples; {'ok' if ok else 'MISMATCH'}"
        + (" (a spool without a result was left)" if litter else ""),
        flush=True,
    )
    if keep is None:
        subprocess.run(["rm", "-rf", str(directory)], check=False)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep each try's files here")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    draw = random.Random(seed)
    base = dict(
        os.environ,
        PYTHONPATH=str(SOURCE),
        KILL_LOOP_ENGINE=str(engine_path()),
        CI="1",  # progress as one line per visit
    )
    print(f"kill loop: {args.tries} tries, seed {seed}: ctxbench {' '.join(COMMAND)}", flush=True)
    results: list[bool] = []
    for number in range(1, 2 * args.tries + 1):  # a run that ends first is drawn again
        if len(results) == args.tries:
            break
        outcome = one_try(number, draw.randint(2, VISITS - 1), base, args.keep)
        if outcome is not None:
            results.append(outcome)
    passed = sum(results)
    print(f"received = recovered in {passed} of {len(results)} kills ({args.tries} asked)")
    return 0 if passed == len(results) == args.tries else 1


if __name__ == "__main__":
    sys.exit(main())
