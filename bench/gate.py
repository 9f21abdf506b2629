"""How good `compare --fail-above` is: false alarms on identical runs, detections of a slowdown.

Each pair takes three quick runs of one selection into a temporary store: A,
A' (identical) and B, which runs the same engine under a real slowdown
applied to B alone. By default that is a seccomp filter that allows every
system call but is evaluated on each one (`ctxbench-seccomp-exec allow --`,
built with the engine): system calls and kernel-mediated switches pay for it,
user-level switches (uswitch.*), which never enter the kernel, cannot
(but uswitch.ucontext, whose swapcontext calls rt_sigprocmask, can: it is
its own class). A'
and B are taken in alternating order so a drift of the host falls on both.
Then `ctxbench compare A A' --json` (A/A) and `compare A B --json` (A/B) at
each threshold, and per row class (syscall, same-CPU switch, cross-CPU
switch, user-level, other):

* A/A false alarms: pairs in which a row of the class failed the gate;
* A/B detections: pairs in which a row of the class failed the gate
  (for the classes the slowdown reaches);
* A/B untouched flagged: rows the slowdown cannot reach (user-level) that
  failed the gate anyway: those are false alarms too.

The store keeps every run, so later pairs are judged by the machine's
history once it has three earlier runs (as a user's store would); the
noise source of each judged row is counted and printed.

Usage: python3 bench/gate.py [--pairs K] [--selection 'PROBES...']
           [--slow-b 'CMD PREFIX'] [--fail-above 10,5] [--run-args '...'] [--keep DIR]
Prints a table; never used by tests (speed and noise live in bench/).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter

from run_to_run_cv import row_class

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))

from ctxbench.runner import find_engine  # noqa: E402

DEFAULT_SELECTION = "syscall switch.pipe switch.futex uswitch"
SECCOMP_EXEC = os.path.join(ROOT, "build", "engine", "ctxbench-seccomp-exec")
UNTOUCHED = ("user-level",)  # classes a system-call slowdown cannot reach
CLASSES = (
    "syscall",
    "same-CPU switch",
    "cross-CPU switch",
    "user-level + syscall",
    "user-level",
    "other",
)


def ctxbench_command() -> list[str]:
    venv = os.path.join(ROOT, ".venv", "bin", "ctxbench")
    if os.access(venv, os.X_OK):
        return [venv]
    return [sys.executable, "-m", "ctxbench"]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    source = os.path.join(ROOT, "python", "src")
    env["PYTHONPATH"] = source + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def slowed_engine(prefix: list[str], directory: str) -> str:
    """A wrapper that runs the real engine under PREFIX, for CTXBENCH_ENGINE."""
    engine = str(find_engine())
    path = os.path.join(directory, "slowed-engine")
    with open(path, "w", encoding="utf-8") as script:
        script.write("#!/bin/sh\n")
        script.write(f'exec {shlex.join(prefix)} {shlex.quote(engine)} "$@"\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def run(selection: list[str], db: str, args: list[str], env: dict[str, str], out: str) -> str:
    """One quick run into DB, its records also in OUT; its run id."""
    command = [*ctxbench_command(), "run", *selection, "--quick", "--db", db, "--json", out, *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gate: {shlex.join(command)} exited {done.returncode}:\n{done.stderr}")
    with open(out, encoding="utf-8") as handle:
        return json.loads(handle.readline())["run_id"]


def compare(db: str, reference: str, other: str, percent: float) -> dict:
    command = [*ctxbench_command(), "compare", reference, other, "--db", db, "--json"]
    command += ["--fail-above", f"{percent:g}"]
    done = subprocess.run(command, env=environment(), capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"gate: {shlex.join(command)} exited {done.returncode}:\n{done.stderr}")
    return json.loads(done.stdout)


def flagged_classes(data: dict) -> Counter:
    """Rows that failed the gate, counted per row class."""
    failed = {entry["variant"] for entry in data["fail_above"]["regressions"]}
    return Counter(
        row_class(row) for row in data["rows"] if row["variant"] in failed and row["judged"]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="A/A and A/B pairs (default 10)")
    parser.add_argument("--selection", default=DEFAULT_SELECTION, help="probes to run")
    parser.add_argument(
        "--slow-b",
        help="command prefix that slows run B (default: ctxbench-seccomp-exec allow --)",
    )
    parser.add_argument("--fail-above", default="10,5", help="thresholds in percent (10,5)")
    parser.add_argument("--run-args", default="", help="extra `ctxbench run` options, all runs")
    parser.add_argument("--keep", help="keep the store in this directory")
    options = parser.parse_args()
    if options.pairs < 1:
        parser.error("--pairs must be at least 1")
    if options.slow_b:
        prefix = shlex.split(options.slow_b)
    elif os.access(SECCOMP_EXEC, os.X_OK):
        prefix = [SECCOMP_EXEC, "allow", "--"]
    else:
        parser.error(
            f"{SECCOMP_EXEC} is not built; `make engine`, or give --slow-b 'CMD PREFIX' "
            "(a real mechanism that slows run B, e.g. strace -f -e trace=none -o /dev/null)"
        )
    try:
        thresholds = [float(t) for t in options.fail_above.split(",") if t.strip()]
    except ValueError:
        parser.error(f"--fail-above {options.fail_above!r}: give percents such as 10,5")
    selection = shlex.split(options.selection)
    run_args = shlex.split(options.run_args)
    directory = options.keep or tempfile.mkdtemp(prefix="ctxbench-gate-")
    os.makedirs(directory, exist_ok=True)
    db = os.path.join(directory, "gate.db")
    plain = environment()
    slowed = environment({"CTXBENCH_ENGINE": slowed_engine(prefix, directory)})

    false_alarms = {t: Counter() for t in thresholds}  # pairs with a flagged row, per class
    detections = {t: Counter() for t in thresholds}
    untouched = {t: 0 for t in thresholds}  # untouched rows flagged in A/B, all pairs
    gate_failed = {t: 0 for t in thresholds}  # A/A pairs whose gate failed
    rows_per_class: Counter = Counter()  # A/A rows over every pair
    judged_per_class: Counter = Counter()  # of them, judged (comparable: not excluded)
    sources: Counter = Counter()
    started = time.monotonic()
    for pair in range(1, options.pairs + 1):
        first = run(selection, db, run_args, plain, os.path.join(directory, f"{pair}-A.jsonl"))
        order = [("same", plain), ("slowed", slowed)]
        if pair % 2 == 0:
            order.reverse()
        ids = {
            name: run(selection, db, run_args, env, os.path.join(directory, f"{pair}-{name}.jsonl"))
            for name, env in order
        }
        for percent in thresholds:
            same = compare(db, first, ids["same"], percent)
            other = compare(db, first, ids["slowed"], percent)
            if percent == thresholds[0]:
                rows_per_class.update(row_class(row) for row in same["rows"])
                judged_per_class.update(row_class(row) for row in same["rows"] if row["judged"])
                sources.update(
                    row["noise"]["source"] for row in same["rows"] if row["judged"] and row["noise"]
                )
            gate_failed[percent] += same["fail_above"]["failed"]
            for name in flagged_classes(same):
                false_alarms[percent][name] += 1
            flagged = flagged_classes(other)
            for name in flagged:
                detections[percent][name] += 1
            untouched[percent] += sum(flagged[name] for name in UNTOUCHED)
        print(
            f"pair {pair}/{options.pairs} done ({time.monotonic() - started:.0f} s)",
            file=sys.stderr,
        )

    width = max(len(name) for name in CLASSES)
    print(f"bench/gate.py: {options.pairs} pairs of `ctxbench run {options.selection} --quick`")
    print(f"slowdown of B: {shlex.join(prefix)}; store: {db}")
    header = f"{'row class':<{width}}  judged/rows (A/A)"
    for percent in thresholds:
        header += f"  A/A false @{percent:g}%  A/B detected @{percent:g}%"
    print(header)
    for name in CLASSES:
        if not rows_per_class[name]:
            continue
        judged = f"{judged_per_class[name]}/{rows_per_class[name]}"
        line = f"{name:<{width}}  {judged:>17}"
        for percent in thresholds:
            line += f"  {false_alarms[percent][name]:>11}/{options.pairs}"
            line += f"  {detections[percent][name]:>12}/{options.pairs}"
        print(line)
    for percent in thresholds:
        print(
            f"--fail-above {percent:g}: A/A gate failed in {gate_failed[percent]} of "
            f"{options.pairs} pairs; untouched rows ({', '.join(UNTOUCHED)}) flagged in A/B: "
            f"{untouched[percent]}"
        )
    total = sum(sources.values())
    print(
        "rows not judged are excluded (a verdict other than ok, placement or options differ): "
        "they never fail the gate"
    )
    print(
        "judged by: "
        + ", ".join(f"{source} {count}" for source, count in sources.most_common())
        + f" (rows over all A/A comparisons at {thresholds[0]:g}%: {total})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
