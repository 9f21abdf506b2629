"""show's answers in words (ctxbench.why), on a fresh default run recorded on
the development VM (fixtures/default_quick.jsonl) and on that run with one
figure changed: why another CPU is slower, in one line with the measured
share; the words the ladder uses defined where it shows them; the ladder
cheapest first; and no ratio for a row that is not a switch."""

from __future__ import annotations

import copy
import tempfile

import pytest

from conftest import real_run
from ctxbench.records import RunRecords
from ctxbench.store import Store
from ctxbench.summary import summarize
from ctxbench.summary_view import plain, run_lines

DEFAULT_QUICK = "default_quick.jsonl"


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
    assert len(summary.terms) == 1 and summary.terms[0].startswith("idle held: ")
    text = _text(real_run(DEFAULT_QUICK))
    ladder = text.split("Why")[0]
    assert "thread switch, cross CPU, idle held" in ladder and "idle held: while" in ladder


def test_why_another_cpu_is_slower_when_holding_idle_did_not_help():
    # Recorded: idle held (69.99 µs) was no faster than idle free (67.28 µs).
    text = _text(real_run(DEFAULT_QUICK))
    why = text.split("Why\n")[1].split("\n\n")[0]
    assert why.startswith("  Another CPU: a thread switch takes 67.28 µs against 946.8 ns")
    assert "did not make it faster here (69.99 µs with idle held)" in why
    assert "%" not in why.split("Processes:")[0]  # no share where none was measured
    assert "address-space switch is 108.0 ns of it (10%)" in why


def test_why_another_cpu_is_slower_names_the_idle_share():
    run = _with_held_median(real_run(DEFAULT_QUICK), 5000.0)
    summary = summarize([stored(run)]).runs[0]
    (cross,) = [line for line in summary.why if line.startswith("Another CPU")]
    free = next(r.point.median for r in summary.ladder if r.key == "cross_switch")
    # 62.28 µs of 67.28: the share of the whole cross-CPU figure
    assert f"; 62.28 µs of it ({100 * (free - 5000.0) / free:.0f}%) is waking an idle CPU" in cross
    assert cross.endswith("(67.28 µs with idle free, 5.000 µs with idle held).")


def test_without_idle_held_the_line_says_it_was_not_measured():
    run = real_run(DEFAULT_QUICK)
    results = [r for r in run.results if r["params"].get("idle") != "held"]
    summary = summarize([stored(RunRecords(env=run.env, results=results, end=run.end))])
    (cross,) = [line for line in summary.runs[0].why if line.startswith("Another CPU")]
    assert "idle held was not measured" in cross
    assert summary.runs[0].terms == []


def test_a_yield_across_cpus_gets_words_not_a_ratio():
    summary = summarize([stored(real_run(DEFAULT_QUICK))]).runs[0]
    rows = {(row.primitive, row.between): row for row in summary.same_vs_cross}
    for between in ("threads", "processes"):
        row = rows[("yield", between)]
        assert row.ratio is None
        assert row.no_ratio and "too few switches" in row.no_ratio
    assert rows[("pipe", "threads")].ratio == pytest.approx(67_277.0 / 946.8, rel=1e-3)
    text = _text(real_run(DEFAULT_QUICK))
    assert "0.4652×" not in text and "not a switch" in text
    assert "yield threads, yield processes: no ratio: on the other CPU" in text
