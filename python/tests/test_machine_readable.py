"""Outputs for machines and CI: `compare --json` (validated by
schema/compare.schema.json), `compare --fail-above PCT` (the exit status is
the verdict), `export --format bmf` (Bencher Metric Format), `show --json`,
and colour only where a person reads a terminal.

All of it on the recorded runs in fixtures/ (real engine output).
"""

from __future__ import annotations

import copy
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from conftest import REPO, import_runs, invoke, real_run
from ctxbench import units
from ctxbench.records.naming import variant_name
from ctxbench.records.schema import record_problem

COMPARE_SCHEMA = json.loads((REPO / "schema" / "compare.schema.json").read_text())
SOURCE = Path(__file__).parents[1] / "src"

# The Bencher Metric Format as its documentation gives it
# (https://bencher.dev/docs/reference/bencher-metric-format, whose JSON Schema
# is published at https://bencher.dev/bmf.json): benchmark name -> measure
# slug -> {"value", optional "lower_value", "upper_value"}, all numbers.
# Written out here in those terms, with what the page says of lengths
# (benchmark names up to 1024 characters, measure slugs up to 64).
BMF_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "propertyNames": {"minLength": 1, "maxLength": 1024},
    "additionalProperties": {
        "type": "object",
        "propertyNames": {"minLength": 1, "maxLength": 64},
        "additionalProperties": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "lower_value": {"type": "number"},
                "upper_value": {"type": "number"},
            },
            "required": ["value"],
            "additionalProperties": False,
        },
    },
}


# ---- compare --json ------------------------------------------------------------------
def test_the_compare_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(COMPARE_SCHEMA)


