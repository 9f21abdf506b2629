"""The noise model of compare, rule by rule, on recorded samples: which source
judges a row (repeats, history, within-run), the within-run floor, the
whole-interval rule of --fail-above, and the history's choice of runs by
machine. No test here measures anything."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import pytest

from conftest import REPO, TIGHT, a_result, real_environment, real_run, tight_getpid
from ctxbench import stats, units
from ctxbench.analysis.compare import noise
from ctxbench.analysis.compare.comparison import FASTER, NO_DIFFERENCE, SLOWER, compare_runs, decide
from ctxbench.analysis.compare.gate import INCONCLUSIVE, decide_by, gate
from ctxbench.analysis.compare.gate import SLOWER as GATE_SLOWER
from ctxbench.analysis.compare.machine_history import variant_figures
from ctxbench.records.machines import machine_key
from ctxbench.records.naming import params_key
from ctxbench.records.result import Result, result_of
from ctxbench.records.runs import group_run
from ctxbench.store.db import Store
from ctxbench.store.earlier_runs import history_runs
from ctxbench.views.compare.comparison import noise_words
from ctxbench.views.compare.gate import gate_lines
from ctxbench.views.export import comparison_dict

COMPARE_SCHEMA = json.loads((REPO / "schema" / "compare.schema.json").read_text())


def record_of(median: float, repeats: list[float] | None = None) -> dict:
    """A getpid result record of run_a.jsonl with tight samples around
    ``median`` and, when given, a repeats block with those figures."""
    record = tight_getpid(median)
    if repeats is not None:
        record["repeats"] = {"runs": [{"median": m, "n": 10} for m in repeats]}
    return record


def result(median: float, repeats: list[float] | None = None) -> Result:
    """``record_of``'s record, read into the type analysis takes."""
    return result_of(record_of(median, repeats))


# ---- which source judges a row ---------------------------------------------------
def test_repeats_judge_when_both_runs_have_them():
    a = result(100.0, [98.0, 100.0, 102.0])
    b = result(130.0, [128.0, 130.0, 132.0])
    difference, judged_by = noise.judge(a, b, history=[100.0, 101.0, 99.0, 100.0])
    assert judged_by.source == noise.REPEATS
    assert judged_by.n == 6 and judged_by.floor == 0.0
    expected = stats.pooled_log_spread([[98.0, 100.0, 102.0], [128.0, 130.0, 132.0]])
    assert judged_by.spread == pytest.approx(expected.spread)
    assert difference.ratio.method == stats.T_LOG_RATIO_METHOD
    assert difference.ratio.ratio == pytest.approx(1.3)
    assert difference.significant and decide(difference, "ns", 0.10, judged_by) == SLOWER


def test_history_judges_when_a_run_lacks_repeats():
    a, b = result(100.0), result(130.0, [128.0, 130.0, 132.0])
    history = [100.0, 104.0, 96.0, 101.0, 98.0]
    difference, judged_by = noise.judge(a, b, history=history)
    assert (judged_by.source, judged_by.n) == (noise.HISTORY, 5)
    spread = stats.weighted_log_spread(history, [1.0] * len(history)).spread
    assert spread > 0 and judged_by.spread == pytest.approx(spread)
    # The weighted median absolute deviation: the logs' median is log 100,
    # the deviations' (0, 0.0100, 0.0202, 0.0392, 0.0408) median log(100/98).
    assert spread == pytest.approx(stats.MAD_TO_SD * math.log(100.0 / 98.0))
    expected = stats.t_ratio_interval(100.0, 130.0, spread, 4, 1, 1)
    assert (difference.ratio.low, difference.ratio.high) == pytest.approx(
        (expected.low, expected.high)
    )
    assert judged_by.se == pytest.approx(spread * math.sqrt(2.0))
    assert judged_by.df == 4 and judged_by.widened == ()


# A cross-CPU pipe switch's run figures on the 2-vCPU guest (ns; the quiet
# gate measurement of the accuracy note, 8 history runs, (figure, weight)):
# most runs wake the other CPU awake, some find it idle: two levels.
TWO_LEVELS = [(6634, 0.5), (17466, 1), (17114, 1), (17817, 0.5), (6178, 0.5), (15842, 1)]
TWO_LEVELS += [(16056, 1), (13988, 0.5)]


