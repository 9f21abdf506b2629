"""The gate of `compare --fail-above`: three outcomes, the detectable slowdown,
what excludes a row, and the exit statuses, on recorded runs and samples.

The recorded pairs (fixtures/README.md) are real engine output: two quick
runs with --samples 10 and 12, a run slowed by four stacked seccomp filters
beside a CPU hog (its rows suspect), two runs beside the hog whose rows are
suspect or placed differently. The rules themselves are checked on a real
getpid record whose samples are set around chosen figures. Nothing here
measures anything.
"""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import pytest
from scipy import stats as scipy_stats

from conftest import REPO, TIGHT, import_runs, invoke, real_run, tight_getpid
from ctxbench import stats, units
from ctxbench.analysis.compare import noise
from ctxbench.analysis.compare.comparison import compare_runs
from ctxbench.analysis.compare.gate import (
    EXCLUDED,
    FAILED,
    INCONCLUSIVE,
    NOISE,
    NOT_SLOWER,
    PASSED,
    SLOWER,
    UNSURE,
    decide_by,
    gate,
)
from ctxbench.records.naming import params_key
from ctxbench.records.result import result_of
from ctxbench.records.runs import group_run
from ctxbench.store.db import Store
from ctxbench.views.compare.gate import gate_lines
from ctxbench.views.export import comparison_dict

COMPARE_SCHEMA = json.loads((REPO / "schema" / "compare.schema.json").read_text())


def _store_earlier(db: str, names: list[str]) -> None:
    """The recorded runs NAMES stored again as earlier-0, earlier-1...: the
    machine's history (the same figures, other run ids)."""
    with Store.open(db) as store:
        for n, name in enumerate(names):
            records = copy.deepcopy(real_run(name).all())
            for record in records:
                record["run_id"] = f"earlier-{n}"
            store.add_run(group_run(records), origin="import")


# ---- the rules, on a real record with chosen figures ------------------------------
def getpid(median: float, status: str = "ok") -> dict:
    record = tight_getpid(median)
    record["verdict"] = {"status": status, "reasons": []}
    return record


def _run(run_id: str, median: float, status: str = "ok", reference_ratio: float = 1.0):
    """run_a.jsonl reduced to syscall.getpid at MEDIAN, with run id RUN_ID and
    (when given) a host reference that ran at REFERENCE_RATIO of its best."""
    records = copy.deepcopy(real_run("run_a.jsonl").all())
    kept = []
    for record in records:
        record["run_id"] = run_id
        if record["kind"] != "result":
            kept.append(record)
        elif record["probe"] == "syscall.getpid":
            replaced = getpid(median, status)
            replaced["run_id"] = run_id
            replaced["interference"] = {
                "reference": "test",
                "best_ns": 1000.0,
                "slowed_ratio": 1.2,
                "retries": 1,
                "attempts": [
                    {
                        "median": median,
                        "reference_ratio": reference_ratio,
                        "slowed_share": 0.0,
                        "samples": 10,
                    }
                ],
                "kept": 0,
                "slowed": reference_ratio > 1.2,
            }
            kept.append(replaced)
    return group_run(kept)


def _compare(tmp_path, a, b, history):
    tmp_path.mkdir(parents=True, exist_ok=True)
    with Store.open(tmp_path / "rules.db") as store:
        runs = [store.load(store.add_run(run, origin="import")) for run in (a, b)]
    key = ("syscall.getpid", params_key(runs[0].results[0].params))
    return compare_runs(runs, history={key: history})


QUIET_HISTORY = [100.0, 101.0, 99.0, 100.5, 99.5]  # log spread 0.79%


