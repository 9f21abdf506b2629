"""The run-to-run noise that judges one row of a comparison: repeats, else history, else within-run.

A figure moves more between runs than its samples move within a run: a
run's batches share its process, its placement and the host's state for
those seconds, so their spread says little about the next run. Each row is
therefore judged against the best source of run-to-run spread there is:

1. ``repeats``: both runs were taken with ``run --repeat N`` (N >= 2): the
   pooled log spread of the repeats' figures of both runs, and a t interval
   of the log ratio with sum(N - 1) degrees of freedom.
2. ``history``: the store holds at least MIN_HISTORY_RUNS earlier runs of
   run A's machine (``machine_history``: host, CPU model, kernel, sandbox,
   run options) with this variant: the log spread of their figures, and a t
   interval of the log ratio of the two figures (one run on each side).
3. ``within-run``: only the samples of the two runs: the bootstrap interval
   of the ratio of medians and the U test (``stats.compare_samples``), and
   a floor: a difference smaller than WITHIN_RUN_FLOOR (in log terms) is
   never called meaningful from the samples alone.

The decision rule itself (the whole interval beyond 1 + minimum effect) is
``compare.decide``; this module only says which interval and which floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench import stats

REPEATS, HISTORY, WITHIN_RUN = "repeats", "history", "within-run"
SOURCES = (REPEATS, HISTORY, WITHIN_RUN)
# 0.20 in log terms (a factor of e^0.20 = 1.22): identical quick runs on the
# quiet 2-vCPU KVM guest moved a variant's median by at most 0.078 (330 row
# pairs), and loaded hours there moved them up to 20 %; docs/accuracy.md
# ("The floor") has the figures and the command. Change it only with new ones.
WITHIN_RUN_FLOOR = 0.20
MIN_HISTORY_RUNS = 3
MIN_REPEATS = 2


@dataclass(frozen=True)
class Noise:
    """What judged a row: the source, its log spread and how many figures (or
    samples, within-run) it rests on; ``floor`` is the smallest log difference
    that may be called meaningful (0 except within-run)."""

    source: str
    # log spread: of a run's figure (repeats, history), of the samples (within-run)
    spread: float | None
    n: int  # repeats of both runs, earlier runs, or samples of both runs
    floor: float = 0.0

    @property
    def floor_effect(self) -> float:
        """The floor as a relative effect (0.22 for a log floor of 0.20)."""
        return math.expm1(self.floor)


def figure(result: dict[str, Any]) -> float | None:
    summary = result.get("summary")
    return float(summary["median"]) if summary else None


def repeat_figures(result: dict[str, Any]) -> list[float]:
    """The figure of each repeat of a ``run --repeat`` record (empty without repeats)."""
    block = result.get("repeats") or {}
    return [float(each["median"]) for each in block.get("runs", []) if each.get("median")]


def judge(
    reference: dict[str, Any],
    other: dict[str, Any],
    history: Sequence[float] = (),
    alpha: float = stats.DEFAULT_ALPHA,
    level: float = stats.DEFAULT_LEVEL,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> tuple[stats.Difference, Noise]:
    """The difference between two results of one variant, judged by the best
    noise source there is (the module's docstring gives the order)."""
    a, b = figure(reference), figure(other)
    repeats_a, repeats_b = repeat_figures(reference), repeat_figures(other)
    if a and b and len(repeats_a) >= MIN_REPEATS and len(repeats_b) >= MIN_REPEATS:
        pooled = stats.pooled_log_spread([repeats_a, repeats_b])
        if pooled is not None:
            interval = stats.t_ratio_interval(
                a, b, pooled.spread, pooled.df, len(repeats_a), len(repeats_b), level
            )
            noise = Noise(REPEATS, pooled.spread, len(repeats_a) + len(repeats_b))
            return _between_runs(a, b, interval, level, noise), noise
    if a and b and len(history) >= MIN_HISTORY_RUNS:
        spread = stats.log_spread(history)
        if spread is not None:
            interval = stats.t_ratio_interval(a, b, spread, len(history) - 1, 1, 1, level)
            noise = Noise(HISTORY, spread, len(history))
            return _between_runs(a, b, interval, level, noise), noise
    samples_a, samples_b = reference["samples"], other["samples"]
    pooled = stats.pooled_log_spread([samples_a, samples_b])
    noise = Noise(
        WITHIN_RUN,
        pooled.spread if pooled else None,
        len(samples_a) + len(samples_b),
        floor=WITHIN_RUN_FLOOR,
    )
    return stats.compare_samples(samples_a, samples_b, alpha, level, resamples), noise


def _between_runs(
    a: float, b: float, interval: stats.RatioInterval | None, level: float, noise: Noise
) -> stats.Difference:
    if interval is None:
        significant, why = False, "ratio undefined (a figure is not positive)"
    elif interval.excludes_one():
        significant, why = True, None
    else:
        significant, why = False, f"{level:.0%} interval from the {noise.source} includes 1"
    return stats.Difference(
        reference_median=a,
        other_median=b,
        ratio=interval,
        u_test=None,
        significant=significant,
        why_not=why,
    )


def within_run() -> Noise:
    """The noise of a comparison of pooled samples alone (e.g. a matrix's pair class)."""
    return Noise(WITHIN_RUN, None, 0, floor=WITHIN_RUN_FLOOR)


SHORT_WORDS = {REPEATS: "by repeats", HISTORY: "by history", WITHIN_RUN: "within-run only"}


def words(noise: Noise | None, short: bool = False) -> str:
    """'judged by repeats (run-to-run spread 3.1%, 6 repeats)', 'judged by within-run
    samples only (floor 22%)'; ``short``: 'by repeats', 'within-run only'."""
    if noise is None:
        return ""
    if short:
        return SHORT_WORDS[noise.source]
    spread = f"{noise.spread:.1%}" if noise.spread is not None else "unknown"
    if noise.source == REPEATS:
        return f"judged by repeats (run-to-run spread {spread}, {noise.n} repeats)"
    if noise.source == HISTORY:
        return f"judged by this machine's history (spread {spread} over {noise.n} earlier runs)"
    return f"judged by within-run samples only (floor {noise.floor_effect:.0%})"