def test_a_history_at_two_levels_is_judged_by_its_whole_spread():
    """The robust spread sees one level; a run at the other (A 6.6 us, A'
    16.9 us, an identical pair there) would be called 2.6x slower. At two
    levels the history's plain standard deviation judges it: no difference."""
    figures = [f for f, _ in TWO_LEVELS]
    assert stats.two_levels(figures, noise.HISTORY_LEVEL_GAP, noise.HISTORY_LEVEL_RUNS)
    robust = stats.weighted_log_spread(figures, [w for _, w in TWO_LEVELS]).spread
    a, b = result(6599.0), result(16905.0)
    difference, judged_by = noise.judge(a, b, history=TWO_LEVELS)
    whole = stats.weighted_log_sd(figures, [w for _, w in TWO_LEVELS]).spread
    assert judged_by.source == noise.HISTORY and judged_by.spread == pytest.approx(whole)
    assert whole > 2 * robust and judged_by.levels == 2
    assert not difference.significant
    assert decide(difference, "ns", 0.10, judged_by) != SLOWER
    # One run apart is a slow spell, not a level: the robust spread stays.
    one_apart = [100.0, 101.0, 99.0, 100.5, 240.0]
    assert not stats.two_levels(one_apart, noise.HISTORY_LEVEL_GAP, noise.HISTORY_LEVEL_RUNS)
    _, judged_by = noise.judge(result(100.0), result(100.0), history=one_apart)
    assert judged_by.spread == pytest.approx(stats.weighted_log_spread(one_apart, [1.0] * 5).spread)
    assert judged_by.levels == 1


# A Boost.Fiber yield's p10s over eight quick runs on the quiet 2-vCPU guest
# (ns; the note 2026-11-27-gate-p10.md): most runs at about 53 ns or 86 ns,
# some runs between (their samples sat at both levels), no single step 1.5x.
SPANNED = [67.2, 84.4, 85.4, 52.5, 52.5, 80.8, 58.8, 85.5]


def test_a_history_whose_runs_fill_the_gap_between_two_levels_is_still_two_levels():
    """One step between levels is not the test: the runs between fill it.
    The second-highest over 1.5x the second-lowest is; one slow run is not."""
    assert stats.two_levels(SPANNED, noise.HISTORY_LEVEL_GAP, noise.HISTORY_LEVEL_RUNS)
    _, judged_by = noise.judge(result(53.0), result(86.0), history=SPANNED)
    assert judged_by.levels == 2
    assert judged_by.spread == pytest.approx(stats.weighted_log_sd(SPANNED, [1.0] * 8).spread)
    one_slow = [52.5, 53.0, 52.8, 53.1, 86.0]
    assert not stats.two_levels(one_slow, noise.HISTORY_LEVEL_GAP, noise.HISTORY_LEVEL_RUNS)


# A Boost.Fiber yield's p10s in a history of ten quick runs on the quiet 2-vCPU
# guest (ns; docs/notes/2026-11-28-third-look.md): three at the upper level,
# 1.50x the lower one, a step no wider than that.
NARROW_LEVELS = [57.0, 53.0, 76.0, 53.0, 54.0, 52.0, 53.0, 78.0, 53.0, 80.0]


def test_a_history_whose_two_levels_are_1_5x_apart_is_two_levels():
    """Its second-highest (78) is 1.50x its second-lowest (52): at two levels,
    so a run at the upper one (81 ns against A's 53) is not called slower."""
    assert stats.two_levels(NARROW_LEVELS, noise.HISTORY_LEVEL_GAP, noise.HISTORY_LEVEL_RUNS)
    difference, judged_by = noise.judge(result(53.0), result(81.0), history=NARROW_LEVELS)
    assert judged_by.levels == 2
    assert decide(difference, "ns", 0.15, judged_by) != SLOWER


def _shifted(fast: float, rest: float) -> Result:
    """A result whose fastest sample is FAST and whose nine others sit at REST
    (interference added to most samples, not to the fastest tenth)."""
    record = record_of(rest)
    record["samples"] = [fast] + [rest * f for f in TIGHT[1:]]
    return result_of(record)