def test_the_detectable_slowdown_is_the_minimum_detectable_effect(tmp_path):
    comparison = _compare(tmp_path, _run("a", 100.0), _run("b", 100.0), QUIET_HISTORY)
    judged_by = comparison.rows[0].cells[1].noise
    assert judged_by.source == noise.HISTORY and judged_by.df == 4
    se = stats.weighted_log_spread(QUIET_HISTORY, [1.0] * 5).spread * math.sqrt(2.0)
    assert judged_by.se == pytest.approx(se)
    t = scipy_stats.t
    expected = math.expm1((t.ppf(0.975, 4) + t.ppf(0.80, 4)) * se)
    assert noise.detectable(judged_by) == pytest.approx(expected)
    row = gate(comparison, 10).rows[0]
    assert row.outcome == NOT_SLOWER and row.detectable == pytest.approx(expected)
    # The same row cannot vouch for a threshold below what it could detect.
    assert expected > 0.03
    tight = gate(comparison, 3).rows[0]
    assert (tight.outcome, tight.why) == (INCONCLUSIVE, NOISE)


@pytest.mark.parametrize(
    "b_median, percent, outcome",
    [
        (100.0, 10, NOT_SLOWER),
        (109.0, 10, SLOWER),  # past the line a 10% slowdown crosses 4 times in 5
        (105.0, 10, NOT_SLOWER),
        (130.0, 10, SLOWER),  # the whole interval above 1.10
        (90.0, 10, NOT_SLOWER),  # faster is not slower
    ],
)
def test_a_row_that_could_see_the_threshold_is_slower_or_not(tmp_path, b_median, percent, outcome):
    comparison = _compare(tmp_path, _run("a", 100.0), _run("b", b_median), QUIET_HISTORY)
    assert gate(comparison, percent).rows[0].outcome == outcome


def test_a_large_regression_is_slower_whatever_the_power(tmp_path):
    noisy = [100.0, 130.0, 80.0, 115.0]  # log spread 20%: detectable far above 10%
    comparison = _compare(tmp_path, _run("a", 100.0), _run("b", 100.0), noisy)
    same = gate(comparison, 10).rows[0]
    assert (same.outcome, same.why) == (INCONCLUSIVE, NOISE) and same.detectable > 0.10
    comparison = _compare(tmp_path / "x", _run("a", 100.0), _run("b", 400.0), noisy)
    assert gate(comparison, 10).rows[0].outcome == SLOWER


def test_a_suspect_side_widens_the_noise_and_is_not_slower_only_past_its_bound(tmp_path):
    ok = _compare(tmp_path, _run("a", 100.0), _run("b", 100.0), QUIET_HISTORY)
    suspect = _compare(tmp_path / "s", _run("a", 100.0), _run("b", 100.0, "suspect"), QUIET_HISTORY)
    plain, widened = ok.rows[0].cells[1].noise, suspect.rows[0].cells[1].noise
    assert [w.cause for w in widened.widened] == [noise.SUSPECT]
    spread = widened.widened[0].spread
    sigma = scipy_stats.iqr([math.log(100 * f) for f in TIGHT], scale="normal")
    assert spread == pytest.approx(math.sqrt(math.pi / 2) * sigma / math.sqrt(len(TIGHT)))
    assert widened.se == pytest.approx(math.hypot(plain.se, spread))
    # Its own samples are tight: with that uncertainty as noise the
    # interval's upper end stays below 1.10, so it is not slower at 10 %...
    bound = noise.slowdown_bound(widened, 0.0)
    assert bound == pytest.approx(scipy_stats.t.ppf(0.975, widened.df) * widened.se)
    assert gate(suspect, 10).rows[0].outcome == NOT_SLOWER
    # ...but not at 3 %, which the same noise could not see (rule 2's line).
    row = gate(suspect, 3).rows[0]
    assert row.outcome == INCONCLUSIVE and row.why != UNSURE
    # A 2x regression on the suspect side is still a regression.
    slowed = _compare(tmp_path / "r", _run("a", 100.0), _run("b", 200.0, "suspect"), QUIET_HISTORY)
    assert gate(slowed, 10).rows[0].outcome == SLOWER


