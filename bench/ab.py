"""How good the in-run A/B is: small real effects detected, identical arms called slower.

Each scenario is one in-run A/B run (`ctxbench run SELECTION --quick ...`,
A and B on alternate rounds), taken N times and judged as `compare RUN --ab
AXIS --fail-above PCT` judges it (``analysis.compare.paired``):

* ``aa``: identical arms. `--ab-wrapper env`: B runs under env(1), which
  execs the engine unchanged, over the rows of delay and seccomp. Every row
  called slower is a false alarm.
* ``delay``: a slowdown of a few percent on system-call rows. B runs under
  `env LD_PRELOAD=ab_delay.so CTXBENCH_AB_SPINS=K` (bench/ab_delay.c,
  built here with gcc): an interposed glibc syscall(), which spins K empty
  loop iterations (default 0) and calls the real one, so every system call
  the probes make through syscall() costs a few nanoseconds more (slowed:
  getppid, read, clock_gettime through syscall); the vDSO's clock_gettime
  never calls it (untouched: calling it slower is a false alarm).
* ``seccomp``: the engine's seccomp axis in one process, `--param
  seccomp=none,allow --samples S*R --rounds R` on same-CPU switches
  (switch.pipe, switch.futex, threads, policy=normal), judged `--ab
  seccomp=none:allow`: a
  filter that allows everything, evaluated on each switch's system calls
  (all slowed).

With --load quiet,mix each scenario's N runs are taken quiet, then under
the load mix (bench/load_mix.py, started before the first run of that load
and stopped after its last, and on any exit of this script). Scenarios take
turns run by run (aa, delay, seccomp, aa, ...) so a slow spell of the host
falls on all of them.

Prints, per load and scenario: the runs whose gate passed, failed or was
inconclusive; the runs in which every slowed row was called slower, and in
which any was; the untouched rows called slower (false alarms); per row,
the runs that called it slower, the median paired ratio B/A and
detectable slowdown over the runs; each scenario's median seconds per run.
R (--rounds) rounds of S (--samples) samples per variant and arm: for aa
and delay `--ab-rounds R --samples S` (one engine process per arm and
round), for seccomp the engine's R rounds. --keep DIR keeps every run's
records; --replay DIR judges them again.

Usage: python3 bench/ab.py [--runs N] [--load quiet,mix] [--scenarios aa,delay,seccomp]
           [--fail-above 1] [--rounds 16] [--samples 10] [--spins K]
           [--keep DIR | --replay DIR]
Prints tables; never used by tests (speed and noise live in bench/).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from gate import read_manifest
from load_mix import background_load, check_load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))

from ctxbench.analysis.compare.gate import FAILED, INCONCLUSIVE, PASSED, SLOWER  # noqa: E402
from ctxbench.analysis.compare.paired import Axis, paired_gate  # noqa: E402
from ctxbench.records.naming import variant_name  # noqa: E402
from ctxbench.records.result import results_of  # noqa: E402

SYSCALLS = ["syscall.getppid", "syscall.read", "syscall.clock_gettime_syscall"]
UNTOUCHED = "syscall.clock_gettime_vdso"
# policy=normal only: policy=batch beside it is the same hand-off, at twice the time.
SWITCHES = ["switch.pipe", "switch.futex", "--cpus", "same", "--between", "threads",
            "--param", "policy=normal"]  # fmt: skip
SCENARIOS = ("aa", "delay", "seccomp")
LOADS = ("quiet", "mix")


def scenario(
    name: str, rounds: int, shim: str, spins: int, samples: int = 10
) -> tuple[list[str], Axis]:
    """The `ctxbench run` arguments of scenario NAME and the axis that pairs its
    arms: ROUNDS A/B rounds of SAMPLES samples per variant and arm (for
    aa and delay each arm's engine process takes SAMPLES; for seccomp the
    engine's ROUNDS rounds take SAMPLES each)."""
    arm = Axis("arm", "A", "B")
    per_arm = ["--samples", str(samples), "--ab-rounds", str(rounds)]
    if name == "aa":
        return [*SYSCALLS, UNTOUCHED, *SWITCHES, "--ab-wrapper", "env", *per_arm], arm
    if name == "delay":
        wrapper = f"env LD_PRELOAD={shlex.quote(shim)} CTXBENCH_AB_SPINS={spins}"
        return [*SYSCALLS, UNTOUCHED, "--ab-wrapper", wrapper, *per_arm], arm
    axis = Axis("seccomp", "none", "allow")
    sizes = ["--samples", str(samples * rounds), "--rounds", str(rounds)]
    return [*SWITCHES, "--param", "seccomp=none,allow", *sizes], axis


def slowed(name: str, probe: str) -> bool:
    """Whether scenario NAME's B is slower on PROBE by construction."""
    if name == "delay":
        return probe != UNTOUCHED
    return name == "seccomp"


def build_shim(directory: str) -> str:
    shim = os.path.join(directory, "ab_delay.so")
    source = os.path.join(ROOT, "bench", "ab_delay.c")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", shim, source, "-ldl"], check=True)
    return shim


def run_once(args: list[str], directory: str, name: str) -> str:
    out = os.path.join(directory, f"{name}.jsonl")
    db = os.path.join(directory, "measure.db")
    env = dict(os.environ)
    source = os.path.join(ROOT, "python", "src")
    env["PYTHONPATH"] = source + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = [sys.executable, "-m", "ctxbench", "run", "--quick", "--db", db, "--json", out]
    done = subprocess.run([*command, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command + args)} exited {done.returncode}:\n"
                           f"{done.stderr[-1500:]}")  # fmt: skip
    return os.path.basename(out)


