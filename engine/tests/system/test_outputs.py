"""Every write is checked: a full disk, a file-size limit or a pipe whose
reader went away is one line on stderr and a non-zero exit (3 for an output
that cannot be written, 141 for a closed pipe), never a silent exit 0. Also
what must stop rather than run on: a variant past --timeout (in-process ones
too), an engine whose parent died, a process that may not start threads."""

import json
import os
import pathlib
import pwd
import resource
import signal
import subprocess
import sys
import time

import pytest
from test_faults import become_subreaper, leftover_children

from conftest import as_other_user, parse_records, progress, results, run_engine, run_records

EXIT_OUTPUT = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


def error_lines(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "terminate called" not in stderr and "Traceback" not in stderr, stderr
    return lines


def test_out_file_on_a_full_disk_is_an_error(engine):
    proc = subprocess.run(
        [engine, "run", "syscall.getpid", "--quick", "--json", "--out", "/dev/full"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_OUTPUT, proc.stderr
    (line,) = error_lines(proc.stderr)
    assert "/dev/full" in line and "No space left on device" in line, line


def test_stdout_on_a_full_disk_is_an_error(engine):
    for json_flag in (["--json"], []):  # JSON Lines and the table alike
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                [engine, "run", "syscall.getpid", "--quick", *json_flag],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        assert proc.returncode == EXIT_OUTPUT, proc.stderr
        (line,) = error_lines(proc.stderr)
        assert "stdout" in line and "No space left on device" in line, line


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["env"], ["--help"]])
def test_other_commands_check_stdout_too(engine, command):
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [engine, *command], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert proc.returncode == EXIT_OUTPUT, proc.stderr
    (line,) = error_lines(proc.stderr)
    assert "No space left on device" in line


def test_file_size_limit_keeps_whole_lines(engine, tmp_path):
    out = tmp_path / "run.jsonl"
    limit = 12_000  # the env record and a few results, not the whole family

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [engine, "run", "syscall.*", "--quick", "--json", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_file_size,
    )
    assert proc.returncode == EXIT_OUTPUT, proc.stderr
    (line,) = [ln for ln in error_lines(proc.stderr) if "error" in ln]
    assert str(out) in line and "File too large" in line, line
    text = out.read_text()
    assert len(text) <= limit and text.endswith("\n"), text[-200:]
    records = parse_records(text)  # every line whole: importable as it is
    assert records[0]["kind"] == "env" and records[-1]["kind"] == "result"


def test_closed_pipe_ends_the_run_and_leaves_no_child(engine):
    become_subreaper()
    # Partner processes are alive while a variant runs: they must be reaped.
    proc = subprocess.Popen(
        [
            engine,
            "run",
            "switch.pipe",
            "switch.eventfd",
            "--quick",
            "--between",
            "processes",
            "--json",
            "--progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stdout.readline()
    assert json.loads(first)["kind"] == "env"
    proc.stdout.close()  # the reader goes away, as `| head -1` does
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE, stderr
    lines = error_lines(stderr)
    # Beside the progress lines, the variants as they stood after their rounds (@partial).
    errors = [line for line in lines if not line.startswith(("@progress ", "@partial "))]
    assert len(errors) == 1 and "Broken pipe" in errors[0], errors
    announced = progress(stderr)
    assert announced
    last = announced[-1]
    if "rounds" in last:
        # Interleaved rounds: a variant is written after its last round, so
        # the first write comes late in the run; it stopped there, not ran
        # on: fewer visits were announced than the whole run makes.
        rounds = {p["index"]: p["rounds"] for p in announced}
        whole_run = sum(rounds.values()) + last["total"] - len(rounds)
        assert len(announced) < whole_run, announced
    else:
        assert last["index"] < last["total"]  # it stopped, not ran on
    assert leftover_children() == 0


def test_timeout_holds_for_in_process_probes(engine):
    # One sample of at least 5 s, with 0.2 s allowed: the harness must stop
    # between batches (getpid has no child to kill).
    records = run_records(
        engine,
        "syscall.getpid",
        "--samples",
        "1",
        "--min-time",
        "5",
        "--timeout",
        "0.2",
        timeout=120,
    )
    (result,) = results(records)
    assert result["verdict"]["status"] == "failed", result["verdict"]
    codes = [reason["code"] for reason in result["verdict"]["reasons"]]
    assert codes == ["timeout"], result["verdict"]
    assert result["samples"] == []  # nothing measured past the limit is kept


JAIL = pathlib.Path(__file__).with_name("seccomp_jail.py")
DIE = "--die-with-parent"


def kill_the_parent_mid_run(engine, tmp_path, *jail):
    """Starts the engine (under JAIL, a seccomp_jail.py command, if given)
    from a parent process, SIGKILLs the parent once the engine is running;
    the engine's exit status, records and stderr."""
    become_subreaper()
    out = tmp_path / "run.jsonl"
    # A parent that starts the engine and prints its pid; SIGKILL it mid-run.
    starter = (
        "import subprocess, sys\n"
        "err = open(sys.argv[1], 'w')\n"
        "p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stderr=err)\n"
        "print(p.pid, flush=True)\n"
        "p.wait()\n"
    )
    stderr = tmp_path / "stderr"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            starter,
            str(stderr),
            *jail,
            engine,
            "run",
            "switch.pipe",
            "--between",
            "processes",
            "--cpus",
            "same",
            "--samples",
            "1000",
            "--json",
            "--out",
            str(out),
            "--die-with-parent",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    engine_pid = int(parent.stdout.readline())
    deadline = time.monotonic() + 60
    while not out.exists() or not out.read_text().strip():  # the env record: it is running
        assert time.monotonic() < deadline, "the engine wrote nothing: " + stderr.read_text()
        time.sleep(0.05)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60  # a hang guard: 1000 samples would take far longer
    while True:  # the engine was re-parented to this subreaper
        pid, status = os.waitpid(engine_pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.kill(engine_pid, signal.SIGKILL)
            os.waitpid(engine_pid, 0)
            pytest.fail("the engine outlived its parent")
        time.sleep(0.05)
    return os.waitstatus_to_exitcode(status), parse_records(out.read_text()), stderr.read_text()


def test_engine_dies_with_its_parent(engine, tmp_path):
    code, records, _ = kill_the_parent_mid_run(engine, tmp_path)
    assert code == EXIT_INTERRUPTED
    assert records[-1]["kind"] == "run_end" and records[-1]["interrupted"] is True
    assert leftover_children() == 0


def jail(refused):
    from seccomp_jail import supported

    if not supported():
        pytest.skip("seccomp_jail.py knows no system call numbers for this architecture")
    return [sys.executable, str(JAIL), refused, "--"]


def test_a_refused_prctl_is_not_a_dead_parent(engine):
    """Under an outer seccomp filter that answers prctl(2) with EPERM, the
    engine read the refused PR_SET_PDEATHSIG as 'the process that started the
    engine is gone' and ran nothing (exit 130). It runs, and says once that
    it watches its parent itself."""
    proc = subprocess.run(
        [*jail("errno=prctl"), engine, "run", "syscall.getppid", "--quick", "--json", DIE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    records = parse_records(proc.stdout)
    assert len(results(records)) >= 1
    assert records[-1]["kind"] == "run_end" and records[-1]["interrupted"] is False
    assert "is gone" not in proc.stderr
    notes = [line for line in error_lines(proc.stderr) if "PR_SET_PDEATHSIG" in line]
    assert len(notes) == 1 and "Operation not permitted" in notes[0], proc.stderr


def test_with_prctl_refused_the_engine_still_dies_with_its_parent(engine, tmp_path):
    code, records, stderr = kill_the_parent_mid_run(engine, tmp_path, *jail("errno=prctl"))
    assert code == EXIT_INTERRUPTED, stderr
    assert records[-1]["kind"] == "run_end" and records[-1]["interrupted"] is True
    assert "the process that started the engine is gone" in stderr
    assert leftover_children() == 0


def unused_uid():
    """A uid that no account and no process uses, so that a process limit
    counts the engine's own tasks only."""
    used = {int(p.stat().st_uid) for p in pathlib.Path("/proc").glob("[0-9]*") if p.exists()}
    for uid in range(61000 + os.getpid() % 1000, 65000):
        if uid not in used:
            try:
                pwd.getpwuid(uid)
            except KeyError:
                return uid
    pytest.skip("no unused uid found")


@as_other_user
def test_no_thread_or_process_to_spare_is_a_failed_record_or_one_line(reachable_engine):
    uid = unused_uid()

    def run_with_process_limit(limit):
        def set_limit():
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))

        setpriv = [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
        ]
        return run_engine(
            reachable_engine,
            "run",
            "create.pthread",
            "create.fork",
            "--quick",
            "--json",
            prefix=setpriv,
            status=None,
            timeout=300,
            cwd="/",
            preexec_fn=set_limit,
        )

    # One task: not even the engine's own monitor thread can start.
    alone = run_with_process_limit(1)
    assert alone.returncode == 1, alone.stderr
    (line,) = error_lines(alone.stderr)
    assert "thread" in line and "Resource temporarily unavailable" in line, line
    # Two tasks: the engine runs, each probe that needs one more fails alone.
    two = run_with_process_limit(2)
    assert two.returncode == 0, two.stderr
    error_lines(two.stderr)
    found = {r["probe"]: r["verdict"] for r in results(parse_records(two.stdout))}
    assert set(found) == {"create.pthread", "create.fork"}
    for probe, verdict in found.items():
        assert verdict["status"] == "failed", (probe, verdict)
        assert "Resource temporarily unavailable" in verdict["reasons"][0]["detail"]
