"""How much each figure moves from one run to the next: the run-to-run CV.

Runs `ctxbench run SELECTION --quick` N times for each configuration, the
configurations taken in turn (A B C A B C ...) so that a slow spell of the
host lands on all of them alike, each run stored in a temporary store and
copied out with --json. For every variant, the CV (stddev / mean) of its
median over the N runs; then, per row class (syscall, same-CPU switch,
cross-CPU switch, user-level, other), the median, 75th percentile and largest
CV, and the wall time of a run.

A configuration is NAME=ARGS: ARGS are extra `ctxbench run` options; a token
KEY=VALUE whose KEY is upper case sets an environment variable instead (for
example CTXBENCH_ENGINE=/path/to/an/older/engine to measure "before").

With --load (or --load hog), every configuration also runs beside
`stress-ng --cpu 1` (bench/cpu_hog.py); with --load mix, under a CI
runner's other jobs (bench/load_mix.py): either started before each such
run and stopped after it however the script ends, as "NAME+load", right
after its quiet run, so both fall in
the same moments of the host. A second table then compares, per row class,
each variant's median over the loaded runs with its median over the quiet
ones (the shift, and how many rows stay within 10%), and the share of the
loaded rows whose verdict is `ok`, with the reasons of the others.

Usage: python3 bench/run_to_run_cv.py [--runs N] [--selection 'PROBES...']
           [--config NAME=ARGS ...] [--ctxbench PATH] [--keep DIR] [--load [hog|mix]]
Prints a table; never used by tests (speed and noise live in bench/).
"""

import argparse
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

from load_mix import add_load_option, background_load, check_load, load_words

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))

from ctxbench.stats import low_quantile  # noqa: E402

ENV_TOKEN = re.compile(r"^[A-Z][A-Z0-9_]*=")


def default_ctxbench() -> str:
    venv = os.path.join(ROOT, ".venv", "bin", "ctxbench")
    return venv if os.access(venv, os.X_OK) else "ctxbench"


def parse_config(text: str) -> tuple[str, list[str], dict[str, str]]:
    name, _, rest = text.partition("=")
    if not name:
        sys.exit(
            f"run_to_run_cv: --config {text!r}: give NAME=ARGS, e.g. rounds='--interleave rounds'"
        )
    args: list[str] = []
    env: dict[str, str] = {}
    for token in shlex.split(rest):
        if ENV_TOKEN.match(token):
            key, _, value = token.partition("=")
            env[key] = value
        else:
            args.append(token)
    return name, args, env


# User-level switches that make a system call on every switch: glibc's
# swapcontext calls rt_sigprocmask (the record's op says so), so whatever
# slows system calls reaches them.
USER_LEVEL_WITH_SYSCALL = ("uswitch.ucontext",)


def row_class(record: dict) -> str:
    family = record.get("family", "")
    cpus = record.get("params", {}).get("cpus")
    if family == "syscall":
        return "syscall"
    if record["probe"] in USER_LEVEL_WITH_SYSCALL:
        return "user-level + syscall"
    if family == "uswitch" or record["probe"].startswith("uswitch"):
        return "user-level"
    if record["probe"].startswith("switch.") and cpus == "same":
        return "same-CPU switch"
    if record["probe"].startswith("switch.") and cpus in ("cross", "any"):
        return "cross-CPU switch"
    return "other"


def variant_key(record: dict) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(record.get("params", {}).items()))
    return f"{record['probe']} {params}".strip()


# Per variant: (row class, median, p10, status, reason codes).
Figures = dict[str, tuple[str, float, float | None, str, list[str]]]


def one_run(
    ctxbench: str, selection: list[str], args: list[str], env: dict[str, str], db: str, out: str
) -> tuple[Figures, float]:
    cmd = [ctxbench, "run", *selection, "--quick", "--db", db, "--json", out, *args]
    started = time.monotonic()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=900
    )
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        sys.exit(
            f"run_to_run_cv: {shlex.join(cmd)} exited {proc.returncode}:\n"
            + proc.stderr.strip()[-800:]
        )
    return read_figures(out), wall


