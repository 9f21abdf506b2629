"""Which change-point library finds the shifts of the recorded histories, and nothing else.

    python bench/changepoints.py [DIR ...]   (default: python/tests/fixtures/why/history_*)

Each DIR holds one machine's history, one engine run per file (JSON Lines),
in the order the files sort. Per variant (probe and params; ``ok`` figures,
or ``suspect`` for their spread alone, as ``ctxbench.analysis.compare.changes`` counts them)
the series of medians is given to every library that imports in the Python
running this script (series of fewer than 6 figures are skipped, as
``ctxbench.analysis.compare.changes`` skips them), each as its authors document it:

* ruptures: PELT with the rank cost, penalty 3 log n, at least 4 runs a
  segment (the proposals ``ctxbench.analysis.compare.changes`` tests), and for comparison PELT
  with least squares on the log figures (penalty 3 s^2 log n, s the noise of
  the run-to-run steps);
* Apache Otava 0.8.0 (``otava.analysis.compute_change_points``: E-Divisive
  means in sliding windows, a t-test per split, max p-value 0.001, its
  defaults otherwise);
* signal-processing-algorithms (``e_divisive``: E-Divisive with a
  permutation test, p 0.05, 100 permutations).

and, where ctxbench imports (PYTHONPATH=python/src), what `ctxbench history
--changes` keeps of ruptures' proposals after its test. It prints, per
library and history, each variant's change positions
(1-based: the first run of the new level). The libraries need different
numpy and scipy versions, so run it once per virtual environment. It reads
the files with the standard library only (no ctxbench import).
"""

from __future__ import annotations

import glob
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = sorted(glob.glob(os.path.join(ROOT, "python/tests/fixtures/why/history_*")))


def counts(record: dict) -> bool:
    """ctxbench.analysis.compare.changes.counts: ok, or suspect for its spread alone."""
    verdict = record["verdict"]
    codes = {reason["code"] for reason in verdict.get("reasons", [])}
    if not record.get("summary"):
        return False
    return verdict["status"] == "ok" or (
        verdict["status"] == "suspect" and bool(codes) and codes <= {"unstable", "high_spread"}
    )


def series(directory: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    files = sorted(glob.glob(os.path.join(directory, "*.jsonl")))
    for path in files:
        with open(path) as handle:
            for line in handle:
                record = json.loads(line)
                if record.get("kind") != "result" or not counts(record):
                    continue
                params = " ".join(f"{k}={v}" for k, v in sorted(record["params"].items()))
                name = f"{record['probe']} {params}".strip()
                out.setdefault(name, []).append(float(record["summary"]["median"]))
    return out


def with_ruptures(values: list[float]) -> list[int]:
    import numpy as np
    import ruptures

    signal = np.asarray(values, dtype=float).reshape(-1, 1)
    ends = (
        ruptures.Pelt(model="rank", min_size=4, jump=1)
        .fit(signal)
        .predict(pen=3.0 * math.log(len(values)))
    )
    return [end + 1 for end in ends if end < len(values)]


def with_ruptures_l2(values: list[float]) -> list[int]:
    """The least-squares cost on log figures, penalty 3 s^2 log n (s: the noise of
    the run-to-run steps), for comparison: it proposes more on a shared machine."""
    import numpy as np
    import ruptures

    logs = np.log(np.asarray(values))
    steps = np.diff(logs)
    scale = float(np.median(np.abs(steps - np.median(steps)))) / (0.6745 * math.sqrt(2.0))
    scale = scale or float(np.std(logs)) or 1e-12
    algorithm = ruptures.Pelt(model="l2", min_size=4, jump=1).fit(logs.reshape(-1, 1))
    ends = algorithm.predict(pen=3.0 * scale**2 * math.log(len(values)))
    return [end + 1 for end in ends if end < len(values)]


def with_otava(values: list[float]) -> list[int]:
    from otava.analysis import compute_change_points

    points, _ = compute_change_points(values, max_pvalue=0.001)
    return [int(point.index) + 1 for point in points]


def with_spa(values: list[float]) -> list[int]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return sorted(int(index) + 1 for index in e_divisive(values, pvalue=0.05, permutations=100))


def with_ctxbench(values: list[float]) -> list[int]:
    """What `ctxbench history --changes` keeps: PELT's proposals that pass its test."""
    from ctxbench.analysis.compare.changes import Point, series_changes

    points = [Point(str(i), i + 1, v) for i, v in enumerate(values)]
    return [start + 1 for start, _ in series_changes(points)[0]]


LIBRARIES = {
    "ruptures (rank)": with_ruptures,
    "ruptures (l2 on logs)": with_ruptures_l2,
    "ctxbench (ruptures + test)": with_ctxbench,
    "apache-otava": with_otava,
    "spa": with_spa,
}


def main(directories: list[str]) -> int:
    histories = {os.path.basename(d.rstrip("/")): series(d) for d in directories}
    for library, function in LIBRARIES.items():
        try:
            function([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0])
        except ImportError as error:
            print(f"{library}: not importable here ({error})")
            continue
        for history, variants in histories.items():
            found = {
                name: function(values) if len(values) >= 6 else []
                for name, values in variants.items()
            }
            changed = sum(1 for points in found.values() if points)
            print(f"{library} on {history}: {len(variants)} variants, {changed} with a change")
            for name, points in found.items():
                print(f"  {name} (n={len(variants[name])}): {points or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or DEFAULT))
