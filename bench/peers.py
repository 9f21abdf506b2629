"""ctxbench beside its peers, in one run: the same experiment measured by
perf bench sched pipe, stress-ng --switch and ctxbench, with the ratios.

Each peer is run the way its own documentation runs it, pinned to one CPU
(taskset -c CPU) so every tool measures a same-CPU switch. What one figure
means differs between tools, so each is converted to ns per switch first:

- perf bench sched pipe prints usecs/op, one op being a round trip (two
  switches): / 2.
- stress-ng --switch prints "nanosecs per context switch" (pipe method: a
  one-way stream of page-sized writes, so it is the cost of a switch that
  also moves a page).
- ctxbench switch.pipe: median ns per switch, raw and baseline-corrected,
  under both policies (normal = SCHED_OTHER as the peers run; batch = the
  default, each switch a voluntary sleep).

Usage: python3 bench/peers.py [--engine PATH] [--cpu N] [--rounds N]
Prints a table; never used by tests (speed lives here, not in tests).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout + proc.stderr


def perf_pipe(cpu: int, loops: int) -> float | None:
    if not shutil.which("perf"):
        return None
    out = run(["taskset", "-c", str(cpu), "perf", "bench", "sched", "pipe", "-l", str(loops)])
    usecs_per_round_trip = float(re.search(r"([\d.]+) usecs/op", out).group(1))
    return usecs_per_round_trip * 1000 / 2  # one op = one round trip = two switches


def stress_ng_switch(cpu: int, ops: int) -> float | None:
    if not shutil.which("stress-ng"):
        return None
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
    return float(re.search(r"([\d.]+) nanosecs per context switch", out).group(1))


def ctxbench_pipe(engine: str, cpu: int, policy: str) -> tuple[float, float]:
    out = run(
        [
            "taskset",
            "-c",
            str(cpu),
            engine,
            "run",
            "--json",
            "switch.pipe",
            "--between",
            "processes",
            "--cpus",
            "same",
            "--param",
            f"policy={policy}",
            "--samples",
            "20",
        ]
    )
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("kind") == "result":
                if record["verdict"]["status"] not in ("ok", "suspect"):
                    raise RuntimeError(f"ctxbench switch.pipe: {record['verdict']}")
                return record["summary"]["median"], record["corrected"]["median"]
    raise RuntimeError("ctxbench printed no result")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--engine", default=os.path.join(ROOT, "build", "engine", "ctxbench-engine")
    )
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument(
        "--rounds", type=int, default=3, help="repeat each tool, interleaved; medians are shown"
    )
    args = parser.parse_args()
    if not os.access(args.engine, os.X_OK):
        print(f"peers.py: no engine at {args.engine}; run 'make engine' first", file=sys.stderr)
        return 2

    figures: dict[str, list[float]] = {}
    for _ in range(args.rounds):  # interleaved, so drift hits every tool alike
        for name, measure in (
            ("perf bench sched pipe", lambda: perf_pipe(args.cpu, 200000)),
            ("stress-ng --switch (pipe)", lambda: stress_ng_switch(args.cpu, 400000)),
        ):
            value = measure()
            if value is not None:
                figures.setdefault(name, []).append(value)
        for policy in ("normal", "batch"):
            raw, corrected = ctxbench_pipe(args.engine, args.cpu, policy)
            figures.setdefault(f"ctxbench switch.pipe policy={policy} (raw)", []).append(raw)
            figures.setdefault(f"ctxbench switch.pipe policy={policy} (corrected)", []).append(
                corrected
            )

    reference = statistics.median(figures["ctxbench switch.pipe policy=normal (raw)"])
    print(f"same-CPU pipe switch, CPU {args.cpu}, {args.rounds} interleaved rounds (medians)")
    print(f"{'tool':<46} {'ns/switch':>10} {'vs ctxbench normal raw':>24}")
    for name, values in figures.items():
        value = statistics.median(values)
        print(f"{name:<46} {value:>10.0f} {value / reference:>23.2f}x")
    missing = [tool for tool in ("perf", "stress-ng") if not shutil.which(tool)]
    if missing:
        print(f"(not installed: {', '.join(missing)}; Debian packages linux-perf, stress-ng)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
