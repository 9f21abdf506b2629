"""Reruns the classic experiments with ctxbench-engine and prints
docs/reproductions.md (markdown, the whole page), so the doc's figures come
from one command.

Usage: python3 bench/reproductions.py [--engine PATH] [--quick] [--out FILE.jsonl]
       python3 bench/reproductions.py --from RUN.jsonl

Every experiment is one engine invocation; the raw JSON Lines of all of them
can be kept with --out (and imported with `ctxbench import`). With --from,
nothing is measured: the tables are cut from one recorded whole-catalogue run
(`make docs` uses docs/data/reference-run.jsonl, so the page agrees with
docs/probes.md), taking the variants the engine says each experiment selects
(`run --dry-run`), so the selection rules stay the engine's. Every figure on
the page, the prose's included, is read from the records; the page names the
run and the machine they come from.
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXPERIMENTS = [
    # (title, engine arguments, peer it reproduces)
    (
        "lmbench lat_ctx: ring of N processes, S KiB touched per hop (us per switch, corrected)",
        ["switch.ring", "--param", "procs=2,4,8,16", "--param", "size_kib=0,16,64"],
        "lat_ctx -s S N",
    ),
    (
        "lmbench lat_syscall",
        [
            "syscall.getppid",
            "syscall.read",
            "syscall.write",
            "syscall.getpid",
            "syscall.enosys",
        ],
        "lat_syscall null|read|write",
    ),
    (
        "lmbench lat_proc",
        ["create.fork", "create.vfork", "create.fork_exec", "create.posix_spawn"],
        "lat_proc fork|exec",
    ),
    (
        "Two processes, two pipes: n switches in a row, minimum over many tries",
        ["switch.burst"],
        "the 20/200/20000-switch experiment",
    ),
    (
        "eliben thread-switch-pipe / thread-switch-condvar (threads, one CPU)",
        ["switch.pipe", "switch.condvar", "--between", "threads", "--cpus", "same"],
        "thread-switch-pipe.c, thread-switch-condvar.c",
    ),
    (
        "eliben thread-pipe-msgpersec: round trips per second over pipes",
        ["msgrate.pipe", "--cpus", "same,cross", "--param", "payload=1,64,4096,65536"],
        "thread-pipe-msgpersec.c",
    ),
    (
        "Syscall, creation and switch summary (samples, avg, min, max, stddev)",
        [
            "syscall.getpid",
            "syscall.getppid",
            "syscall.gettimeofday_vdso",
            "syscall.gettimeofday_syscall",
            "create.fork",
            "create.pthread",
            "switch.pipe",
            "switch.futex",
            "--cpus",
            "same",
        ],
        "",
    ),
]


def select(engine: str, records: list[dict], args: list[str]) -> list[dict]:
    """The records of `records` that `ctxbench-engine run ARGS` would have
    produced: the engine expands ARGS (`run --dry-run`), by its own rules."""
    cmd = [engine, "run", *args, "--dry-run"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"reproductions.py: {' '.join(cmd)} failed: {proc.stderr.strip()}")
    variants = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]

    # A record is one of the variants when every parameter it has takes the
    # variant's value; a parameter added to the probe after the recorded run
    # (absent from its records) does not exclude it.
    def selected(record: dict) -> bool:
        return any(
            v["probe"] == record["probe"]
            and all(v["params"].get(k) == value for k, value in record["params"].items())
            for v in variants
        )

    return [r for r in records if r["kind"] == "result" and selected(r)]


def run_engine(engine: str, args: list[str], quick: bool) -> list[dict]:
    cmd = [engine, "run", "--json", *(["--quick"] if quick else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"reproductions.py: {' '.join(cmd)} failed: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def fmt_ns(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 10000:
        return f"{value / 1000:.1f} us"
    return f"{value:.0f} ns" if abs(value) >= 100 else f"{value:.1f} ns"


def params_text(record: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in record["params"].items()) or "-"


def table(records: list[dict]) -> list[str]:
    rows = [
        "| probe | params | n | median | avg | min | max | stddev | baseline | corrected "
        "| verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        s = r["summary"]
        if s is None:
            reason = r["verdict"]["reasons"][0]["detail"]
            rows.append(
                f"| {r['probe']} | {params_text(r)} | - | - | - | - | - | - | - | - "
                f"| {r['verdict']['status']}: {reason} |"
            )
            continue
        unit = r["unit"]

        def show(value, unit=unit):
            return fmt_ns(value) if unit == "ns" else f"{value:,.0f} {unit}"

        base = r["baseline"]["value"] if r["baseline"] else None
        corrected = r["corrected"]["median"] if r["corrected"] else None
        codes = ", ".join(x["code"] for x in r["verdict"]["reasons"])
        verdict = r["verdict"]["status"] + (f" ({codes})" if codes else "")
        rows.append(
            f"| {r['probe']} | {params_text(r)} | {s['n']} | {show(s['median'])} "
            f"| {show(s['mean'])} "
            f"| {show(s['min'])} | {show(s['max'])} | {show(s['stddev'])} | {fmt_ns(base)} "
            f"| {fmt_ns(corrected)} | {verdict} |"
        )
    return rows


def ring_grid(records: list[dict]) -> list[str]:
    """The corrected µs per hop, procs by KiB: one grid per policy."""
    rows = []
    for policy in sorted({r["params"].get("policy", "") for r in records}):
        mine = [r for r in records if r["params"].get("policy", "") == policy]
        sizes = sorted({r["params"]["size_kib"] for r in mine})
        procs = sorted({r["params"]["procs"] for r in mine})
        cell = {(r["params"]["procs"], r["params"]["size_kib"]): r for r in mine}
        rows += [
            f"policy={policy}:" if policy else "",
            "",
            "| procs \\ KiB | " + " | ".join(f"{s:g}" for s in sizes) + " |",
            "|---" * (len(sizes) + 1) + "|",
        ]
        for p in procs:
            values = []
            for s in sizes:
                r = cell.get((p, s))
                if not r or r["corrected"] is None:
                    values.append("-")
                else:
                    flag = "" if r["verdict"]["status"] == "ok" else " (suspect)"
                    values.append(f"{r['corrected']['median'] / 1000:.2f}{flag}")
            rows.append(f"| {p:g} | " + " | ".join(values) + " |")
        rows.append("")
    return rows


MAPPING_ROWS = [
    # (classic experiment, ctxbench, differences worth knowing)
    (
        "lmbench `lat_ctx -s S N`",
        "`switch.ring --param procs=N --param size_kib=S`",
        "lmbench subtracts a hot-cache overhead pass and drops results ≤ 0; ctxbench subtracts "
        "the same kind of pass (one process, its own pipe, summing S KiB) but keeps and flags "
        "non-positive results. Pinned to one CPU by default (`--cpus same`), where lmbench "
        "leaves placement to `LMBENCH_SCHED`.",
    ),
    (
        "lmbench `lat_syscall null/read/write`",
        "`syscall.getppid`, `syscall.read`, `syscall.write` (+ `syscall.getpid`, `syscall.enosys`)",
        "lmbench's null call is getppid; ctxbench adds the raw-syscall getpid (no libc cache) "
        "and an invalid number (the bare entry/exit).",
    ),
    (
        "lmbench `lat_proc fork/exec`",
        "`create.fork`, `create.vfork`, `create.fork_exec`, `create.posix_spawn`",
        "exec targets a static helper (`ctxbench-exit0`), like lmbench's `hello-s`.",
    ),
    (
        "two processes, two pipes, n = 20/200/20000 switches, minimum of many tries",
        "`switch.burst`",
        "exactly n/2 round trips per sample, 1000 tries; the minimum is the summary's `min`.",
    ),
    (
        "eliben `thread-switch-pipe`, `thread-switch-condvar`",
        "`switch.pipe`, `switch.condvar` with `--between threads --cpus same`",
        "eliben's self-pipe baseline is the baseline here, subtracted in the record rather "
        "than by hand.",
    ),
    (
        "eliben `thread-pipe-msgpersec`",
        "`msgrate.pipe --param payload=…`",
        "unit msgs/s: round trips per second.",
    ),
    (
        "a syscall/creation/switch table with samples, avg, min, max, stddev",
        "any selection; the columns below are the record's `summary`",
        "",
    ),
]
MAPPING = "\n".join(
    [
        "## How each experiment maps onto ctxbench",
        "",
        "| classic experiment | ctxbench | differences worth knowing |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in MAPPING_ROWS),
        "",
    ]
)


def wrap(text: str) -> str:
    """A paragraph or bullet of prose filled to 78 columns; tables, headings
    and code stay as they are."""
    if text.startswith(("|", "#", "<!--")) or "\n" in text or len(text) <= 78:
        return text
    indent = "  " if text.startswith("- ") else ""
    return textwrap.fill(
        text, 78, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def machine(env: dict) -> str:
    """The run and the machine, in the words every section repeats."""
    return (
        f"run {env['run_id']} on {env['cpu']['model']}, {env['cpu']['logical']} CPUs, "
        f"kernel {env['kernel']['release']}, virtualization {env['virtualization']['detected']}"
    )


def intro(env: dict, source: str | None, quick: bool) -> list[str]:
    options = env.get("options", {})
    if source:
        where = (
            "Every table below was cut from one whole-catalogue run, "
            f"`{source}` (recorded by `make reference-run`: `ctxbench-engine run --out {source}` "
            "with the default settings), by `make docs` "
            f"(`python3 bench/reproductions.py --from {source}`)"
        )
    else:
        where = (
            "Every table below was measured by `python3 bench/reproductions.py"
            + (" --quick" if quick else "")
            + "`, one engine run per experiment"
        )
    settings = (
        f"{options.get('samples', '?')} samples per variant, batches of at least "
        f"{options.get('min_time_s', 0) * 1000:g} ms"
        + (", quick" if options.get("quick") else "")
        + ", medians shown"
    )
    timer = env["cpu"].get("tsc", {}).get("timer", "?")
    return [
        "# Reproducing the classic experiments with ctxbench",
        "",
        "<!-- Generated by bench/reproductions.py (`make docs`): do not edit by hand. -->",
        "",
        "How to rerun, with `ctxbench-engine` (or `ctxbench run`, which takes the same",
        "probe names and options), the experiments people usually quote from lmbench,",
        "the two-pipe switch burst, eliben's threadoverhead programs and the",
        "syscall/creation/switch summary table — and what they gave on this project's",
        "machine.",
        "",
        f"**Where the figures come from.** {where}; {settings}. The machine: "
        f"{machine(env)}, timer {timer}; the run started {env.get('started_at', '?')}. "
        "The same figures appear per probe in [probes.md](probes.md). To measure your "
        "own machine instead, drop `--from` and the script runs each experiment itself "
        "(add `--quick` for a fast pass, `--out FILE` to keep the records for "
        "`ctxbench import`).",
        "",
        "Times are per operation as each probe defines it (one switch, one call, one",
        "creation); *baseline* is the no-switch cost measured in the same run and",
        "*corrected* is the median minus the baseline median. Verdicts are the",
        "engine's own checks against the kernel's counters.",
        "",
        MAPPING,
    ]


def find(records: list[dict], probe: str, **params) -> dict | None:
    """The first result of `probe` whose params include `params`."""
    for r in records:
        if (
            r.get("kind") == "result"
            and r["probe"] == probe
            and r.get("summary")
            and all(r["params"].get(k) == v for k, v in params.items())
        ):
            return r
    return None


def reading(env: dict, records: list[dict]) -> list[str]:
    """What the tables say, each figure read from the records (a point whose
    records are missing is left out)."""
    out = ["## Reading the figures", ""]
    ring = [
        r
        for r in records
        if r.get("kind") == "result" and r["probe"] == "switch.ring" and r.get("corrected")
    ]
    if ring:
        corrected = [r["corrected"]["median"] / 1000 for r in ring]
        out.append(
            f"- **Ring (lat_ctx).** The corrected cost per hop ranges from {min(corrected):.2f} "
            f"to {max(corrected):.2f} µs over the grid (per policy, in the table). More "
            "processes and more KiB mean each hop finds less of its data and page-table "
            "entries in cache. The subtracted baseline grows with S (it is summing S KiB "
            "with hot caches), so the corrected column is the switch plus the *extra* "
            "cache refill, which is lmbench's definition."
        )
    enosys, getpid = find(records, "syscall.enosys"), find(records, "syscall.getpid")
    if enosys and getpid:
        e, g = enosys["summary"]["median"], getpid["summary"]["median"]
        out.append(
            f"- **System calls.** `syscall.enosys` (an invalid number: entry, dispatch to "
            f"`sys_ni_syscall`, exit) takes {fmt_ns(e)}, {100 * e / g:.0f}% of getpid's "
            f"{fmt_ns(g)}: that share of a trivial call is the entry/exit path and its "
            "mitigations, not the call. `read`/`write` of one byte add the VFS path."
        )
    fork, vfork = find(records, "create.fork"), find(records, "create.vfork")
    fork_exec = find(records, "create.fork_exec")
    if fork and vfork and fork_exec:
        out.append(
            f"- **Creation.** fork ({fmt_ns(fork['summary']['median'])}) copies the parent's "
            f"page tables and tears the child down; vfork ({fmt_ns(vfork['summary']['median'])}) "
            f"skips the copy; fork + exec ({fmt_ns(fork_exec['summary']['median'])}) adds "
            "loading a program."
        )
    bursts = [r for r in records if r.get("kind") == "result" and r["probe"] == "switch.burst"]
    bursts = [r for r in bursts if r.get("summary")]
    if bursts:
        mins = ", ".join(
            f"n={r['params']['n']:g} {r['params'].get('policy', '')}: {fmt_ns(r['summary']['min'])}"
            for r in bursts
        )
        out.append(
            f"- **Burst.** The minimum per switch ({mins}) is taken once the partner is "
            "already running (ctxbench starts both sides and does a round trip before any "
            "timing): start-up effects are outside the timed region by design."
        )
    cross = find(records, "switch.pipe", cpus="cross", between="processes", policy="normal")
    same = find(records, "switch.pipe", cpus="same", between="processes", policy="normal")
    cross = cross or find(records, "switch.pipe", cpus="cross", between="processes")
    same = same or find(records, "switch.pipe", cpus="same", between="processes")
    if cross and same:
        virtual = env["virtualization"]["detected"] not in ("none", "", None)
        out.append(
            f"- **Cross-CPU.** `switch.pipe {params_text(cross)}` took "
            f"{fmt_ns(cross['summary']['median'])} per switch in this run, against "
            f"{fmt_ns(same['summary']['median'])} for `{params_text(same)}` (see "
            "[probes.md](probes.md))"
            + (
                ": on a virtual machine every wake-up of an idle vCPU is an IPI and a halt "
                "exit through the hypervisor."
                if virtual
                else "."
            )
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--engine", default=os.path.join(ROOT, "build", "engine", "ctxbench-engine")
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="also write every record (JSON Lines) here")
    parser.add_argument("--from", dest="source", help="cut the tables from this recorded run")
    args = parser.parse_args()
    recorded = None
    if args.source:
        try:
            with open(args.source) as f:
                recorded = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as e:
            print(f"reproductions.py: cannot read {args.source}: {e}", file=sys.stderr)
            return 2
        if not recorded or recorded[0].get("kind") != "env":
            print(
                f"reproductions.py: {args.source} does not start with an env record; "
                "record it with 'make reference-run'",
                file=sys.stderr,
            )
            return 2
    if not os.access(args.engine, os.X_OK):
        print(f"reproductions.py: no engine at {args.engine}; run 'make engine'", file=sys.stderr)
        return 2
    if args.out:
        open(args.out, "w").close()
    sections: list[str] = []
    every: list[dict] = []
    first_env = None
    for title, engine_args, peer in EXPERIMENTS:
        if recorded is not None:
            records = [recorded[0], *select(args.engine, recorded, engine_args)]
        else:
            records = run_engine(args.engine, engine_args, args.quick)
        if args.out:
            with open(args.out, "a") as kept:
                kept.writelines(json.dumps(r) + "\n" for r in records)
        env = records[0]
        first_env = first_env or env
        results = [r for r in records if r["kind"] == "result"]
        every.extend(results)
        sections.append(f"## {title}\n")
        command = "ctxbench-engine run " + " ".join(
            f"'{a}'" if "*" in a else a for a in engine_args
        )
        sections.append(f"`{command}`" + (f" — reproduces {peer}" if peer else "") + "\n")
        sections.append(machine(env)[0].upper() + machine(env)[1:] + ".\n")
        if engine_args[0] == "switch.ring":
            sections.append("\n".join(ring_grid(results)).strip() + "\n")
        sections.append("\n".join(table(results)) + "\n")
    page = intro(first_env, args.source, args.quick) + sections
    # The prose reads the whole recorded run where there is one (the
    # cross-CPU switch is not among the experiments).
    page += reading(first_env, recorded if recorded is not None else every)
    print("\n".join(wrap(line) for line in page))
    return 0


if __name__ == "__main__":
    sys.exit(main())
