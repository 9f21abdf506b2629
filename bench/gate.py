"""How good `compare --fail-above` is: a confusion matrix of identical and slowed pairs.

Each pair takes quick runs of one selection (`ctxbench run SELECTION --quick`
plus --run-args): A, A' (identical) and one run B per slowdown mechanism,
each applied to its B alone:

* ``seccomp``: a seccomp filter that allows every system call but is
  evaluated on each one (`ctxbench-seccomp-exec allow --`, built with the
  engine). It slows what enters the kernel; user-level switches and the
  vDSO's clock reads never do (untouched).
* ``sched``: the scheduler's tracepoints recorded while B runs, in a tracefs
  instance of this script's own (sched_switch, sched_wakeup, sched_waking
  into its ring buffer): every context switch and wake-up pays for an
  event, a system call that does not switch does not. Untouched: the system
  calls other than sched_yield, and the user-level switches.

A' and the B runs are taken in turn, the order rotating from pair to pair,
so a drift of the host falls on all of them. --history K first takes K runs
that make the machine's history in the store (as a CI store would have);
then every A and A' joins it, so later pairs are judged by a longer history.
B runs never join it (a user's store would not hold a slowed run as the
machine's usual): each A/B comparison is made in a copy of the history
store with B added. With --load (or --load hog), a `stress-ng --cpu 1` runs
beside every run (bench/cpu_hog.py); with --load mix, a CI runner's other
jobs (bench/load_mix.py: compiles, a test-like interpreter loop, a writer
that syncs). Either is started before the first run, stopped after the
last, and on any exit of this script.

Judging (`compare`'s own code: build_comparison, the machine's history, gate)
per threshold: how many A/A and A/B gates passed, failed or were
inconclusive; per row class, A/A rows judged (slower or not slower) and the
median detectable slowdown; per mechanism and class, the pairs whose gate
called a row of the class slower, the median B/A ratio, and the untouched
rows called slower (false alarms too). Every row of every comparison is
counted as judged or inconclusive.

--confirm takes, right after A' and after each B, two more runs of the
same kind (its "again" and "third" runs, the whole selection, the same
conditions); a gate that failed is then judged again as `compare --confirm`
judges it (analysis.compare.gate.confirm and decide: a row stays slower when the
again run against A calls it slower too, unless the third calls it not
slower; one that is not is slower or not slower as two of the three runs
say, else inconclusive), and the tables
give the gates both ways. These runs never join the history. (`compare
--confirm` measures only the rows called slower, and a third time only
those not slower again, when the compare runs; here both runs are taken
whatever the first gate says, so that --replay can judge them at any
threshold. A directory kept before the third run existed is judged with
its again run alone.)

--keep DIR keeps every run's records (DIR/*.jsonl) and a manifest;
--replay DIR judges a kept directory again without measuring, so a change
of the gate's rules is measured on the same runs.

Usage: python3 bench/gate.py [--pairs K] [--history K] [--load [hog|mix]]
           [--mechanisms seccomp,sched] [--selection 'PROBES...']
           [--fail-above 10] [--run-args '...'] [--confirm] [--keep DIR | --replay DIR]
Prints tables; never used by tests (speed and noise live in bench/).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from load_mix import add_load_option, background_load, check_load, load_words
from run_to_run_cv import row_class

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))

from ctxbench.acquire.runner import find_engine  # noqa: E402
from ctxbench.analysis.compare.comparison import time_ratio  # noqa: E402
from ctxbench.analysis.compare.gate import (  # noqa: E402
    INCONCLUSIVE,
    NOT_SLOWER,
    SLOWER,
    confirm,
    decide,
    gate,
    third_variants,
)
from ctxbench.cli.commands.compare import build_comparison  # noqa: E402
from ctxbench.records.reading import read_run_file  # noqa: E402
from ctxbench.store.db import Store  # noqa: E402

DEFAULT_SELECTION = "syscall switch.pipe switch.futex uswitch"
SECCOMP_EXEC_NAME = "ctxbench-seccomp-exec"
TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
SCHED_EVENTS = ("sched_switch", "sched_wakeup", "sched_waking")
MECHANISMS = ("seccomp", "sched")
CLASSES = (
    "syscall",
    "vDSO call",
    "same-CPU switch",
    "cross-CPU switch",
    "user-level + syscall",
    "user-level",
    "other",
)
VDSO = ("syscall.clock_gettime_vdso", "syscall.gettimeofday_vdso")
# Rows a mechanism cannot reach: calling one slower is a false alarm.
UNTOUCHED = {
    "seccomp": ("vDSO call", "user-level"),
    "sched": ("syscall", "vDSO call", "user-level", "user-level + syscall"),
}
# ... except these, which may switch (to a CPU hog beside them, under --load).
MAY_SWITCH = ("syscall.sched_yield",)


def seccomp_exec() -> str:
    """ctxbench-seccomp-exec beside the engine that runs (CTXBENCH_ENGINE or the build)."""
    return os.path.join(os.path.dirname(str(find_engine())), SECCOMP_EXEC_NAME)


def gate_class(row: dict) -> str:
    if row["probe"] in VDSO:
        return "vDSO call"
    return row_class(row)


def untouched(mechanism: str, row: dict) -> bool:
    return gate_class(row) in UNTOUCHED[mechanism] and row["probe"] not in MAY_SWITCH


# ---- measuring ----------------------------------------------------------------------
def ctxbench_command() -> list[str]:
    return [sys.executable, "-m", "ctxbench"]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    source = os.path.join(ROOT, "python", "src")
    env["PYTHONPATH"] = source + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def wrapped_engine(prefix: list[str], directory: str) -> str:
    """A wrapper that runs the real engine under PREFIX, for CTXBENCH_ENGINE."""
    engine = str(find_engine())
    path = os.path.join(directory, "seccomp-engine")
    with open(path, "w", encoding="utf-8") as script:
        script.write("#!/bin/sh\n")
        script.write(f'exec {shlex.join(prefix)} {shlex.quote(engine)} "$@"\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def tracefs() -> str | None:
    return next((path for path in TRACEFS if os.path.isdir(os.path.join(path, "instances"))), None)


@contextlib.contextmanager
def sched_tracing() -> Iterator[None]:
    """The scheduler's switch and wake-up events recorded into a tracefs
    instance of this process's own, removed on the way out."""
    base = tracefs()
    if base is None:
        raise RuntimeError("no tracefs")
    instance = os.path.join(base, "instances", f"ctxbench-gate-{os.getpid()}")
    os.mkdir(instance)
    try:
        for event in SCHED_EVENTS:
            _write(os.path.join(instance, "events", "sched", event, "enable"), "1")
        _write(os.path.join(instance, "tracing_on"), "1")
        yield
    finally:
        with contextlib.suppress(OSError):
            _write(os.path.join(instance, "tracing_on"), "0")
        for event in SCHED_EVENTS:
            with contextlib.suppress(OSError):
                _write(os.path.join(instance, "events", "sched", event, "enable"), "0")
        os.rmdir(instance)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def run_once(selection: list[str], args: list[str], env: dict[str, str], directory: str,
             name: str) -> str:  # fmt: skip
    """One quick run, its records in DIRECTORY/NAME.jsonl; that path."""
    out = os.path.join(directory, f"{name}.jsonl")
    db = os.path.join(directory, "measure.db")
    command = [*ctxbench_command(), "run", *selection, "--quick", "--db", db, "--json", out, *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} exited {done.returncode}:\n{done.stderr}")
    return out