def test_by_history_a_row_compares_the_runs_p10s_not_their_medians():
    """B's median is 30 % above A's but its fastest tenth is where A's is:
    judged by history (the earlier runs' p10s), no slowdown. The same pair
    with repeats or within-run compares medians, and says so."""
    a, b = result(100.0), _shifted(100.1, 130.0)
    history = [100.0, 101.0, 99.0, 100.5, 99.5]
    difference, judged_by = noise.judge(a, b, history=history)
    assert judged_by.source == noise.HISTORY and judged_by.statistic == noise.P10
    assert difference.reference_median == pytest.approx(stats.low_quantile(list(a.samples)))
    assert difference.other_median == pytest.approx(100.1)
    assert difference.ratio.ratio == pytest.approx(100.1 / (100.0 * 0.999))
    assert decide(difference, "ns", 0.05, judged_by) != SLOWER
    # Within-run (too short a history): the medians, and the row says so.
    _, within = noise.judge(a, b, history=history[:2])
    assert within.source == noise.WITHIN_RUN and within.statistic == noise.MEDIAN
    # Repeats judge the repeats' medians.
    _, repeated = noise.judge(
        result(100.0, [99.0, 100.0, 101.0]), result(130.0, [129.0, 130.0, 131.0]), history
    )
    assert repeated.source == noise.REPEATS and repeated.statistic == noise.MEDIAN
    # A shift of the fastest tenth itself is a slowdown.
    difference, judged_by = noise.judge(a, _shifted(115.0, 130.0), history=history)
    assert difference.significant and decide(difference, "ns", 0.05, judged_by) == SLOWER
    # A run of too few samples has no p10: its row is not judged by history.
    few = record_of(100.0)
    few["samples"] = few["samples"][:4]
    _, judged_by = noise.judge(result_of(few), b, history=history)
    assert judged_by.source == noise.WITHIN_RUN


def test_a_p10_history_proposes_earlier_runs_not_repeats():
    """Repeats judge medians; the spread of p10s says nothing of how many
    repeats would decide a row, so a history row proposes earlier runs only."""
    short = [100.0, 102.0, 98.0, 101.0]  # four runs: detectable 9 %
    _, judged_by = noise.judge(result(100.0), result(101.0), history=short)
    decider = decide_by(judged_by, math.log1p(0.08), stats.DEFAULT_LEVEL, noise.GATE_POWER)
    assert judged_by.statistic == noise.P10
    assert decider.repeats is None and decider.earlier_runs == 6


def test_a_row_whose_history_sits_at_two_levels_says_no_count_of_runs_decides_it():
    """In the gate such a row is inconclusive and says to read it rather than
    gate on it: K earlier runs would never narrow a spread of two levels."""
    _, judged_by = noise.judge(result(6599.0), result(6700.0), history=TWO_LEVELS)
    decider = decide_by(judged_by, math.log1p(0.25), stats.DEFAULT_LEVEL, noise.GATE_POWER)
    assert decider.two_levels and decider.repeats is None and decider.earlier_runs is None
    _, tight = noise.judge(result(100.0), result(100.0), history=[100.0, 104.0, 96.0, 101.0])
    assert not decide_by(tight, math.log1p(0.01), stats.DEFAULT_LEVEL, noise.GATE_POWER).two_levels


def test_too_short_a_history_leaves_the_within_run_samples():
    a, b = result(100.0), result(130.0)
    difference, judged_by = noise.judge(a, b, history=[100.0, 101.0])
    assert judged_by.source == noise.WITHIN_RUN
    assert judged_by.floor == noise.WITHIN_RUN_FLOOR and judged_by.n == 20
    assert difference == stats.compare_samples(list(a.samples), list(b.samples))


# ---- the floor and the whole-interval rule ---------------------------------------
def test_the_floor_keeps_a_tight_within_run_difference_from_being_meaningful():
    # 15% apart, samples within 0.1%: the samples are sure, a second run would not be.
    a, b = result(100.0), result(115.0)
    difference, judged_by = noise.judge(a, b)
    assert difference.significant and difference.ratio.low > 1.14
    assert decide(difference, "ns", 0.05, judged_by) == NO_DIFFERENCE
    assert decide(difference, "ns", 0.05) == SLOWER  # without the floor it would count
    # Past the floor (e^0.20 = 1.22) the same samples count.
    difference, judged_by = noise.judge(a, result(130.0))
    assert decide(difference, "ns", 0.05, judged_by) == SLOWER
    difference, judged_by = noise.judge(result(130.0), a)
    assert decide(difference, "ns", 0.05, judged_by) == FASTER


