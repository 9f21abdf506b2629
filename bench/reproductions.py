"""Reruns the classic experiments with ctxbench-engine and prints the tables of
docs/reproductions.md (markdown), so the doc's figures come from one command.

Usage: python3 bench/reproductions.py [--engine PATH] [--quick] [--out FILE.jsonl]
       python3 bench/reproductions.py --from RUN.jsonl

Every experiment is one engine invocation; the raw JSON Lines of all of them
can be kept with --out (and imported with `ctxbench import`). With --from,
nothing is measured: the tables are cut from one recorded whole-catalogue run
(the docs use docs/data/reference-run.jsonl, so they agree with
docs/probes.md), taking the variants the engine says each experiment selects
(`run --dry-run`), so the selection rules stay the engine's.
"""

import argparse
import json
import os
import subprocess
import sys

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
    sizes = sorted({r["params"]["size_kib"] for r in records})
    procs = sorted({r["params"]["procs"] for r in records})
    cell = {(r["params"]["procs"], r["params"]["size_kib"]): r for r in records}
    rows = [
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
    return rows


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
        with open(args.source) as f:
            recorded = [json.loads(line) for line in f if line.strip()]
    if not os.access(args.engine, os.X_OK):
        print(f"reproductions.py: no engine at {args.engine}; run 'make engine'", file=sys.stderr)
        return 2
    if args.out:
        open(args.out, "w").close()
    for title, engine_args, peer in EXPERIMENTS:
        if recorded is not None:
            records = [recorded[0], *select(args.engine, recorded, engine_args)]
        else:
            records = run_engine(args.engine, engine_args, args.quick)
        if args.out:
            with open(args.out, "a") as kept:
                kept.writelines(json.dumps(r) + "\n" for r in records)
        env = records[0]
        results = [r for r in records if r["kind"] == "result"]
        print(f"### {title}\n")
        command = "ctxbench-engine run " + " ".join(
            f"'{a}'" if "*" in a else a for a in engine_args
        )
        print(f"`{command}`" + (f" — reproduces {peer}" if peer else "") + "\n")
        print(
            f"Run {env['run_id']} on {env['cpu']['model']}, {env['cpu']['logical']} CPUs, "
            f"kernel {env['kernel']['release']}, "
            f"virtualization {env['virtualization']['detected']}.\n"
        )
        if engine_args[0] == "switch.ring":
            print("\n".join(ring_grid(results)) + "\n")
        print("\n".join(table(results)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