def test_a_run_whose_host_reference_ran_slowed_as_a_whole_is_not_compared_as_the_same_host(
    tmp_path,
):
    slowed = _compare(
        tmp_path, _run("a", 100.0), _run("b", 100.0, reference_ratio=1.5), QUIET_HISTORY
    )
    host = noise.host_state(slowed.runs[1].results)
    assert host.slowed_as_a_whole and host.reference_ratio == 1.5
    causes = {w.cause: w.spread for w in slowed.rows[0].cells[1].noise.widened}
    assert causes[noise.HOST_SLOWED] == pytest.approx(math.log(1.5))
    assert causes[noise.SLOWED] == pytest.approx(math.log(1.5))  # the row's own, still slowed
    assert gate(slowed, 10).rows[0].outcome == INCONCLUSIVE
    # Under the engine's slowed ratio (1.2) the host counts as the same.
    calm = _compare(
        tmp_path / "c", _run("a", 100.0), _run("b", 100.0, reference_ratio=1.1), QUIET_HISTORY
    )
    assert calm.rows[0].cells[1].noise.widened == ()
    assert gate(calm, 10).rows[0].outcome == NOT_SLOWER


def _taken(run, share: float):
    """RUN's getpid made suspect, its counters saying others took SHARE of
    its kept samples' time."""
    for result in run.results:
        result["verdict"] = {"status": "suspect", "reasons": []}
        result["counters"] = {"sharing": "one_cpu", "kept": {"other_share": share}}
    return run


def test_interference_only_adds_time_so_b_may_pass_and_a_may_not(tmp_path):
    """Others took a share of a side's time: B's figure can only have been
    inflated, so B = A at 1.00x is not slower at 10 % however much was taken
    from B (its TAKEN widening is a bias that can only make B look slower);
    A's figure may be inflated by as much, so the same 1.00x with 10 % taken
    from A is inconclusive at 10 % (up to 1.11x once A's inflation is added)
    and decided at 25 %."""
    b_taken = _compare(tmp_path, _run("a", 100.0), _taken(_run("b", 100.0), 0.5), QUIET_HISTORY)
    judged_by = b_taken.rows[0].cells[1].noise
    assert noise.detectable(judged_by) > 0.10  # every widening as noise: blind at 10 %
    assert noise.pass_detectable(judged_by) < 0.10  # without B's bias it sees 10 %
    assert gate(b_taken, 10).rows[0].outcome == NOT_SLOWER
    a_taken = _compare(
        tmp_path / "a", _taken(_run("a", 100.0), 0.1), _run("b", 100.0), QUIET_HISTORY
    )
    judged_by = a_taken.rows[0].cells[1].noise
    assert noise.slowdown_bound(judged_by, 0.0) > -math.log(0.9) > math.log(1.10)
    row = gate(a_taken, 10).rows[0]
    assert row.outcome == INCONCLUSIVE and row.decider.quieter
    assert gate(a_taken, 25).rows[0].outcome == NOT_SLOWER
    # A slowdown on B's side past the line is still slower whatever was taken.
    assert gate(_compare(tmp_path / "s", _run("a", 100.0), _taken(_run("b", 200.0), 0.5),
                         QUIET_HISTORY), 10).rows[0].outcome != NOT_SLOWER  # fmt: skip


def test_a_side_whose_cpu_others_took_widens_by_what_they_may_have_added(tmp_path):
    """A suspect side whose counters say others took half its kept samples'
    time may be up to 2x inflated: its noise widens by log 2, and a 1.5x
    ratio against it is inconclusive, not slower."""
    b = _run("b", 150.0, "suspect")
    for result in b.results:
        result["counters"] = {"sharing": "one_cpu", "kept": {"other_share": 0.5}}
    comparison = _compare(tmp_path, _run("a", 100.0), b, QUIET_HISTORY)
    causes = {w.cause: w.spread for w in comparison.rows[0].cells[1].noise.widened}
    assert causes[noise.TAKEN] == pytest.approx(math.log(2.0))
    row = gate(comparison, 10).rows[0]
    assert row.outcome == INCONCLUSIVE and row.decider.quieter