def test_the_same_difference_counts_when_repeats_show_a_small_spread():
    a = result(100.0, [99.5, 100.0, 100.5])
    b = result(115.0, [114.5, 115.0, 115.5])
    difference, judged_by = noise.judge(a, b)
    assert judged_by.source == noise.REPEATS
    assert decide(difference, "ns", 0.05, judged_by) == SLOWER


def test_wide_repeats_make_no_difference_of_a_large_ratio():
    a = result(100.0, [70.0, 100.0, 140.0])
    b = result(130.0, [90.0, 130.0, 180.0])
    difference, judged_by = noise.judge(a, b)
    assert judged_by.source == noise.REPEATS
    assert not difference.significant
    assert decide(difference, "ns", 0.05, judged_by) == NO_DIFFERENCE


def _interval(low: float, high: float) -> stats.Difference:
    ratio = stats.RatioInterval(math.sqrt(low * high), low, high, 0.95, 0, "t")
    return stats.Difference(100.0, 100.0 * ratio.ratio, ratio, None, True, None)


@pytest.mark.parametrize(
    "low,high,percent,decision",
    [
        (1.12, 1.30, 10, SLOWER),  # whole interval above 1.10
        (1.08, 1.30, 10, NO_DIFFERENCE),  # the point is above, the interval is not
        (1.08, 1.30, 5, SLOWER),
        (0.70, 0.85, 10, FASTER),  # whole interval under 1/1.10
    ],
)
def test_a_decision_needs_the_whole_interval_beyond_the_effect(low, high, percent, decision):
    judged_by = noise.Noise(noise.HISTORY, 0.05, 5)
    assert decide(_interval(low, high), "ns", percent / 100, judged_by) == decision


def test_rates_turn_the_interval():
    judged_by = noise.Noise(noise.REPEATS, 0.01, 4)
    # Twice the messages per second: faster, its whole turned interval under 1/1.1.
    assert decide(_interval(1.8, 2.2), "msgs/s", 0.10, judged_by) == FASTER


# ---- in a comparison: per-row source, gate, JSON ---------------------------------


def _run(name: str, figures: dict[str, tuple[float, list[float] | None]], edit_env=None):
    """run_x.jsonl with only the syscall probes in ``figures``, each set to a figure
    and optional repeats."""
    records = copy.deepcopy(real_run(name).all())
    kept = []
    for record in records:
        if record["kind"] != "result":
            kept.append(record)
        elif record["probe"] in figures:
            median, repeats = figures[record["probe"]]
            replaced = record_of(median, repeats)
            replaced.update(run_id=record["run_id"], probe=record["probe"])
            replaced["params"] = record["params"]
            kept.append(replaced)
    if edit_env:
        edit_env(kept[0])
    return group_run(kept)


def test_a_comparison_names_each_rows_source_and_the_json_is_valid(store):
    a = _run(
        "run_a.jsonl", {"syscall.getpid": (100.0, [99.0, 101.0]), "syscall.getuid": (100.0, None)}
    )
    b = _run(
        "run_b.jsonl", {"syscall.getpid": (112.0, [111.0, 113.0]), "syscall.getuid": (112.0, None)}
    )
    for run in (a, b):
        store.add_run(run, origin="import")
    runs = [store.load(a.run_id), store.load(b.run_id)]
    comparison = compare_runs(runs)
    sources = {row.probe: row.cells[1].noise.source for row in comparison.rows}
    assert sources == {"syscall.getpid": noise.REPEATS, "syscall.getuid": noise.WITHIN_RUN}
    decisions = {row.probe: row.cells[1].decision for row in comparison.rows}
    # 12% both: the repeats show it, the within-run floor hides it.
    assert decisions == {"syscall.getpid": SLOWER, "syscall.getuid": NO_DIFFERENCE}
    judged = gate(comparison, 5)
    assert [v.row.probe for v in judged.of(GATE_SLOWER)] == ["syscall.getpid"]
    named = gate_lines(comparison, judged)[0]
    assert named.startswith("slower by more than 5%: syscall.getpid: B ran 1.12× (")
    assert "judged by repeats (run-to-run spread 1.3%, 4 repeats); could detect " in named
    data = comparison_dict(comparison, judged)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    rows = {row["probe"]: row for row in data["rows"]}
    assert rows["syscall.getpid"]["noise"]["source"] == "repeats"
    assert rows["syscall.getpid"]["noise"]["n"] == 4
    within = rows["syscall.getuid"]["noise"]
    assert within["source"] == "within-run" and within["n"] == 20
    assert within["spread"] == pytest.approx(comparison.rows[1].cells[1].noise.spread)
    assert within["floor"] == noise.WITHIN_RUN_FLOOR and within["widened"] == []
    # Within-run, the detectable slowdown is never below the floor.
    assert rows["syscall.getuid"]["detectable_slowdown"] == pytest.approx(
        math.expm1(noise.WITHIN_RUN_FLOOR)
    )
    assert data["schema"] == 3


