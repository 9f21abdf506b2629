"""Statistics for comparing runs: small pure functions, each naming its method.

* Ratio of medians with a percentile bootstrap confidence interval
  (Efron & Tibshirani, ch. 13): both samples are resampled independently
  with replacement, the statistic is median(B*) / median(A*), and the
  interval is the (alpha/2, 1 - alpha/2) quantiles of its bootstrap
  distribution. Deterministic: the generator is seeded.
* Mann-Whitney U (Wilcoxon rank-sum), two-sided, through scipy: does one
  sample tend to be larger than the other? It needs no normality, which
  timing samples never have (long right tail).

A difference is called significant only when both agree: p < alpha and the
ratio's interval excludes 1. Otherwise the comparison says "not
significant" rather than print a ratio that is noise.

Edge cases are explicit: fewer than two samples on a side gives no interval
and no test (None); a zero median in the denominator gives no ratio; samples
with no spread at all (every value tied) give U = n1*n2/2 and p = 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_METHOD = "percentile bootstrap of the ratio of medians"
U_TEST_METHOD = "Mann-Whitney U, two-sided"
DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 4000
DEFAULT_ALPHA = 0.05
MIN_SAMPLES = 2


@dataclass(frozen=True)
class RatioInterval:
    ratio: float  # median(other) / median(reference)
    low: float
    high: float
    level: float
    resamples: int
    method: str = BOOTSTRAP_METHOD

    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0


@dataclass(frozen=True)
class UTest:
    u: float  # U statistic of the first sample
    p_value: float
    n1: int
    n2: int
    method: str = U_TEST_METHOD


@dataclass(frozen=True)
class Difference:
    """Everything a comparison of two sample sets says."""

    reference_median: float | None
    other_median: float | None
    ratio: RatioInterval | None
    u_test: UTest | None
    significant: bool
    why_not: str | None  # when not significant: the reason, in words


def _as_array(samples: Sequence[float]) -> np.ndarray:
    array = np.asarray(samples, dtype=float)
    if array.ndim != 1:
        raise ValueError("samples must be one-dimensional")
    if not np.all(np.isfinite(array)):
        raise ValueError("samples must be finite numbers")
    return array


def median(samples: Sequence[float]) -> float | None:
    array = _as_array(samples)
    return float(np.median(array)) if array.size else None


def bootstrap_ratio_of_medians(
    reference: Sequence[float],
    other: Sequence[float],
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> RatioInterval | None:
    """Ratio median(other)/median(reference) with a percentile bootstrap CI.

    None when either side has fewer than two samples, or when the reference
    median (or one of its bootstrap replicates) is zero, so the ratio is
    undefined.
    """
    if not 0.0 < level < 1.0:
        raise ValueError("level must be between 0 and 1")
    a = _as_array(reference)
    b = _as_array(other)
    if a.size < MIN_SAMPLES or b.size < MIN_SAMPLES:
        return None
    point_reference = float(np.median(a))
    if point_reference == 0.0:
        return None
    rng = np.random.default_rng(seed)
    medians_a = _bootstrap_medians(a, resamples, rng)
    medians_b = _bootstrap_medians(b, resamples, rng)
    if np.any(medians_a == 0.0):
        return None
    ratios = medians_b / medians_a
    alpha = 1.0 - level
    low, high = np.quantile(ratios, [alpha / 2.0, 1.0 - alpha / 2.0])
    return RatioInterval(
        ratio=float(np.median(b)) / point_reference,
        low=float(low),
        high=float(high),
        level=level,
        resamples=resamples,
    )


def _bootstrap_medians(sample: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    # Chunked so that memory stays small for long sample arrays.
    out = np.empty(resamples)
    chunk = max(1, min(resamples, 2_000_000 // sample.size))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        index = rng.integers(0, sample.size, size=(stop - start, sample.size))
        out[start:stop] = np.median(sample[index], axis=1)
    return out


def mann_whitney_u(first: Sequence[float], second: Sequence[float]) -> UTest | None:
    """Two-sided Mann-Whitney U test; None when a side has fewer than two samples."""
    a = _as_array(first)
    b = _as_array(second)
    if a.size < MIN_SAMPLES or b.size < MIN_SAMPLES:
        return None
    if np.all(a == a[0]) and np.all(b == a[0]):
        # Every value tied: no evidence of any difference (scipy gives nan here).
        return UTest(u=a.size * b.size / 2.0, p_value=1.0, n1=int(a.size), n2=int(b.size))
    from scipy import stats as scipy_stats  # seconds to import: only when a test is run

    result = scipy_stats.mannwhitneyu(a, b, alternative="two-sided")
    p_value = float(result.pvalue)
    if math.isnan(p_value):
        p_value = 1.0
    return UTest(u=float(result.statistic), p_value=p_value, n1=int(a.size), n2=int(b.size))


def compare_samples(
    reference: Sequence[float],
    other: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Difference:
    """Compare two sample sets: ratio of medians with CI, U test, and a decision."""
    ratio = bootstrap_ratio_of_medians(reference, other, level, resamples, seed)
    u_test = mann_whitney_u(reference, other)
    if ratio is None or u_test is None:
        n_ref, n_other = len(reference), len(other)
        if min(n_ref, n_other) < MIN_SAMPLES:
            why = f"too few samples ({n_ref} vs {n_other}; need {MIN_SAMPLES} on each side)"
        else:
            why = "ratio undefined (zero median)"
        significant = False
    elif u_test.p_value >= alpha:
        why, significant = f"p = {u_test.p_value:.3g} >= {alpha:g}", False
    elif not ratio.excludes_one():
        why, significant = f"{level:.0%} CI of the ratio includes 1", False
    else:
        why, significant = None, True
    return Difference(
        reference_median=median(reference),
        other_median=median(other),
        ratio=ratio,
        u_test=u_test,
        significant=significant,
        why_not=why,
    )


def lower_is_better(unit: str) -> bool:
    """Time, cycles and instructions per operation: lower is better; rates: higher."""
    return unit != "msgs/s"


# ---- one sample set's summary (the record's "summary" object) ----------------
MEDIAN_CI_METHOD = "binomial order statistics (distribution-free)"


def median_ci(samples: Sequence[float], level: float = DEFAULT_LEVEL) -> dict | None:
    """Distribution-free interval of the median, as the engine computes it:
    order statistics x(j) and x(n-1-j) (0-based) for the largest j whose
    coverage 1 - 2 P(Binomial(n, 1/2) <= j) still reaches `level`; the exact
    coverage is reported. None when n is too small for the level."""
    ordered = np.sort(_as_array(samples))
    n = int(ordered.size)
    if n < MIN_SAMPLES:
        return None
    from scipy import stats as scipy_stats

    best = None
    for j in range(n // 2):
        coverage = 1.0 - 2.0 * float(scipy_stats.binom.cdf(j, n, 0.5))
        if coverage < level:
            break
        best = (j, coverage)
    if best is None:
        return None
    j, coverage = best
    return {
        "low": float(ordered[j]),
        "high": float(ordered[n - 1 - j]),
        "level": coverage,
        "method": MEDIAN_CI_METHOD,
    }


def summarize(samples: Sequence[float]) -> dict:
    """The record's summary of one sample set (the same fields and methods as
    the engine's stats: linear-interpolation percentiles, n-1 deviation)."""
    array = _as_array(samples)
    if array.size == 0:
        raise ValueError("summary of no samples")
    p50, p90, p99 = np.percentile(array, [50, 90, 99])
    return {
        "n": int(array.size),
        "min": float(array.min()),
        "median": float(p50),
        "mean": float(array.mean()),
        "stddev": float(array.std(ddof=1)) if array.size > 1 else 0.0,
        "p90": float(p90),
        "p99": float(p99),
        "max": float(array.max()),
        "median_ci": median_ci(array),
    }
