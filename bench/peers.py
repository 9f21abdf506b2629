"""ctxbench beside the tools people cite, in one run, interleaved.

Each round runs every peer once and ctxbench once (one engine invocation for
all its figures), in the same order, so a drift in the machine hits every
tool alike. After the rounds it prints, per experiment, each side's median
over the rounds, each side's run-to-run CV (stdev / mean of the per-round
figures) and the ratio ctxbench / peer, after converting both to ns per
switch or per call: the median over the rounds of each round's own ratio,
so a round the host slowed for both tools counts once, as one ratio.

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
  a process with one extra (sleeping) thread, as the engine is. The libc read
  and write loops are lmbench lat_syscall's do_read/do_write (read(fd, &c, 1)
  of /dev/zero, write(fd, &c, 1) to /dev/null, one thread).
- lmbench lat_syscall read|write, when `lat_syscall` is on PATH (lmbench is
  not packaged in Debian 12): "Simple read: N microseconds".
- the thread hand-off over a condition variable, pinned with taskset -c CPU
  (ref_loops condvar): the protocol of Bendersky's thread-switch-condvar (one
  mutex held except inside pthread_cond_wait, one condvar, wait then signal),
  and beside it the engine's own protocol in the same plain loop (ref_loops
  condvar_doors: a condvar and a flag per direction, lock/unlock each way).

Where ctxbench and a peer differ by more than 5 %, the line under the row
names the reason this run measured: a plain loop that does what the engine
does differently (a second thread in the process, the engine's hand-off
protocol), its figure, and ctxbench's ratio to it. The header names the
command, the machine (/proc/cpuinfo's model, systemd-detect-virt) and the
load average before and after.
- ctxbench: the engine's JSON records (median of each variant); switch
  figures are policy=normal (SCHED_OTHER, what the peers run under).

Each side's run-to-run spread is printed twice: the CV, which one round
hit by a slow spell of the host moves, and the interquartile range over the
median, which it cannot. ctxbench's engine re-measures a variant measured
while its host reference ran slowed (--retries); the variants that were are
listed under the table.

--shared (as root): the machine is shared and cannot be made quiet, so the
script, and with it every tool it starts, runs in a cpu cgroup of its own
with the largest weight (cgroup v1 cpu.shares 262144, v2 cpu.weight 10000),
removed at the end: both sides get the same CPU share, larger than the
other work's.

Usage: python3 bench/peers.py [--engine PATH] [--cpu N] [--rounds N]
                              [--loops L] [--json FILE] [--shared]
Speed and agreement live here, never in the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


def ref_loop(
    exe: str, mode: str, calls: int, batches: int, threaded: bool = False, cpu: int | None = None
) -> float:
    cmd = [exe, mode, str(calls), str(batches), *(["threaded"] if threaded else [])]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    fields = run(cmd).split()
    return float(fields[1])  # the median over batches


def lat_syscall(which: str) -> float:
    """lmbench's lat_syscall read|write, ns per call."""
    match = re.search(r"Simple \w+: ([\d.]+) microseconds", run(["lat_syscall", which]))
    if not match:
        raise RuntimeError(f"lat_syscall {which} printed no 'Simple {which}: N microseconds'")
    return float(match.group(1)) * 1000


def machine() -> str:
    """/proc/cpuinfo's model, CPU count and systemd-detect-virt."""
    model = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    virt = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, check=False)
    return f"{model}, {os.cpu_count()} CPUs, virtualization {virt.stdout.strip() or 'unknown'}"