def test_the_machines_history_counts_a_suspect_run_as_half():
    figures = [(100.0, 1.0), (104.0, 1.0), (96.0, noise.SUSPECT_WEIGHT), (100.0, 1.0)]
    a, b = result_of(getpid(100.0)), result_of(getpid(100.0))
    _, judged_by = noise.judge(a, b, history=figures)
    assert judged_by.source == noise.HISTORY and judged_by.n == 4
    assert judged_by.df == pytest.approx(3.5 - 1.0)
    # Weighted median of the logs: log 100; of the deviations (0, 0, 0.039 at
    # weight 0.5... 0.041): the cumulative weight reaches half (1.75) at 0.
    assert judged_by.spread == pytest.approx(0.0)
    # Two ok runs and two suspect ones make 3 runs' worth: enough. One fewer is not.
    enough = [(100.0, 1.0), (101.0, 1.0), (99.0, 0.5), (100.0, 0.5)]
    assert noise.judge(a, b, history=enough)[1].source == noise.HISTORY
    short = enough[:3]
    assert noise.judge(a, b, history=short)[1].source == noise.WITHIN_RUN


def test_one_run_in_a_slow_spell_does_not_make_the_machines_spread():
    """Nine runs within 2% and one 2.4x slower (a spell, flagged suspect): the
    spread is the nine's, not the spell's (the gate quiet on 2026-11-26 had
    such a run among its history)."""
    calm = [1790.0, 1774.0, 1765.0, 1826.0, 1759.0, 1793.0, 1768.0, 1757.0, 1836.0]
    figures = [(f, 1.0) for f in calm] + [(4383.0, noise.SUSPECT_WEIGHT)]
    spread = stats.weighted_log_spread([f for f, _ in figures], [w for _, w in figures])
    assert spread.spread < 0.03
    calm_logs = [math.log(f) for f in calm]
    center = sorted(calm_logs)[4]
    mad = sorted(abs(x - center) for x in calm_logs)[4]
    assert spread.spread == pytest.approx(stats.MAD_TO_SD * mad, rel=0.25)
    assert spread.df == pytest.approx(9.5 - 1.0)


def test_an_inconclusive_row_says_how_many_repeats_would_decide_it():
    judged_by = noise.Noise(noise.HISTORY, 0.05, 5, se=0.05 * math.sqrt(2.0), df=4)
    limit = math.log1p(0.10)
    decider = decide_by(judged_by, limit, 0.95, noise.GATE_POWER)
    n = decider.repeats
    assert n is not None and n >= 2

    def detectable(repeats: int) -> float:
        return stats.detectable_log_effect(0.05 * math.sqrt(2.0 / repeats), 2 * repeats - 2)

    assert detectable(n) <= limit < detectable(n - 1)
    # A longer history cannot bring a 5% spread under 10%: one run a side stays.
    assert decider.earlier_runs is None
    assert not decider.quieter


# ---- the gate's outcome and its counts --------------------------------------------
def test_the_gate_passes_only_when_rows_were_judged_not_slower(tmp_path):
    ok = _compare(tmp_path, _run("a", 100.0), _run("b", 100.0), QUIET_HISTORY)
    assert gate(ok, 10).outcome == PASSED
    assert gate(ok, 3).outcome == INCONCLUSIVE  # no row could see 3%
    assert gate(ok, 3, allow_inconclusive=100).outcome == INCONCLUSIVE  # none judged
    slower = _compare(tmp_path / "s", _run("a", 100.0), _run("b", 130.0), QUIET_HISTORY)
    assert gate(slower, 10).outcome == FAILED


def test_allow_inconclusive_is_a_share_of_the_rows(db):
    """Real runs (run_a, run_b) with a history of the machine made of copies
    of both, earlier: the rows ok in it are judged, the others (suspect,
    placed differently) are inconclusive, and only a large enough allowance
    lets the gate pass."""
    _store_earlier(db, ["run_a.jsonl", "run_b.jsonl"] * 2)
    a_id = import_runs(db, "run_a.jsonl")[0]
    b_id = import_runs(db, "run_b.jsonl")[0]
    done = invoke("compare", a_id, b_id, "--fail-above", "10", "--json", "--db", db)
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    counts = data["fail_above"]["counts"]
    rows = len(data["fail_above"]["rows"])
    assert counts["slower"] + counts["not_slower"] + counts["inconclusive"] == rows
    if counts["slower"]:
        assert done.exit_code == 1
        return
    assert counts["not_slower"] and counts["inconclusive"]
    assert done.exit_code == 4
    share = 100.0 * counts["inconclusive"] / rows
    under = invoke("compare", a_id, b_id, "--fail-above", "10", "--allow-inconclusive",
                   f"{share - 1:.2f}", "--db", db)  # fmt: skip
    assert under.exit_code == 4
    enough = invoke("compare", a_id, b_id, "--fail-above", "10", "--allow-inconclusive",
                    f"{share + 1:.2f}", "--db", db)  # fmt: skip
    assert enough.exit_code == 0, enough.stdout
    last = enough.stdout.strip().splitlines()[-1]
    assert last.startswith("--fail-above 10: PASSED: 0 slower, ")
    assert f"{counts['inconclusive']} inconclusive of {rows} row(s)" in last


