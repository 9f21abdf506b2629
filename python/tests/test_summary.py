"""The summary model (ctxbench.summary) on real recorded runs.

Fixtures: run_a / run_b (syscalls, switch.pipe, an unsupported create probe)
and docs/data/reference-run.jsonl (the whole catalogue, one full run), all
real engine output. Every figure the summary holds must be a record's.
"""

from __future__ import annotations

import copy

import pytest

from conftest import REPO, a_result, real_run
from ctxbench.analysis.explain.explanation import REST
from ctxbench.analysis.summary.build import is_remainder, pick, section_id, summarize, variant_key
from ctxbench.analysis.summary.rules import LADDER
from ctxbench.records.naming import params_key
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import group_run
from ctxbench.records.schema import schema
from ctxbench.store.db import Store
from ctxbench.views.compare.comparison import cell_words, describe
from ctxbench.views.reasons import REASON_SENTENCES, reason_sentence
from ctxbench.views.summary import why

REFERENCE_RUN = REPO / "docs" / "data" / "reference-run.jsonl"


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "summary.db") as opened:
        yield opened


def stored(store, records, label=None):
    return store.load(store.add_run(records, origin="import", label=label))


def _by_key(results):
    return {(r.probe, params_key(r.params)): r for r in results}


def test_ladder_rungs_are_records_present(store):
    run = stored(store, real_run("run_a.jsonl"))
    summary = summarize([run])
    records = _by_key(run.results)
    keys = [rung.key for rung in summary.ladder]
    # run_a measured syscalls and switch.pipe only: no coroutine, fork, exec...;
    # cheapest first: its suspect same-CPU thread switch (2.196 µs) costs more
    # than its process switch (1.314 µs)
    assert keys == ["vdso", "syscall", "process_switch", "thread_switch", "cross_switch"]
    medians = [rung.point.median for rung in summary.ladder]
    assert medians == sorted(medians)
    for rung in summary.ladder:
        record = records[(rung.point.probe, params_key(rung.point.params))]
        assert rung.point.result is record
        assert rung.point.median == record.summary.median
        assert rung.point.ci_low == record.summary.median_ci["low"]
        assert rung.point.ci_high == record.summary.median_ci["high"]
        assert rung.point.status == record.verdict.status
        assert rung.point.anchor == section_id(record.family)
    # vDSO: timer.clock_gettime_monotonic is not in run_a, the syscall family's is.
    assert summary.ladder[0].point.probe == "syscall.clock_gettime_vdso"
    assert summary.ladder[1].point.probe == "syscall.enosys"
    thread = summary.ladder[3].point
    assert thread.params["between"] == "threads" and thread.params["cpus"] == "same"


def test_ladder_of_the_whole_catalogue(store):
    run = stored(store, read_run_file(REFERENCE_RUN))
    summary = summarize([run])
    records = _by_key(run.results)
    keys = [rung.key for rung in summary.ladder]
    # Every rung (the reference run was recorded as root, so idle=held ran).
    assert set(keys) == {spec.key for spec in LADDER}
    medians = [rung.point.median for rung in summary.ladder]
    assert medians == sorted(medians)  # cheapest first
    for rung in summary.ladder:
        record = records[(rung.point.probe, params_key(rung.point.params))]
        assert rung.point.median == record.summary.median
    by_key = {rung.key: rung.point for rung in summary.ladder}
    assert by_key["asm"].params == {"fpcontrol": "same", "fpstate": "abi"}
    assert by_key["vdso"].probe == "timer.clock_gettime_monotonic"
    assert by_key["cross_switch"].params["cpus"] == "cross"
    assert by_key["cross_switch"].params["idle"] == "free"
    assert by_key["cross_switch_held"].params["idle"] == "held"


