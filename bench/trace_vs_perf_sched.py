"""The traced pass's wake-up phases beside `perf sched timehist`, per variant.

For each variant of a switch probe (default switch.pipe between=threads, on
the same CPU and across CPUs) the script runs two engines one after the
other:

1. `ctxbench-engine run --trace --json`: the untraced figure and the traced
   pass's phases (record `trace`, docs/tracing.md);
2. `perf sched record -- ctxbench-engine run --json` (no --trace), then
   `perf sched timehist`: perf's own per-switch-in "sch delay" (from the
   task's wake-up, sched_waking where recorded, to the switch that runs it)
   for the engine's tasks (comm ctxbench-engine).

It prints, per variant: the engine's wake-up to switch-in (the sum of the
typical phases from `waking` to `switch`: the wake-up, any interrupt, idle
exit and the run-queue wait) as measured and corrected for its recorded
events; perf's median and mean sch delay over the same kind of switches; the
ratio perf / engine; and each run's untraced median with the ratio, so the
cost of each tracer on the figure shows too. timehist prints milliseconds
with three decimals (1 us resolution), so a median below a few
microseconds is quantized; the mean is given beside it.

Usage: python3 bench/trace_vs_perf_sched.py [--engine PATH] [--probe NAME]
           [--cpus same,cross] [--between threads] [--samples N]
Needs root (both tracers record whole CPUs) and perf (Debian: linux-perf).
Prints a table; never used by tests.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAKE_MARKS = ("waking", "IPI entry", "poll wake", "wakeup", "IPI exit", "idle exit", "switch")
# "    2911.013098 [0000]  ctxbench-engine[28580/28577]        0.000      6.311      0.026"
TIMEHIST = re.compile(
    r"^\s*\d+\.\d+\s+\[\d+\]\s+(?P<name>.+?)\[(?P<tid>\d+)(?:/\d+)?\]\s+"
    r"(?P<wait>[\d.]+)\s+(?P<delay>[\d.]+)\s+(?P<run>[\d.]+)\s*$"
)


def default_engine() -> str:
    for candidate in (
        os.environ.get("CTXBENCH_ENGINE", ""),
        os.path.join(ROOT, "build", "engine", "ctxbench-engine"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return os.path.join(ROOT, "build", "engine", "ctxbench-engine")


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"trace_vs_perf_sched: {' '.join(cmd)} failed:\n{proc.stderr.strip()[-800:]}")
    return proc.stdout


def result(stdout: str) -> dict:
    (record,) = [r for r in map(json.loads, stdout.splitlines()) if r.get("kind") == "result"]
    return record


def engine_wake_to_switch(trace: dict) -> tuple[float, float]:
    """Typical and corrected ns per switch from waking to switch-in."""
    inside = [
        p
        for p in trace["phases"]
        if p["from"] in WAKE_MARKS[:-1] and p["to"] in WAKE_MARKS and p["from"] != "switch"
    ]
    typical = sum(p["typical_per_switch_ns"] for p in inside)
    corrected = sum(p["corrected_per_switch_ns"] or 0 for p in inside)
    # The per-switch shares count every matched switch, a wake-up or not;
    # per woken switch, as perf counts (it has a delay only after a wake-up):
    woken = trace["switches"]["matched"] - trace["switches"]["direct"]
    scale = trace["switches"]["matched"] / woken if woken else float("nan")
    return typical * scale, corrected * scale


def perf_delays(engine_cmd: list[str], workdir: str) -> tuple[list[float], dict]:
    data = os.path.join(workdir, "perf.data")
    stdout = run(["perf", "sched", "record", "-q", "-o", data, "--", *engine_cmd])
    record = result(stdout)
    text = run(["perf", "sched", "timehist", "-i", data])
    delays = []
    for line in text.splitlines():
        m = TIMEHIST.match(line)
        if m and m.group("name").startswith("ctxbench-engin"):
            delay_ns = float(m.group("delay")) * 1e6
            if float(m.group("wait")) > 0:  # it slept and was woken: a wake-up's delay
                delays.append(delay_ns)
    return delays, record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default=default_engine())
    parser.add_argument("--probe", default="switch.pipe")
    parser.add_argument("--cpus", default="same,cross")
    parser.add_argument("--between", default="threads")
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    if not shutil.which("perf"):
        sys.exit("trace_vs_perf_sched: perf not found (Debian: apt-get install linux-perf)")
    if os.geteuid() != 0:
        sys.exit("trace_vs_perf_sched: run as root (both tracers record whole CPUs)")

    print(
        "| variant | engine wake->switch typical ns | corrected ns | perf sch delay median ns "
        "| mean ns | n | perf median / engine typical | perf mean / engine typical "
        "| untraced median ns (engine run) | untraced median ns (under perf) | ratio |"
    )
    print("|" + "---|" * 11)
    with tempfile.TemporaryDirectory() as workdir:
        for cpus in args.cpus.split(","):
            for between in args.between.split(","):
                variant = [args.probe, "--param", f"cpus={cpus}", "--param", f"between={between}"]
                variant += ["--param", "policy=normal", "--samples", str(args.samples)]
                if cpus == "cross":
                    variant += ["--param", "idle=free"]
                base = [args.engine, "run", "--json", "--retries", "0", *variant]
                traced = result(run([*base, "--trace"]))
                trace = traced.get("trace") or {}
                name = f"{args.probe} {between} {cpus}"
                if trace.get("status") != "ok":
                    print(f"| {name} | traced pass {trace.get('status')}: {trace.get('reason')} |")
                    continue
                typical, corrected = engine_wake_to_switch(trace)
                delays, under_perf = perf_delays(base, workdir)
                if not delays:
                    print(f"| {name} | {typical:.0f} | {corrected:.0f} | no wake-up in timehist |")
                    continue
                median, mean = statistics.median(delays), statistics.fmean(delays)
                plain = traced["summary"]["median"]
                perfed = under_perf["summary"]["median"]
                print(
                    f"| {name} | {typical:.0f} | {corrected:.0f} | {median:.0f} | {mean:.0f} "
                    f"| {len(delays)} | {median / typical:.2f} | {mean / typical:.2f} "
                    f"| {plain:.0f} | {perfed:.0f} | {perfed / plain:.2f} |"
                )


if __name__ == "__main__":
    main()
