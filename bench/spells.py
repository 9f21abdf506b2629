"""The host's slow spells: does the host reference see them, and what does
setting aside the samples it flags do to the figure?

Runs bench/spells.c (compiled here with cc -O2): a pipe ping-pong between two
threads on one CPU, with the engine's host reference (128 getppid calls)
timed before each ~10 ms batch. Prints:

- how often and for how long the reference ran over 1.20x its best (the
  engine's threshold), and the switch figure in and out of those moments;
- the correlation of the two series;
- the run cut into windows of 30 batches (a variant's samples): the CV of the
  windows' medians over every batch, and over the batches whose reference
  ran fast (what the engine keeps when it sets slowed samples aside), with
  the share of windows that had fewer than 5 fast batches (where the engine
  would measure the variant again later instead).

Usage: python3 bench/spells.py [--seconds 60] [--cpu 0] [--window 30]
Speed lives here, never in the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOWED = 1.20  # the engine's slowed_ratio (engine/src/model/interference.hpp)


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--window", type=int, default=30, help="batches per window")
    args = parser.parse_args()
    if args.seconds <= 0 or args.window < 5:
        print("spells.py: --seconds must be positive and --window at least 5", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ctxbench-spells-") as tmp:
        exe = os.path.join(tmp, "spells")
        source = os.path.join(ROOT, "bench", "spells.c")
        subprocess.run(
            ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", exe, source], check=True
        )
        out = subprocess.run(
            [exe, f"{args.seconds:g}", str(args.cpu)], capture_output=True, text=True, check=True
        ).stdout
    rows = [tuple(float(x) for x in line.split()) for line in out.splitlines() if line.strip()]
    if len(rows) < 2 * args.window:
        print(f"spells.py: only {len(rows)} batches; run longer", file=sys.stderr)
        return 1
    times = [r[0] for r in rows]
    refs = [r[1] for r in rows]
    switch = [r[2] for r in rows]
    best = min(refs)
    slow = [ref > SLOWED * best for ref in refs]
    spells, start = [], None
    for i, flag in enumerate([*slow, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            end = times[i] if i < len(times) else times[-1]
            spells.append(end - times[start])
            start = None
    fast_sw = [s for s, flag in zip(switch, slow, strict=True) if not flag]
    slow_sw = [s for s, flag in zip(switch, slow, strict=True) if flag]
    print(
        f"{len(rows)} batches over {args.seconds:g} s on CPU {args.cpu}; "
        f"reference best {best:.0f} ns"
    )
    print(
        f"batches with the reference over {SLOWED:.2f}x its best: {sum(slow)} "
        f"({100 * sum(slow) / len(rows):.0f}%), in {len(spells)} spells"
        + (
            f" of {min(spells):.0f}-{max(spells):.0f} ms (median {statistics.median(spells):.0f})"
            if spells
            else ""
        )
    )
    print(
        f"pipe switch, median ns: reference fast {statistics.median(fast_sw):.1f}"
        + (f", reference slowed {statistics.median(slow_sw):.1f}" if slow_sw else "")
    )
    print(
        f"correlation of reference and switch, batch by batch: "
        f"{statistics.correlation(refs, switch):.2f}"
    )
    every, kept, thin = [], [], 0
    for i in range(0, len(rows) - args.window + 1, args.window):
        window = range(i, i + args.window)
        every.append(statistics.median(switch[k] for k in window))
        fast = [switch[k] for k in window if not slow[k]]
        if len(fast) >= 5:
            kept.append(statistics.median(fast))
        else:
            thin += 1
    print(
        f"windows of {args.window} batches: {len(every)}; CV of their medians, "
        f"every batch {100 * cv(every):.1f}%, fast-reference batches only "
        f"{100 * cv(kept):.1f}% ({thin} windows with fewer than 5 such batches left out)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
