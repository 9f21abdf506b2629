"""Statistics against known values and against scipy's own implementations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from ctxbench import stats


# ---- Mann-Whitney U -----------------------------------------------------------
def test_u_test_known_value_from_scipy_documentation():
    # The example of scipy.stats.mannwhitneyu's documentation: U = 17, exact p = 0.1111.
    males = [19, 22, 16, 29, 24]
    females = [20, 11, 17, 12]
    result = stats.mann_whitney_u(males, females)
    assert result is not None
    assert result.u == 17.0
    assert result.p_value == pytest.approx(0.11111, abs=1e-4)
    assert (result.n1, result.n2) == (5, 4)


def test_u_test_complete_separation_small_samples():
    # Exact distribution: P(U = 0 or U = 9 | n1 = n2 = 3) = 2 / C(6, 3) = 0.1.
    result = stats.mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert result.u == 0.0
    assert result.p_value == pytest.approx(0.1)


def test_u_test_matches_scipy_on_large_samples_with_ties():
    rng = np.random.default_rng(7)
    a = np.round(rng.lognormal(5.0, 0.2, 300), 1)
    b = np.round(rng.lognormal(5.05, 0.2, 250), 1)
    ours = stats.mann_whitney_u(a, b)
    theirs = scipy_stats.mannwhitneyu(a, b, alternative="two-sided")
    assert ours.u == pytest.approx(theirs.statistic)
    assert ours.p_value == pytest.approx(theirs.pvalue)


def test_u_test_all_values_tied_is_not_a_difference():
    result = stats.mann_whitney_u([5.0] * 4, [5.0] * 6)
    assert result.u == 12.0
    assert result.p_value == 1.0


@pytest.mark.parametrize("a,b", [([], [1.0, 2.0]), ([1.0], [1.0, 2.0]), ([1.0, 2.0], [3.0])])
def test_u_test_needs_two_samples_a_side(a, b):
    assert stats.mann_whitney_u(a, b) is None


# ---- bootstrap ratio of medians -------------------------------------------------
def test_ratio_of_constant_samples_is_exact():
    interval = stats.bootstrap_ratio_of_medians([2.0, 2.0, 2.0], [4.0, 4.0, 4.0, 4.0])
    assert (interval.ratio, interval.low, interval.high) == (2.0, 2.0, 2.0)
    assert not interval.excludes_one() or interval.low > 1.0


def test_ratio_point_estimate_is_ratio_of_medians():
    interval = stats.bootstrap_ratio_of_medians([1, 2, 3, 4, 100], [10, 20, 30])
    assert interval.ratio == pytest.approx(20 / 3)
    assert interval.low <= interval.ratio <= interval.high


def test_ratio_interval_agrees_with_scipy_percentile_bootstrap():
    rng = np.random.default_rng(11)
    a = rng.lognormal(6.0, 0.3, 80)
    b = rng.lognormal(6.4, 0.3, 60)
    ours = stats.bootstrap_ratio_of_medians(a, b, level=0.95, resamples=8000, seed=1)

    def ratio(x, y, axis):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    theirs = scipy_stats.bootstrap(
        (a, b),
        ratio,
        vectorized=True,
        paired=False,
        confidence_level=0.95,
        n_resamples=8000,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    # Two independent Monte Carlo estimates of the same quantiles.
    assert ours.low == pytest.approx(theirs.low, rel=0.02)
    assert ours.high == pytest.approx(theirs.high, rel=0.02)
    assert ours.excludes_one()


def test_ratio_is_deterministic_for_a_seed():
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 5.0, 8.0]
    assert stats.bootstrap_ratio_of_medians(a, b, seed=3) == stats.bootstrap_ratio_of_medians(
        a, b, seed=3
    )


def test_ratio_undefined_cases():
    assert stats.bootstrap_ratio_of_medians([1.0], [1.0, 2.0]) is None
    assert stats.bootstrap_ratio_of_medians([0.0, 0.0, 0.0], [1.0, 2.0]) is None
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_of_medians([1.0, 2.0], [1.0, 2.0], level=1.5)
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_of_medians([1.0, float("nan")], [1.0, 2.0])


# ---- the decision -------------------------------------------------------------
def test_clear_difference_is_significant():
    rng = np.random.default_rng(5)
    a = rng.normal(1000, 10, 50)
    b = rng.normal(2000, 20, 50)
    difference = stats.compare_samples(a, b)
    assert difference.significant
    assert difference.why_not is None
    assert difference.ratio.ratio == pytest.approx(2.0, rel=0.02)


def test_same_distribution_is_not_significant():
    rng = np.random.default_rng(6)
    a = rng.normal(1000, 50, 40)
    b = rng.normal(1000, 50, 40)
    difference = stats.compare_samples(a, b)
    assert not difference.significant
    assert difference.why_not


def test_too_few_samples_says_so():
    difference = stats.compare_samples([1.0], [2.0, 3.0])
    assert not difference.significant
    assert difference.why_not == stats.NotSignificant(stats.TOO_FEW_SAMPLES, (1, 2, 2))
    assert difference.ratio is None and difference.u_test is None


def test_direction_depends_on_unit():
    assert stats.lower_is_better("ns")
    assert stats.lower_is_better("instructions")
    assert not stats.lower_is_better("msgs/s")


def test_summary_matches_the_engines_definitions() -> None:
    summarize = stats.summarize
    summary = summarize([5, 1, 4, 2, 3, 7, 6])
    assert summary["median"] == 4 and summary["min"] == 1 and summary["max"] == 7
    assert summary["p90"] == pytest.approx(6.4)  # linear interpolation between ranks
    assert summary["stddev"] == pytest.approx(2.160247, rel=1e-6)  # n - 1
    ci = summary["median_ci"]
    # n = 7: only x(1)..x(7) reach 95 %; coverage 1 - 2/128
    assert (ci["low"], ci["high"]) == (1, 7) and ci["level"] == pytest.approx(1 - 2 / 128)
    wider = summarize(list(range(20)))["median_ci"]
    assert (wider["low"], wider["high"]) == (5, 14) and wider["level"] >= 0.95
    assert summarize([2, 2, 2])["median_ci"] is None  # n too small for 95 %
    assert summarize([3])["stddev"] == 0.0
    with pytest.raises(ValueError):
        summarize([])


# ---- between runs: log spread, t interval, hierarchical bootstrap ---------------
def test_log_spread_is_the_standard_deviation_of_the_logs():
    assert stats.log_spread([1.0, np.e]) == pytest.approx(np.std([0.0, 1.0], ddof=1))
    assert stats.log_spread([5.0]) is None
    assert stats.log_spread([5.0, 0.0]) is None


def test_pooled_log_spread_takes_each_group_about_its_own_mean():
    e = np.e
    pooled = stats.pooled_log_spread([[1.0, e], [e**2, e**3]])
    # Deviations +-0.5 in each group: squares 1.0 over df = 2.
    assert pooled.df == 2
    assert pooled.spread == pytest.approx(np.sqrt(0.5))
    # A one-value group adds no degree of freedom and no square.
    assert stats.pooled_log_spread([[1.0, e], [7.0]]) == stats.PooledSpread(
        spread=pytest.approx(np.sqrt(0.5)), df=1
    )
    assert stats.pooled_log_spread([[1.0], [2.0]]) is None


def test_t_ratio_interval_matches_the_t_quantile():
    interval = stats.t_ratio_interval(100.0, 110.0, spread=0.05, df=4, n_reference=3, n_other=2)
    half = scipy_stats.t.ppf(0.975, 4) * 0.05 * np.sqrt(1 / 3 + 1 / 2)
    assert interval.ratio == pytest.approx(1.1)
    assert np.log(interval.low) == pytest.approx(np.log(1.1) - half)
    assert np.log(interval.high) == pytest.approx(np.log(1.1) + half)
    assert interval.method == stats.T_LOG_RATIO_METHOD
    assert stats.t_ratio_interval(0.0, 1.0, 0.1, 3) is None
    assert stats.t_ratio_interval(1.0, 1.0, 0.1, 0) is None


def test_hierarchical_bootstrap_is_reproducible_with_its_seed():
    rng = np.random.default_rng(3)
    groups = [rng.lognormal(np.log(m), 0.01, 20) for m in (100.0, 104.0, 97.0)]
    first = stats.hierarchical_bootstrap_median(groups, resamples=500, seed=11)
    again = stats.hierarchical_bootstrap_median(groups, resamples=500, seed=11)
    other = stats.hierarchical_bootstrap_median(groups, resamples=500, seed=12)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert first.median == pytest.approx(np.median(np.concatenate(groups)))
    assert first.low <= first.median <= first.high


def test_hierarchical_interval_carries_the_spread_between_repeats():
    # Tight within each repeat, far apart between them: the interval spans the
    # repeats, where a bootstrap of the pooled samples would not.
    groups = [[100.0, 100.1, 99.9] * 5, [130.0, 130.1, 129.9] * 5]
    interval = stats.hierarchical_bootstrap_median(groups, resamples=1000, seed=0)
    assert interval.median == pytest.approx(115.0)
    assert interval.low == pytest.approx(100.0, abs=0.2)
    assert interval.high == pytest.approx(130.0, abs=0.2)


def test_hierarchical_bootstrap_takes_repeats_of_different_sizes():
    groups = [[10.0, 10.2, 9.8, 10.1], [12.0, 12.1], [11.0, 11.1, 10.9]]
    interval = stats.hierarchical_bootstrap_median(groups, resamples=300, seed=5)
    assert interval.median == pytest.approx(np.median(np.concatenate(groups)))
    assert 9.8 <= interval.low <= interval.median <= interval.high <= 12.1
    assert interval == stats.hierarchical_bootstrap_median(groups, resamples=300, seed=5)


def test_hierarchical_bootstrap_of_constant_repeats_is_exact():
    interval = stats.hierarchical_bootstrap_median([[5.0, 5.0], [5.0]], resamples=50)
    assert (interval.median, interval.low, interval.high) == (5.0, 5.0, 5.0)
    assert stats.hierarchical_bootstrap_median([[], []]) is None


@pytest.mark.parametrize("size", [2, 3, 10, 31, 1000])
def test_the_bootstraps_row_medians_are_numpys_medians(size):
    # stats._row_medians replaced np.median(axis=1) in the bootstrap for speed:
    # the same values, bit for bit, for odd and even sizes.
    rng = np.random.default_rng(size)
    rows = rng.lognormal(size=(500, size))
    assert np.array_equal(stats._row_medians(rows), np.median(rows, axis=1))


def test_a_runs_p10_is_the_sample_at_rank_a_tenth_of_n_rounded_up():
    assert stats.low_quantile([5.0, 3.0, 9.0, 4.0, 8.0, 7.0, 6.0, 10.0, 11.0, 12.0]) == 3.0
    thirty = [float(v) for v in range(30, 0, -1)]
    assert stats.low_quantile(thirty) == 3.0  # the third fastest of 30
    assert stats.low_quantile([float(v) for v in range(1, 12)]) == 2.0  # ceil(1.1) = 2
    assert stats.low_quantile([1.0, 2.0, 3.0, 4.0]) is None  # too few to call a tenth
    assert stats.low_quantile([1.0, 2.0, 3.0, 4.0, 0.0]) is None  # not a time
    # A rate's fast end is its top: the p10 of the time per operation.
    rates = [5.0, 3.0, 9.0, 4.0, 8.0, 7.0, 6.0, 10.0, 11.0, 12.0]
    assert stats.low_quantile(rates, "msgs/s") == 12.0
