"""compare on two real recorded runs: matching, statistics per variant, environment diff."""

from __future__ import annotations

import copy
import re

import pytest

from conftest import real_run
from ctxbench import stats
from ctxbench.analysis.compare import noise
from ctxbench.analysis.compare.comparison import (
    FASTER,
    NO_DIFFERENCE,
    NOT_THE_OPERATION_SIDE,
    ONLY_ONE,
    PLACEMENT,
    SLOWER,
    Exclusion,
    Summary,
    compare_runs,
    decide,
    time_ratio,
)
from ctxbench.analysis.summary.data import MachineCell
from ctxbench.records.envdiff import env_diff
from ctxbench.records.environment import environment_of
from ctxbench.records.naming import params_key
from ctxbench.records.runs import group_run
from ctxbench.store.db import Store
from ctxbench.views import machines as machines_view
from ctxbench.views.compare.comparison import (
    describe,
    excluded_words,
    summary_line,
    summary_lines,
)


def stored(store, run, label=None):
    store.add_run(run, origin="import", label=label)
    return store.load(run.run_id)


def test_every_shared_variant_gets_ratio_test_and_decision(store):
    a, b = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    comparison = compare_runs([stored(store, a), stored(store, b)])
    assert len(comparison.rows) == len(a.results)
    compared = 0
    for row in comparison.rows:
        reference, other = row.cells
        assert reference.difference is None
        if reference.status not in ("ok", "suspect"):
            # Unsupported here (create.pthread_scope_process on Linux): listed, not compared.
            assert reference.note == reference.status and other.difference is None
            continue
        compared += 1
        difference = other.difference
        assert difference is not None, row.probe
        expected = stats.compare_samples(
            next(r for r in a.results if r["probe"] == row.probe and r["params"] == row.params)[
                "samples"
            ],
            list(other.result.samples),
        )
        if "suspect" in (reference.status, other.status):
            # The suspect side's spread widens the bootstrap's interval.
            assert difference.ratio.ratio == expected.ratio.ratio
            assert difference.ratio.method == noise.WIDENED_METHOD
            assert difference.ratio.low < expected.ratio.low
            assert difference.ratio.high > expected.ratio.high
        else:
            assert difference == expected
        assert difference.ratio.low <= difference.ratio.ratio <= difference.ratio.high
        assert difference.significant or difference.why_not
        assert describe(difference, row.unit).endswith(
            ("slower than A", "faster than A", "not significant", "under 5%)")
        )
    assert compared >= len(a.results) - 1


def test_unsupported_and_missing_variants_are_not_compared(store):
    a = real_run("run_a.jsonl")
    records = copy.deepcopy(real_run("run_b.jsonl").all())
    results = [r for r in records if r["kind"] == "result"]
    first, last = results[0], results[-1]
    first.update(
        samples=[],
        summary=None,
        baseline=None,
        corrected=None,
        verdict={
            "status": "unsupported",
            "reasons": [{"code": "not_supported_here", "detail": "test: pretend"}],
        },
    )
    records.remove(last)
    b = group_run(records)
    comparison = compare_runs([stored(store, a), stored(store, b)])
    by_key = {(row.probe, params_key(row.params)): row for row in comparison.rows}
    unsupported = by_key[(first["probe"], params_key(first["params"]))].cells[1]
    assert unsupported.note == "unsupported" and unsupported.difference is None
    missing = by_key[(last["probe"], params_key(last["params"]))].cells[1]
    assert missing.note == "not in this run" and missing.result is None


def test_a_run_with_itself_is_not_significant(store):
    a = stored(store, real_run("run_a.jsonl"))
    comparison = compare_runs([a, a])
    for row in comparison.rows:
        difference = row.cells[1].difference
        if difference is None:  # unsupported here
            continue
        assert not difference.significant
        assert difference.ratio.ratio == 1.0


def test_environment_diff_orders_what_explains_first():
    env_a = real_run("run_a.jsonl").env
    env_b = copy.deepcopy(real_run("run_b.jsonl").env)
    env_b["kernel"]["release"] = "6.1.0-other"
    env_b["mitigations"]["spectre_v2"] = "Vulnerable"
    env_b["virtualization"]["detected"] = "kvm"
    env_b["hostname"] = "other-host"
    diff = env_diff([environment_of(env_a), environment_of(env_b)])
    assert diff.differing[:4] == [
        "hostname",
        "kernel.release",
        "virtualization.detected",
        "mitigations.spectre_v2",
    ]
    assert diff.values["kernel.release"] == [env_a["kernel"]["release"], "6.1.0-other"]
    # Measured decimals (TSC calibration) differ run to run; that is not a difference.
    assert not any(key.startswith("cpu.tsc.") for key in diff.differing)
    assert "run_id" not in diff.keys and "started_at" not in diff.keys