def test_a_rung_whose_record_is_not_measured_is_absent(store):
    records = copy.deepcopy(real_run("run_a.jsonl").all())
    for record in records:
        if record.get("probe") == "syscall.enosys":
            record["verdict"] = {
                "status": "failed",
                "reasons": [{"code": "child_failed", "detail": "edited copy"}],
            }
            record["samples"] = []
            record.pop("summary", None)
            record.pop("corrected", None)
    run = stored(store, group_run(records))
    summary = summarize([run])
    syscall = next(rung for rung in summary.ladder if rung.key == "syscall")
    assert syscall.point.probe == "syscall.getppid"  # the next candidate, not invented
    assert summary.verdicts.counts["failed"] == 1
    note = next(n for n in summary.verdicts.notes if n.point.probe == "syscall.enosys")
    assert note.reasons == ("child_failed",)


def test_same_vs_cross(store):
    run = stored(store, read_run_file(REFERENCE_RUN))
    rows = summarize([run]).same_vs_cross
    records = _by_key(run.results)
    primitives = {row.primitive for row in rows}
    assert {"pipe", "socketpair", "eventfd", "futex", "condvar", "semaphore", "yield"} <= primitives
    assert "ring" not in primitives and "burst" not in primitives  # other knobs than placement
    assert len(rows) == 14  # 7 primitives x threads/processes
    for row in rows:
        assert row.same.params["cpus"] == "same" and row.cross.params["cpus"] == "cross"
        assert row.same.params.get("between") == row.between == row.cross.params.get("between")
        for side in (row.same, row.cross):
            assert side.median == records[(side.probe, params_key(side.params))].summary.median
        if row.primitive == "yield":  # across CPUs a yield does not switch: no ratio
            assert row.ratio is None and row.no_ratio
            assert "too few switches" in why.no_ratio_words(row.same, row.cross)
            continue
        assert not row.no_ratio
        assert row.ratio == pytest.approx(row.cross.median / row.same.median)
    yields = [row for row in rows if row.primitive == "yield"]
    assert all(row.cross.status == "suspect" and row.cross.reasons for row in yields)


def test_a_hold_idle_run_keeps_its_same_cpu_rungs_and_pairs_held_with_held(store):
    """A run made with --hold-idle has only idle=held switch variants: on one
    CPU that is the same experiment, so the same-CPU rungs stay; same vs cross
    pairs held with held; the cross-CPU rung is the held one, named so."""
    records = copy.deepcopy(read_run_file(REFERENCE_RUN))
    for record in records.results:
        if record["family"] == "switch" and {"cpus", "policy"} <= set(record["params"]):
            record["params"]["idle"] = "held"
    summary = summarize([stored(store, records)])
    keys = [rung.key for rung in summary.ladder]
    assert "thread_switch" in keys and "process_switch" in keys
    assert "cross_switch_held" in keys and "cross_switch" not in keys
    for rung in summary.ladder:
        if rung.key.endswith("_switch") or rung.key == "cross_switch_held":
            assert rung.point.params["idle"] == "held"
    assert summary.same_vs_cross
    for row in summary.same_vs_cross:
        sides = [side for side in (row.same, row.cross) if side is not None]
        assert {side.params["idle"] for side in sides} == {"held"}
    assert summary.explanation is not None


def test_explanation_is_explain_output(store):
    run = stored(store, read_run_file(REFERENCE_RUN))
    summary = summarize([run])
    shown = summary.explanation
    assert shown is not None
    process = next(rung.point for rung in summary.ladder if rung.key == "process_switch")
    assert (shown.probe, shown.params) == (process.probe, process.params)
    assert shown.median_ns == process.median
    assert shown.total_ns == pytest.approx(shown.median_ns)
    assert is_remainder(shown.parts[-1].name) and shown.parts[-1].name == REST
    assert shown in summary.explained.explanations


def test_no_explanation_without_switches(store):
    records = [
        r
        for r in real_run("run_a.jsonl").all()
        if r["kind"] != "result" or r["family"] == "syscall"
    ]
    run = stored(store, group_run(records))
    summary = summarize([run])
    assert summary.explanation is None and summary.explained is None
    assert summary.same_vs_cross == []


