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
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from referencing import Registry, Resource

from conftest import REPO, fixture_path, real_run
from ctxbench import fmt
from ctxbench.cli import cli
from ctxbench.records import record_problem, variant_name

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


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "machine.db")


def _import(db: str, *names: str) -> list[str]:
    for name in names:
        done = invoke("import", str(fixture_path(name)), "--db", db)
        assert done.exit_code == 0, done.stderr
    return [real_run(name).run_id for name in names]


@pytest.fixture
def two_runs(db) -> list[str]:
    """Two runs of one machine, a second apart (fixtures/README.md)."""
    return _import(db, "run_a.jsonl", "run_b.jsonl")


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
    assert summary["excluded"] == sum(1 for row in data["rows"] if row["excluded"])
    table = invoke("compare", *two_runs, "--db", db)
    assert summary["line"] in table.stdout
    # A suspect side is excluded, with its reason code, whatever its p-value.
    suspect = next(r for r in data["rows"] if r["reference_status"] == "suspect")
    assert not suspect["judged"] and any("too_few_switches" in why for why in suspect["excluded"])
    # Unsupported on both sides: no figures, no ratio.
    unsupported = next(r for r in data["rows"] if r["status"] == "unsupported")
    assert unsupported["median"] is None and unsupported["ratio"] is None


def test_compare_json_of_three_runs_with_matrices_validates(db):
    runs = _import(db, "matrix_a.jsonl", "matrix_b.jsonl", "run_a.jsonl")
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
def test_fail_above_passes_two_runs_of_one_machine(db, two_runs):
    done = invoke("compare", *two_runs, "--fail-above", "5", "--db", db)
    assert done.exit_code == 0, done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("--fail-above 5: passed")
    # The suspect row's side is significantly slower (p < 0.05), but excluded:
    # it is named as not judged, never as a regression.
    not_judged = next(line for line in done.stdout.splitlines() if "not judged" in line)
    assert "between=processes cpus=same policy=batch (excluded: A suspect" in not_judged
    assert not any(line.startswith("slower by more than") for line in done.stdout.splitlines())


def test_fail_above_fails_on_a_slower_machine_and_names_each_row(db):
    """run_a.jsonl against the same selection recorded on a second machine (a
    QEMU TCG guest, fixtures/README.md): every comparable system call is
    significantly slower there; the rows the other side marks suspect are
    named as not judged, never as regressions."""
    a, other = _import(db, "run_a.jsonl", "other_machine.jsonl")
    done = invoke("compare", a, other, "--fail-above", "5", "--json", "--db", db)
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    judged = [row for row in data["rows"] if row["judged"]]
    slower = {row["variant"] for row in judged if row["decision"] == "slower"}
    assert "syscall.getpid" in slower
    regressions = {r["variant"] for r in data["fail_above"]["regressions"]}
    assert regressions == {r["variant"] for r in judged if r["time_ratio"] > 1.05} & slower
    not_judged = {r["variant"]: r["why"] for r in data["fail_above"]["not_judged"]}
    suspect = [r["variant"] for r in data["rows"] if r["status"] == "suspect"]
    assert suspect and all(name in not_judged and name not in regressions for name in suspect)
    # On stderr, one line per regression naming it, then the verdict.
    lines = done.stderr.strip().splitlines()
    named = [line for line in lines if line.startswith("slower by more than 5%: ")]
    assert len(named) == len(regressions)
    assert any("syscall.getpid: B ran" in line for line in named)
    assert lines[-1].startswith("--fail-above 5: FAILED")
    # The largest slowdown sets the threshold that passes.
    largest = max(data["fail_above"]["regressions"], key=lambda r: r["time_ratio"])
    above = f"{(largest['time_ratio'] - 1) * 100 + 1:.0f}"
    assert invoke("compare", a, other, "--fail-above", above, "--db", db).exit_code == 0


def test_fail_above_fails_on_a_significant_slowdown_and_names_it(db, two_runs):
    """Against run B as the reference, run A's cross-CPU process switch took
    1.94× as long (p = 0.031, CI excluding 1): a real, significant slowdown in
    recorded data, judged within-run only (the runs have no repeats and the
    store no history), so the floor applies. It fails 5%, whose needed effect
    is the floor, and passes 50%: the interval's low end (1.23) is below 1.50
    (a regression is the whole interval above 1 + PCT)."""
    a, b = two_runs
    done = invoke("compare", a, b, "--baseline", b, "--fail-above", "5", "--db", db)
    assert done.exit_code == 1, done.stdout
    named = [line for line in done.stdout.splitlines() if line.startswith("slower by more than")]
    assert len(named) == 1
    assert "switch.pipe between=processes cpus=cross policy=batch" in named[0]
    assert "slower than A" in named[0] and "p = 0.031" in named[0]
    assert "judged by within-run samples only (floor 22%)" in named[0]
    assert "FAILED, 1 of" in done.stdout.splitlines()[-1]
    passed = invoke("compare", a, b, "--baseline", b, "--fail-above", "50", "--db", db)
    assert passed.exit_code == 0, passed.stdout


def test_fail_above_with_json_keeps_stdout_json(db, two_runs):
    a, b = two_runs
    done = invoke("compare", a, b, "--baseline", b, "--fail-above", "5%", "--json", "--db", db)
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(COMPARE_SCHEMA).validate(data)
    gate = data["fail_above"]
    assert gate["failed"] and gate["percent"] == 5
    assert [r["variant"] for r in gate["regressions"]] == [
        "switch.pipe between=processes cpus=cross policy=batch"
    ]
    assert gate["regressions"][0]["time_ratio"] > 1.05
    assert "slower by more than 5%" in done.stderr


@pytest.mark.parametrize("bad", ["abc", "-3", "nan", "inf", ""])
def test_a_bad_threshold_is_one_line_and_exit_2(db, two_runs, bad):
    done = CliRunner().invoke(cli, ["compare", *two_runs, "--fail-above", bad, "--db", db])
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
    (run_id,) = _import(db, name)
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


def test_history_json_of_no_store_is_an_empty_list(tmp_path):
    db = str(tmp_path / "none.db")
    done = invoke("history", "--json", "--db", db)
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    _history_validator().validate(data)
    assert data["runs"] == [] and "no store at" in done.stderr
    assert not os.path.exists(db)


# ---- colour --------------------------------------------------------------------------
class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_styling_is_decided_in_one_place():
    assert fmt.styled(_Stream(True), {})
    assert not fmt.styled(_Stream(False), {})
    assert not fmt.styled(_Stream(True), {"NO_COLOR": "1"})
    assert fmt.styled(_Stream(True), {"NO_COLOR": ""})  # the convention: empty is unset
    assert not fmt.styled(_Stream(True), {"TERM": "dumb"})
    assert not fmt.styled(object(), {})


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
