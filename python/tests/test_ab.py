"""The in-run A/B: the paired ratio (analysis.compare.paired), its words (views.compare.paired)
and `compare RUN --ab`, on synthetic rounds built from real engine records.

The rounds are made from run_a.jsonl's records (real engine output): one
engine process per arm and round, its samples scaled by how the host moved
in that round (the same for both arms) and, for B, by B's own effect;
``acquire.ab.merge_ab`` makes them one run, as `run --ab-wrapper` stores it.
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics

import pytest

from conftest import invoke, real_run, write_jsonl
from ctxbench import stats
from ctxbench.acquire.ab import WrappedEngineRun, arm_order, merge_ab, wrapper_words
from ctxbench.acquire.runner import RunOptions
from ctxbench.analysis.compare.gate import FAILED, INCONCLUSIVE, NOT_SLOWER, PASSED, SLOWER
from ctxbench.analysis.compare.paired import (
    FASTEST,
    FEW_ROUNDS,
    MEDIAN,
    Axis,
    AxisRefused,
    judge,
    pair_records,
    paired_gate,
    paired_ratio,
    parse_axis,
    resolution_floor,
    signed_rank_interval,
)
from ctxbench.records.result import Result, result_of
from ctxbench.records.schema import record_problem
from ctxbench.views.compare.paired import axis_refused_words

# How the host moved each round: 15 % up and down, both arms alike.
MOVES = [1.00, 1.15, 0.87, 1.10, 0.90, 1.14, 0.86, 1.05, 0.95, 1.12]
PROBES = ("syscall.getppid", "syscall.getpid")


def process_records(run_id: str, factor: float, wobble: float = 0.0) -> list[dict]:
    """run_a's env, its PROBES' results with every sample times FACTOR (and
    the n-th sample times 1 + WOBBLE * (-1)^n), and run_end: one engine process."""
    run = real_run()
    env = copy.deepcopy(run.env)
    env["run_id"] = run_id
    results = []
    for result in run.results:
        if result["probe"] not in PROBES:
            continue
        record = copy.deepcopy(result)
        record["run_id"] = run_id
        record["samples"] = [
            value * factor * (1 + wobble * (-1) ** n) for n, value in enumerate(result["samples"])
        ]
        record["summary"] = stats.summarize(record["samples"])
        record.pop("set_aside", None)
        results.append(record)
    end = {
        "schema": 1,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": "2026-11-27T18:00:00Z",
        "duration_s": 1.0,
        "counts": {"ok": len(results), "suspect": 0, "unsupported": 0, "failed": 0},
        "interrupted": False,
    }
    return [env, *results, end]


def ab_run(effect: float, rounds: int = 8, noise: float = 0.002) -> list[dict]:
    """A run --ab-wrapper run: B EFFECT times A in every round, the rounds moving
    by MOVES for both, and NOISE of B's own (alternately up and down)."""
    taken = []
    for k in range(rounds):
        move = MOVES[k % len(MOVES)]
        own = 1 + noise * (-1) ** k
        taken.append(
            {
                "A": process_records(f"20261127T1800{k:02d}Z-0000000a", move),
                "B": process_records(f"20261127T1800{k:02d}Z-0000000b", move * effect * own),
            }
        )
    return merge_ab(taken, "ctxbench-seccomp-exec allow --", asked=rounds)


def results_of(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "result"]


def typed(records: list[dict]) -> list[Result]:
    """The result records among RECORDS, read into the type analysis takes."""
    return [result_of(r) for r in results_of(records)]