def measure(options: argparse.Namespace, directory: str) -> dict:
    shim = build_shim(directory)
    manifest: dict = {
        "runs": [],
        "options": {k: v for k, v in vars(options).items() if k not in ("keep", "replay")},
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "loadavg": {},
    }
    started = time.monotonic()
    for load in options.load:
        averages = []
        with background_load("mix" if load == "mix" else None):
            for n in range(1, options.runs + 1):
                for name in options.scenarios:
                    args, _ = scenario(name, options.rounds, shim, options.spins, options.samples)
                    begun = time.monotonic()
                    file = run_once(args, directory, f"{load}-{name}-{n}")
                    took = round(time.monotonic() - begun, 1)
                    manifest["runs"].append(
                        {"load": load, "scenario": name, "file": file, "seconds": took}
                    )
                    with open("/proc/loadavg", encoding="ascii") as handle:
                        averages.append(float(handle.read().split()[0]))
                    manifest["loadavg"][load] = averages
                    write_manifest(directory, manifest)  # a stopped measurement replays
                print(f"{load}: run {n}/{options.runs} of each scenario "
                      f"({time.monotonic() - started:.0f} s)", file=sys.stderr)  # fmt: skip
    manifest["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    write_manifest(directory, manifest)
    return manifest


def write_manifest(directory: str, manifest: dict) -> None:
    path = os.path.join(directory, "manifest.json")
    with open(path + ".new", "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
    os.replace(path + ".new", path)  # a kill mid-write leaves the last whole one


def report(directory: str, manifest: dict, percent: float) -> None:
    opts = manifest["options"]
    print(f"bench/ab.py: {opts['runs']} runs per scenario and load, --fail-above {percent:g}, "
          f"--ab-rounds {opts['rounds']}, --spins {opts['spins']}; "
          f"{manifest['started']} to {manifest.get('finished', '?')}")  # fmt: skip
    for load, averages in manifest.get("loadavg", {}).items():
        if averages:
            low, high = min(averages), max(averages)
            print(f"{load}: 1-minute load average after each run: median "
                  f"{statistics.median(averages):.2f}, {low:.2f}-{high:.2f}")  # fmt: skip
    gates: dict = defaultdict(Counter)
    caught_all: Counter = Counter()
    caught_any: Counter = Counter()
    runs: Counter = Counter()
    false_alarms: dict = defaultdict(list)
    ratios: dict = defaultdict(list)
    detectable: dict = defaultdict(list)
    called: Counter = Counter()  # (load, scenario), row -> runs that called it slower
    seconds: dict = defaultdict(list)
    for entry in manifest["runs"]:
        load, name = entry["load"], entry["scenario"]
        _, axis = scenario(name, opts["rounds"], "", opts["spins"], opts.get("samples", 10))
        with open(os.path.join(directory, entry["file"]), encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        results = results_of(r for r in records if r["kind"] == "result")
        judged = paired_gate(results, axis, percent)
        key = (load, name)
        runs[key] += 1
        if entry.get("seconds") is not None:
            seconds[key].append(entry["seconds"])
        gates[key][judged.outcome] += 1
        hits = [slowed(name, v.paired.probe) and v.outcome == SLOWER for v in judged.rows]
        targets = [slowed(name, v.paired.probe) for v in judged.rows]
        if any(targets) and all(h for h, t in zip(hits, targets, strict=True) if t):
            caught_all[key] += 1
        if any(hits):
            caught_any[key] += 1
        for verdict in judged.rows:
            row = variant_name(verdict.paired.probe, verdict.paired.params)
            if verdict.outcome == SLOWER and not slowed(name, verdict.paired.probe):
                false_alarms[key].append(row)
            called[(key, row)] += verdict.outcome == SLOWER
            if verdict.paired.ratio is not None:
                ratios[(key, row)].append(verdict.paired.ratio)
            if verdict.paired.detectable is not None:
                detectable[(key, row)].append(verdict.paired.detectable)
    print("\n| load | scenario | runs | s per run | passed | failed | inconclusive | every slowed "
          "row slower | any slowed row slower | untouched rows called slower |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for key in sorted(runs, key=lambda k: (LOADS.index(k[0]), SCENARIOS.index(k[1]))):
        load, name = key
        count = gates[key]
        wrong = false_alarms[key]
        target = name != "aa"
        took = f"{statistics.median(seconds[key]):.0f}" if seconds[key] else "—"
        print(f"| {load} | {name} | {runs[key]} | {took} | {count[PASSED]} | {count[FAILED]} | "
              f"{count[INCONCLUSIVE]} | {caught_all[key] if target else '—'} | "
              f"{caught_any[key] if target else '—'} | {len(wrong)}"
              + (f" ({'; '.join(sorted(set(wrong)))})" if wrong else "") + " |")  # fmt: skip
    print("\n| load | scenario | row | slowed | called slower | median B/A | range | "
          "median detectable |")  # fmt: skip
    print("|---|---|---|---|---:|---:|---|---:|")
    for (key, row), values in sorted(
        ratios.items(), key=lambda item: (LOADS.index(item[0][0][0]), item[0][0][1], item[0][1])
    ):
        load, name = key
        found = detectable[(key, row)]
        print(f"| {load} | {name} | {row} | {'yes' if slowed(name, row.split()[0]) else 'no'} | "
              f"{called[(key, row)]} of {runs[key]} | {statistics.median(values):.3f} | "
              f"{min(values):.3f}–{max(values):.3f} | "
              + (f"{statistics.median(found):.1%}" if found else "—") + " |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per scenario and load")
    parser.add_argument("--load", default="quiet", help="quiet, mix or quiet,mix (default quiet)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="aa, delay, seccomp")
    parser.add_argument("--fail-above", type=float, default=1.0, help="percent (default 1)")
    parser.add_argument("--rounds", type=int, default=16, help="A/B rounds (default 16)")
    parser.add_argument("--spins", type=int, default=0, help="delay loops (default 0)")
    parser.add_argument(
        "--samples", type=int, default=10, help="samples per variant, arm and round (default 10)"
    )
    parser.add_argument("--keep", help="keep the runs' records in this directory")
    parser.add_argument("--replay", help="judge the runs kept in this directory again")
    options = parser.parse_args()
    if options.replay:
        directory = options.replay
        manifest = read_manifest(parser, directory)
    else:
        options.load = [x for x in options.load.split(",") if x]
        options.scenarios = [x for x in options.scenarios.split(",") if x]
        if set(options.load) - set(LOADS) or not options.load:
            parser.error(f"--load {','.join(options.load)}: give quiet, mix or quiet,mix")
        if set(options.scenarios) - set(SCENARIOS) or not options.scenarios:
            parser.error(f"--scenarios: give some of {', '.join(SCENARIOS)}")
        if options.runs < 1 or options.rounds < 2 or options.spins < 0 or options.samples < 1:
            parser.error(
                "--runs and --samples must be at least 1, --rounds at least 2, --spins at least 0"
            )
        if "mix" in options.load:
            check_load(parser, "mix")
        directory = options.keep or tempfile.mkdtemp(prefix="ctxbench-ab-")
        Path(directory).mkdir(parents=True, exist_ok=True)
        # SIGTERM and SIGHUP end the script through its finally blocks (the mix goes with it).
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda number, frame: sys.exit(128 + number))
        try:
            manifest = measure(options, directory)
        except (RuntimeError, subprocess.CalledProcessError) as error:
            print(f"ab: {error}", file=sys.stderr)
            return 1
    report(directory, manifest, options.fail_above)
    print(f"runs kept in {directory} (--replay {directory} judges them again)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
