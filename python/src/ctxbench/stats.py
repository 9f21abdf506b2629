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

Between runs (the noise that matters when two runs are compared):

* Log spread: the sample standard deviation (n-1) of the natural logs of
  per-run figures; for small spreads it is the coefficient of variation.
  Pooled over groups (the repeats of run A and of run B), each group about
  its own mean, with sum(n_i - 1) degrees of freedom.
* Ratio of two figures given a run-to-run spread s: a t interval on the log
  ratio, log(b/a) +- t(df, 1 - alpha/2) * s * sqrt(1/n_a + 1/n_b), turned
  back into a ratio (Welch-free: one pooled s, as in a two-sample t test).
* Hierarchical bootstrap of the median over repeats (Saravanan et al. 2020,
  "Application of the hierarchical bootstrap to multi-level data"): resample
  the repeats with replacement, then each chosen repeat's samples, and take
  the median of all that was drawn (the figure is the median of the repeats'
  samples together, so it agrees with the record's summary). Seeded.

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
T_LOG_RATIO_METHOD = "t interval of the log ratio, from a run-to-run spread"
HIERARCHICAL_METHOD = "hierarchical bootstrap: repeats, then samples within them"
U_TEST_METHOD = "Mann-Whitney U, two-sided"
DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 4000
DEFAULT_ALPHA = 0.05
MIN_SAMPLES = 2
MAD_TO_SD = 1.4826  # a normal distribution's standard deviation per median absolute deviation


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


# Why a difference is not significant (``NotSignificant.code``), with the
# figures each names; the views word them (views.compare.comparison.why_not_words).
TOO_FEW_SAMPLES = "too few samples"  # values: (reference's n, other's n, MIN_SAMPLES)
ZERO_MEDIAN = "zero median"  # the ratio is undefined: a median is zero
P_AT_LEAST_ALPHA = "p at least alpha"  # values: (p, alpha)
CI_INCLUDES_ONE = "ci includes 1"  # values: (level,)


@dataclass(frozen=True)
class NotSignificant:
    """Why a difference is not significant: a code (this module's, or
    analysis.compare.noise's), its figures and, for a noise, its source."""

    code: str
    values: tuple[float, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class Difference:
    """Everything a comparison of two sample sets says."""

    reference_median: float | None
    other_median: float | None
    ratio: RatioInterval | None
    u_test: UTest | None
    significant: bool
    why_not: NotSignificant | None  # when not significant: why


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
        out[start:stop] = _row_medians(sample[index])
    return out


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """np.median(rows, axis=1), the same values, 3-5x faster on rows of tens of
    samples (a sort instead of np.median's partition and NaN checks; the
    samples are finite, _as_array sees to it): the bootstrap's 4000 rows per
    ratio were most of `show`'s own time."""
    ordered = np.sort(rows, axis=1)
    middle = rows.shape[1] // 2
    if rows.shape[1] % 2:
        return ordered[:, middle]
    return (ordered[:, middle - 1] + ordered[:, middle]) / 2.0


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
            why = NotSignificant(TOO_FEW_SAMPLES, (n_ref, n_other, MIN_SAMPLES))
        else:
            why = NotSignificant(ZERO_MEDIAN)
        significant = False
    elif u_test.p_value >= alpha:
        why, significant = NotSignificant(P_AT_LEAST_ALPHA, (u_test.p_value, alpha)), False
    elif not ratio.excludes_one():
        why, significant = NotSignificant(CI_INCLUDES_ONE, (level,)), False
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


# ---- between runs: log spread, t interval of a log ratio, hierarchical bootstrap ----
def _positive_logs(values: Sequence[float]) -> np.ndarray | None:
    array = _as_array(values)
    if array.size == 0 or np.any(array <= 0.0):
        return None
    return np.log(array)


def log_spread(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n-1) of the natural logs of per-run figures;
    None for fewer than two values or a value that is not positive."""
    logs = _positive_logs(values)
    if logs is None or logs.size < MIN_SAMPLES:
        return None
    return float(np.std(logs, ddof=1))


@dataclass(frozen=True)
class PooledSpread:
    spread: float  # pooled standard deviation of the logs
    df: float  # degrees of freedom: sum(n_i - 1) (sum(w) - 1 when weighted)


def pooled_log_spread(groups: Sequence[Sequence[float]]) -> PooledSpread | None:
    """The log spread pooled over groups, each about its own mean; None when no
    group has two values (df = 0) or a value is not positive."""
    squares, df = 0.0, 0
    for group in groups:
        logs = _positive_logs(group)
        if logs is None:
            return None
        squares += float(np.sum((logs - logs.mean()) ** 2))
        df += int(logs.size) - 1
    if df < 1:
        return None
    return PooledSpread(spread=math.sqrt(squares / df), df=df)


def t_ratio_interval(
    reference: float,
    other: float,
    spread: float,
    df: int,
    n_reference: int = 1,
    n_other: int = 1,
    level: float = DEFAULT_LEVEL,
) -> RatioInterval | None:
    """other / reference with a t interval on the log ratio, given the
    run-to-run log spread (``df`` degrees of freedom) of one figure and the
    number of runs behind each side's figure. None for a figure that is not
    positive or df < 1."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be between 0 and 1")
    if reference <= 0.0 or other <= 0.0 or df < 1 or spread < 0.0:
        return None
    se = spread * math.sqrt(1.0 / n_reference + 1.0 / n_other)
    return t_log_interval(math.log(other) - math.log(reference), se, df, level)


def t_log_interval(
    center: float, se: float, df: float, level: float = DEFAULT_LEVEL
) -> RatioInterval:
    """exp(center +- t(df, 1 - alpha/2) * se): a ratio from its log and the
    standard error of that log (``df`` may be infinite: a normal interval)."""
    from scipy import stats as scipy_stats

    half = float(scipy_stats.t.ppf(0.5 + level / 2.0, df)) * se
    return RatioInterval(
        ratio=math.exp(center),
        low=math.exp(center - half),
        high=math.exp(center + half),
        level=level,
        resamples=0,
        method=T_LOG_RATIO_METHOD,
    )


def _weighted_logs(
    values: Sequence[float], weights: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The values' logs, their weights and df sum(w) - 1; None when a value or
    weight is not positive, the shapes differ or df is below 1."""
    logs = _positive_logs(values)
    w = np.asarray(weights, dtype=float)
    if logs is None or w.shape != logs.shape or np.any(w <= 0.0):
        return None
    df = float(w.sum()) - 1.0
    return None if df < 1.0 else (logs, w, df)


def weighted_log_spread(values: Sequence[float], weights: Sequence[float]) -> PooledSpread | None:
    """A robust log spread of per-run figures where some count less (weights
    in (0, 1]): the weighted median absolute deviation of their logs from
    their weighted median (numpy's weighted quantiles, inverted CDF), scaled
    by 1.4826 to a normal standard deviation, so one run in a slow spell
    does not make the spread of all; degrees of freedom sum(w) - 1 (possibly
    fractional). None below df 1."""
    checked = _weighted_logs(values, weights)
    if checked is None:
        return None
    logs, w, df = checked
    center = np.quantile(logs, 0.5, weights=w, method="inverted_cdf")
    deviation = np.quantile(np.abs(logs - center), 0.5, weights=w, method="inverted_cdf")
    return PooledSpread(spread=MAD_TO_SD * float(deviation), df=df)


def two_levels(values: Sequence[float], gap: float, least: int) -> bool:
    """Do the values span two levels: sorted, is the LEAST-th highest more
    than GAP (a ratio) above the LEAST-th lowest? A step between the levels
    qualifies, and so do runs that fell between them (a run whose samples
    sat at both), which a test for one step would miss."""
    logs = _positive_logs(values)
    if logs is None or logs.size < 2 * least:
        return False
    ordered = np.sort(logs)
    return bool(float(ordered[-least] - ordered[least - 1]) > math.log(gap))


def weighted_log_sd(values: Sequence[float], weights: Sequence[float]) -> PooledSpread | None:
    """The weighted standard deviation of the values' logs about their
    weighted mean (reliability weights, df sum(w) - 1): the spread where a
    robust one would hide a second level. None below df 1."""
    checked = _weighted_logs(values, weights)
    if checked is None:
        return None
    logs, w, df = checked
    mean = float(np.average(logs, weights=w))
    variance = float(np.sum(w * (logs - mean) ** 2)) / df
    return PooledSpread(spread=math.sqrt(variance), df=df)


def sample_log_spread(samples: Sequence[float]) -> float | None:
    """A robust log spread of one run's samples: the interquartile range of
    their logs scaled to a normal standard deviation (scipy.stats.iqr with
    scale='normal'); None below two samples or with one not positive."""
    logs = _positive_logs(samples)
    if logs is None or logs.size < MIN_SAMPLES:
        return None
    from scipy import stats as scipy_stats

    return float(scipy_stats.iqr(logs, scale="normal"))


def satterthwaite_df(parts: Sequence[tuple[float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variances, each
    given as (standard error, its degrees of freedom); infinite df allowed."""
    total = sum(se**2 for se, _ in parts)
    denominator = sum(se**4 / df for se, df in parts if se > 0.0 and math.isfinite(df))
    if total == 0.0 or denominator == 0.0:
        return math.inf
    return total**2 / denominator


def normal_quantile(probability: float) -> float:
    from scipy import stats as scipy_stats

    return float(scipy_stats.norm.ppf(probability))


def detectable_log_effect(
    se: float, df: float, level: float = DEFAULT_LEVEL, power: float = 0.8
) -> float:
    """The minimum detectable effect, in log terms: the smallest true log
    ratio that a one-sided test at (1 - level) / 2, given the standard error
    SE of the log ratio with DF degrees of freedom, detects with probability
    POWER: (t(1 - (1 - level)/2) + t(power)) * se, both t quantiles at df (as
    in power analysis of a t test with the spread estimated)."""
    from scipy import stats as scipy_stats

    return (
        float(scipy_stats.t.ppf(0.5 + level / 2.0, df)) + float(scipy_stats.t.ppf(power, df))
    ) * se


@dataclass(frozen=True)
class HierarchicalMedian:
    median: float  # the median of every repeat's samples together
    low: float
    high: float
    level: float
    resamples: int
    method: str = HIERARCHICAL_METHOD


def hierarchical_bootstrap_median(
    groups: Sequence[Sequence[float]],
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> HierarchicalMedian | None:
    """The median of the repeats' samples pooled, with a percentile interval
    from resampling the repeats with replacement, then the samples within
    each chosen repeat, and taking the median of what was drawn. None when
    no repeat has samples."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be between 0 and 1")
    arrays = [array for array in (_as_array(group) for group in groups) if array.size]
    if not arrays:
        return None
    count = len(arrays)
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, count, size=(resamples, count))
    sizes = {array.size for array in arrays}
    if len(sizes) == 1:
        # One size: every draw at once, (replicate, slot, sample).
        (size,) = sizes
        data = np.stack(arrays)
        index = rng.integers(0, size, size=(resamples, count, size))
        drawn = data[chosen[:, :, None], index].reshape(resamples, count * size)
        replicates = np.median(drawn, axis=1)
    else:
        replicates = np.empty(resamples)
        for number in range(resamples):
            parts = [
                arrays[g][rng.integers(0, arrays[g].size, arrays[g].size)] for g in chosen[number]
            ]
            replicates[number] = np.median(np.concatenate(parts))
    alpha = 1.0 - level
    low, high = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return HierarchicalMedian(
        median=float(np.median(np.concatenate(arrays))),
        low=float(low),
        high=float(high),
        level=level,
        resamples=resamples,
    )


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


# A run's p10: the order statistic of its samples at this quantile.
LOW_QUANTILE = 0.10
LOW_QUANTILE_MIN_SAMPLES = 5


def low_quantile(samples: Sequence[float], unit: str = "ns") -> float | None:
    """A run's p10: the sample at rank ceil(LOW_QUANTILE * n) of its
    sorted samples (the fastest of 10, the third fastest of 30). Interference
    only adds time, so it moves a run's median far more than its p10; a
    fixed quantile, not the minimum, so runs of 10 and of 30 samples share a
    meaning. For a rate (higher is better) the same rank from the top: the
    p10 of the time per operation. None below LOW_QUANTILE_MIN_SAMPLES or
    with a sample not positive."""
    if len(samples) < LOW_QUANTILE_MIN_SAMPLES or min(samples) <= 0:
        return None
    ordered = sorted((float(x) for x in samples), reverse=not lower_is_better(unit))
    return ordered[max(1, math.ceil(LOW_QUANTILE * len(ordered))) - 1]
