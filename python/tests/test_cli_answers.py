"""show, explain and report as a new user meets them (issue 25), on recorded runs:
a fresh default engine run (fixtures/default_quick.jsonl, 14:02 UTC) and a
RISC-V lab run recorded after it (conftest.LAB_FIXTURE, 14:06 UTC),
so that `latest` is the lab run.

What they establish: `explain switch.pipe` narrows to pipe switches, headline
first, on the latest engine run, and says which run it took; `show` and
`explain` on the lab run give the lab's answer; `latest` says which run it
is; `show --json` of a lab run carries the lab's answer and validates."""

from __future__ import annotations

import json
import re

import pytest

from conftest import LAB_FIXTURE, REPO, fixture_path, invoke, lab_run, real_run

ENGINE_RUN = real_run("default_quick.jsonl").run_id
LAB_RUN = lab_run().run_id


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "answers.db")
    for fixture in (fixture_path("default_quick.jsonl"), LAB_FIXTURE):
        imported = invoke("import", str(fixture), "--db", path)
        assert imported.exit_code == 0, imported.stderr
    return path


def test_explain_a_probe_glob_takes_the_latest_engine_run(db):
    result = invoke("explain", "switch.pipe", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert f"latest engine run: {ENGINE_RUN}" in result.stderr
    assert f"the latest run, {LAB_RUN}, is a RISC-V lab run" in result.stderr
    heads = [line for line in result.stdout.splitlines() if line.endswith(("switch", "]"))]
    heads = [line for line in result.stdout.splitlines() if " per switch" in line]
    assert heads and all(line.startswith("switch.pipe ") for line in heads)
    assert len(heads) == sum(1 for r in real_run("default_quick.jsonl").results
                             if r["probe"] == "switch.pipe")  # fmt: skip
    # headline first: threads on one CPU, across CPUs, processes on one CPU
    assert heads[0].startswith("switch.pipe between=threads cpus=same idle=free policy=normal")
    assert heads[1].startswith("switch.pipe between=threads cpus=cross idle=free policy=normal")
    assert heads[2].startswith("switch.pipe between=processes cpus=same idle=free policy=normal")
    shares = [int(s) for s in re.findall(r"\s(-?\d+)%  ", result.stdout)]
    assert shares and all(0 <= s <= 100 for s in shares)


def test_explain_an_engine_run_prints_the_headline_and_a_count(db):
    result = invoke("explain", ENGINE_RUN, "--db", db)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # a run named by its id: nothing to say
    heads = [line for line in result.stdout.splitlines() if " per switch" in line]
    assert len(heads) == 3
    assert re.search(r"^\d+ more switch figures in this run: `--all` prints them", result.stdout,
                     re.M)  # fmt: skip
    every = invoke("explain", ENGINE_RUN, "--all", "--db", db)
    assert every.stdout.count(" per switch") > 100
    narrowed = invoke("explain", ENGINE_RUN, "switch", "--param", "cpus=cross", "--db", db)
    heads = [line for line in narrowed.stdout.splitlines() if " per switch" in line]
    assert heads and all("cpus=cross" in line for line in heads)


def test_explain_with_no_run_or_probe_of_that_name_names_the_fix(db):
    result = invoke("explain", "nope", "--db", db)
    assert result.exit_code == 2
    assert "no run 'nope'" in result.stderr and "Traceback" not in result.stderr
    bad = invoke("explain", "--param", "cpus", "--db", db)
    assert bad.exit_code == 2 and "NAME=VALUE" in bad.stderr


def test_show_latest_is_the_lab_run_and_gives_its_answer(db):
    result = invoke("show", "latest", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert f"latest: RISC-V lab run {LAB_RUN}" in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"run {LAB_RUN} (complete)")
    assert "The answer (getpid, full handler):" in lines
    answer = lines[lines.index("The answer (getpid, full handler):") + 1]
    assert answer == (
        "- spike: getpid's ecall round trip is 107 instructions: save/restore 61 (57%), "
        "dispatch 38, entry/exit 6, call logic 2."
    )
    assert "no figure of the cost ladder" not in result.stdout


def test_explain_latest_on_the_lab_run_splits_every_call(db):
    result = invoke("explain", "--db", db)
    assert result.exit_code == 0, result.stderr
    assert f"latest: RISC-V lab run {LAB_RUN}" in result.stderr
    assert "this run holds no switch or fork figure" not in result.stdout
    heads = [line for line in result.stdout.splitlines() if line.startswith("riscv.ecall.")]
    assert len(heads) == 4 * 5  # every call on every simulator
    write = invoke("explain", "riscv.ecall.write", "--db", db)
    heads = [line for line in write.stdout.splitlines() if line.startswith("riscv.ecall.")]
    assert len(heads) == 5 and all(h.startswith("riscv.ecall.write on ") for h in heads)


def test_show_json_of_a_lab_run_carries_its_answer(db):
    jsonschema = pytest.importorskip("jsonschema")
    result = invoke("show", LAB_RUN, "--json", "--db", db)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    schema = json.loads((REPO / "schema" / "show.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    lab = data["lab"]
    assert lab["answer"][0].startswith("spike: getpid's ecall round trip is 107 instructions")
    write = lab["targets"]["rvsim-basic"]["calls"]["write"]
    assert sum(write["parts"].values()) == pytest.approx(write["total"])
    engine = json.loads(invoke("show", ENGINE_RUN, "--json", "--db", db).stdout)
    assert "lab" not in engine