def test_compare_json_validates_and_says_what_the_tables_say(db, two_runs):
    done = invoke("compare", *two_runs, "--json", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    assert [run["run_id"] for run in data["runs"]] == two_runs
    # One row per variant of either run, each against A.
    variants = {variant_name(r["probe"], r["params"]) for r in real_run("run_a.jsonl").results}
    assert {row["variant"] for row in data["rows"]} == variants
    assert len(data["rows"]) == len(variants)
    # The summary's counts are the rows' decisions, and the line is the table's line.
    summary = data["summaries"][0]
    judged = [row for row in data["rows"] if row["judged"]]
    assert summary["slower"] == sum(row["decision"] == "slower" for row in judged)
    assert summary["faster"] == sum(row["decision"] == "faster" for row in judged)
    assert summary["no_difference"] == sum(row["decision"] == "no difference" for row in judged)
    not_judged = [row for row in data["rows"] if not row["judged"]]
    assert summary["excluded"] == len(not_judged) - summary["only_in_one_run"]
    table = invoke("compare", *two_runs, "--db", db)
    assert summary["line"] in table.stdout
    # The suspect side made too few switches: it measured something else.
    suspect = next(r for r in data["rows"] if r["reference_status"] == "suspect")
    assert not suspect["judged"]
    assert suspect["excluded"] == [
        "A made too few switches per operation: not the operation (too_few_switches)"
    ]
    # Unsupported on both sides: no figures, no ratio.
    unsupported = next(r for r in data["rows"] if r["status"] == "unsupported")
    assert unsupported["median"] is None and unsupported["ratio"] is None


def test_compare_json_of_three_runs_with_matrices_validates(db):
    runs = import_runs(db, "matrix_a.jsonl", "matrix_b.jsonl", "run_a.jsonl")
    done = invoke("compare", *runs, "--json", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    assert [s["run"] for s in data["summaries"]] == ["B", "C"]
    assert data["matrices"] and data["matrices"][0]["classes"]
    # Another machine's run: its variants are only in one run, never judged.
    only_c = [r for r in data["rows"] if r["run"] == "C" and r["decision"] == "only in one run"]
    assert only_c and not any(r["judged"] for r in only_c)
    assert data["environment"]["differing"]  # another machine, another environment


def test_compare_json_refused_by_the_schema_when_a_field_is_wrong(db, two_runs):
    """The schema is not a rubber stamp: a row without its ratio is invalid."""
    data = json.loads(invoke("compare", *two_runs, "--json", "--db", db).stdout)
    del data["rows"][0]["ratio"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)


# ---- compare --fail-above ----------------------------------------------------------------
def test_fail_above_without_repeats_or_history_is_inconclusive(db, two_runs):
    """Two quick runs of one machine a second apart, nothing else in the
    store: every row is judged within-run, whose detectable slowdown is never
    below the floor (22%), so at 5% no row can be called not slower. The
    gate is inconclusive (exit 4), never passed, and says what would decide."""
    done = invoke("compare", *two_runs, "--fail-above", "5", "--db", db)
    assert done.exit_code == 4, done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("--fail-above 5: INCONCLUSIVE: 0 slower, 0 not slower, ")
    assert "no row was judged, so the gate cannot pass" in last
    assert "1 row(s) measured in neither run (unsupported)" in last
    inconclusive = [line for line in done.stdout.splitlines() if line.startswith("inconclusive")]
    assert re.search(r"could detect only \d+% or more \(within-run only\)", inconclusive[0])
    assert (
        "would decide it: --repeat 2 on both runs or 3 earlier runs of this machine"
        in (inconclusive[0])
    )
    assert inconclusive[-1].startswith("inconclusive at 5%: and ")
    # Accepting every row inconclusive still does not pass a gate that judged none.
    allowed = invoke("compare", *two_runs, "--fail-above", "5", "--allow-inconclusive", "100",
                     "--db", db)  # fmt: skip
    assert allowed.exit_code == 4


def test_fail_above_fails_on_a_slower_machine_and_names_each_row(db):
    """run_a.jsonl against the same selection recorded on a second machine (a
    QEMU TCG guest, fixtures/README.md): the system calls are 3-30x slower
    there, far past the floor, so they are slower; a suspect side is judged
    (its spread widens the noise), and is never called not slower."""
    a, other = import_runs(db, "run_a.jsonl", "other_machine.jsonl")
    done = invoke("compare", a, other, "--fail-above", "5", "--json", "--db", db)
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    gate = data["fail_above"]
    assert gate["outcome"] == "failed" and gate["failed"]
    outcomes = {r["variant"]: r["outcome"] for r in gate["rows"]}
    assert outcomes["syscall.getpid"] == "slower"
    counts = gate["counts"]
    assert counts["slower"] + counts["not_slower"] + counts["inconclusive"] == len(gate["rows"])
    assert counts["slower"] == sum(1 for o in outcomes.values() if o == "slower")
    suspect = [
        r["variant"] for r in data["rows"] if "suspect" in (r["status"], r["reference_status"])
    ]
    assert suspect and all(outcomes[name] != "not slower" for name in suspect)
    # On stderr, one line per slower row naming it, then the outcome.
    lines = done.stderr.strip().splitlines()
    named = [line for line in lines if line.startswith("slower by more than 5%: ")]
    assert len(named) == counts["slower"]
    assert any("syscall.getpid: B ran" in line for line in named)
    assert lines[-1].startswith(f"--fail-above 5: FAILED: {counts['slower']} slower")
    # Above the largest slowdown nothing is slower, yet nothing passes blind.
    largest = max(r["time_ratio"] or 0 for r in gate["rows"])
    above = f"{(largest - 1) * 100 + 1:.0f}"
    assert invoke("compare", a, other, "--fail-above", above, "--db", db).exit_code == 4


def test_fail_above_fails_on_a_significant_slowdown_and_names_it(db, two_runs):
    """Against run B as the reference, run A's cross-CPU process switch took
    1.94× as long (p = 0.031, CI 1.23-3.96): a real, significant slowdown in
    recorded data, judged within-run only (the runs have no repeats and the
    store no history), so the floor applies. It fails 5%: the whole interval
    is above the floor. At 50% it is not slower by the interval, and its
    detectable slowdown (over 50%) says the row could not have told:
    inconclusive, exit 4."""
    a, b = two_runs
    done = invoke("compare", a, b, "--baseline", b, "--fail-above", "5", "--db", db)
    assert done.exit_code == 1, done.stdout
    named = [line for line in done.stdout.splitlines() if line.startswith("slower by more than")]
    assert len(named) == 1
    assert "switch.pipe between=processes cpus=cross policy=batch" in named[0]
    assert "slower than A" in named[0] and "p = 0.031" in named[0]
    assert "judged by within-run samples only (floor 22%); could detect " in named[0]
    assert "FAILED: 1 slower" in done.stdout.splitlines()[-1]
    wider = invoke("compare", a, b, "--baseline", b, "--fail-above", "50", "--json", "--db", db)
    assert wider.exit_code == 4, wider.stderr
    row = next(
        r
        for r in json.loads(wider.stdout)["fail_above"]["rows"]
        if r["variant"] == "switch.pipe between=processes cpus=cross policy=batch"
    )
    assert row["outcome"] == "inconclusive" and row["why"] == "noise"
    assert row["detectable_slowdown"] > 0.5


def test_fail_above_with_json_keeps_stdout_json(db, two_runs):
    a, b = two_runs
    done = invoke("compare", a, b, "--baseline", b, "--fail-above", "5%", "--json", "--db", db)
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    gate = data["fail_above"]
    assert gate["failed"] and gate["percent"] == 5 and gate["outcome"] == "failed"
    slower = [r for r in gate["rows"] if r["outcome"] == "slower"]
    assert [r["variant"] for r in slower] == [
        "switch.pipe between=processes cpus=cross policy=batch"
    ]
    assert slower[0]["time_ratio"] > 1.05
    assert "slower by more than 5%" in done.stderr


@pytest.mark.parametrize(
    "args, named",
    [
        (["--allow-inconclusive", "20"], "goes with --fail-above"),
        (["--fail-above", "5", "--allow-inconclusive", "120"], "at most 100"),
        (["--fail-above", "5", "--allow-inconclusive", "x"], "such as 5"),
    ],
)
def test_allow_inconclusive_is_checked(db, two_runs, args, named):
    done = invoke("compare", *two_runs, *args, "--db", db)
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: ") and named in lines[0]


@pytest.mark.parametrize("bad", ["abc", "-3", "nan", "inf", ""])
def test_a_bad_threshold_is_one_line_and_exit_2(db, two_runs, bad):
    done = invoke("compare", *two_runs, "--fail-above", bad, "--db", db)
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: ")
    assert "--fail-above" in lines[0] and "such as 5" in lines[0]
    assert done.stdout == ""
    assert invoke("history", "--db", db).stdout.count("import") == 2  # nothing lost


# ---- export --format bmf ---------------------------------------------------------------
def test_export_bmf_has_the_documented_shape(db, two_runs):
    done = invoke("export", two_runs[0], "--format", "bmf", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.Draft7Validator.check_schema(BMF_SCHEMA)
    jsonschema.Draft7Validator(BMF_SCHEMA).validate(data)
    results = real_run("run_a.jsonl").results
    with_figures = [r for r in results if r["verdict"]["status"] in ("ok", "suspect")]
    assert len(data) == len(with_figures)
    for result in with_figures:
        metric = data[variant_name(result["probe"], result["params"])]["latency"]
        assert metric["value"] == result["summary"]["median"]
        ci = result["summary"]["median_ci"]
        assert (metric["lower_value"], metric["upper_value"]) == (ci["low"], ci["high"])
    # The unsupported result is left out, and stderr says so; so is the suspect one's verdict.
    assert "create.pthread_scope_process" not in data
    assert "left out" in done.stderr and "create.pthread_scope_process" in done.stderr
    assert "suspect result(s) exported" in done.stderr


def test_bmf_names_are_stable_and_distinct(db, two_runs):
    first = json.loads(invoke("export", two_runs[0], "--format", "bmf", "--db", db).stdout)
    second = json.loads(invoke("export", two_runs[1], "--format", "bmf", "--db", db).stdout)
    assert set(first) == set(second)  # the same variants, the same names, run after run
    assert "switch.pipe between=threads cpus=same policy=batch" in first


def test_the_bmf_schema_refuses_what_bencher_refuses():
    validator = jsonschema.Draft7Validator(BMF_SCHEMA)
    assert not validator.is_valid({"x": {"latency": {"lower_value": 1.0}}})  # no value
    assert not validator.is_valid({"x": {"latency": {"value": "1"}}})  # not a number
    assert validator.is_valid({"x": {"latency": {"value": 1.0}}})


# ---- show --json ---------------------------------------------------------------------
SHOW_SCHEMA = json.loads((REPO / "schema" / "show.schema.json").read_text())


@pytest.mark.parametrize("name", ["run_a.jsonl", "other_machine_broad.jsonl"])
def test_show_json_validates(db, name):
    (run_id,) = import_runs(db, name)
    data = json.loads(invoke("show", run_id, "--json", "--db", db).stdout)
    jsonschema.Draft202012Validator.check_schema(SHOW_SCHEMA)
    jsonschema.Draft202012Validator(SHOW_SCHEMA).validate(data)
    assert all(record_problem(record) is None for record in data["records"])
    broken = copy.deepcopy(data)
    broken["summary"]["ladder"][0]["median"] = "48 ns"  # a figure must be a number
    assert not jsonschema.Draft202012Validator(SHOW_SCHEMA).is_valid(broken)


def test_show_json_gives_the_stored_records_verbatim(db, two_runs):
    done = invoke("show", two_runs[0], "--json", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(SHOW_SCHEMA).validate(data)
    assert data["kind"] == "stored_run" and data["run"]["run_id"] == two_runs[0]
    assert data["records"] == real_run("run_a.jsonl").all()
    assert data["run"]["counts"]["unsupported"] == 1
    # The summary's figures are the records' own: each rung is its record's median.
    by_variant = {variant_name(r["probe"], r["params"]): r for r in real_run("run_a.jsonl").results}
    ladder = data["summary"]["ladder"]
    assert [rung["label"] for rung in ladder][:2] == ["vDSO clock_gettime", "bare system call"]
    for rung in ladder:
        assert rung["median"] == by_variant[rung["variant"]]["summary"]["median"]
    suspect = [n for n in data["summary"]["verdicts"]["notes"] if n["status"] == "suspect"]
    assert suspect and "fewer context switches" in suspect[0]["sentences"][0]


# ---- history --json ------------------------------------------------------------------
HISTORY_SCHEMA = json.loads((REPO / "schema" / "history.schema.json").read_text())
# history.schema.json takes a run's description from show.schema.json.
SCHEMAS = Registry().with_resource(SHOW_SCHEMA["$id"], Resource.from_contents(SHOW_SCHEMA))


def _history_validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(HISTORY_SCHEMA)
    return jsonschema.Draft202012Validator(HISTORY_SCHEMA, registry=SCHEMAS)


def test_history_json_validates_and_lists_the_runs_as_show_describes_them(db, two_runs):
    done = invoke("history", "--json", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    _history_validator().validate(data)
    assert data["kind"] == "history" and data["store"] == db
    assert [run["run_id"] for run in data["runs"]] == two_runs
    shown = json.loads(invoke("show", two_runs[1], "--json", "--db", db).stdout)
    assert data["runs"][1] == shown["run"]
    broken = copy.deepcopy(data)
    del broken["runs"][0]["machine"]  # the run's description is checked, not waved through
    assert not _history_validator().is_valid(broken)


def test_history_json_of_no_store_is_an_error(tmp_path):
    """No store is not an empty one: exit 2 and one line, nothing on stdout."""
    db = str(tmp_path / "none.db")
    done = invoke("history", "--json", "--db", db)
    assert done.exit_code == 2
    assert done.stdout == "" and "no store at" in done.stderr
    assert not os.path.exists(db)


# ---- colour --------------------------------------------------------------------------
class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_styling_is_decided_in_one_place():
    assert units.styled(_Stream(True), {})
    assert not units.styled(_Stream(False), {})
    assert not units.styled(_Stream(True), {"NO_COLOR": "1"})
    assert units.styled(_Stream(True), {"NO_COLOR": ""})  # the convention: empty is unset
    assert not units.styled(_Stream(True), {"TERM": "dumb"})
    assert not units.styled(object(), {})


def _on_a_terminal(db: str, *args: str, no_color: bool) -> bytes:
    """ctxbench's stdout when it is a terminal (a pseudo-terminal)."""
    env = dict(os.environ, PYTHONPATH=str(SOURCE), CTXBENCH_DB=db, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    if no_color:
        env["NO_COLOR"] = "1"
    main, secondary = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctxbench", *args],
            stdout=secondary,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(secondary)
        output = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        assert process.wait(timeout=60) == 0, process.stderr.read()
    finally:
        os.close(main)
    return output


@pytest.mark.parametrize("args", [["show", "latest"], ["compare", "RUN_A", "RUN_B"]], ids=str)
def test_colour_on_a_terminal_and_never_with_no_color_or_a_pipe(db, two_runs, args):
    args = [two_runs[0] if a == "RUN_A" else two_runs[1] if a == "RUN_B" else a for a in args]
    coloured = _on_a_terminal(db, *args, "--db", db, no_color=False)
    assert b"\x1b[" in coloured
    plain = _on_a_terminal(db, *args, "--db", db, no_color=True)
    assert b"\x1b[" not in plain and b"switch.pipe" in plain
    piped = subprocess.run(
        [sys.executable, "-m", "ctxbench", *args, "--db", db],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(SOURCE), TERM="xterm-256color"),
        check=True,
    )
    assert b"\x1b[" not in piped.stdout and b"switch.pipe" in piped.stdout