def measure(options: argparse.Namespace, directory: str) -> dict:
    """Take every run into DIRECTORY; the manifest (also written there)."""
    selection = shlex.split(options.selection)
    run_args = shlex.split(options.run_args)
    plain = environment()
    wrapper = wrapped_engine([seccomp_exec(), "allow", "--"], directory)
    seccomp = environment({"CTXBENCH_ENGINE": wrapper})
    manifest: dict = {
        "selection": options.selection,
        "run_args": options.run_args,
        "load": options.load,
        "mechanisms": options.mechanisms,
        "confirm": options.confirm,
        "history": [],
        "pairs": [],
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    walls: dict[str, list[float]] = defaultdict(list)

    def take(kind: str, name: str) -> str:
        started = time.monotonic()
        if kind == "sched":
            with sched_tracing():
                path = run_once(selection, run_args, plain, directory, name)
        else:
            env = seccomp if kind == "seccomp" else plain
            path = run_once(selection, run_args, env, directory, name)
        walls[kind].append(time.monotonic() - started)
        return os.path.basename(path)

    started = time.monotonic()
    with background_load(options.load):
        for k in range(options.history):
            manifest["history"].append(take("plain", f"history-{k + 1}"))
        for pair in range(1, options.pairs + 1):
            runs = {"A": take("plain", f"{pair}-A")}
            order = ["same", *options.mechanisms]
            shift = (pair - 1) % len(order)
            for kind in order[shift:] + order[:shift]:
                runs[kind] = take("plain" if kind == "same" else kind, f"{pair}-{kind}")
                if options.confirm:
                    for which in ("again", "third"):
                        runs[f"{kind}-{which}"] = take("plain" if kind == "same" else kind,
                                                       f"{pair}-{kind}-{which}")  # fmt: skip
            manifest["pairs"].append(runs)
            print(f"pair {pair}/{options.pairs} measured ({time.monotonic() - started:.0f} s)",
                  file=sys.stderr)  # fmt: skip
    manifest["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    manifest["wall_s"] = {kind: statistics.median(w) for kind, w in walls.items()}
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
    return manifest


# ---- judging ----------------------------------------------------------------------------
def judge(directory: str, manifest: dict, thresholds: list[float], allow: float) -> dict:
    """Every comparison of the kept runs, judged by compare's own code."""
    work = tempfile.mkdtemp(prefix="ctxbench-gate-judge-")
    history_db = os.path.join(work, "history.db")
    tallies: dict = {
        "gates": defaultdict(Counter),  # (percent, kind) -> outcome counts
        "rows": defaultdict(Counter),  # (percent, kind, class) -> outcome counts
        "detectable": defaultdict(list),  # (percent, kind, class) -> detectable slowdowns
        "ratios": defaultdict(list),  # (kind, class) -> B/A time ratios
        "caught": defaultdict(Counter),  # (percent, kind) -> pairs with a class row slower
        "untouched_slower": defaultdict(list),  # (percent, kind) -> variants
        "aa_slower": defaultdict(list),  # percent -> variants called slower in A/A
        "sources": Counter(),
        "why": defaultdict(Counter),  # (percent, kind) -> inconclusive rows by why
        "first": defaultdict(Counter),  # (percent, kind) -> outcomes before measuring again
    }
    try:
        with Store.open(history_db) as store:
            for name in manifest["history"]:
                store.add_run(read_run_file(Path(directory, name)), origin="import")
        for runs in manifest["pairs"]:
            with Store.open(history_db) as store:
                for kind in ("A", "same"):
                    store.add_run(read_run_file(Path(directory, runs[kind])),
                                  origin="import")  # fmt: skip
            for kind in ["same", *manifest["mechanisms"]]:
                later = [runs[f"{kind}-{w}"] for w in ("again", "third") if f"{kind}-{w}" in runs]
                db = history_db
                if kind != "same" or later:
                    db = os.path.join(work, f"with-{kind}.db")
                    shutil.copyfile(history_db, db)
                    with Store.open(db) as store:
                        for name in ([] if kind == "same" else [runs[kind]]) + later:
                            store.add_run(read_run_file(Path(directory, name)), origin="import")
                with Store.open(db) as store:
                    pair = [store.load(_run_id(directory, runs["A"])),
                            store.load(_run_id(directory, runs[kind]))]  # fmt: skip
                    comparison = build_comparison(store, pair)
                    taken = [store.load(_run_id(directory, name)) for name in later]
                    # Each later run against A, with B and the runs before it kept out.
                    seconds = [
                        build_comparison(store, [pair[0], run], leave_out=(pair[1], *taken[:k]))
                        for k, run in enumerate(taken)
                    ]
                for percent in thresholds:
                    judged = gate(comparison, percent, allow)
                    tallies["first"][(percent, kind)][judged.outcome] += 1
                    if seconds and judged.failed:
                        judged = judged_again(judged, seconds, taken, percent, allow)
                    tally(tallies, kind, percent, judged)
                for row in comparison.rows:
                    cell = row.cells[1]
                    ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
                    if ratio is not None:
                        tallies["ratios"][(kind, gate_class(_row(row)))].append(ratio)
                    if kind == "same" and cell.noise is not None:
                        tallies["sources"][cell.noise.source] += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tallies


def judged_again(judged, seconds, taken, percent: float, allow: float):
    """A failed gate judged as `compare --confirm` judges it: its again run
    (SECONDS[0]), then, for the rows not repeated and those slower twice,
    its third (SECONDS[1])."""
    judged = confirm(judged, gate(seconds[0], percent, allow), taken[0].run_id)
    if len(seconds) > 1 and third_variants(judged):
        judged = decide(judged, gate(seconds[1], percent, allow), taken[1].run_id)
    return judged


def _row(row) -> dict:
    return {"probe": row.probe, "family": row.family, "params": row.params}


def _run_id(directory: str, name: str) -> str:
    with open(os.path.join(directory, name), encoding="utf-8") as handle:
        return json.loads(handle.readline())["run_id"]


def tally(tallies: dict, kind: str, percent: float, judged) -> None:
    tallies["gates"][(percent, kind)][judged.outcome] += 1
    caught = set()
    for verdict in judged.rows:
        row = _row(verdict.row)
        name = gate_class(row)
        tallies["rows"][(percent, kind, name)][verdict.outcome] += 1
        if verdict.detectable is not None:
            tallies["detectable"][(percent, kind, name)].append(verdict.detectable)
        if verdict.outcome == INCONCLUSIVE:
            tallies["why"][(percent, kind)][f"{name}: {verdict.why}"] += 1
        if verdict.outcome != SLOWER:
            continue
        variant = f"{verdict.row.probe} {verdict.row.params}"
        if kind == "same":
            tallies["aa_slower"][percent].append(variant)
        elif untouched(kind, row):
            tallies["untouched_slower"][(percent, kind)].append(variant)
        else:
            caught.add(name)
    for name in caught:
        tallies["caught"][(percent, kind)][name] += 1


# ---- printing ----------------------------------------------------------------------------
def report(manifest: dict, tallies: dict, thresholds: list[float], allow: float) -> None:
    pairs = len(manifest["pairs"])
    kinds = ["same", *manifest["mechanisms"]]
    label = {"same": "A/A", "seccomp": "A/B seccomp", "sched": "A/B sched"}
    print(
        f"bench/gate.py: {pairs} pairs of `ctxbench run {manifest['selection']} --quick"
        + (f" {manifest['run_args']}" if manifest["run_args"] else "")
        + "`"
        + (f", {load_words(manifest['load'])}" if manifest["load"] else "")
        + f"; {len(manifest['history'])} runs of history first; "
        f"{manifest['started']} to {manifest.get('finished', '?')}"
    )
    walls = manifest.get("wall_s", {})
    if walls:
        print("median wall time of a run: " + ", ".join(f"{k} {v:.1f} s" for k, v in walls.items()))
    for percent in thresholds:
        print(f"\n--fail-above {percent:g}" + (f" --allow-inconclusive {allow:g}" if allow else ""))
        print("| gates | passed | failed | inconclusive |")
        print("|---|---:|---:|---:|")
        for kind in kinds:
            counts = tallies["gates"][(percent, kind)]
            print(f"| {label[kind]} | {counts['passed']} | {counts['failed']} | "
                  f"{counts['inconclusive']} |")  # fmt: skip
        if manifest.get("confirm"):
            print("(a failed gate judged again with its again and third runs, as "
                  "`compare --confirm` does; before that: " + "; ".join(
                      f"{label[kind]} {c['passed']}/{c['failed']}/{c['inconclusive']}"
                      for kind in kinds for c in [tallies['first'][(percent, kind)]])
                  + " passed/failed/inconclusive)")  # fmt: skip
        header = "| row class | A/A rows judged | A/A detectable (median) | A/A slower |"
        rule = "|---|---:|---:|---:|"
        for kind in kinds[1:]:
            header += f" {kind}: pairs caught | {kind}: B/A (median) | {kind}: judged |"
            rule += "---:|---:|---:|"
        print()
        print(header)
        print(rule)
        for name in CLASSES:
            counts = tallies["rows"][(percent, "same", name)]
            total = sum(counts.values())
            if not total:
                continue
            judged = counts[SLOWER] + counts[NOT_SLOWER]
            detectable = tallies["detectable"][(percent, "same", name)]
            line = (
                f"| {name} | {judged}/{total} | "
                + (f"{statistics.median(detectable):.1%}" if detectable else "—")
                + f" | {counts[SLOWER]} |"
            )
            for kind in kinds[1:]:
                ratios = tallies["ratios"][(kind, name)]
                other = tallies["rows"][(percent, kind, name)]
                touched = (
                    "untouched"
                    if name in UNTOUCHED[kind]
                    else f"{tallies['caught'][(percent, kind)][name]}/{pairs}"
                )
                line += (
                    f" {touched} | "
                    + (f"{statistics.median(ratios):.3f}" if ratios else "—")
                    + f" | {other[SLOWER] + other[NOT_SLOWER]}/{sum(other.values())} |"
                )
            print(line)
        aa = tallies["aa_slower"][percent]
        print(
            f"\nA/A rows called slower: {len(aa)}"
            + (f" ({'; '.join(sorted(set(aa)))})" if aa else "")
        )
        for kind in kinds[1:]:
            wrong = tallies["untouched_slower"][(percent, kind)]
            print(
                f"{kind}: untouched rows ({', '.join(UNTOUCHED[kind])}, "
                f"but not {', '.join(MAY_SWITCH)}) called slower: {len(wrong)}"
                + (f" ({'; '.join(sorted(set(wrong)))})" if wrong else "")
            )
        for kind in kinds:
            why = tallies["why"][(percent, kind)]
            if why:
                print(
                    f"{label[kind]} inconclusive rows by class and why: "
                    + ", ".join(f"{k} {n}" for k, n in sorted(why.items()))
                )
        inconclusive = sum(
            c[INCONCLUSIVE] for (p, _, _), c in tallies["rows"].items() if p == percent
        )
        judged = sum(
            c[SLOWER] + c[NOT_SLOWER] for (p, _, _), c in tallies["rows"].items() if p == percent
        )
        print(f"rows of every comparison: {judged} judged, {inconclusive} inconclusive")
    print("A/A rows by noise source: "
          + ", ".join(f"{s} {n}" for s, n in tallies["sources"].most_common()))  # fmt: skip


def read_manifest(parser: argparse.ArgumentParser, directory: str) -> dict:
    """--replay DIRECTORY's manifest.json (also bench/ab.py's); a usage error if unreadable."""
    try:
        with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        parser.error(f"--replay {directory}: no readable manifest.json ({error})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="pairs (default 10)")
    parser.add_argument(
        "--history", type=int, default=0, help="runs of the machine taken first (default 0)"
    )
    add_load_option(parser, "beside every run")
    parser.add_argument("--mechanisms", default="seccomp,sched",
                        help="slowdowns of B, comma-separated: seccomp, sched")  # fmt: skip
    parser.add_argument("--selection", default=DEFAULT_SELECTION, help="probes to run")
    parser.add_argument("--fail-above", default="10", help="thresholds in percent (10; e.g. 10,5)")
    parser.add_argument("--allow-inconclusive", type=float, default=0.0, metavar="PCT")
    parser.add_argument("--run-args", default="", help="extra `ctxbench run` options, all runs")
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="take an again and a third run after A' and each B; judge failed gates again",
    )
    parser.add_argument("--keep", help="keep the runs' records in this directory")
    parser.add_argument("--replay", help="judge the runs kept in this directory again")
    options = parser.parse_args()
    try:
        thresholds = [float(t) for t in options.fail_above.split(",") if t.strip()]
    except ValueError:
        parser.error(f"--fail-above {options.fail_above!r}: give percents such as 10,5")
    if options.replay:
        directory = options.replay
        manifest = read_manifest(parser, directory)
    else:
        options.mechanisms = [m for m in options.mechanisms.split(",") if m]
        unknown = set(options.mechanisms) - set(MECHANISMS)
        if unknown:
            parser.error(f"--mechanisms: unknown {', '.join(sorted(unknown))}; use seccomp, sched")
        if options.pairs < 1 or options.history < 0:
            parser.error("--pairs must be at least 1 and --history at least 0")
        if "seccomp" in options.mechanisms and not os.access(seccomp_exec(), os.X_OK):
            parser.error(f"{seccomp_exec()} is not built; `make engine`")
        if "sched" in options.mechanisms and (os.geteuid() != 0 or tracefs() is None):
            parser.error("the sched mechanism needs root and tracefs "
                         "(mount -t tracefs nodev /sys/kernel/tracing)")  # fmt: skip
        check_load(parser, options.load)
        directory = options.keep or tempfile.mkdtemp(prefix="ctxbench-gate-")
        os.makedirs(directory, exist_ok=True)
        # SIGTERM and SIGHUP end the script through its finally blocks (the
        # load, bench/cpu_hog.py or bench/load_mix.py, and the tracefs
        # instance go with it).
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda number, frame: sys.exit(128 + number))
        try:
            manifest = measure(options, directory)
        except RuntimeError as error:
            print(f"gate: {error}", file=sys.stderr)
            return 1
    tallies = judge(directory, manifest, thresholds, options.allow_inconclusive)
    report(manifest, tallies, thresholds, options.allow_inconclusive)
    print(f"runs kept in {directory} (--replay {directory} judges them again)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