@contextlib.contextmanager
def heavy_cgroup() -> Iterator[str]:
    """This process (and what it starts) in a cpu cgroup of the largest
    weight until the block ends; the cgroup's path."""
    v1 = os.path.isdir("/sys/fs/cgroup/cpu")
    base = "/sys/fs/cgroup/cpu" if v1 else "/sys/fs/cgroup"
    path = os.path.join(base, f"ctxbench-peers-{os.getpid()}")
    os.mkdir(path)
    try:
        weight = ("cpu.shares", "262144") if v1 else ("cpu.weight", "10000")
        with open(os.path.join(path, weight[0]), "w", encoding="ascii") as f:
            f.write(weight[1])
        with open(os.path.join(path, "cgroup.procs"), "w", encoding="ascii") as f:
            f.write(str(os.getpid()))
        yield f"{path} ({weight[0]} {weight[1]})"
    finally:
        with (
            contextlib.suppress(OSError),
            open(os.path.join(base, "cgroup.procs"), "w", encoding="ascii") as f,
        ):
            f.write(str(os.getpid()))
        with contextlib.suppress(OSError):
            os.rmdir(path)


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def io_pairs(exe: str, second_thread: str) -> list[tuple[Pair, object]]:
    """read and write of one byte: libc's call (lmbench's do_read/do_write),
    syscall(2) as the engine calls it, and syscall(2) with a second thread in
    the process, as the engine has: the measured reason for a gap."""
    pairs: list[tuple[Pair, object]] = []
    for call, experiment in (
        ("read", "read 1 B of /dev/zero"),
        ("write", "write 1 B to /dev/null"),
    ):
        threaded = f"C loop: SYS_{call}, 2 threads"
        for peer, mode, two in (
            (f"C loop: libc {call}", call, False),
            (f"C loop: syscall(SYS_{call})", f"{call}_syscall", False),
            (threaded, f"{call}_syscall", True),
        ):
            reason = {} if two else {"reason_peer": threaded, "reason": second_thread}
            pair = Pair(experiment, peer, f"syscall.{call}", **reason)
            pairs.append((pair, lambda mode=mode, two=two: ref_loop(exe, mode, 20000, 31, two)))
    return pairs