def test_every_reason_code_has_a_sentence():
    codes = schema()["$defs"]["reason_code"]["enum"]
    assert sorted(REASON_SENTENCES) == sorted(codes)
    for code in codes:
        sentence = reason_sentence(code)
        assert sentence.endswith(".") and "_" not in sentence and sentence[0].isupper()
    assert len(set(REASON_SENTENCES.values())) == len(codes)
    assert "not known" in reason_sentence("a_future_code")


def test_verdicts_count_and_explain(store):
    run = stored(store, real_run("run_a.jsonl"))
    verdicts = summarize([run]).verdicts
    assert verdicts.counts == {"ok": 17, "suspect": 1, "unsupported": 1, "failed": 0}
    assert verdicts.not_ok == 2
    by_probe = {note.point.probe: note for note in verdicts.notes}
    assert by_probe["create.pthread_scope_process"].reasons == ("not_supported_here",)
    assert by_probe["switch.pipe"].point.params["between"] == "processes"
    assert by_probe["switch.pipe"].reasons == ("too_few_switches",)


def test_machines(store):
    run_a = stored(store, real_run("run_a.jsonl"), "A")
    run_b = stored(store, real_run("run_b.jsonl"), "B")
    summary = summarize([run_a, run_b])
    machines = summary.machines
    assert machines is not None and machines.others == [summary.runs[1].name]
    assert [f.key for f in machines.figures] == [rung.key for rung in summary.ladder]
    comparison = machines.comparison
    # run_a and run_b name the same params: the key figures' comparison agrees
    # with the whole runs' one, row by row.
    rows = {(row.probe, params_key(row.params)): row for row in comparison.rows}
    for figure in machines.figures:
        assert figure.row in machines.key_comparison.rows
        assert (
            figure.row.cells[1].difference
            == rows[(figure.probe, params_key(figure.params))].cells[1].difference
        )
        row = figure.row
        cell, (mine,) = row.cells[1], figure.cells
        assert mine.median == cell.median
        assert mine.ratio == cell.difference.ratio.ratio
        assert (mine.ci_low, mine.ci_high) == (
            cell.difference.ratio.low,
            cell.difference.ratio.high,
        )
        assert mine.significant == cell.difference.significant
        words = cell_words(machines, figure, 1)
        assert words == describe(cell.difference, row.unit, comparison.min_effect, "B", "A")
        if not mine.significant:
            assert words == "not significant"
    # One machine, one minute apart: the environment keys of interest agree.
    assert machines.env == []
    assert summarize([run_a]).machines is None


def test_machines_env_differences(store):
    run_a = stored(store, real_run("run_a.jsonl"))
    run_ref = stored(store, read_run_file(REFERENCE_RUN))
    machines = summarize([run_ref, run_a]).machines
    keys = {difference.key for difference in machines.env}
    # The two recordings came from different VM sessions: their virtualization differs.
    assert "virtualization.detected" in keys
    for difference in machines.env:
        assert len(difference.values) == 2 and difference.values[0] != difference.values[1]
    # Run A's rungs missing in the other run have no ratio, and say why.
    coroutine = next(f for f in machines.figures if f.key == "coroutine")
    assert coroutine.cells[0].ratio is None and coroutine.cells[0].note == "not in this run"


def _spec(key):
    return next(spec for spec in LADDER if spec.key == key)


def test_pick_prefers_the_default_policy_and_keeps_idle_held_apart():
    """Selection only (no figures): which of several variants stands for a rung."""
    variants = [
        a_result("switch.pipe", {"between": "threads", "cpus": cpus, **extra})
        for cpus, extra in (
            ("same", {"policy": "batch", "idle": "free"}),
            ("same", {"policy": "normal", "idle": "free"}),
            ("cross", {"policy": "normal", "idle": "held"}),
            ("cross", {"policy": "normal", "idle": "free"}),
            ("any", {"policy": "normal", "idle": "free"}),
        )
    ]
    for key, expected in (
        ("thread_switch", variants[1]),
        ("cross_switch", variants[3]),
        ("cross_switch_held", variants[2]),
        ("process_switch", None),
    ):
        spec = _spec(key)
        assert pick(variants, spec.candidates[0], spec.match) is expected, key
    # A record without the knob (an older engine) still stands for the default.
    old = [a_result("switch.pipe", {"between": "threads", "cpus": "cross"})]
    assert pick(old, "switch.pipe", _spec("cross_switch").match) is old[0]
    assert pick(old, "switch.pipe", _spec("cross_switch_held").match) is None