def test_the_gate_judges_a_row_by_its_history(store):
    a = _run("run_a.jsonl", {"syscall.getuid": (100.0, None)})
    b = _run("run_b.jsonl", {"syscall.getuid": (115.0, None)})
    runs = [store.load(store.add_run(run, origin="import")) for run in (a, b)]
    key = ("syscall.getuid", params_key(runs[0].results[0].params))
    quiet = compare_runs(runs, history={key: [100.0, 101.0, 99.0, 100.5]})
    assert quiet.rows[0].cells[1].noise.source == noise.HISTORY
    assert [v.row.probe for v in gate(quiet, 10).of(GATE_SLOWER)] == ["syscall.getuid"]
    noisy = compare_runs(runs, history={key: [100.0, 130.0, 80.0, 115.0]})
    assert gate(noisy, 10).of(GATE_SLOWER) == []
    assert gate(compare_runs(runs), 10).of(GATE_SLOWER) == []  # within-run: under the floor


# ---- a run whose CPU ran slowed as a whole ---------------------------------------
# The plain loops (derived.cpu_loop_ns, ns: each run's median over its
# variants) of eight history runs under the load mix (bench/gate.py --load mix,
# 2026-11-28 05:48 UTC), and of the run of that measurement that sat in a slow
# state of the host, its same-CPU switches 23 % up: 3867.0.
LOOPS = [3821.3, 3821.1, 3820.8, 3821.1, 3819.0, 3827.2, 3821.2, 3821.2]
SLOWED_LOOP = 3867.0


def _with_loop(run_records, loop: float):
    for record in run_records.results:
        record["derived"]["cpu_loop_ns"] = loop
    return run_records


def test_a_runs_cpu_speed_is_its_plain_loop_against_the_history():
    results = [
        a_result("cpu.loop", {}, derived={"cpu_loop_ns": v}) for v in (3860.0, 3867.0, 3869.5)
    ]
    results.append(a_result("cpu.loop", {}, derived={}))  # an older record: no loop
    assert noise.run_cpu_loop(results) == 3867.0
    assert noise.run_cpu_loop([a_result("cpu.loop", {}, derived={})]) is None
    assert noise.cpu_speed(SLOWED_LOOP, LOOPS[:2]) is None  # too short a history
    speed = noise.cpu_speed(SLOWED_LOOP, LOOPS)
    assert speed.runs == 8 and speed.ratio == pytest.approx(3867.0 / 3821.15)
    assert speed.limit == pytest.approx(noise.CPU_SLOWED_FLOOR) and speed.slowed
    assert not noise.cpu_speed(3840.0, LOOPS).slowed  # 0.5 %: under the floor
    # A history that moves more asks more of a slowed run.
    loose = [3700.0, 3900.0, 3650.0, 4000.0, 3820.0]
    assert noise.cpu_speed(SLOWED_LOOP, loose).limit > 1.05
    assert not noise.cpu_speed(SLOWED_LOOP, loose).slowed
    widened = noise.cpu_widenings([None, speed])
    assert [(w.side, w.cause) for w in widened] == [(1, noise.CPU_SLOWED)]
    assert widened[0].spread == pytest.approx(noise.CPU_SLOWED_REACH * math.log(speed.ratio))