# ---- the paired ratio -----------------------------------------------------------------------
def test_paired_ratio_is_the_hodges_lehmann_estimate_with_the_signed_rank_interval():
    logs = [0.01, 0.03, 0.02, 0.025, 0.015, 0.02]
    pairs = [(100.0, 100.0 * math.exp(d)) for d in logs]
    ratio, low, high, se, detectable = paired_ratio(pairs)
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(6) for j in range(i, 6))
    # n = 6: P(T <= 0) = 1/64 is the only tail within 2.5 %: the extreme Walsh averages.
    assert ratio == pytest.approx(math.exp(statistics.median(walsh)))
    assert (low, high) == pytest.approx((math.exp(0.01), math.exp(0.03)))
    t_975, t_80 = 2.5705818366147395, 0.9195437503240783  # t(0.975, 5), t(0.80, 5)
    assert se == pytest.approx(0.02 / (2 * t_975))
    assert detectable == pytest.approx(math.expm1((t_975 + t_80) * se))
    assert paired_ratio(pairs[:5]) is None  # n = 5 has no 95 % signed-rank interval
    assert paired_ratio(pairs[:1]) is None


def test_signed_rank_interval_matches_the_table():
    # n = 10 at 95 %: the critical T is 8, so the 9th Walsh average from either end.
    logs = [0.001 * k * k for k in range(10)]
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(10) for j in range(i, 10))
    _, low, high = signed_rank_interval(logs)
    assert (low, high) == (walsh[8], walsh[-9])
    # n = 20: critical T 52, the 53rd from either end.
    logs = [math.sin(k) / 100 for k in range(20)]
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(20) for j in range(i, 20))
    _, low, high = signed_rank_interval(logs)
    assert (low, high) == (walsh[52], walsh[-53])


def test_a_few_discordant_rounds_do_not_hide_a_3_percent_slowdown():
    # 16 rounds at 3 % +- 0.5 %, three of them off by 10-15 % (within the 1.20x rule,
    # so not set aside): a t interval of the mean spans 1 %, the signed-rank one does not.
    logs = [0.03 + 0.005 * (-1) ** k for k in range(16)]
    logs[3], logs[8], logs[12] = 0.03 + 0.15, 0.03 - 0.12, 0.03 + 0.13
    pairs = [(100.0, 100.0 * math.exp(d)) for d in logs]
    _, low, _, _, _ = paired_ratio(pairs)
    assert low > 1.02
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    assert math.exp(mean - 2.131 * sd / 4) < 1.01  # t(0.975, 15) = 2.131: the old rule's low end


def test_identical_rounds_are_not_judged_with_certainty():
    # B 1.1 % over A in every round, to the last digit: without a floor the interval
    # has no width and the pair would be slower at 1 %. The timer's step (20 ns over
    # 1000 operations of 27 ns: 0.074 % per figure) widens it across 1 %.
    records = results_of(ab_run(1.0, rounds=8, noise=0.0))
    for record in records:
        record["timer"] = {**record["timer"], "resolution_ns": 20.0}
        record["ops_per_sample"] = 1000
        record["summary"] = {**record["summary"], "median": 27.0}
        factor = 1.011 if record["params"]["arm"] == "B" else 1.0
        record["samples"] = [27.0 * factor] * len(record["samples"])
        for entry in record["schedule"]["round_figures"]:
            entry["median"] = 27.0 * factor - _baseline_of(record)
    assert resolution_floor(result_of(records[0])) == pytest.approx(20.0 / 27000.0)
    paired, _ = pair_records(typed(records), Axis("arm", "A", "B"))
    assert paired[0].low < 1.01 < 1.011 < paired[0].high
    assert judge(paired[0], 1.0).outcome == INCONCLUSIVE
    assert paired_ratio([(27.0, 27.0 * 1.011)] * 8)[1:3] == pytest.approx((1.011, 1.011))


def _baseline_of(record: dict) -> float:
    baseline = record.get("baseline") if record.get("corrected") is not None else None
    return float(baseline["value"]) if baseline else 0.0


def test_a_rate_is_oriented_like_a_time():
    # msgs/s: B's rate 10 % higher is B faster, a time ratio below 1.
    pairs = [(100.0, 110.0 + k * 0.1) for k in range(6)]
    ratio, *_ = paired_ratio(pairs, lower_is_better=False)
    assert ratio == pytest.approx(1 / 1.1, rel=0.01)


