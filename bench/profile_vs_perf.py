"""`ctxbench-engine profile`'s counts beside perf's, on real threaded programs.

For each program (default: `xz -T2` compressing 6 MiB, `sort --parallel=2`
on 200 000 lines, Python's threaded http.server under a loop of 40 curl
requests) the script:

1. counts one run with both tools at once:
   `ctxbench-engine profile -- perf stat -e context-switches,cpu-migrations,
   page-faults,raw_syscalls:sys_enter -- CMD`. perf counts CMD from its exec;
   ctxbench counts perf too, so `perf stat ... -- true` is profiled the same
   way, and perf's own events (ctxbench's count less perf's count of `true`)
   are taken off ctxbench's; perf's own switches and migrations are taken
   from its own thread in each run instead (the profile's per-thread
   counts), as they vary with the load; and what ctxbench counted of CMD
   between perf's fork of it and its exec (the record's first exec, where
   perf starts counting CMD) is taken off too, in each run;
2. runs `perf trace -s -- CMD` and sums its calls per thread, beside a
   separate ctxbench profile of CMD (two runs: the programs vary a little);
3. times CMD alone and under `ctxbench-engine profile` (the record's wall
   time, exec to exit), five times each, and gives the medians;
4. prices the first profile with `ctxbench profile --from` against the store
   given with --db (default: the user's store);
5. records one run with both `ctxbench-engine profile --trace` and `perf
   sched record` (the profile runs perf, which runs CMD, plus a thread
   ping-pong across two CPUs whose wake-ups are known), and sets the
   program's wake-up latencies in place beside `perf sched timehist`'s
   "sch delay" of the program's tasks (by command name) where the task had
   slept and perf saw its wake-up (wait time longer than a delay above 0: a
   preempted task's delay is not a wake-up's); also the overhead of --trace
   against the plain profile. `--only trace` runs this part alone (`--only`
   picks parts).

Needs root (tracepoints) and perf (Debian: linux-perf). Where tracefs is not
mounted it runs itself again in a mount namespace of its own with tracefs
mounted (unshare -m), so nothing outside changes. Prints Markdown tables;
never used by tests.

Usage: python3 bench/profile_vs_perf.py [--engine PATH] [--db STORE] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF_EVENTS = "context-switches,cpu-migrations,page-faults,raw_syscalls:sys_enter"
COMPARED = [
    ("context-switches", "context_switches"),
    ("cpu-migrations", "migrations"),
    ("page-faults", "page_faults"),
    ("raw_syscalls:sys_enter", "syscalls"),
]


def default_engine() -> str:
    override = os.environ.get("CTXBENCH_ENGINE", "")
    if override:
        return override
    return os.path.join(ROOT, "build", "engine", "ctxbench-engine")


def programs(workdir: str) -> dict[str, list[str]]:
    data = os.path.join(workdir, "data.bin")
    lines = os.path.join(workdir, "lines.txt")
    rng = random.Random(39)
    with open(data, "wb") as out:  # compressible, not trivially: words from a small vocabulary
        words = [
            bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(4000)
        ]
        out.write(b" ".join(rng.choice(words) for _ in range(1_200_000))[: 6 << 20])
    with open(lines, "w") as out:
        out.writelines(f"{rng.randrange(10**9):09d} {rng.random():.6f}\n" for _ in range(200_000))
    port = 20000 + os.getpid() % 20000
    url = f"http://127.0.0.1:{port}/"
    curl = f"curl -s --retry-connrefused --retry 50 --retry-delay 0 -o /dev/null {url}"
    server = (
        f"python3 -m http.server {port} --bind 127.0.0.1 --directory {workdir} "
        ">/dev/null 2>&1 & s=$!; "
        f"for i in $(seq 40); do {curl}; done; kill $s; wait $s 2>/dev/null; true"
    )
    return {
        "xz -T2": ["sh", "-c", f"xz -T2 -6 -c {data} > /dev/null"],
        "sort --parallel=2": ["sh", "-c", f"sort --parallel=2 -S 16M {lines} > /dev/null"],
        "http.server + curl x40": ["sh", "-c", server],
    }


def profile(engine: str, command: list[str], workdir: str) -> dict:
    out = os.path.join(workdir, "profile.json")
    subprocess.run(
        [engine, "profile", "--out", out, "--", *command],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(out) as f:
        return json.load(f)


def perf_stat_inside(engine: str, command: list[str], workdir: str) -> tuple[dict, dict]:
    """One run counted by both: ctxbench's record and perf's counts."""
    perf_out = os.path.join(workdir, "perf.csv")
    record = profile(
        engine, ["perf", "stat", "-x,", "-o", perf_out, "-e", PERF_EVENTS, "--", *command], workdir
    )
    counts = {}
    with open(perf_out) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0].isdigit():
                counts[fields[2]] = int(fields[0])
    return record, counts


def perf_trace_calls(command: list[str], workdir: str) -> dict[str, int]:
    out = os.path.join(workdir, "trace.txt")
    subprocess.run(
        ["perf", "trace", "-s", "-o", out, "--", *command],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    calls: dict[str, int] = {}
    with open(out) as f:
        for line in f:
            fields = line.split()
            # "   read   1   0   0.014 ..." : syscall, calls, errors, total, min, avg, max, stddev
            if len(fields) >= 8 and fields[1].isdigit() and fields[0].isidentifier():
                calls[fields[0]] = calls.get(fields[0], 0) + int(fields[1])  # summed over threads
    return calls


def timehist_delays(data: str, names: set[str]) -> tuple[list[float], dict[str, int]]:
    """perf sched timehist's sch delay (µs) of the tasks named `names` that
    had slept, and how many such lines each CPU gave."""
    done = subprocess.run(
        ["perf", "sched", "timehist", "-i", data],
        capture_output=True,
        text=True,
        check=True,
    )
    delays, per_cpu = [], {}
    for line in done.stdout.splitlines():
        fields = line.split()
        # time [cpu] comm[tid/pid] wait delay run (ms)
        if len(fields) < 6 or not fields[1].startswith("["):
            continue
        comm = fields[2].rsplit("[", 1)[0]
        try:
            wait_ms, delay_ms = float(fields[3]), float(fields[4])
        except ValueError:
            continue
        # A wake-up's line: the task had slept (waited longer than its delay)
        # and perf saw the wake-up (a delay; none where sched_wakeup was missed).
        if comm in names and wait_ms > delay_ms > 0:
            delays.append(delay_ms * 1e3)
            per_cpu[fields[1]] = per_cpu.get(fields[1], 0) + 1
    return delays, per_cpu


def traced_profile(engine: str, command: list[str], workdir: str) -> dict:
    out = os.path.join(workdir, "traced.json")
    subprocess.run(
        [engine, "profile", "--trace", "--out", out, "--", *command],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(out) as f:
        return json.load(f)


def wall(command: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def within(a: float, b: float) -> str:
    if b == 0:
        return "=" if a == 0 else "n/a"
    return f"{(a - b) / b:+.1%}"


def before_exec(record: dict, ours: str) -> int:
    """What ctxbench counted of the workload between perf's fork of it and
    its exec (the record's first exec; perf stat starts counting it there):
    its switches, migrations and system calls; 0 for the rest, or where the
    record has no execs."""
    execs = record.get("execs") or []
    if not execs:
        return 0
    first = execs[0]
    return {
        "context_switches": first["voluntary_switches"] + first["involuntary_switches"],
        "migrations": first.get("migrations", 0),
        "syscalls": first["syscalls"],
    }.get(ours, 0)


def counted_by_both(
    args: argparse.Namespace, progs: dict[str, list[str]], workdir: str
) -> dict[str, dict]:
    # perf's own events: ctxbench's count of `perf stat -- true` less what
    # perf counted of `true` itself.
    base, base_perf = perf_stat_inside(args.engine, ["true"], workdir)
    own = {
        ours: base["counts"][ours] - before_exec(base, ours) - base_perf.get(name, 0)
        for name, ours in COMPARED
    }
    print("\n## One run counted by both (ctxbench less perf's own events)\n")
    print(
        f"perf's own events (from a run of `perf stat -- true`): {own}; its context switches"
        " and migrations are taken from its own thread in each run instead (they vary with"
        " the load)\n"
    )
    print("| program | event | ctxbench | perf stat | difference |")
    print("|---|---|---:|---:|---:|")
    priced = {}
    for name, command in progs.items():
        record, perf = perf_stat_inside(args.engine, command, workdir)
        for perf_name, ours in COMPARED:
            value = record["counts"][ours] - before_exec(record, ours) - own[ours]
            # perf's own switches in this run (its one thread, the profile's
            # target): under load they vary from run to run.
            mine = [t for t in record["threads"] if t["tid"] == record["target"]["pid"]]
            if mine and ours == "context_switches":
                value -= mine[0]["voluntary_switches"] + mine[0]["involuntary_switches"] - own[ours]
            if mine and ours == "migrations" and "migrations" in mine[0]:
                value += own[ours] - mine[0]["migrations"]  # its own thread's moves, this run
            theirs = perf.get(perf_name, 0)
            print(f"| {name} | {perf_name} | {value:,} | {theirs:,} | {within(value, theirs)} |")
        priced[name] = profile(args.engine, command, workdir)
    return priced


def calls_beside_perf_trace(
    progs: dict[str, list[str]], priced: dict[str, dict], workdir: str
) -> None:
    print("\n## System calls: perf trace -s and a ctxbench profile, separate runs\n")
    print(
        "All calls, and all but futex (how often threads find a lock or a condition"
        " already free is the run's own: it varies between two runs).\n"
    )
    print("| program | ctxbench | perf trace -s | difference | ctxbench, no futex | perf, no futex"
          " | difference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, command in progs.items():
        record = priced[name]
        ours = record["counts"]["syscalls"]
        ours_futex = sum(c["count"] for c in record["syscalls_by_call"] if c["name"] == "futex")
        calls = perf_trace_calls(command, workdir)
        theirs = sum(calls.values())
        theirs_rest = theirs - calls.get("futex", 0)
        ours_rest = ours - ours_futex
        print(
            f"| {name} | {ours:,} | {theirs:,} | {within(ours, theirs)} | {ours_rest:,}"
            f" | {theirs_rest:,} | {within(ours_rest, theirs_rest)} |"
        )


def overhead(args: argparse.Namespace, progs: dict[str, list[str]], workdir: str) -> None:
    print(f"\n## Overhead: wall time, median of {args.runs}\n")
    print("| program | alone | under profile (exec to exit) | overhead |")
    print("|---|---:|---:|---:|")
    for name, command in progs.items():
        alone = statistics.median(wall(command) for _ in range(args.runs))
        under = statistics.median(
            profile(args.engine, command, workdir)["wall_s"] for _ in range(args.runs)
        )
        print(f"| {name} | {alone:.3f} s | {under:.3f} s | {within(under, alone)} |")


def in_place_beside_timehist(
    args: argparse.Namespace, progs: dict[str, list[str]], workdir: str
) -> None:
    print("\n## Wake-up latency in place: profile --trace beside perf sched timehist\n")
    print(
        "One run recorded by both (`ctxbench-engine profile --trace -- perf sched record"
        " -- CMD`). ctxbench: from sched_waking to the switch that runs the task, every"
        " wake-up of the tree (perf's own included); perf: sch delay (from sched_wakeup)"
        " of the program's tasks where the task had slept.\n"
    )
    print(
        "| program | ctxbench n | median µs (p10-p90) | perf n | median µs (p10-p90)"
        " | perf's lines by CPU | ratio |"
    )
    print("|---|---:|---:|---:|---:|---|---:|")
    known = os.path.join(os.path.dirname(args.engine), "ctxbench-profile-known")
    traced_progs = dict(progs)
    names = {
        "xz -T2": {"xz"},
        "sort --parallel=2": {"sort"},
        "http.server + curl x40": {"python3", "curl", "sh"},
    }
    if os.access(known, os.X_OK):
        traced_progs["thread ping-pong, 2 CPUs"] = [known, "thread-pingpong", "5000", "cross"]
        names["thread ping-pong, 2 CPUs"] = {"ctxbench-profil"}
    for name, command in traced_progs.items():
        data = os.path.join(workdir, "sched.data")
        record = traced_profile(
            args.engine, ["perf", "sched", "record", "-q", "-o", data, "--", *command], workdir
        )
        ours = (record.get("wakeup_latency") or {}).get("all")
        delays, per_cpu = timehist_delays(data, names[name])
        if not ours or not delays:
            print(f"| {name} | {ours and ours['n']} | - | {len(delays)} | - | - | - |")
            continue
        q = statistics.quantiles(delays, n=10)
        theirs = statistics.median(delays)
        print(
            f"| {name} | {ours['n']:,} | {ours['median_us']:.1f}"
            f" ({ours['p10_us']:.1f}-{ours['p90_us']:.1f}) | {len(delays):,}"
            f" | {theirs:.1f} ({q[0]:.1f}-{q[-1]:.1f})"
            f" | {' '.join(f'{k}:{v}' for k, v in sorted(per_cpu.items()))}"
            f" | {ours['median_us'] / theirs if theirs else float('nan'):.2f} |"
        )
    print(f"\n## Overhead of --trace: wall time (exec to exit), median of {args.runs}\n")
    print("| program | profile | profile --trace | overhead |")
    print("|---|---:|---:|---:|")
    for name, command in progs.items():
        plain = statistics.median(
            profile(args.engine, command, workdir)["wall_s"] for _ in range(args.runs)
        )
        traced = statistics.median(
            traced_profile(args.engine, command, workdir)["wall_s"] for _ in range(args.runs)
        )
        print(f"| {name} | {plain:.3f} s | {traced:.3f} s | {within(traced, plain)} |")


def pricing(args: argparse.Namespace, priced: dict[str, dict], workdir: str) -> None:
    print("\n## Pricing (ctxbench profile --from, this machine's stored figures)\n")
    for name, record in priced.items():
        path = os.path.join(workdir, "priced.json")
        with open(path, "w") as f:
            json.dump(record, f)
        venv = os.path.join(ROOT, ".venv", "bin", "python")
        python = venv if os.access(venv, os.X_OK) else sys.executable
        cli = [python, "-m", "ctxbench", "profile", "--from", path, "--json"]
        if args.db:
            cli += ["--db", args.db]
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python", "src"))
        done = subprocess.run(cli, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            print(f"- {name}: pricing failed: {done.stderr.strip()}")
            continue
        price = json.loads(done.stdout)["price"]
        low, high = price["interval_cpu_s"]
        share = price["share_of_cpu"]
        parts = ", ".join(
            f"{p['kind']} {p['count']:,} x {p['figure']['median_ns']:.0f} ns"
            for p in price["parts"]
            if p["count"] and p["figure"]
        )
        missing = ", ".join(sorted({m["probe"] for m in price["missing"]})) or "none"
        estimate = price["estimate_cpu_s"] * 1e3
        print(
            f"- {name}: {estimate:.2f} ms of CPU ({low * 1e3:.2f}-{high * 1e3:.2f}),"
            f" {share:.1%} of its {price['program_cpu_s']:.3f} s CPU; {parts}; hand-offs as "
            f"{price['primitive']}; no figure: {missing}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=default_engine())
    parser.add_argument("--db", default=None, help="the store whose figures price the profiles")
    parser.add_argument("--runs", type=int, default=5, help="runs each for the overhead medians")
    parser.add_argument(
        "--only",
        choices=["counts", "calls", "overhead", "trace", "pricing"],
        action="append",
        help="run these parts only (repeatable; counts comes with calls and pricing)",
    )
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("perf"):
        sys.exit("needs root and perf (Debian: linux-perf)")
    if not os.path.exists("/sys/kernel/tracing/events/raw_syscalls") and not os.environ.get(
        "PROFILE_VS_PERF_NS"
    ):
        os.environ["PROFILE_VS_PERF_NS"] = "1"
        inner = 'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"'
        os.execvp(
            "unshare",
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                inner,
                "sh",
                sys.executable,
                *sys.argv,
            ],
        )
    load = os.getloadavg()
    print(
        f"machine: {os.uname().nodename}, {os.cpu_count()} CPUs, kernel {os.uname().release}; "
        f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="profile-vs-perf-") as workdir:
        progs = programs(workdir)
        parts = set(args.only or ["counts", "calls", "overhead", "trace", "pricing"])
        priced: dict[str, dict] = {}
        if parts & {"counts", "calls", "pricing"}:
            priced = counted_by_both(args, progs, workdir)
        if "calls" in parts:
            calls_beside_perf_trace(progs, priced, workdir)
        if "overhead" in parts:
            overhead(args, progs, workdir)
        if "trace" in parts:
            in_place_beside_timehist(args, progs, workdir)
        if "pricing" in parts:
            pricing(args, priced, workdir)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