def test_describe_follows_the_unit():
    slower = stats.compare_samples([99.0, 100.0, 101.0] * 5, [199.0, 200.0, 201.0] * 5)
    assert re.fullmatch(r"B ran 2\.00× \(1\.9\d–2\.0\d\) slower than A", describe(slower, "ns"))
    assert describe(slower, "msgs/s").endswith(" faster than A")
    faster = stats.compare_samples([199.0, 200.0, 201.0] * 5, [99.0, 100.0, 101.0] * 5)
    assert describe(faster, "ns", name="C").startswith("C ran 2.00× (")
    assert describe(None, "ns") == "no ratio"


def test_describe_says_which_run_and_turns_the_interval():
    interval = stats.RatioInterval(ratio=2.19, low=2.17, high=2.21, level=0.95, resamples=10)
    u_test = stats.UTest(u=0.0, p_value=1e-9, n1=30, n2=30)
    slower = stats.Difference(100.0, 219.0, interval, u_test, significant=True, why_not=None)
    assert describe(slower, "ns") == "B ran 2.19× (2.17–2.21) slower than A"
    inverse = stats.RatioInterval(ratio=0.5, low=0.4, high=0.625, level=0.95, resamples=10)
    faster = stats.Difference(100.0, 50.0, inverse, u_test, significant=True, why_not=None)
    assert describe(faster, "ns") == "B ran 2.00× (1.60–2.50) faster than A"


def test_a_significant_difference_under_the_minimum_effect_is_not_meaningful():
    reference = around(100.0)
    other = around(102.0)
    difference = stats.compare_samples(reference, other)
    assert difference.significant  # the U test and the interval both see 2%
    assert difference.ratio.ratio == pytest.approx(1.02)
    assert decide(difference, "ns", 0.05) == NO_DIFFERENCE
    assert describe(difference, "ns") == (
        "no meaningful difference (1.02×, 1.01–1.03, not all beyond 5%)"
    )
    assert decide(difference, "ns", 0.01) == SLOWER  # a smaller minimum effect lets it count
    assert describe(difference, "ns", min_effect=0.01).startswith("B ran 1.02× (")


# ---- a fixture pair whose summary is computed by hand -----------------------------
FACTORS = (0.995, 1.0, 1.005, 1.0, 0.995, 1.005, 1.0, 0.995, 1.005, 1.0)


def around(median: float) -> list[float]:
    """Ten samples whose median is exactly ``median`` (three below, four at, three above)."""
    return [median * f for f in FACTORS]


def with_samples(result, median):
    samples = around(median)
    result["samples"] = samples
    result["summary"].update(min=min(samples), median=median, max=max(samples))


def pair(edit_b_env=None):
    """Run A and run B from the recorded fixtures, with samples set so that:
    getpid 100 -> 300 (slower, 3x), getppid 100 -> 50 (faster, 0.5x), getsid
    100 -> 102 (significant, under the minimum effect), getuid 100 -> 100 (no
    difference), switch.pipe processes/same suspect in A (excluded), switch.pipe
    threads/any on one CPU in A and two in B (excluded), pthread_scope_process
    unsupported in both (excluded), read only in A, write only in B."""
    medians = {
        "syscall.getpid": (100.0, 300.0),
        "syscall.getppid": (100.0, 50.0),
        "syscall.getsid": (100.0, 102.0),
        "syscall.getuid": (100.0, 100.0),
        ("switch.pipe", "processes", "same"): (100.0, 400.0),
        ("switch.pipe", "threads", "any"): (100.0, 1000.0),
    }
    only = {"syscall.read": 0, "syscall.write": 1}
    runs = []
    for side, name in enumerate(("run_a.jsonl", "run_b.jsonl")):
        records = copy.deepcopy(real_run(name).all())
        kept = []
        for record in records:
            if record["kind"] != "result":
                kept.append(record)
                continue
            probe, params = record["probe"], record["params"]
            key = probe if not params else (probe, params["between"], params["cpus"])
            if key in medians:
                with_samples(record, medians[key][side])
                kept.append(record)
            elif probe == "create.pthread_scope_process" or only.get(probe) == side:
                kept.append(record)
        if side == 1 and edit_b_env:
            edit_b_env(kept[0])
        runs.append(group_run(kept))
    return runs