def test_a_run_whose_cpu_ran_slowed_is_not_called_slower_on_that_alone(tmp_path):
    # B sat 20 % higher on a CPU whose loop ran 1.2 % slow: not slower, not
    # passed; a slowdown of 2.5x on the same slowed CPU is still slower.
    history = [100.0, 100.5, 99.6, 100.2, 99.8, 100.1, 100.3, 99.9]
    a = _with_loop(_run("run_a.jsonl", {"syscall.getuid": (100.0, None)}), LOOPS[0])
    for figure, outcome in ((120.0, INCONCLUSIVE), (250.0, GATE_SLOWER)):
        b = _with_loop(_run("run_b.jsonl", {"syscall.getuid": (figure, None)}), SLOWED_LOOP)
        with Store.open(tmp_path / f"{figure}.db") as store:
            runs = [store.load(store.add_run(run, origin="import")) for run in (a, b)]
        key = ("syscall.getuid", params_key(runs[0].results[0].params))
        plain = compare_runs(runs, history={key: history})
        assert gate(plain, 15).rows[0].outcome == GATE_SLOWER
        slowed = compare_runs(runs, history={key: history}, loop_history=LOOPS)
        cell = slowed.rows[0].cells[1]
        assert [w.cause for w in cell.noise.widened] == [noise.CPU_SLOWED]
        judged = gate(slowed, 15)
        assert judged.rows[0].outcome == outcome, figure
        text = "\n".join(gate_lines(slowed, judged))
        if outcome == INCONCLUSIVE:
            assert "B's CPU ran slow over the whole run" in text, text
            assert "may sit up to 27% higher" in text, text
        jsonschema.validate(comparison_dict(slowed, judged), COMPARE_SCHEMA)


# ---- the history: earlier runs of the same machine -------------------------------
def _relabel(run_records, run_id: str, started_at: str, **env_edits):
    records = copy.deepcopy(run_records.all())
    for record in records:
        record["run_id"] = run_id
    env = records[0]
    env["started_at"] = started_at
    for path, value in env_edits.items():
        section, _, name = path.partition("__")
        if name:
            env[section][name] = value
        else:
            env[section] = value
    return group_run(records)


def _sandbox(filters=0, recording=False, enabled=0, tracer_pid=0, auditd_pid=0) -> dict:
    return {
        "seccomp": {"mode": "filter" if filters else "disabled", "filters": filters},
        "no_new_privs": 0,
        "tracer_pid": tracer_pid,
        "traced": bool(tracer_pid),
        "tracepoints": {"source": "/sys/kernel/tracing", "enabled": enabled,
                        "recording": recording},
        "audit": {"state": "disabled", "rules": 0, "auditd_pid": auditd_pid},
    }  # fmt: skip


def test_only_what_changes_a_figure_in_the_sandbox_makes_another_machine():
    def key(**sandbox):
        return machine_key(real_environment(hostname="vm", sandbox=_sandbox(**sandbox)))

    assert key() == key(enabled=3, auditd_pid=812)  # events enabled, not recording
    assert key() != key(recording=True, enabled=2)  # a buffer records every switch
    assert key() != key(filters=1)  # a seccomp filter runs on every call
    assert key() != key(tracer_pid=4242)  # a tracer stops the calls