# ---- done means: on recorded runs ---------------------------------------------------
def test_samples_10_against_12_excludes_nothing(db):
    """gate_a.jsonl (--quick: 10 samples) against gate_samples12.jsonl (the
    same selection with --samples 12): the options differ and are shown, no
    row is excluded for them, and every row is judged by the gate."""
    a, b = import_runs(db, "gate_a.jsonl", "gate_samples12.jsonl")
    done = invoke("compare", a, b, "--fail-above", "50", "--json", "--db", db)
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    assert data["runs"][0]["options"]["samples"] == 10
    assert data["runs"][1]["options"]["samples"] == 12
    assert all(row["excluded"] == [] for row in data["rows"])
    assert not any(row["why"] == EXCLUDED for row in data["fail_above"]["rows"])
    assert any(note.startswith("run options differ (samples") for note in data["notes"])
    summary = data["summaries"][0]
    assert summary["excluded"] == 0 and summary["comparable"] == len(data["rows"])


def test_a_gate_over_rows_all_suspect_or_excluded_never_passes(db):
    """gate_loaded_a.jsonl and gate_loaded_b.jsonl, two runs beside
    `stress-ng --cpu 2`: every row has a suspect side or ran on a different
    number of CPUs. Whatever the threshold or the allowance, and with a
    history of the machine, the gate does not exit 0."""
    a, b = import_runs(db, "gate_loaded_a.jsonl", "gate_loaded_b.jsonl")
    data = json.loads(invoke("compare", a, b, "--json", "--db", db).stdout)
    for row in data["rows"]:
        assert row["excluded"] or "suspect" in (row["status"], row["reference_status"]), row
    for percent in ("5", "10", "50", "400"):
        for allow in ("0", "100"):
            done = invoke("compare", a, b, "--fail-above", percent, "--allow-inconclusive",
                          allow, "--db", db)  # fmt: skip
            assert done.exit_code in (1, 4), (percent, allow, done.stdout)
    # With earlier runs of the machine in the store (the same runs again,
    # stored earlier under other ids), the rows are judged by history, still
    # never not slower.
    _store_earlier(db, ["gate_loaded_a.jsonl", "gate_loaded_b.jsonl"] * 2)
    # compare the earlier pair's copies: the history is the other copies
    done = invoke("compare", "earlier-2", "earlier-3", "--fail-above", "10", "--json",
                  "--db", db)  # fmt: skip
    assert done.exit_code in (1, 4)
    outcomes = {row["outcome"] for row in json.loads(done.stdout)["fail_above"]["rows"]}
    assert NOT_SLOWER not in outcomes


def test_a_2x_regression_in_a_suspect_row_fails_the_gate(db):
    """gate_a.jsonl against gate_seccomp2.jsonl: the same selection run
    under four stacked seccomp filters (each system call runs four BPF
    programs) beside `stress-ng --cpu 2`. syscall.getpid took about twice as
    long and its slowed side is suspect: the gate fails on it."""
    a, b = import_runs(db, "gate_a.jsonl", "gate_seccomp2.jsonl")
    done = invoke("compare", a, b, "--fail-above", "10", "--json", "--db", db)
    assert done.exit_code == 1, done.stderr
    data = json.loads(done.stdout)
    row = next(r for r in data["rows"] if r["variant"] == "syscall.getpid")
    assert "suspect" in (row["status"], row["reference_status"])
    assert 1.6 < row["time_ratio"] < 3.0
    assert row["noise"]["widened"] and row["excluded"] == []
    outcome = next(r for r in data["fail_above"]["rows"] if r["variant"] == "syscall.getpid")
    assert outcome["outcome"] == SLOWER
    assert any(line.startswith("slower by more than 10%: syscall.getpid: B ran ")
               for line in done.stderr.splitlines())  # fmt: skip