def test_three_percent_slower_in_every_round_is_slower_though_rounds_move_15_percent():
    records = ab_run(effect=1.03)
    a = {r["probe"]: r for r in results_of(records) if r["params"]["arm"] == "A"}
    # The rounds' own figures move by 15 % or more: unpaired, 3 % would hide in them.
    medians = [f["median"] for f in a["syscall.getppid"]["schedule"]["round_figures"]]
    assert max(medians) / min(medians) > 1.30
    judged = paired_gate(typed(records), Axis("arm", "A", "B"), 2.0)
    assert [v.outcome for v in judged.rows] == [SLOWER, SLOWER]
    assert judged.outcome == FAILED
    for verdict in judged.rows:
        assert verdict.paired.ratio == pytest.approx(1.03, abs=0.002)
        assert verdict.paired.rounds == 8


def test_identical_arms_are_not_slower():
    judged = paired_gate(typed(ab_run(effect=1.0)), Axis("arm", "A", "B"), 2.0)
    assert [v.outcome for v in judged.rows] == [NOT_SLOWER, NOT_SLOWER]
    assert judged.outcome == PASSED


def test_too_few_rounds_is_inconclusive_and_says_why():
    judged = paired_gate(typed(ab_run(effect=1.03, rounds=3)), Axis("arm", "A", "B"), 2.0)
    assert {v.outcome for v in judged.rows} == {INCONCLUSIVE}
    assert {v.why for v in judged.rows} == {FEW_ROUNDS}
    assert judged.outcome == INCONCLUSIVE


def test_an_interval_across_the_threshold_is_inconclusive():
    # B 2 % slower with 3 % of its own noise per round: the interval spans 2 %.
    paired, _ = pair_records(typed(ab_run(1.02, noise=0.03)), Axis("arm", "A", "B"))
    verdict = judge(paired[0], 2.0)
    assert verdict.outcome == INCONCLUSIVE and verdict.why == "noise"
    assert paired[0].low < 1.02 < paired[0].high


def test_each_round_is_judged_by_its_fastest_sample_where_the_samples_say_their_round():
    records = results_of(ab_run(1.03, rounds=6))
    paired, _ = pair_records(typed(records), Axis("arm", "A", "B"))
    assert {p.statistic for p in paired} == {FASTEST}
    # Samples that do not add up to the rounds' counts: the rounds' medians stand in.
    for record in records:
        record["samples"] = record["samples"][1:]
    paired, _ = pair_records(typed(records), Axis("arm", "A", "B"))
    assert {p.statistic for p in paired} == {MEDIAN}
    assert all(p.rounds == 6 for p in paired)


def test_pairs_need_every_other_parameter_equal():
    records = results_of(ab_run(1.0))
    lonely = copy.deepcopy(records[0])
    lonely["probe"] = "syscall.getsid"
    paired, alone = pair_records(typed([*records, lonely]), Axis("arm", "A", "B"))
    assert sorted(p.probe for p in paired) == sorted(PROBES)
    assert [r.probe for r in alone] == ["syscall.getsid"]


@pytest.mark.parametrize(
    "text", ["seccomp", "seccomp=none", "=a:b", "seccomp=none:none", "x=b:c:d"]
)
def test_a_bad_axis_names_the_form(text):
    refused = parse_axis(text)
    assert isinstance(refused, AxisRefused)
    assert re.search(r"NAME=A:B|same value", axis_refused_words(refused))


# ---- the A/B run's records ---------------------------------------------------------------------
def test_arms_alternate_abba():
    assert [arm_order(k) for k in range(4)] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]


