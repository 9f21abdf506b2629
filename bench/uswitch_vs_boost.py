"""ctxbench's own assembly switch beside Boost.Context, side by side in one
engine run, with the ratio (issue 3: uswitch.asm must be at most 1.1x the
median of uswitch.boost_context).

Each round is one `ctxbench-engine run` of uswitch.asm (fpstate=abi,
fpcontrol=same: the callee-saved set, as jump_fcontext saves it) and
uswitch.boost_context (api=fiber, the public boost::context::fiber, and
api=fcontext, the jump_fcontext assembly under it). Every figure is the
engine's median ns per switch (one op = one switch, half a round trip,
timer-corrected). The ratio is asm / boost for each api, per round; the
summary gives the median and the worst round.

Usage: python3 bench/uswitch_vs_boost.py [--engine PATH] [--rounds N]
                                         [--samples N] [--cpu N] [--check]
--cpu pins the engine with taskset; --check exits 1 if the median ratio
exceeds 1.1. Prints a table; never used by tests (speed lives here).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 1.1


def default_engine() -> str:
    for candidate in (
        os.environ.get("CTXBENCH_ENGINE", ""),
        os.path.join(ROOT, "build", "engine", "ctxbench-engine"),
        os.path.join(ROOT, "build", "h-uswitch", "ctxbench-engine"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return os.path.join(ROOT, "build", "engine", "ctxbench-engine")


def one_round(engine: str, samples: int, cpu: int | None) -> dict[str, float]:
    probes = ["uswitch.asm", "uswitch.boost_context"]
    cmd = [engine, "run", "--json", "--samples", str(samples), *probes]
    cmd += ["--param", "fpstate=abi", "--param", "fpcontrol=same"]
    if cpu is not None:
        if not shutil.which("taskset"):
            sys.exit("uswitch_vs_boost: --cpu needs taskset (util-linux)")
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"uswitch_vs_boost: {' '.join(cmd)} failed:\n{proc.stderr.strip()[:500]}")
    medians: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        if record.get("kind") != "result":
            continue
        api = record["params"].get("api")
        name = record["probe"] + (f"/{api}" if api else "")
        status = record["verdict"]["status"]
        if status not in ("ok", "suspect"):
            reasons = "; ".join(r["detail"] for r in record["verdict"]["reasons"])
            sys.exit(f"uswitch_vs_boost: {name} is {status}: {reasons}")
        medians[name] = record["summary"]["median"]
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default=default_engine())
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a median ratio > {LIMIT}")
    args = parser.parse_args()
    if not os.access(args.engine, os.X_OK):
        sys.exit(f"uswitch_vs_boost: no engine at {args.engine}; run make engine or pass --engine")

    asm = "uswitch.asm"
    fiber, fcontext = "uswitch.boost_context/fiber", "uswitch.boost_context/fcontext"
    print(f"engine: {args.engine}; {args.rounds} rounds x {args.samples} samples")
    print("ns per switch (medians); ratio = asm / boost")
    header = ("round", "asm", "boost fiber", "boost fcontext", "asm/fiber", "asm/fcontext")
    print("{:>5} {:>9} {:>12} {:>15} {:>10} {:>13}".format(*header))
    ratios: dict[str, list[float]] = {fiber: [], fcontext: []}
    for n in range(1, args.rounds + 1):
        m = one_round(args.engine, args.samples, args.cpu)
        for api in ratios:
            ratios[api].append(m[asm] / m[api])
        print(
            f"{n:>5} {m[asm]:>9.2f} {m[fiber]:>12.2f} {m[fcontext]:>15.2f} "
            f"{ratios[fiber][-1]:>10.3f} {ratios[fcontext][-1]:>13.3f}"
        )
    worst = 0.0
    for api, values in ratios.items():
        median = statistics.median(values)
        worst = max(worst, median)
        label = api.split("/")[1]
        print(f"asm / {label}: median ratio {median:.3f}, worst round {max(values):.3f}")
    verdict = "yes" if worst <= LIMIT else "no"
    print(f"uswitch.asm within {LIMIT}x of uswitch.boost_context (median over rounds): {verdict}")
    return 1 if args.check and worst > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