# ---- issue 41: the interval rule, and what the last line says ----------------------
NOISY = [100.0, 130.0, 80.0, 115.0]  # log spread ~20%: detectable far above 25%


def test_a_row_whose_interval_lies_above_the_threshold_is_slower_however_noisy(tmp_path):
    """Both sides suspect, their host references slowed, a history spread of
    20 %: the interval is wide, but it lies wholly above 1.25, so the row is
    slower; neither a suspect side nor the noise makes it inconclusive."""
    a = _run("a", 100.0, "suspect", reference_ratio=1.3)
    b = _run("b", 800.0, "suspect", reference_ratio=1.3)
    comparison = _compare(tmp_path, a, b, NOISY)
    cell = comparison.rows[0].cells[1]
    assert {w.cause for w in cell.noise.widened} >= {noise.SUSPECT, noise.SLOWED}
    row = gate(comparison, 25).rows[0]
    assert row.detectable > 0.25  # it could not have seen 25 %...
    assert row.interval is not None and row.interval[0] > 1.25  # ...but it is past it
    assert row.outcome == SLOWER
    # Lower than the threshold at the interval's low end: no longer decided by it.
    close = _compare(tmp_path / "c", a, _run("b", 130.0, "suspect", reference_ratio=1.3), NOISY)
    row = gate(close, 25).rows[0]
    assert row.interval[0] < 1.25 and row.outcome == INCONCLUSIVE


def _three(tmp_path, history):
    """A, B identical to A, C twice as slow, one noisy history: B and C both
    inconclusive at 25 %."""
    with Store.open(tmp_path / "three.db") as store:
        runs = [
            store.load(store.add_run(run, origin="import"))
            for run in (_run("a", 100.0), _run("b", 100.0), _run("c", 200.0))
        ]
    key = ("syscall.getpid", params_key(runs[0].results[0].params))
    return compare_runs(runs, history={key: history})


def test_the_last_line_gives_each_inconclusive_rows_ratio_and_interval(tmp_path):
    """'B is 2x but noisy' reads apart from 'A = B but noisy' on the gate's
    last line, which is what a CI log shows."""
    very_noisy = [100.0, 300.0, 40.0, 180.0, 60.0]
    comparison = _three(tmp_path, very_noisy)
    judged = gate(comparison, 25)
    same, double = judged.rows
    assert same.outcome == double.outcome == INCONCLUSIVE
    last = gate_lines(comparison, judged)[-1]
    assert last.startswith("--fail-above 25: INCONCLUSIVE")
    for verdict, factor in ((same, "1.00×"), (double, "2.00×")):
        low, high = verdict.interval
        assert low < 1.25 < high
        words = f"{factor} ({units.factor(low)}–{units.factor(high)})"
        assert words in last, last
    assert "syscall.getpid (run C) 2.00×" in last
    # --json carries the same intervals.
    document = comparison_dict(comparison, judged)
    jsonschema.validate(document, COMPARE_SCHEMA)
    rows = document["fail_above"]["rows"]
    assert [r["interval"]["low"] for r in rows] == pytest.approx(
        [same.interval[0], double.interval[0]]
    )


def test_a_row_not_compared_is_counted_on_the_last_line_without_a_ratio(db):
    a, b = import_runs(db, "gate_loaded_a.jsonl", "gate_loaded_b.jsonl")
    done = invoke("compare", a, b, "--db", db, "--fail-above", "25")
    last = [line for line in done.stdout.splitlines() if line.startswith("--fail-above")][-1]
    assert "not compared" in last, last
