"""Bad input gets one clear line naming the problem and the fix, exit 2;
a placement the machine cannot give is an `unsupported` record, not a crash."""

import shutil

import pytest

from conftest import results, run_engine, run_records


def usage(engine, *args):
    proc = run_engine(engine, *args, status=None, timeout=60)
    lines = proc.stderr.strip().splitlines()
    return proc.returncode, lines, proc.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "no.such.probe"], ["unknown probe 'no.such.probe'", "ctxbench-engine list"]),
        (["run", "--samples", "0", "syscall.getpid"], ["--samples", "out of range", "from 1"]),
        (["run", "--samples", "-3", "syscall.getpid"], ["--samples", "from 1"]),
        (["run", "--samples", "x", "syscall.getpid"], ["--samples", "'x' is not a whole number"]),
        (["run", "--min-time", "soon", "syscall.getpid"], ["--min-time", "seconds"]),
        (["run", "--retries", "11", "syscall.getpid"], ["--retries", "from 0 to 10"]),
        (["run", "--retries", "-1", "syscall.getpid"], ["--retries", "'-1'"]),
        (["run", "--host-reference", "maybe", "syscall.getpid"], ["--host-reference", "on or off"]),
        (["run", "--interleave", "sideways", "syscall.getpid"], ["--interleave", "off or rounds"]),
        (
            ["run", "--interleave", "off", "--rounds", "3", "syscall.getpid"],
            ["--rounds", "--interleave off"],
        ),
        (
            ["run", "--interleave", "rounds", "--rounds", "0", "syscall.getpid"],
            ["--rounds", "from 1"],
        ),
        (["run", "--interleave", "rounds", "--seed", "-1", "syscall.getpid"], ["--seed"]),
        (
            ["run", "--cpus", "sideways", "switch.pipe"],
            ["--cpus", "same, cross, any, smt, llc, remote"],
        ),
        (["run", "--between", "fibers", "switch.pipe"], ["--between", "threads, processes"]),
        (["run", "--param", "colour=red", "switch.pipe"], ["colour", "none of the chosen probes"]),
        (["run", "--preset", "nope"], ["unknown preset"]),
        (["run", "--preset", ""], ["--preset", "empty value"]),
        (["run", "--out", ""], ["--out", "empty value"]),
        (["run", "--cpus", "same,same", "switch.pipe"], ["'same' is given twice"]),
        (["run", "--cpus", "same,", "switch.pipe"], ["--cpus", "empty value"]),
        (["run", "--param", "procs=2,2", "switch.ring"], ["'2' is given twice"]),
        (["run", "--param", "procs=2,02", "switch.ring"], ["2 is given twice"]),
        (["run", "--param", "procs=2", "--param", "procs=4", "switch.ring"], ["given twice"]),
        (["run", "--param", "procs=99999999999999999999", "switch.ring"], ["not allowed"]),
        (["run", "--no-such-flag"], ["--no-such-flag"]),
        (["frobnicate"], ["frobnicate"]),
        (["docs", "nonsense"], ["docs", "probes or probe-names"]),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(engine, args, words):
    code, lines, stdout = usage(engine, *args)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("ctxbench-engine: error: ")
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert stdout == ""


def test_unwritable_out_file_is_refused(engine, tmp_path):
    code, lines, _ = usage(
        engine, "run", "syscall.getpid", "--out", str(tmp_path / "missing" / "x.jsonl")
    )
    assert code == 2 and len(lines) == 1 and "--out" in lines[0]


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset not installed (util-linux)")
def test_cross_on_one_allowed_cpu_is_unsupported_not_a_crash(engine):
    records = run_records(
        engine,
        "--quick",
        "switch.pipe",
        "--cpus",
        "cross,same",
        "--between",
        "processes",
        prefix=["taskset", "-c", "0"],
        timeout=120,
    )
    by_cpus = {r["params"]["cpus"]: r for r in results(records)}
    cross = by_cpus["cross"]
    assert cross["verdict"]["status"] == "unsupported"
    assert cross["verdict"]["reasons"][0]["code"] == "placement_unavailable"
    assert "only CPU 0 is allowed" in cross["verdict"]["reasons"][0]["detail"]
    assert by_cpus["same"]["verdict"]["status"] in (
        "ok",
        "suspect",
    )  # measured (a busy machine may split its samples)