def read_figures(path: str) -> Figures:
    """Each measured variant of a run's --json file: its class, median, p10
    (``stats.low_quantile`` of its samples: the figure the history gate
    judges), verdict and reasons."""
    figures: Figures = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            verdict = record.get("verdict") or {}
            if record.get("kind") != "result" or verdict["status"] not in ("ok", "suspect"):
                continue
            codes = [reason["code"] for reason in verdict["reasons"]]
            figures[variant_key(record)] = (
                row_class(record),
                record["summary"]["median"],
                low_quantile(record.get("samples") or [], record.get("unit", "ns")),
                verdict["status"],
                codes,
            )
    return figures


def replayed(directory: str) -> list[tuple[str, int, str]]:
    """The kept files of a --keep DIRECTORY: (configuration, run, path), in run order."""
    found = []
    for name in os.listdir(directory):
        match = re.fullmatch(r"(.+)-(\d+)\.jsonl", name)
        if match:
            found.append((match.group(1), int(match.group(2)), os.path.join(directory, name)))
    return sorted(found, key=lambda entry: (entry[1], entry[0].endswith("+load"), entry[0]))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--selection", default="", help="probes/families (default: the whole quick suite)"
    )
    parser.add_argument("--config", action="append", default=[], help="NAME=ARGS (repeatable)")
    parser.add_argument("--ctxbench", default=default_ctxbench())
    parser.add_argument("--keep", help="keep each run's --json file in this folder")
    parser.add_argument(
        "--replay", metavar="DIR", help="tabulate the files a --keep DIR kept, measuring nothing"
    )
    add_load_option(parser, "run each configuration again with it (NAME+load)")
    args = parser.parse_args()
    # SIGTERM ends the script through SystemExit, so the run in progress and
    # the hog are stopped on the way out (subprocess.run kills its child).
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    check_load(parser, args.load)
    configs = [parse_config(c) for c in args.config] or [("default", [], {})]
    if args.replay:
        kept = replayed(args.replay)
        names = sorted({name for name, _, _ in kept}, key=lambda n: (n.endswith("+load"), n))
        configs = [(name, [], {}) for name in names]
        args.runs = max((n for _, n, _ in kept), default=0)
    elif args.load:
        configs = [
            (name + suffix, extra, env) for name, extra, env in configs for suffix in ("", "+load")
        ]
    quiet_of = {name: name[: -len("+load")] for name, _, _ in configs if name.endswith("+load")}
    selection = shlex.split(args.selection)
    figures: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in configs}
    lows: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in configs}
    verdicts: dict[str, dict[str, list[tuple[str, list[str]]]]] = {n: {} for n, _, _ in configs}
    classes: dict[str, str] = {}
    walls: dict[str, list[float]] = {name: [] for name, _, _ in configs}

    def take(name: str, measured: Figures) -> None:
        for key, (cls, median, low, status, codes) in measured.items():
            classes[key] = cls
            figures[name].setdefault(key, []).append(median)
            if low is not None:
                lows[name].setdefault(key, []).append(low)
            verdicts[name].setdefault(key, []).append((status, codes))

    if args.replay:
        for name, _, path in kept:
            take(name, read_figures(path))
            walls[name].append(math.nan)
    else:
        with tempfile.TemporaryDirectory(prefix="ctxbench-cv-") as tmp:
            keep = args.keep or tmp
            os.makedirs(keep, exist_ok=True)
            for n in range(1, args.runs + 1):
                for name, extra, env in configs:
                    out = os.path.join(keep, f"{name}-{n}.jsonl")
                    with background_load(args.load if name in quiet_of else None):
                        measured, wall = one_run(
                            args.ctxbench, selection, extra, env, os.path.join(tmp, "cv.db"), out
                        )
                    walls[name].append(wall)
                    take(name, measured)
                    print(
                        f"run {n}/{args.runs} {name}: {len(measured)} figures in {wall:.1f} s",
                        file=sys.stderr,
                    )
    print(
        f"{args.runs} runs per configuration; CV = stddev/mean of a variant's median over the runs"
    )
    print(
        f"{'configuration':<16} {'class':<18} {'rows':>4} {'CV median':>9} "
        f"{'CV p75':>7} {'CV max':>7} {'run s':>6}"
    )
    for name, _, _ in configs:
        by_class: dict[str, list[float]] = {}
        for key, values in figures[name].items():
            if len(values) < max(2, args.runs // 2):
                continue
            cv = statistics.stdev(values) / statistics.fmean(values)
            by_class.setdefault(classes[key], []).append(cv)
        wall = statistics.median(walls[name])
        for cls in sorted(by_class):
            cvs = by_class[cls]
            print(
                f"{name:<16} {cls:<18} {len(cvs):>4} {100 * statistics.median(cvs):>8.1f}% "
                f"{100 * percentile(cvs, 0.75):>6.1f}% {100 * max(cvs):>6.1f}% {wall:>6.1f}"
            )
    if args.load:
        print(f"\n+load: {load_words(args.load)}")
    for loaded, quiet in quiet_of.items():
        print_load_table(loaded, quiet, figures, lows, verdicts, classes)
    return 0


def print_load_table(
    loaded: str,
    quiet: str,
    figures: dict[str, dict[str, list[float]]],
    lows: dict[str, dict[str, list[float]]],
    verdicts: dict[str, dict[str, list[tuple[str, list[str]]]]],
    classes: dict[str, str],
) -> None:
    """Per row class: each variant's median over the loaded runs against its
    median over the quiet ones, the same of its p10s, and the loaded rows'
    verdicts."""
    print()
    print(
        f"{loaded} against {quiet}: shift = a variant's median over the loaded runs / "
        "its median over the quiet runs - 1; p10 shift = the same of its p10s (each run's "
        "fastest tenth); ok = loaded (row, run) verdicts that are ok"
    )
    print(
        f"{'class':<22} {'rows':>4} {'shift med':>9} {'shift max':>9} {'<=10%':>6} "
        f"{'p10 med':>8} {'p10 max':>8} {'<=5%':>6} "
        f"{'ok quiet':>8} {'ok load':>8}  not ok under load, by reason"
    )
    by_class: dict[str, dict[str, list]] = {}
    for key, values in figures[loaded].items():
        before = figures[quiet].get(key)
        if not before:
            continue
        entry = by_class.setdefault(classes[key], {"shift": [], "low": [], "quiet": [], "load": []})
        entry["shift"].append(statistics.median(values) / statistics.median(before) - 1)
        low_load, low_quiet = lows[loaded].get(key), lows[quiet].get(key)
        if low_load and low_quiet:
            entry["low"].append(statistics.median(low_load) / statistics.median(low_quiet) - 1)
        entry["quiet"] += verdicts[quiet].get(key, [])
        entry["load"] += verdicts[loaded][key]
    for cls in sorted(by_class):
        entry = by_class[cls]
        shifts, low = entry["shift"], entry["low"] or [math.nan]
        within = sum(abs(x) <= 0.10 for x in shifts)
        low_within = sum(abs(x) <= 0.05 for x in low)
        reasons: Counter[str] = Counter()
        for status, codes in entry["load"]:
            if status != "ok":
                reasons.update(set(codes))

        def ok_share(pairs: list[tuple[str, list[str]]]) -> float:
            return sum(status == "ok" for status, _ in pairs) / len(pairs) if pairs else 0.0

        print(
            f"{cls:<22} {len(shifts):>4} {100 * statistics.median(shifts):>+8.1f}% "
            f"{100 * max(shifts, key=abs):>+8.1f}% {within:>3}/{len(shifts):<2} "
            f"{100 * statistics.median(low):>+7.1f}% {100 * max(low, key=abs):>+7.1f}% "
            f"{low_within:>3}/{len(entry['low']):<2} "
            f"{100 * ok_share(entry['quiet']):>7.0f}% {100 * ok_share(entry['load']):>7.0f}%  "
            + ", ".join(f"{code} {n}" for code, n in reasons.most_common())
        )


if __name__ == "__main__":
    sys.exit(main())
