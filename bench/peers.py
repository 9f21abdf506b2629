"""ctxbench beside the tools people cite, in one run, interleaved.

Each round runs every peer once and ctxbench once (one engine invocation for
all its figures), in the same order, so a drift in the machine hits every
tool alike. After the rounds it prints, per experiment, each side's median
over the rounds, each side's run-to-run CV (stdev / mean of the per-round
figures) and the ratio ctxbench / peer, after converting both to ns per
switch or per call.

Peers and how their figures are converted:

- perf bench sched pipe [-T] -l L: "usecs/op", one op = one round trip =
  two switches, so ns per switch = usecs/op x 1000 / 2. Pinned runs use
  taskset -c CPU (both tasks on one CPU, as ctxbench's cpus=same); unpinned
  runs are held against ctxbench's cpus=any.
- stress-ng --switch 1 --taskset CPU: "nanosecs per context switch" (pipe
  method). Its writer streams messages without waiting for each to be read,
  so it is not a ping-pong: the ratio is shown, not expected to be 1.
- bench/ref_loops.c (compiled here with cc -O2): the plainest loops of
  libc read/write of one byte, getppid, and fork + _exit + waitpid, timed with
  CLOCK_MONOTONIC around batches, no harness at all; read and write also from
  a process with one extra (sleeping) thread, as the engine is.
- ctxbench: the engine's JSON records (median of each variant); switch
  figures are policy=normal (SCHED_OTHER, what the peers run under).

Each side's run-to-run spread is printed twice: the CV, which one round
hit by a slow spell of the host moves, and the interquartile range over the
median, which it cannot. ctxbench's engine re-measures a variant measured
while its host reference ran slowed (--retries); the variants that were are
listed under the table.

Usage: python3 bench/peers.py [--engine PATH] [--cpu N] [--rounds N]
                              [--loops L] [--json FILE]
Speed and agreement live here, never in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout + proc.stderr


# ---- peers ---------------------------------------------------------------------------------
def perf_pipe(cpu: int | None, threads: bool, loops: int) -> float:
    cmd = ["perf", "bench", "sched", "pipe", "-l", str(loops), *(["-T"] if threads else [])]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    match = re.search(r"([\d.]+) usecs/op", run(cmd))
    if not match:
        raise RuntimeError("perf bench sched pipe printed no usecs/op")
    return float(match.group(1)) * 1000 / 2


def stress_ng_switch(cpu: int, ops: int) -> float:
    out = run(
        [
            "stress-ng",
            "--switch",
            "1",
            "--switch-ops",
            str(ops),
            "--taskset",
            str(cpu),
            "--metrics-brief",
        ]
    )
    match = re.search(r"([\d.]+) nanosecs per context switch", out)
    if not match:
        raise RuntimeError("stress-ng printed no 'nanosecs per context switch'")
    return float(match.group(1))


def build_ref_loops(directory: str) -> str:
    exe = os.path.join(directory, "ref_loops")
    run(
        [
            "cc",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-o",
            exe,
            os.path.join(ROOT, "bench", "ref_loops.c"),
        ]
    )
    return exe


def ref_loop(exe: str, mode: str, calls: int, batches: int, threaded: bool = False) -> float:
    fields = run([exe, mode, str(calls), str(batches), *(["threaded"] if threaded else [])]).split()
    return float(fields[1])  # the median over batches


# ---- ctxbench ------------------------------------------------------------------------------
CTX_ARGS = [
    "switch.pipe",
    "syscall.read",
    "syscall.write",
    "syscall.getppid",
    "syscall.enosys",
    "create.fork",
    "create.fork_minimal_parent",
    "--cpus",
    "same,any",
    "--param",
    "policy=normal",
    "--param",
    "idle=free",
    "--param",
    "parent_mib=0",
]


def ctxbench_round(engine: str, samples: int) -> tuple[dict[str, float], list[str]]:
    """Each figure's median, and the variants re-measured after host
    interference ("probe params (reference ratios by attempt)")."""
    out = run([engine, "run", "--json", *CTX_ARGS, "--samples", str(samples)])
    figures, retried = {}, []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record.get("kind") != "result":
            continue
        if record["verdict"]["status"] not in ("ok", "suspect"):
            raise RuntimeError(f"ctxbench {record['probe']}: {record['verdict']}")
        p = record["params"]
        key = record["probe"]
        if key == "switch.pipe":
            key += f" {p['between']} {p['cpus']}"
        figures[key] = record["summary"]["median"]
        attempts = (record.get("interference") or {}).get("attempts", [])
        if len(attempts) > 1:
            ratios = "/".join(f"{a['reference_ratio']:.2f}" for a in attempts)
            retried.append(f"{key} {p.get('policy', '')} (reference {ratios})")
    return figures, retried


# ---- the table -----------------------------------------------------------------------------
@dataclass
class Pair:
    experiment: str
    peer: str
    ctxbench: str  # key in ctxbench_round's figures
    peer_values: list[float] = field(default_factory=list)
    ctx_values: list[float] = field(default_factory=list)


def cv(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.mean(values)


def iqr(values: list[float]) -> float | None:
    """Interquartile range over the median: the run-to-run spread that one
    disturbed round cannot move, printed beside the CV, which it can."""
    if len(values) < 4:
        return None
    low, mid, high = statistics.quantiles(values, n=4)
    return (high - low) / mid


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--engine", default=os.path.join(ROOT, "build", "engine", "ctxbench-engine")
    )
    parser.add_argument("--cpu", type=int, default=0, help="CPU for the pinned peer runs")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--loops", type=int, default=100000, help="perf round trips per run")
    parser.add_argument("--samples", type=int, default=30, help="ctxbench samples per variant")
    parser.add_argument("--json", dest="json_path", help="also write the per-round figures here")
    args = parser.parse_args()
    if not os.access(args.engine, os.X_OK):
        print(f"peers.py: no engine at {args.engine}; run 'make engine' first", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.loops < 1:
        print("peers.py: --rounds and --loops must be positive", file=sys.stderr)
        return 2
    have_perf, have_stress = shutil.which("perf"), shutil.which("stress-ng")

    pairs: list[tuple[Pair, object]] = []
    with tempfile.TemporaryDirectory(prefix="ctxbench-peers-") as tmp:
        exe = build_ref_loops(tmp)
        cpu, loops = args.cpu, args.loops
        if have_perf:
            pairs += [
                (
                    Pair(
                        "pipe switch, processes, pinned",
                        "perf bench sched pipe",
                        "switch.pipe processes same",
                    ),
                    lambda: perf_pipe(cpu, False, loops),
                ),
                (
                    Pair(
                        "pipe switch, threads, pinned",
                        "perf bench sched pipe -T",
                        "switch.pipe threads same",
                    ),
                    lambda: perf_pipe(cpu, True, loops),
                ),
                (
                    Pair(
                        "pipe switch, processes, unpinned",
                        "perf bench sched pipe",
                        "switch.pipe processes any",
                    ),
                    lambda: perf_pipe(None, False, loops),
                ),
                (
                    Pair(
                        "pipe switch, threads, unpinned",
                        "perf bench sched pipe -T",
                        "switch.pipe threads any",
                    ),
                    lambda: perf_pipe(None, True, loops),
                ),
            ]
        if have_stress:
            pairs.append(
                (
                    Pair(
                        "switch stressor vs pipe ping-pong, pinned",
                        "stress-ng --switch",
                        "switch.pipe processes same",
                    ),
                    lambda: stress_ng_switch(cpu, loops * 2),
                )
            )
        pairs += [
            (
                Pair("read 1 B of /dev/zero", "C loop: libc read", "syscall.read"),
                lambda: ref_loop(exe, "read", 20000, 31),
            ),
            (
                Pair("read 1 B of /dev/zero", "C loop: syscall(SYS_read)", "syscall.read"),
                lambda: ref_loop(exe, "read_syscall", 20000, 31),
            ),
            (
                Pair("read 1 B of /dev/zero", "C loop: SYS_read, 2 threads", "syscall.read"),
                lambda: ref_loop(exe, "read_syscall", 20000, 31, threaded=True),
            ),
            (
                Pair("write 1 B to /dev/null", "C loop: libc write", "syscall.write"),
                lambda: ref_loop(exe, "write", 20000, 31),
            ),
            (
                Pair("write 1 B to /dev/null", "C loop: syscall(SYS_write)", "syscall.write"),
                lambda: ref_loop(exe, "write_syscall", 20000, 31),
            ),
            (
                Pair("write 1 B to /dev/null", "C loop: SYS_write, 2 threads", "syscall.write"),
                lambda: ref_loop(exe, "write_syscall", 20000, 31, threaded=True),
            ),
            (
                Pair("getppid", "C loop: syscall(SYS_getppid)", "syscall.getppid"),
                lambda: ref_loop(exe, "getppid_syscall", 20000, 31),
            ),
            (
                Pair(
                    "fork + _exit + waitpid", "C loop (small parent)", "create.fork_minimal_parent"
                ),
                lambda: ref_loop(exe, "fork", 300, 11),
            ),
            (
                Pair("fork + _exit + waitpid", "C loop (small parent)", "create.fork"),
                lambda: ref_loop(exe, "fork", 300, 11),
            ),
        ]
        rounds, all_retried = [], []
        for number in range(args.rounds):  # interleaved: every tool once per round
            print(f"round {number + 1}/{args.rounds}", file=sys.stderr)
            peer_figures = {}
            for pair, measure in pairs:
                key = f"{pair.experiment} | {pair.peer}"
                if key not in peer_figures:  # one figure held against two ctxbench probes
                    peer_figures[key] = measure()  # type: ignore[operator]
                pair.peer_values.append(peer_figures[key])
            ctx, retried = ctxbench_round(args.engine, args.samples)
            all_retried += retried
            for pair, _ in pairs:
                pair.ctx_values.append(ctx[pair.ctxbench])
            rounds.append({"peers": peer_figures, "ctxbench": ctx})
            print(
                "  "
                + "  ".join(
                    f"{pair.peer.split(':')[0]}={pair.peer_values[-1]:.0f}/{ctx[pair.ctxbench]:.0f}"
                    for pair, _ in pairs[:2]
                ),
                file=sys.stderr,
            )

    print(
        f"ctxbench against its peers: {args.rounds} interleaved rounds, medians of the rounds, ns"
    )
    print(
        f"{'experiment':<42} {'peer':<28} {'peer':>10} {'CV':>6} {'IQR':>6} "
        f"{'ctxbench':<28} {'ctxbench':>10} {'CV':>6} {'IQR':>6} {'ratio':>6}"
    )
    for pair, _ in pairs:
        peer, ctx = statistics.median(pair.peer_values), statistics.median(pair.ctx_values)
        print(
            f"{pair.experiment:<42} {pair.peer:<28} {peer:>10.1f} "
            f"{fmt_cv(cv(pair.peer_values)):>6} {fmt_cv(iqr(pair.peer_values)):>6} "
            f"{pair.ctxbench:<28} {ctx:>10.1f} "
            f"{fmt_cv(cv(pair.ctx_values)):>6} {fmt_cv(iqr(pair.ctx_values)):>6} {ctx / peer:>6.3f}"
        )
    print("CV: stdev / mean of the per-round figures; IQR: interquartile range / median")
    print(f"ctxbench variants re-measured after host interference: {len(all_retried)}")
    for line in all_retried:
        print(f"  {line}")
    missing = [tool for tool, have in (("perf", have_perf), ("stress-ng", have_stress)) if not have]
    if missing:
        print(f"(not installed: {', '.join(missing)}; Debian packages linux-perf, stress-ng)")
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as f:
            json.dump({"rounds": rounds, "args": vars(args)}, f, indent=1)
    return 0


def fmt_cv(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    sys.exit(main())