def test_merged_ab_run_is_valid_records_with_both_arms_and_each_rounds_figure():
    records = ab_run(effect=1.03, rounds=4)
    for record in records:
        assert record_problem(record) is None, record_problem(record)
    env, end = records[0], records[-1]
    assert env["options"]["ab_wrapper"] == "ctxbench-seccomp-exec allow --"
    assert env["options"]["ab_rounds"] == 4
    assert not end["interrupted"]
    results = results_of(records)
    assert {(r["probe"], r["params"]["arm"]) for r in results} == {
        (p, arm) for p in PROBES for arm in "AB"
    }
    assert [r["variant_index"] for r in results] == [1, 2, 3, 4]
    for result in results:
        figures = result["schedule"]["round_figures"]
        assert [f["round"] for f in figures] == [0, 1, 2, 3]
        assert result["repeats"]["count"] == 4
        assert len(result["samples"]) == sum(f["n"] for f in figures)


def test_a_round_without_its_second_arm_is_not_kept():
    whole = {"A": process_records("20261127T180000Z-0000000a", 1.0),
             "B": process_records("20261127T180000Z-0000000b", 1.0)}  # fmt: skip
    half = {"A": process_records("20261127T180001Z-0000000a", 1.0), "B": []}
    records = merge_ab([whole, half], "env", asked=5, interrupted=True)
    assert records[-1]["interrupted"]
    assert {len(r["schedule"]["round_figures"]) for r in results_of(records)} == {1}
    with pytest.raises(ValueError):
        merge_ab([half], "env", asked=5)


def test_the_wrapper_goes_before_the_engine(tmp_path):
    prefix = wrapper_words("env LD_PRELOAD=/lib/x.so")
    run = WrappedEngineRun(prefix, RunOptions(selectors=["syscall.getppid"]), engine=tmp_path / "e")
    command = run.command()
    assert command[:3] == ["env", "LD_PRELOAD=/lib/x.so", str(tmp_path / "e")]
    assert command[3:5] == ["run", "syscall.getppid"]


@pytest.mark.parametrize(
    "text,problem",
    [
        ("", "empty"),
        ("'unclosed", "quote"),
        ("LD_PRELOAD=x.so", "through env"),
        ("no-such-wrapper-here --", "not an executable"),
    ],
)
def test_a_bad_wrapper_names_the_problem(text, problem):
    with pytest.raises(ValueError, match=problem):
        wrapper_words(text)


# ---- compare RUN --ab ----------------------------------------------------------------------------
def stored(db: str, records: list[dict], tmp_path) -> str:
    path = write_jsonl(tmp_path / "ab.jsonl", records)
    done = invoke("import", str(path), "--db", db)
    assert done.exit_code == 0, done.output
    return records[0]["run_id"]


def test_compare_ab_fails_a_3_percent_slowdown_at_2(db, tmp_path):
    run_id = stored(db, ab_run(effect=1.03), tmp_path)
    done = invoke("compare", run_id, "--ab", "--fail-above", "2", "--db", db)
    assert done.exit_code == 1, done.output
    assert "B = under `ctxbench-seccomp-exec allow --`" in done.output
    assert "syscall.getppid: 1.03× (" in done.output
    assert "slower by more than 2%" in done.output
    assert "--fail-above 2 --ab arm=A:B: FAILED: 2 slower, 0 not slower" in done.output


def test_compare_ab_lines_fit_the_screen_and_the_outcome_stays_whole(db, tmp_path, monkeypatch):
    run_id = stored(db, ab_run(effect=1.03), tmp_path)
    monkeypatch.setenv("COLUMNS", "60")
    lines = invoke("compare", run_id, "--ab", "--fail-above", "2", "--db", db).stdout.splitlines()
    assert len(lines) > 4 and all(len(line) <= 60 for line in lines[:-1]), lines
    assert lines[-1].startswith("--fail-above 2 --ab arm=A:B: FAILED: 2 slower")  # one line
    # A pair's words continue indented under it, never as a line of their own.
    assert all(line.startswith("  ") for line in lines[1:-1]), lines