def test_history_takes_earlier_runs_of_the_same_machine_only(store):
    base = real_run("run_a.jsonl")
    stamp = "2026-11-2{}T06:37:14Z"
    runs = {
        "old1": _relabel(base, "old1", stamp.format(0)),
        "old2": _relabel(base, "old2", stamp.format(1)),
        "kernel": _relabel(base, "kernel", stamp.format(1), kernel__release="6.1.0-other"),
        "host": _relabel(base, "host", stamp.format(2), hostname="elsewhere"),
        "cpu": _relabel(base, "cpu", stamp.format(2), cpu__model="Another CPU"),
        "full": _relabel(base, "full", stamp.format(2), options={"quick": False}),
        "sandboxed": _relabel(base, "sandboxed", stamp.format(2), sandbox=_sandbox(filters=1)),
        "a": _relabel(base, "a", stamp.format(3)),
        "b": _relabel(base, "b", stamp.format(4)),
        "later": _relabel(base, "later", stamp.format(5)),
    }
    for run in runs.values():
        store.add_run(run, origin="import")
    compared = [store.load("a"), store.load("b")]
    assert machine_key(compared[0].env) == machine_key(compared[1].env)
    # A full run of the same machine is part of its history: options change
    # how sure a figure is, not what it measures.
    assert [run.run_id for run in history_runs(store, compared)] == ["full", "old2", "old1"]
    figures = variant_figures(history_runs(store, compared))
    getpid = next(r for r in base.results if r["probe"] == "syscall.getpid")
    assert getpid["verdict"]["status"] == "ok"
    # Each earlier run gives its p10 (the history judges p10s), not its median.
    assert (
        figures[("syscall.getpid", params_key(getpid["params"]))]
        == [(stats.low_quantile(getpid["samples"]), 1.0, False)] * 3
    )
    assert stats.low_quantile(getpid["samples"]) < getpid["summary"]["median"]
    # Against another machine, the history is the reference run's machine's.
    other = [store.load("b"), store.load("cpu")]
    assert [run.run_id for run in history_runs(store, other)] == ["a", "full", "old2", "old1"]
    assert [run.run_id for run in history_runs(store, other[::-1])] == []


def test_repeats_are_shown_with_the_options_and_never_exclude_a_row(store):
    def repeated(env):
        env["options"]["repeat"] = 3

    a = _run("run_a.jsonl", {"syscall.getpid": (100.0, None)}, repeated)
    b = _run("run_b.jsonl", {"syscall.getpid": (100.0, None)})
    runs = [store.load(store.add_run(run, origin="import")) for run in (a, b)]
    comparison = compare_runs(runs)
    assert comparison.rows[0].cells[1].excluded == ()
    assert units.run_options(comparison.options[0]).endswith(", 3 repeats")
    assert "repeats" not in units.run_options(comparison.options[1])
    # One machine's history, with or without repeats.
    assert machine_key(runs[0].env) == machine_key(runs[1].env)


# ---- a loaded history (issue 41.4) ---------------------------------------------------
# Four runs of a quiet moment (within 1 %) and ten of a loaded one before
# them, which the kernel said carried interference, spread over 0.8-1.6x:
# suspect, so half a run each, they outweigh the quiet ones.
CLEAN = [100.0, 100.5, 99.5, 100.8]
LOADED = [118.0, 84.0, 160.0, 131.0, 92.0, 146.0, 110.0, 125.0, 88.0, 139.0]


def test_a_history_with_interfered_runs_leaves_them_out_where_the_clean_ones_decide():
    """An identical pair against the clean runs alone is not slower at 15 %;
    the interfered runs, had they counted, make it inconclusive. They are
    left out, and the row counts them."""
    a, b = result(100.0), result(100.0)
    history = [(f, 1.0, False) for f in CLEAN] + [(f, 0.5, True) for f in LOADED]
    counted_in = [(f, w) for f, w, _ in history]  # as before: every figure counted
    clean_alone = [(f, 1.0) for f in CLEAN]
    _, before = noise.judge(a, b, history=counted_in)
    _, alone = noise.judge(a, b, history=clean_alone)
    _, judged_by = noise.judge(a, b, history=history)
    assert noise.detectable(before) > 0.15 >= noise.detectable(alone)
    assert (judged_by.source, judged_by.n, judged_by.left_out) == (noise.HISTORY, 4, 10)
    assert judged_by.interfered == 0
    assert judged_by.spread == pytest.approx(alone.spread)
    assert noise.detectable(judged_by) == pytest.approx(noise.detectable(alone))
    words = units.terminal_text(noise_words(judged_by))
    assert "over 4 earlier runs; 10 that carried interference left out" in words


def test_where_the_clean_runs_are_too_few_the_interfered_ones_judge_and_are_counted():
    history = [(f, 1.0, False) for f in CLEAN[:2]] + [(f, 0.5, True) for f in LOADED]
    _, judged_by = noise.judge(result(100.0), result(100.0), history=history)
    assert (judged_by.source, judged_by.n) == (noise.HISTORY, 12)
    assert (judged_by.left_out, judged_by.interfered) == (0, 10)
    assert "10 of them carrying interference" in noise_words(judged_by)