# ---- ctxbench ------------------------------------------------------------------------------
CTX_ARGS = [
    "switch.pipe",
    "syscall.read",
    "syscall.write",
    "syscall.getppid",
    "syscall.enosys",
    "switch.condvar",
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
        if key in ("switch.pipe", "switch.condvar"):
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
    # The peer (its `peer` name, same experiment) that does what the engine
    # does differently, and what that is: the measured reason for a gap.
    reason_peer: str | None = None
    reason: str = ""


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
    parser.add_argument(
        "--shared", action="store_true", help="run in a cpu cgroup of the largest weight (root)"
    )
    args = parser.parse_args()
    if args.shared:
        if os.geteuid() != 0:
            print("peers.py: --shared needs root (it makes a cpu cgroup)", file=sys.stderr)
            return 2
        with heavy_cgroup() as cgroup:
            return measure(args, f"in cpu cgroup {cgroup}")
    return measure(args, "")


def measure(args: argparse.Namespace, where: str) -> int:
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
        unpinned = (
            "not a same-CPU figure: the scheduler places the two tasks anew in each run, "
            "on one CPU or two (docs/accuracy.md)"
        )
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
                        reason=unpinned,
                    ),
                    lambda: perf_pipe(None, False, loops),
                ),
                (
                    Pair(
                        "pipe switch, threads, unpinned",
                        "perf bench sched pipe -T",
                        "switch.pipe threads any",
                        reason=unpinned,
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
        second_thread = "the engine's second thread (a shared descriptor table)"
        if shutil.which("lat_syscall"):
            pairs += [
                (
                    Pair(
                        "read 1 B of /dev/zero",
                        "lmbench lat_syscall read",
                        "syscall.read",
                        reason_peer="C loop: SYS_read, 2 threads",
                        reason=second_thread,
                    ),
                    lambda: lat_syscall("read"),
                ),
                (
                    Pair(
                        "write 1 B to /dev/null",
                        "lmbench lat_syscall write",
                        "syscall.write",
                        reason_peer="C loop: SYS_write, 2 threads",
                        reason=second_thread,
                    ),
                    lambda: lat_syscall("write"),
                ),
            ]
        protocol = "the engine's protocol (two condvars and flags, lock/unlock each way)"
        pairs += [
            (
                Pair(
                    "condvar thread switch, pinned",
                    "C loop: thread-switch-condvar",
                    "switch.condvar threads same",
                    reason_peer="C loop: engine's condvar protocol",
                    reason=protocol,
                ),
                lambda: ref_loop(exe, "condvar", 20000, 15, cpu=cpu),
            ),
            (
                Pair(
                    "condvar thread switch, pinned",
                    "C loop: engine's condvar protocol",
                    "switch.condvar threads same",
                ),
                lambda: ref_loop(exe, "condvar_doors", 20000, 15, cpu=cpu),
            ),
            *io_pairs(exe, second_thread),
            (
                Pair("getppid", "C loop: syscall(SYS_getppid)", "syscall.getppid"),
                lambda: ref_loop(exe, "getppid_syscall", 20000, 31),
            ),
            (
                Pair(
                    "fork + _exit + waitpid",
                    "C loop (small parent)",
                    "create.fork_minimal_parent",
                    reason="the engine forks a small static helper, the C loop a dynamically "
                    "linked program: a different parent",
                ),
                lambda: ref_loop(exe, "fork", 300, 11),
            ),
            (
                Pair(
                    "fork + _exit + waitpid",
                    "C loop (small parent)",
                    "create.fork",
                    reason="the engine forks itself (a C++ process with its libraries, heap and "
                    "threads), the C loop a small C program: a different parent",
                ),
                lambda: ref_loop(exe, "fork", 300, 11),
            ),
        ]
        rounds, all_retried = [], []
        started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
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

    command = " ".join(["python3", "bench/peers.py", *sys.argv[1:]])
    ended = time.strftime("%H:%M UTC", time.gmtime())
    print(
        f"ctxbench against its peers: {args.rounds} interleaved rounds, medians of the rounds, ns"
    )
    print(f"command: {command}; {started} to {ended}")
    print(f"machine: {machine()}; load average (1, 5, 15 min) {load_before} before, {load()} after")
    if where:
        print(f"ran {where}")
    print(
        f"{'experiment':<42} {'peer':<28} {'peer':>10} {'CV':>6} {'IQR':>6} "
        f"{'ctxbench':<28} {'ctxbench':>10} {'CV':>6} {'IQR':>6} {'ratio':>6}"
    )
    peer_rounds = {(pair.experiment, pair.peer): pair.peer_values for pair, _ in pairs}
    for pair, _ in pairs:
        peer, ctx = statistics.median(pair.peer_values), statistics.median(pair.ctx_values)
        ratio = paired_ratio(pair.ctx_values, pair.peer_values)
        print(
            f"{pair.experiment:<42} {pair.peer:<28} {peer:>10.1f} "
            f"{fmt_cv(cv(pair.peer_values)):>6} {fmt_cv(iqr(pair.peer_values)):>6} "
            f"{pair.ctxbench:<28} {ctx:>10.1f} "
            f"{fmt_cv(cv(pair.ctx_values)):>6} {fmt_cv(iqr(pair.ctx_values)):>6} {ratio:>6.3f}"
        )
        line = gap_reason(pair, ratio, peer_rounds)
        if line:
            print(line)
    print(
        "CV: stdev / mean of the per-round figures; IQR: interquartile range / median; "
        "ratio: median of the rounds' own ratios"
    )
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


GAP = 0.05  # a ratio further than this from 1 gets its measured reason


def paired_ratio(ctx: list[float], peer: list[float]) -> float:
    """The median over the rounds of each round's ctxbench / peer."""
    return statistics.median(c / p for c, p in zip(ctx, peer, strict=True))


def gap_reason(pair: Pair, ratio: float, peer_rounds: dict[tuple[str, str], list[float]]) -> str:
    """The line under a row whose ratio is off by more than GAP: the reason
    measured in this run (the plain loop that does what the engine does
    differently, and ctxbench's ratio to it), or that none was measured."""
    if abs(ratio - 1) <= GAP:
        return ""
    reference = peer_rounds.get((pair.experiment, pair.reason_peer or ""))
    if reference is None:
        said = f"{pair.reason} (not measured by this script)" if pair.reason else "no reason known"
        rounds = [c / p for c, p in zip(pair.ctx_values, pair.peer_values, strict=True)]
        if not pair.reason and len(rounds) >= 4:
            low, _, high = statistics.quantiles(rounds, n=4)
            if low <= 1 <= high:
                said = (
                    f"the rounds' own ratios span 1 (quartiles {low:.2f}-{high:.2f} of "
                    f"{len(rounds)}): this run cannot tell it from round-to-round noise"
                )
        return f"{'':<4}gap {ratio - 1:+.0%}: {said}"
    rest = paired_ratio(pair.ctx_values, reference)
    verdict = "explains it" if abs(rest - 1) <= GAP else f"leaves {rest - 1:+.0%} unexplained"
    return (
        f"{'':<4}gap {ratio - 1:+.0%}: {pair.reason}; the plain loop with it "
        f"({pair.reason_peer}) {statistics.median(reference):.1f} ns, ctxbench / it "
        f"{rest:.3f}: {verdict}"
    )


def fmt_cv(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    sys.exit(main())