def test_compare_ab_passes_identical_arms_and_writes_json(db, tmp_path):
    run_id = stored(db, ab_run(effect=1.0), tmp_path)
    done = invoke("compare", run_id, "--ab", "--fail-above", "2", "--db", db)
    assert done.exit_code == 0, done.output
    data = json.loads(invoke("compare", run_id, "--ab", "--fail-above", "2", "--json",
                             "--db", db).stdout)  # fmt: skip
    assert data["gate"]["outcome"] == PASSED
    assert {row["outcome"] for row in data["pairs"]} == {NOT_SLOWER}
    assert all(row["low"] < 1.0 < row["high"] for row in data["pairs"])


def test_compare_ab_with_too_few_rounds_is_exit_4_saying_why(db, tmp_path):
    run_id = stored(db, ab_run(effect=1.03, rounds=3), tmp_path)
    done = invoke("compare", run_id, "--ab", "--fail-above", "2", "--db", db)
    assert done.exit_code == 4, done.output
    assert "3 paired round(s), at least 6 needed" in done.output
    assert "no pair was judged, so the gate cannot pass" in done.output


def test_compare_ab_on_a_parameter_axis(db, tmp_path):
    # The same rounds with the arm renamed to a parameter's values.
    records = ab_run(effect=1.03)
    for record in results_of(records):
        record["params"]["seccomp"] = {"A": "none", "B": "profile"}[record["params"].pop("arm")]
    run_id = stored(db, records, tmp_path)
    done = invoke("compare", run_id, "--ab", "seccomp=none:profile", "--fail-above", "2",
                  "--db", db)  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "B = seccomp=profile, A = seccomp=none" in done.output
    no_arm = invoke("compare", run_id, "--ab", "--db", db)
    assert no_arm.exit_code == 2
    assert "--ab NAME=A:B" in no_arm.output and "seccomp=none:profile" in no_arm.output


def test_compare_ab_usage_errors(db, tmp_path):
    run_id = stored(db, ab_run(effect=1.0), tmp_path)
    for args, words in [
        ((run_id, run_id, "--ab"), "give one RUN"),
        ((run_id, "--ab", "seccomp=none"), "NAME=A:B"),
        ((run_id, "--ab", "policy=normal:batch"), "no variant measured with both"),
        ((run_id, "--ab", "--pair", "idle"), "leave out --pair"),
    ]:
        done = invoke("compare", *args, "--db", db)
        assert done.exit_code == 2, (args, done.output)
        assert words in done.output


def test_a_killed_ab_runs_spool_is_imported_as_one_ab_run_of_its_whole_rounds(db, tmp_path):
    # What `run --ab-wrapper` spools: an @ab mark before each arm's engine process.
    # ctxbench was SIGKILLed in round 3: its B process has an env and no run_end.
    from ctxbench.cli.spool_records import ab_line

    lines = []
    for k in range(3):
        for arm in arm_order(k):
            records = process_records(f"20261127T1900{k:02d}Z-0000000{arm.lower()}", 1.0)
            if k == 2 and arm == "B":
                records = records[:2]  # env and one result: killed before its run_end
            lines.append(ab_line(k + 1, arm, 8, "env"))
            lines.extend(json.dumps(record) + "\n" for record in records)
    spool = tmp_path / ".ctxbench-unstored-1-x.jsonl"
    spool.write_text("".join(lines))
    done = invoke("import", str(spool), "--db", db)
    assert done.exit_code == 0, done.output
    shown = invoke("compare", "20261127T190000Z-0000000a", "--ab", "--json", "--db", db)
    assert shown.exit_code == 0, shown.output
    pairs = json.loads(shown.output)["pairs"]
    assert sorted(p["probe"] for p in pairs) == sorted(PROBES)
    assert {(p["rounds_a"], p["rounds_b"]) for p in pairs} == {(2, 2)}
    # Marks before records that are not in order are named, not guessed at.
    spool.write_text(lines[1] + lines[0] + "".join(lines[2:]))
    done = invoke("import", str(spool), "--db", db)
    assert done.exit_code != 0 and "A/B" in done.output