def _interfered(record: dict) -> None:
    """What the engine writes of a figure it could not get clear of others."""
    record["verdict"] = {
        "status": "suspect",
        "reasons": [{"code": "interference", "detail": "4 of 10 kept samples interfered"}],
    }


def test_the_store_marks_what_the_kernel_said_and_the_gate_decides_on_the_clean_runs(store):
    """Through the store: four quiet earlier runs and ten whose getuid
    record says interference (its reason, or its host reference slowed, or
    its run's reference slowed as a whole), the loaded ones first; A and B
    identical. compare --json counts the ten left out, and the gate at 15 %
    passes the row."""
    stamp = "2026-11-2{}T06:{:02d}:14Z"
    base = "run_a.jsonl"
    minute = 0
    for number, figure in enumerate(LOADED):
        run = _run(base, {"syscall.getuid": (figure, None)})
        run = _relabel(run, f"loaded{number}", stamp.format(0, minute))
        [record] = run.results
        if number % 3 == 0:
            _interfered(record)
        elif number % 3 == 1:
            record["interference"] = {**(record.get("interference") or {}), "slowed": True}
        else:
            record["interference"] = {
                "reference": "test", "best_ns": 1000.0, "slowed_ratio": 1.2, "retries": 1,
                "attempts": [{"median": figure, "reference_ratio": 1.5, "slowed_share": 1.0,
                              "samples": 10}],
                "kept": 0, "slowed": False,
            }  # fmt: skip
        store.add_run(run, origin="import")
        minute += 1
    for figure in CLEAN:
        run = _run(base, {"syscall.getuid": (figure, None)})
        store.add_run(_relabel(run, f"clean{minute}", stamp.format(0, minute)), origin="import")
        minute += 1
    ids = []
    for name, figure in (("a", 100.0), ("b", 100.0)):
        run = _run(base, {"syscall.getuid": (figure, None)})
        ids.append(store.add_run(_relabel(run, name, stamp.format(1, 0)), origin="import"))
    runs = [store.load(run_id) for run_id in ids]
    history = variant_figures(history_runs(store, runs))
    [figures] = history.values()
    assert sum(1 for _, _, interfered in figures if interfered) == len(LOADED)
    comparison = compare_runs(runs, history=history)
    judged = gate(comparison, 15)
    data = comparison_dict(comparison, judged)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    [row] = data["rows"]
    assert row["noise"]["source"] == "history"
    assert (row["noise"]["n"], row["noise"]["left_out"], row["noise"]["interfered"]) == (4, 10, 0)
    assert judged.outcome == "passed"


def test_a_run_most_of_whose_figures_carried_interference_carried_it_as_a_whole():
    """A run in a loaded spell: where more than half its figures carried
    interference, its other figures are not the machine's usual either and
    count as interfered in the history; one flagged figure of three does not
    mark the others. A run whose host reference ran slowed as a whole is
    interfered whatever its figures say."""
    from types import SimpleNamespace

    from ctxbench.analysis.compare.machine_history import variant_figures

    def three(flagged: int, reference_ratio: float = 1.0) -> SimpleNamespace:
        results = []
        for number, probe in enumerate(("syscall.getpid", "syscall.getuid", "syscall.getppid")):
            record = record_of(100.0)
            record["probe"] = probe
            record["interference"] = {
                "reference": "test", "best_ns": 1000.0, "slowed_ratio": 1.2, "retries": 1,
                "attempts": [{"median": 100.0, "reference_ratio": reference_ratio,
                              "slowed_share": 0.0, "samples": 10}],
                "kept": 0, "slowed": False,
            }  # fmt: skip
            if number < flagged:
                _interfered(record)
            results.append(result_of(record))
        return SimpleNamespace(results=results)

    assert not noise.run_carried_interference(three(1).results)
    assert noise.run_carried_interference(three(2).results)
    assert noise.run_carried_interference(three(0, reference_ratio=1.5).results)
    marks = {key[0]: figures[0][2] for key, figures in variant_figures([three(1)]).items()}
    assert marks == {"syscall.getpid": True, "syscall.getuid": False, "syscall.getppid": False}
    marks = {key[0]: figures[0][2] for key, figures in variant_figures([three(2)]).items()}
    assert all(marks.values()) and len(marks) == 3
