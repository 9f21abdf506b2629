"""show's answers in words (ctxbench.views.summary.why), on a fresh default run recorded on
the development VM (fixtures/default_quick.jsonl) and on that run with one
figure changed: why another CPU is slower, in one line with the measured
share; the words the ladder uses defined where it shows them; the ladder
cheapest first; and no ratio for a row that is not a switch."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import pytest

from conftest import real_run
from ctxbench.analysis.explain.interference import RunLoad
from ctxbench.analysis.summary.build import summarize
from ctxbench.records.reading import read_run_file
from ctxbench.records.runs import RunRecords
from ctxbench.store.db import Store
from ctxbench.views.explain.explanation import not_explained_words
from ctxbench.views.summary import why
from ctxbench.views.summary.text import plain, run_lines

DEFAULT_QUICK = "default_quick.jsonl"
REFERENCE = str(Path(__file__).resolve().parents[2] / "docs" / "data" / "reference-run.jsonl")


def stored(run: RunRecords):
    """RUN as the store gives it back (each in a store of its own)."""
    with tempfile.TemporaryDirectory() as directory, Store.open(f"{directory}/why.db") as store:
        return store.load(store.add_run(run, origin="import"))


def _with_held_median(run: RunRecords, median: float) -> RunRecords:
    """The run with the idle=held cross-CPU thread pipe switch at MEDIAN ns."""
    results = copy.deepcopy(run.results)
    for result in results:
        params = result["params"]
        if (result["probe"], params.get("idle"), params.get("between"), params.get("policy")) == (
            "switch.pipe",
            "held",
            "threads",
            "normal",
        ):
            result["summary"]["median"] = median
            result["summary"]["median_ci"] = {"low": median * 0.99, "high": median * 1.01}
    return RunRecords(env=run.env, results=results, end=run.end)


def _text(run: RunRecords) -> str:
    return plain(run_lines(summarize([stored(run)]), 100))


def test_the_ladder_is_cheapest_first_and_defines_idle_held():
    summary = summarize([stored(real_run(DEFAULT_QUICK))]).runs[0]
    medians = [rung.point.median for rung in summary.ladder]
    assert medians == sorted(medians)
    # vDSO (16 ns) before Boost.Fiber (41 ns): the example of the old order
    keys = [rung.key for rung in summary.ladder]
    assert keys.index("vdso") < keys.index("fiber")
    terms = why.terms(summary.ladder)
    assert len(terms) == 1 and terms[0].startswith("idle held: ")
    text = _text(real_run(DEFAULT_QUICK))
    ladder = text.split("What one operation costs here")[1].split("\n\n")[0]
    assert "thread switch, cross CPU, idle held" in ladder and "idle held: while" in ladder


def test_why_states_no_idle_share_where_the_intervals_overlap():
    # Recorded: idle held 69.99 µs (56.43–71.24) against idle free 67.28 µs (52.39–70.77):
    # the intervals overlap, so no share, and the line says what is known instead.
    text = _text(real_run(DEFAULT_QUICK))
    why = " ".join(text.split("Why\n")[1].split("\n\n")[0].split())
    # The load first (issue 40.3): recorded while six other jobs shared the VM.
    assert why.startswith("Load first, from this run's own records: 52 of 169 figures suspect")
    why = why[why.index("Another CPU:") :]
    assert why.startswith("Another CPU: a thread switch takes 67.28 µs against 946.8 ns")
    assert "on one CPU, 71.1× (CI " in why  # the ratio with its interval
    cross = why.split("Processes:")[0]
    assert "idle free 67.28 µs, CI 52.39–70.77 µs; idle held 69.99 µs, CI 56.43–71.24 µs" in cross
    assert "the two intervals overlap, so this run cannot say how much" in cross
    assert "%" not in cross  # no share where the run calls it noise
    assert "address-space switch is 108.0 ns of it (10%)" in why


def test_why_names_the_idle_share_on_the_recorded_run_where_they_are_apart():
    # The reference run: idle free 28.59 µs (10.08–31.18, unstable: its interval carries
    # the spread), idle held 2.342 µs (2.261–2.371): apart, so the share stands.
    summary = summarize([stored(read_run_file(Path(REFERENCE)))]).runs[0]
    lines = why.why_lines(summary.explained, summary.ladder)
    (cross,) = [line for line in lines if line.startswith("Another CPU")]
    assert "; 26.25 µs of it (92%) is waking an idle CPU (idle free 28.59 µs" in cross
    assert "28.59 µs (suspect) against 983.0 ns" in cross  # the suspect side marked, kept


def test_why_names_the_idle_share():
    run = _with_held_median(real_run(DEFAULT_QUICK), 5000.0)
    summary = summarize([stored(run)]).runs[0]
    lines = why.why_lines(summary.explained, summary.ladder)
    (cross,) = [line for line in lines if line.startswith("Another CPU")]
    free = next(r.point.median for r in summary.ladder if r.key == "cross_switch")
    # 62.28 µs of 67.28: the share of the whole cross-CPU figure
    assert f"; 62.28 µs of it ({100 * (free - 5000.0) / free:.0f}%) is waking an idle CPU" in cross
    assert cross.endswith("idle held 5.000 µs, CI 4.950–5.050 µs).")


def _with_held(run: RunRecords, change) -> RunRecords:
    results = copy.deepcopy(run.results)
    for result in results:
        if result["probe"] == "switch.pipe" and result["params"].get("idle") == "held":
            change(result)
    return RunRecords(env=run.env, results=results, end=run.end)


def test_why_states_no_idle_share_with_no_cpuidle_driver_or_a_suspect_side():
    apart = _with_held_median(real_run(DEFAULT_QUICK), 5000.0)

    def no_driver(result):
        result["derived"]["cpuidle_driver"] = "none"

    def preempted(result):
        result["verdict"] = {
            "status": "suspect",
            "reasons": [{"code": "too_many_switches", "detail": "preempted"}],
        }

    for change, words in (
        (no_driver, "no cpuidle driver is active here"),
        (preempted, "a side is suspect for a reason that says it measured something else"),
    ):
        summary = summarize([stored(_with_held(apart, change))]).runs[0]
        lines = why.why_lines(summary.explained, summary.ladder)
        (cross,) = [line for line in lines if line.startswith("Another CPU")]
        assert words in cross and "%" not in cross
        # explain says the same (one rule): the part is not among the parts
        cross_rung = next(r for r in summary.ladder if r.key == "cross_switch")
        (explanation,) = [
            e
            for e in summary.explained.explanations
            if (e.probe, e.params) == (cross_rung.point.probe, cross_rung.point.params)
        ]
        assert "waking an idle CPU" not in {p.name for p in explanation.parts}
        assert any(
            w.startswith("waking an idle CPU: idle=free")
            for w in map(not_explained_words, explanation.not_explained)
        )


def test_without_idle_held_the_line_says_it_was_not_measured():
    run = real_run(DEFAULT_QUICK)
    results = [r for r in run.results if r["params"].get("idle") != "held"]
    summary = summarize([stored(RunRecords(env=run.env, results=results, end=run.end))])
    run = summary.runs[0]
    lines = why.why_lines(run.explained, run.ladder)
    (cross,) = [line for line in lines if line.startswith("Another CPU")]
    assert "idle held was not measured" in cross
    assert why.terms(run.ladder) == []


def test_a_yield_across_cpus_gets_words_not_a_ratio():
    summary = summarize([stored(real_run(DEFAULT_QUICK))]).runs[0]
    rows = {(row.primitive, row.between): row for row in summary.same_vs_cross}
    for between in ("threads", "processes"):
        row = rows[("yield", between)]
        assert row.ratio is None
        assert row.no_ratio and "too few switches" in why.no_ratio_words(row.same, row.cross)
    assert rows[("pipe", "threads")].ratio == pytest.approx(67_277.0 / 946.8, rel=1e-3)
    text = _text(real_run(DEFAULT_QUICK))
    assert "0.4652×" not in text and "not a switch" in text
    assert "yield threads, yield processes: no ratio: on the other CPU" in text


def test_why_states_no_idle_share_on_the_recorded_run_with_no_cpuidle_driver():
    # fixtures/no_idle_driver.jsonl: the real engine in a QEMU TCG guest with no
    # cpuidle driver (README): idle free and idle held were both measured, and
    # neither Why nor explain calls their difference a share.
    summary = summarize([stored(real_run("no_idle_driver.jsonl"))]).runs[0]
    lines = why.why_lines(summary.explained, summary.ladder)
    (cross,) = [line for line in lines if line.startswith("Another CPU")]
    assert "no cpuidle driver is active here" in cross
    assert "%" not in cross and "of it is waking" not in cross.split(":")[0]
    cross_rung = next(r for r in summary.ladder if r.key == "cross_switch")
    (explanation,) = [
        e
        for e in summary.explained.explanations
        if (e.probe, e.params) == (cross_rung.point.probe, cross_rung.point.params)
    ]
    assert "waking an idle CPU" not in {p.name for p in explanation.parts}
    assert explanation.withheld == {"waking an idle CPU": "no_idle_driver"}


def test_why_says_the_load_first_and_what_a_guest_run_measured_of_its_machine():
    """Issue 40.3: show's Why checks the run's own records first (counts), then
    the run's parts, then, in a guest, what the run measured of the virtual
    machine and what it could not; an emulator is named as acting on every
    instruction."""
    summary = summarize([stored(real_run(DEFAULT_QUICK))]).runs[0]
    lines = why.run_why(summary)
    assert lines[0].startswith("Load first") and "135 samples set aside" in lines[0]
    guest = lines[-1]
    assert guest.startswith("This run is a kvm guest, 2 vCPUs.")
    assert "idle=free against idle=held across CPUs" in guest  # measured (haltpoll)
    assert "could not measure" in guest and "host's own exits" in guest
    # The idle share is stated once: the guest line points at it, no figure again.
    assert "waking an idle CPU" not in guest and "%" not in guest
    tcg = summarize([stored(real_run("other_machine.jsonl"))]).runs[0]
    (emulated,) = [line for line in why.run_why(tcg) if line.startswith("This run ran under")]
    assert "emulator" in emulated and "every instruction" in emulated
    no_driver = summarize([stored(real_run("no_idle_driver.jsonl"))]).runs[0]
    assert why.run_why(no_driver)[0].startswith("Load first")
    assert "5 measured while the host reference still ran slowed" in why.run_why(no_driver)[0]
    quiet = summarize([stored(real_run("run_b.jsonl"))]).runs[0]  # no interference recorded
    assert not any(line.startswith("Load first") for line in why.run_why(quiet))


def test_the_load_line_counts_one_figure_and_several_alike():
    """'steal time in 1 figure': a user read 'in 1 figures' on a preset run (2026-11-27)."""
    one = RunLoad(measured=4, suspect=0, steal_ns=1e7, steal_results=1, counted=4)
    two = RunLoad(measured=4, suspect=0, steal_ns=2e7, steal_results=2, counted=4)
    assert "steal time in 1 figure (" in why.load_words(one)
    assert "steal time in 2 figures (" in why.load_words(two)