def test_variant_key_matches_a_record_without_the_idle_knob():
    old = a_result("switch.pipe", {"between": "threads", "cpus": "same"})
    new = a_result("switch.pipe", {"between": "threads", "cpus": "same", "idle": "free"})
    held = a_result("switch.pipe", {"between": "threads", "cpus": "same", "idle": "held"})
    assert variant_key(old) == variant_key(new) != variant_key(held)


def test_a_compared_run_shows_run_a_variant_on_its_ladder(store):
    """other_machine measured switch.pipe with policy normal and batch; alone its
    ladder shows the default (normal), beside run_a (batch only) the batch one."""
    run_a = stored(store, real_run("run_a.jsonl"))
    other = stored(store, real_run("other_machine.jsonl"))
    alone = {rung.key: rung.point for rung in summarize([other]).ladder}
    assert alone["thread_switch"].params["policy"] == "normal"
    beside = {rung.key: rung.point for rung in summarize([run_a, other]).runs[1].ladder}
    assert beside["thread_switch"].params == {
        "between": "threads",
        "cpus": "same",
        "idle": "free",
        "policy": "batch",
    }
    assert beside["thread_switch"].median == beside["thread_switch"].result.summary.median
    # Rungs run_a does not have keep the run's own choice.
    assert beside["vdso"].probe == alone["vdso"].probe


PRESET_RUN = REPO / "python" / "tests" / "fixtures" / "fibers_vs_threads.jsonl"


def test_the_fibers_vs_threads_preset_has_its_four_figures_on_the_ladder_and_no_empty_section(
    store,
):
    """Issue 40: the preset's ladder and chart showed the fiber and the
    coroutine but not the two thread figures it measured, and an empty "Same
    CPU vs another CPU" table (and a one-bar chart) for a run with no
    cross-CPU variant."""
    from ctxbench.views.report import render
    from ctxbench.views.summary.text import run_lines

    run = stored(store, read_run_file(PRESET_RUN))
    summary = summarize([run])
    rungs = {rung.key: rung.point for rung in summary.ladder}
    assert set(rungs) == {"coroutine", "fiber", "futex_handoff", "round_robin"}
    assert rungs["futex_handoff"].probe == "switch.futex"
    assert rungs["futex_handoff"].params["policy"] == "batch"  # as the preset ran it
    assert rungs["round_robin"].probe == "switch.threads_round_robin"
    assert summary.same_vs_cross == []  # one CPU's variants only: no comparison
    shown = "".join(line.plain + "\n" for line in run_lines(summary, 100))
    assert "Same CPU vs another CPU" not in shown
    assert "futex hand-off, threads, same CPU" in shown and "4-thread round robin" in shown
    html = render([run])
    assert "Same CPU vs another CPU" not in html
    ladder = html.split('id="summary-ladder"')[1]
    chart = ladder.split('data-plot="')[1].split("</script>")[0]  # the ladder's chart data
    for rung in summary.ladder:
        assert rung.label in chart


def test_a_run_with_both_sides_keeps_a_row_that_has_one(store):
    # Only a run with no primitive on both sides loses the section: here the
    # reference run less every cross-CPU pipe record keeps the pipe's row.
    records = [
        r
        for r in read_run_file(REFERENCE_RUN).all()
        if not (r.get("probe") == "switch.pipe" and r["params"].get("cpus") == "cross")
    ]
    rows = summarize([stored(store, group_run(records))]).same_vs_cross
    pipe = [row for row in rows if row.primitive == "pipe"]
    assert pipe and all(row.cross is None and row.same is not None for row in pipe)
