"""Formatting of figures, and golden output of the terminal tables.

The golden files are the `show` and `compare` output for the recorded runs
(the summary by default, the full tables with --all) and the reference run.
Nothing overwrites them: an output that differs fails with the diff, and with
CTXBENCH_UPDATE_GOLDEN=1 it is also written beside its golden file as
NAME.new; after reviewing the diff, `make accept-golden` moves it into place.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
from pathlib import Path

import pytest

from conftest import REPO, fixture_path, invoke, real_run
from ctxbench import units
from ctxbench.records.reading import read_run_file
from ctxbench.records.result import results_of

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    "amount, unit, expected",
    [
        (81.55276, "ns", "81.55 ns"),
        (1075.3, "ns", "1.075 µs"),
        (54101.0, "ns", "54.10 µs"),
        (2_077_000.0, "ns", "2.077 ms"),
        (3.2e9, "ns", "3.200 s"),
        (0.4, "ns", "0.4000 ns"),
        (113.0, "instructions", "113 instr"),
        (1234.0, "cycles", "1,234 cycles"),
        (212.5, "cycles", "212.5 cycles"),
        (1.5e6, "msgs/s", "1.500 M round trips/s"),
        (None, "ns", "—"),
    ],
)
def test_value(amount, unit, expected):
    assert units.value(amount, unit) == expected


def test_interval_names_the_unit_once():
    assert units.interval(1190.0, 1240.0, "ns") == "1.190–1.240 µs"
    assert units.interval(980.0, 1020.0, "ns") == "980.0 ns–1.020 µs"
    assert units.interval(None, 1.0, "ns") == "—"


def test_ratio_and_verdict():
    assert units.ratio(0.343, 0.48, 0.889) == "0.480× [0.343, 0.889]"
    unsupported = next(
        r for r in results_of(real_run().results) if r.verdict.status == "unsupported"
    )
    assert units.verdict(unsupported) == "unsupported: not_supported_here"
    assert "ENOTSUP" in units.verdict_detail(unsupported)
    assert units.corrected(unsupported) == "—" and units.baseline(unsupported) == "—"


def check_golden(path: Path, text: str) -> None:
    """TEXT against the golden file PATH: a difference fails with the diff;
    with CTXBENCH_UPDATE_GOLDEN set, TEXT is also written to PATH.new for
    review (`make accept-golden` moves it into place). PATH is never written."""
    new = path.with_name(path.name + ".new")
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if text == old:
        new.unlink(missing_ok=True)  # a .new left from before is stale
        return
    if os.environ.get("CTXBENCH_UPDATE_GOLDEN"):
        new.write_text(text, encoding="utf-8")
        hint = f"written to {new}: review the diff, then `make accept-golden`"
    else:
        hint = f"CTXBENCH_UPDATE_GOLDEN=1 writes it to {new.name} for review"
    diff = difflib.unified_diff(
        old.splitlines(keepends=True), text.splitlines(keepends=True), str(path), "this output"
    )
    pytest.fail(f"{path.name} differs ({hint}):\n{''.join(diff)}", pytrace=False)


def _golden(name: str, text: str) -> None:
    check_golden(GOLDEN / name, text)


@pytest.mark.parametrize("update", ["", "1"])
def test_a_changed_output_fails_and_only_a_new_file_is_written(tmp_path, monkeypatch, update):
    golden = tmp_path / "show.txt"
    golden.write_text("a\nb\n", encoding="utf-8")
    monkeypatch.setenv("CTXBENCH_UPDATE_GOLDEN", update)
    with pytest.raises(pytest.fail.Exception) as failed:
        check_golden(golden, "a\nc\n")
    assert "-b\n+c" in str(failed.value)  # the diff is shown
    assert golden.read_text(encoding="utf-8") == "a\nb\n"  # never overwritten
    new = tmp_path / "show.txt.new"
    assert new.exists() == bool(update)
    if update:
        assert new.read_text(encoding="utf-8") == "a\nc\n"
        check_golden(golden, "a\nb\n")  # the same output again: the stale .new goes
        assert not new.exists()


def _store(tmp_path, *names: str) -> str:
    db = str(tmp_path / "golden.db")
    for name in names:
        args = ["import", str(fixture_path(name)), "--db", db]
        assert invoke(*args).exit_code == 0
    return db


REFERENCE = REPO / "docs" / "data" / "reference-run.jsonl"


@pytest.mark.parametrize("columns", ["200", "80"])
@pytest.mark.parametrize(
    "name, source, extra",
    [
        ("show_run_a", "run_a.jsonl", []),  # the summary, then a line naming --all
        ("show_run_a_all", "run_a.jsonl", ["--all"]),  # the summary, then every result
        ("show_reference", REFERENCE, []),  # a full run: every rung and primitive
    ],
)
def test_show_matches_golden(tmp_path, monkeypatch, columns, name, source, extra):
    monkeypatch.setenv("COLUMNS", columns)
    db = _store(tmp_path, source)
    shown = invoke("show", "latest", "--db", db, *extra)
    assert shown.exit_code == 0
    _golden(f"{name}_{columns}.txt", shown.stdout)
    if columns == "80":
        assert max(len(line) for line in shown.stdout.splitlines()) <= 80


@pytest.mark.parametrize("columns", ["200", "80"])
@pytest.mark.parametrize(
    "name, other",
    [
        ("compare_a_b", "run_b.jsonl"),  # two runs of one machine
        # This VM against a QEMU guest with another kernel (fixtures/README.md):
        # ratios, CIs, significance and the environment differences.
        ("compare_a_other_machine", "other_machine.jsonl"),
    ],
)
def test_compare_summary_matches_golden(tmp_path, monkeypatch, columns, name, other):
    monkeypatch.setenv("COLUMNS", columns)
    db = _store(tmp_path, "run_a.jsonl", other)
    a, b = real_run("run_a.jsonl").run_id, real_run(other).run_id
    compared = invoke("compare", a, b, "--db", db)
    assert compared.exit_code == 0
    _golden(f"{name}_{columns}.txt", compared.stdout)
    if columns == "80":
        assert max(len(line) for line in compared.stdout.splitlines()) <= 80


def test_compare_all_matches_golden(tmp_path, monkeypatch):
    """--all: the summary, then the runs, the environment diff and every row."""
    monkeypatch.setenv("COLUMNS", "200")
    db = str(tmp_path / "golden.db")
    for name, label in (("run_a.jsonl", "A"), ("run_b.jsonl", "B")):
        args = ["import", str(fixture_path(name)), "--label", label, "--db", db]
        assert invoke(*args).exit_code == 0
    a, b = real_run("run_a.jsonl").run_id, real_run("run_b.jsonl").run_id
    compared = invoke("compare", a, b, "--all", "--db", db)
    assert compared.exit_code == 0
    _golden("compare_a_b_all_200.txt", compared.stdout)


def test_the_ladder_bars_follow_the_medians_on_a_log_scale(tmp_path):
    """At 200 columns each rung gets a bar whose length is the median's place
    between whole decades: a larger median never gets a shorter bar, and one
    ten times larger gets a longer one."""
    from ctxbench.analysis.summary.build import summarize
    from ctxbench.store.db import Store
    from ctxbench.views.summary.text import ladder_lines

    with Store.open(str(tmp_path / "ladder.db")) as store:
        store.add_run(read_run_file(REFERENCE), origin="import")
        run = store.load("latest")
    rungs = summarize([run]).ladder
    lines = [line.plain for line in ladder_lines(summarize([run]).runs[0], 200)][2:]
    # A rung's line carries its bar; the lines under it (samples set aside,
    # the definition of idle held) carry none.
    bars = [line.count("█") for line in lines if "█" in line]
    assert len(bars) == len(rungs) and all(bars)
    pairs = sorted(zip((r.point.median for r in rungs), bars, strict=True))
    for (small, short), (large, long) in itertools.pairwise(pairs):
        assert long >= short
        if large >= 10 * small:
            assert long > short
    assert "█" not in "".join(line.plain for line in ladder_lines(summarize([run]).runs[0], 80))


def test_three_runs_say_which_run_each_line_is_about(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    names = ("run_a.jsonl", "run_b.jsonl", "other_machine.jsonl")
    db = _store(tmp_path, *names)
    compared = invoke("compare", *(real_run(n).run_id for n in names), "--db", db)
    assert compared.exit_code == 0
    lines = compared.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    first = next(i for i, line in enumerate(lines) if line.startswith("  vDSO clock_gettime"))
    assert lines[first + 1].startswith("    B: not significant")
    assert lines[first + 2].startswith("    C ran ") and "slower than A" in lines[first + 2]


def test_the_timer_line_names_two_different_figures_at_its_ends():
    """Issue 40: "0.037 ns per switch (switch.pipe) to 0.15 ns per switch
    (switch.pipe)": where both ends are variants of one probe, each end names
    the parameters that tell it from the other."""
    pipes = [r for r in results_of(real_run("run_a.jsonl").results) if r.probe == "switch.pipe"]
    (line,) = units.timer(pipes)
    ends = re.findall(r"\((switch\.pipe[^)]*)\)", line)
    assert len(ends) == 2 and ends[0] != ends[1], line
    assert all(" " in end for end in ends)  # a parameter beside the probe's name
    two_probes = [r for r in results_of(real_run("run_a.jsonl").results) if r.get("timer")]
    (line,) = units.timer(two_probes)
    low, high = re.findall(r"\(([^)]*)\)", line.split("from each figure")[1])
    assert low != high and " " not in low + high  # distinct probes: their names suffice


def test_the_timer_is_stated_where_corrected_figures_are_shown(tmp_path, monkeypatch):
    # Issue 30.2: source, cost per read, and what was subtracted per operation.
    results = [
        r for r in results_of(real_run("run_a.jsonl").results) if r.probe == "syscall.getppid"
    ]
    (line,) = units.timer(results)
    timer = results[0].block("timer")
    per_op = timer["overhead_ns"] / results[0].get("ops_per_sample")
    assert line.startswith(f"timer: {timer['source']}, {units.value(timer['overhead_ns'], 'ns')}")
    assert "per read, subtracted once per sample: " in line
    assert line.endswith(f"{units._small(per_op)} per operation")
    assert "e-" not in line  # never in e-notation
    monkeypatch.setenv("COLUMNS", "80")
    db = str(tmp_path / "timer.db")
    invoke("import", str(fixture_path("run_a.jsonl")), "--db", db)
    shown = invoke("show", "latest", "--db", db, "--all").output
    ladder = shown.split("What one operation costs here")[1].split("\n\n")[0]
    table = shown.split("every result")[1]
    assert "timer: rdtscp" in " ".join(ladder.split())  # under the ladder
    assert "timer: rdtscp" in " ".join(table.split())  # under the table of every result
    assert "corrected" not in table  # the column is 'less baseline': '—' means no baseline
    assert "less base" in table
