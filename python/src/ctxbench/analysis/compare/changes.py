"""Change points in a machine's history: the runs where a variant's figure shifted and stayed.

Apache Otava (E-Divisive means, as MongoDB and DataStax run it on their
nightly performance history) looks through a series of results for the
points where its level moved. Here the series is one variant's figure
(its median) over a machine's stored runs in the order they were measured; a
machine is a host name and the run options that change what a figure is
(``compare.run_options``: --quick, samples, batch time). Nothing else of
the environment splits the history: a new kernel, a seccomp filter or a
hypervisor change is what this looks for.

A figure counts when its verdict is ``ok``, or ``suspect`` only for its
spread (``NOISY``: unstable or high spread; on a shared machine most quick
figures are): such a figure is noisier, not of something else. A suspect
figure for any other reason (too few switches, a migration...) measured
something else and is left out.

The search is ``ruptures``' PELT (Killick, Fearnhead & Eckley 2012) with
its rank cost (a segment's cost from the ranks of the figures, so one slow
run on a shared machine does not look like a level of its own, and the
figures' scale does not matter) and a penalty of ``PENALTY`` x log(n); each
segment has at least ``MIN_RUNS`` runs, so a shift must stay to be found.
docs/reading-a-difference.md says why PELT and not Otava's own E-Divisive or
signal-processing-algorithms (measured on the recorded histories with
bench/changepoints.py). Each change PELT proposes is then tested as a
comparison is: the segment before against the segment after (the runs'
figures as samples: Mann-Whitney U and the bootstrap interval of the ratio
of their medians, ``stats.compare_samples``), and kept only when it is
significant and the whole interval lies beyond ``min_effect``.

Each change found gets the environment difference across it (the last run
before against the first run after, ranked by ``envparts``) and the parts
of that one pair of runs that moved (``difference_parts``).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ctxbench import stats
from ctxbench.analysis.compare import envparts
from ctxbench.analysis.compare.comparison import MEASUREMENT_OPTIONS, run_options
from ctxbench.records.envdiff import env_diff
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.runs import RunInfo, StoredRun

METHOD = (
    "ruptures PELT, rank cost, penalty 3 log n, at least 4 runs a segment; each change kept "
    "when the U test of the runs before against after is significant and the whole bootstrap "
    "interval of the ratio of their medians is beyond the minimum effect"
)
PENALTY = 3.0
MIN_RUNS = 4
DEFAULT_MIN_EFFECT = 0.05
NOISY = ("unstable", "high_spread")  # suspect reasons that leave a figure in the series


def counts(result: Result) -> bool:
    """A figure of the series: ok, or suspect for its spread alone."""
    verdict = result.verdict
    if result.summary is None:
        return False
    if verdict.status == "ok":
        return True
    codes = set(verdict.codes)
    return verdict.status == "suspect" and bool(codes) and codes <= set(NOISY)


@dataclass(frozen=True)
class Point:
    run_id: str
    position: int  # 1-based, in the machine's measured order
    figure: float


@dataclass
class Change:
    probe: str
    params: dict[str, ParamValue]
    unit: str
    position: int  # 1-based: the first run of the new level
    run_id: str  # that run
    before_run_id: str  # the last run of the old level
    before: list[Point]
    after: list[Point]
    difference: stats.Difference  # after against before
    environment: list[envparts.KeyDifference] = field(default_factory=list)
    largest_part: str | None = None  # the part of the row that moved most across it
    largest_group: str | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.difference.ratio is None else self.difference.ratio.ratio


@dataclass
class MachineChanges:
    hostname: str
    options: Mapping[str, object]
    runs: list[RunInfo]
    examined: int  # variants with enough figures to look at
    too_short: int  # variants with fewer than 2 x MIN_RUNS figures: few_runs + few_figures
    changes: list[Change]
    proposed: int  # changes PELT proposed before the test
    variants: int = 0  # variants the runs measured or tried (those of --probe)
    few_runs: int = 0  # of too_short: in fewer than 2 x MIN_RUNS runs at all
    few_figures: int = 0  # of too_short: in enough runs, too few figures that count

    @property
    def judged_none(self) -> bool:
        """Nothing was looked at: no all-clear can be given."""
        return self.examined == 0

    @property
    def judged_all(self) -> bool:
        return self.examined == self.variants


def change_points(figures: Sequence[float], penalty: float = PENALTY) -> list[int]:
    """The 0-based positions where a new level starts (PELT, see the module's text)."""
    import ruptures

    values = np.asarray(figures, dtype=float)
    if values.size < 2 * MIN_RUNS or np.all(values == values[0]):
        return []
    algorithm = ruptures.Pelt(model="rank", min_size=MIN_RUNS, jump=1).fit(values.reshape(-1, 1))
    ends = algorithm.predict(pen=penalty * math.log(values.size))
    return [end for end in ends if end < values.size]


def series_changes(
    points: list[Point],
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
) -> tuple[list[tuple[int, stats.Difference]], int]:
    """The tested changes of one series (index of the first point after, the
    difference), and how many PELT proposed."""
    starts = change_points([p.figure for p in points])
    bounds = [0, *starts, len(points)]
    kept = []
    for number, start in enumerate(starts, start=1):
        before = [p.figure for p in points[bounds[number - 1] : start]]
        after = [p.figure for p in points[start : bounds[number + 1]]]
        difference = stats.compare_samples(before, after, alpha, level)
        interval = difference.ratio
        if not difference.significant or interval is None:
            continue
        if interval.low > 1.0 + min_effect or interval.high < 1.0 / (1.0 + min_effect):
            kept.append((start, difference))
    return kept, len(starts)


def machine_groups(infos: list[RunInfo], load) -> list[tuple[tuple[str, str], list[StoredRun]]]:
    """The stored runs grouped by machine (host, measurement options), measured order."""
    groups: dict[tuple[str, str], list[StoredRun]] = {}
    for info in infos:
        run = load(info.run_id)
        options = {k: v for k, v in run_options(run.env).items() if k in MEASUREMENT_OPTIONS}
        key = (str(info.hostname), repr(sorted(options.items())))
        groups.setdefault(key, []).append(run)
    return list(groups.items())


def find_changes(
    runs: list[StoredRun],
    probe: str | None = None,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> MachineChanges:
    """Every variant of one machine's runs (measured order) looked through."""
    from ctxbench.analysis.compare.difference_parts import Resampler, RunParts, split_row

    series: dict[tuple[str, str], list[Point]] = {}
    first: dict[tuple[str, str], Result] = {}
    present: dict[tuple[str, str], int] = {}  # runs that measured or tried each variant
    for position, run in enumerate(runs, start=1):
        for result in run.results:
            if probe and not fnmatch.fnmatchcase(result.probe, probe):
                continue
            variant = (result.probe, params_key(result.params))
            present[variant] = present.get(variant, 0) + 1
            if not counts(result) or result.median is None:
                continue
            series.setdefault(variant, []).append(Point(run.run_id, position, result.median))
            first.setdefault(variant, result)
    by_id = {run.run_id: run for run in runs}
    changes, examined, proposed = [], 0, 0
    for key, points in series.items():
        if len(points) < 2 * MIN_RUNS:
            continue
        examined += 1
        found, count = series_changes(points, min_effect)
        proposed += count
        for start, difference in found:
            record = first[key]
            before_run, after_run = by_id[points[start - 1].run_id], by_id[points[start].run_id]
            change = Change(
                probe=record.probe,
                params=dict(record.params),
                unit=record.unit,
                position=points[start].position,
                run_id=after_run.run_id,
                before_run_id=before_run.run_id,
                before=points[:start],
                after=points[start:],
                difference=difference,
            )
            parts = [RunParts(before_run.results), RunParts(after_run.results)]
            a, b = parts[0].by_key.get(key), parts[1].by_key.get(key)
            group = None
            if a is not None and b is not None:
                row = split_row(a, b, parts, Resampler(parts, stats.DEFAULT_LEVEL))
                if row.largest is not None:
                    change.largest_part, group = row.largest.name, row.largest.group
            change.largest_group = group
            change.environment = envparts.ranked(
                env_diff([before_run.env, after_run.env]), 1, group=group
            )
            changes.append(change)
    changes.sort(key=lambda c: (c.position, c.probe))
    options = {k: v for k, v in run_options(runs[0].env).items() if k in MEASUREMENT_OPTIONS}
    left = [key for key in present if len(series.get(key, ())) < 2 * MIN_RUNS]
    few_runs = sum(1 for key in left if present[key] < 2 * MIN_RUNS)
    return MachineChanges(
        hostname=str(runs[0].info.hostname),
        options=options,
        runs=[run.info for run in runs],
        examined=examined,
        too_short=len(left),
        changes=changes,
        proposed=proposed,
        variants=len(present),
        few_runs=few_runs,
        few_figures=len(left) - few_runs,
    )
