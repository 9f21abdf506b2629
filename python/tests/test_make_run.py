"""`make run` answers every seed question (issue 40.7: the RISC-V trap lab's
ecall round trip needed the simulators that only `make test` installed): its
recipe installs the lab's tools before the package is built, runs the lab,
writes the report of the default suite and the lab, and ends with the seed
questions' recap; the recap, on recorded runs, finds all six answers."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, fixture_path, invoke

REFERENCE = REPO / "docs" / "data" / "reference-run.jsonl"


def test_make_run_installs_and_runs_the_lab_and_ends_with_every_answer():
    # Under `make test` this runs inside make: a nested make prints its
    # "Entering/Leaving directory" lines unless told not to, and inherits the
    # parent's flags; the recipe is read as a user's `make run` would be.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "run"],
        cwd=REPO, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    deps = next(i for i, line in enumerate(lines) if "deps.sh riscv" in line)
    install = next(i for i, line in enumerate(lines) if "pip install -q --no-build" in line)
    assert deps < install  # the cross compiler is there when the package is built
    lab = next(i for i, line in enumerate(lines) if "ctxbench riscv --label riscv-lab" in line)
    report = next(i for i, line in enumerate(lines) if "report full riscv-lab" in line)
    recap = next(i for i, line in enumerate(lines) if "--recap full riscv-lab" in line)
    assert install < lab < report < recap
    assert all(line.startswith("echo") for line in lines[recap + 1 :])


def test_the_recap_finds_every_seed_answer_in_the_two_runs(tmp_path):
    db = str(tmp_path / "recap.db")
    invoke("import", str(REFERENCE), "--label", "full", "--db", db)
    lab = fixture_path("riscv") / "lab_run.jsonl"
    invoke("import", str(lab), "--label", "riscv-lab", "--db", db)
    env = dict(os.environ, CTXBENCH_DB=db, PYTHONPATH=str(REPO / "python" / "src"))
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "seed_questions.py"),
         "--ctxbench", f"{sys.executable} -m ctxbench", "--recap", "full", "riscv-lab"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("6 seed questions, 6 answered above")
    assert "getpid's ecall round trip is" in done.stdout
    assert "Fibers, coroutines or threads:" in done.stdout


def test_the_report_of_the_default_suite_and_the_lab_has_every_answer_and_no_empty_comparison(
    tmp_path,
):
    """`make run`'s report: a default run and a lab run share no variant, so
    there is no comparison section (it was 272 rows of 'not in this run');
    the four answers and the lab's ecall round trip are on the page."""
    from ctxbench.records.reading import read_run_file
    from ctxbench.store.db import Store
    from ctxbench.views.report import render

    with Store.open(str(tmp_path / "report.db")) as store:
        runs = [
            store.load(store.add_run(read_run_file(path), origin="import"))
            for path in (REFERENCE, fixture_path("riscv") / "lab_run.jsonl")
        ]
        html = render(runs)
        assert 'id="comparison"' not in html
        assert "Fibers, coroutines or threads" in html and "round trips per second" in html
        assert "getpid&#39;s ecall round trip is" in html or "getpid's ecall round trip is" in html
        assert 'id="comparison"' in render([runs[0], runs[0]])  # a shared variant: compared