def test_summary_of_a_fixture_pair_matches_hand_computed_values(store):
    a, b = pair()
    comparison = compare_runs([stored(store, a), stored(store, b)])
    by_probe = {(row.probe, tuple(sorted(row.params.items()))): row for row in comparison.rows}

    def cell(probe, **params):
        return by_probe[(probe, tuple(sorted(params.items())))].cells[1]

    assert cell("syscall.getpid").decision == SLOWER
    assert cell("syscall.getppid").decision == FASTER
    assert cell("syscall.getsid").decision == NO_DIFFERENCE
    assert cell("syscall.getuid").decision == NO_DIFFERENCE
    assert cell("syscall.read").decision == ONLY_ONE
    assert cell("syscall.write").decision == ONLY_ONE
    # A side whose tasks switched too few times per operation measured something else.
    suspect = cell("switch.pipe", between="processes", cpus="same", policy="batch")
    assert suspect.excluded == (
        Exclusion(NOT_THE_OPERATION_SIDE, ("A",), codes=("too_few_switches",)),
    )
    assert excluded_words(suspect.excluded) == [
        "A made too few switches per operation: not the operation (too_few_switches)"
    ]
    moved = cell("switch.pipe", between="threads", cpus="any", policy="batch")
    assert moved.excluded == (Exclusion(PLACEMENT, ("A", "B"), (1, 2)),)
    assert excluded_words(moved.excluded) == ["placement: A ran on one CPU, B on 2 CPUs"]
    unsupported = cell("create.pthread_scope_process")
    assert unsupported.excluded == () and unsupported.note == "unsupported"
    for probe in ("syscall.getpid", "syscall.getppid", "syscall.getsid", "syscall.getuid"):
        assert cell(probe).excluded == ()

    summary = comparison.summaries[0]
    assert (summary.slower, summary.faster, summary.no_difference) == (1, 1, 2)
    assert (summary.only_in_one, summary.excluded, summary.comparable) == (2, 3, 4)
    # Geometric mean of 3, 0.5, 1.02 and 1: 1.53 ** (1/4) = 1.1122 (not the excluded 4x, 10x).
    assert summary.geometric_mean == pytest.approx((3 * 0.5 * 1.02 * 1.0) ** 0.25, rel=1e-12)
    assert summary_lines(comparison) == [
        "B vs A: 1 slower, 1 faster, 2 no meaningful difference, 2 only in one run, "
        "3 excluded (unsupported, or placement, CPU count or switches differ); "
        "rows differ both ways (geometric mean of B/A over 4 comparable rows: 1.11×)"
    ]
    # One direction only: the mean is said as that direction; no row differing:
    # never 'ran slower' (issue 30: the line contradicted its only row).
    one_way = Summary(2, 0, 3, 0, 0, 5, 1.4)
    assert summary_line(one_way).endswith(
        "over 5 comparable rows B ran 1.40× slower than A (geometric mean)"
    )
    none = Summary(0, 0, 1, 0, 0, 1, 1.78)
    assert "ran" not in summary_line(none)
    assert summary_line(none).endswith(
        "no row differs meaningfully (geometric mean of B/A over 1 comparable row: 1.78×, "
        "within the rows' noise)"
    )


def test_different_run_options_exclude_no_row(store, tmp_path):
    def full_run(env):
        env["options"].update(quick=False, samples=30, min_time_s=0.01)

    a, b = pair(full_run)
    comparison = compare_runs([stored(store, a), stored(store, b)])
    getpid = next(row for row in comparison.rows if row.probe == "syscall.getpid").cells[1]
    assert getpid.excluded == () and getpid.decision == SLOWER
    with Store.open(tmp_path / "same-options.db") as other_store:
        same = compare_runs([stored(other_store, run) for run in pair()])
    assert comparison.summaries == same.summaries  # options change nothing of the decisions
    assert summary_lines(comparison)[1] == (
        "run options differ (quick, samples, min_time_s): they change how sure each "
        "figure is, not what it measures; rows are compared"
    )


def test_a_different_cpu_count_excludes_only_rows_whose_cpus_were_chosen(store):
    def more_cpus(env):
        env["cpu"]["allowed"] = [0, 1, 2, 3]

    a, b = pair(more_cpus)
    comparison = compare_runs([stored(store, a), stored(store, b)])
    excluded = {
        (row.probe, row.params.get("cpus")): excluded_words(row.cells[1].excluded)
        for row in comparison.rows
    }
    assert excluded[("syscall.getpid", None)] == []
    assert not any("CPU count" in why for why in excluded[("switch.pipe", "same")])
    assert "CPU count: A was allowed 2 CPUs, B 4" in excluded[("switch.pipe", "any")]


def test_rates_turn_the_time_ratio():
    # Messages per second: twice the rate is faster, and the geometric mean counts it as 0.5.
    difference = stats.compare_samples(around(100.0), around(200.0))
    assert decide(difference, "msgs/s", 0.05) == FASTER
    assert time_ratio(difference, "msgs/s") == pytest.approx(0.5)


def test_compare_needs_two_runs(store):
    with pytest.raises(ValueError):
        compare_runs([stored(store, real_run("run_a.jsonl"))])


def test_a_key_figure_not_significant_beside_a_small_p_says_why():
    """A user read 'not significant, p = 0.00018' (a suspect side widened the interval
    past 1, 2026-11-27): the key figure says the reason; a large p is its own reason."""

    def cell(p_value: float, why_not: stats.NotSignificant) -> MachineCell:
        return MachineCell(
            11.6e3, 5.27, 0.9, 12.0, p_value, False, NO_DIFFERENCE, (), None, why_not=why_not
        )

    wide = stats.NotSignificant(noise.WIDENED_INCLUDES_ONE, (0.95,))
    widened, _ = machines_view._cell_words(cell(0.00018, wide), "not significant")
    assert widened.startswith("not significant (95% interval, widened, includes 1), p = 0.00018")
    p_large = stats.NotSignificant(stats.P_AT_LEAST_ALPHA, (0.104, 0.05))
    large, _ = machines_view._cell_words(cell(0.104, p_large), "not significant")
    assert large == "not significant, p = 0.1"
