"""Never clobber, never lose (issue 31): a --db that is not a store file,
an engine killed by a signal, text that would spoof a page, a URL that does
not parse, recovery commands pasted into a shell. Each as a real process
with real files and real signals.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    REPO,
    built_engine,
    ctxbench,
    engine_calls,
    error_line,
    fixture_path,
    real_run,
    stored_runs,
    with_run_id,
)
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem
from ctxbench.store.db import Store

SOURCE = Path(__file__).parents[1] / "src"
JAIL = REPO / "engine" / "tests" / "system" / "seccomp_jail.py"


def real_engine_env(tmp_path: Path) -> dict[str, str]:
    engine = built_engine()
    return dict(
        os.environ,
        PYTHONPATH=str(SOURCE),
        CTXBENCH_ENGINE=str(engine),
        CTXBENCH_DB=str(tmp_path / "store.db"),
    )


# ---- 7: --db that is not a regular file -------------------------------------------------------
READERS = [["history"], ["show", "latest"], ["export", "latest"], ["report", "latest", "-o", "-"]]
WRITERS = [["import", str(fixture_path("run_a.jsonl"))], ["run", "syscall.*"]]


@pytest.mark.parametrize("command", READERS + WRITERS, ids=lambda c: c[0])
@pytest.mark.parametrize("kind", ["fifo", "/dev/null", "directory"])
def test_a_db_that_is_not_a_regular_file_is_one_line_and_exit_2(env, tmp_path, command, kind):
    """A FIFO hung every command for ever (the store's first bytes were read
    from it); /dev/null gave 'disk I/O error', exit 1, even to `history`."""
    if kind == "fifo":
        db = tmp_path / "f.db"
        os.mkfifo(db)
    elif kind == "directory":
        db = tmp_path / "d.db"
        db.mkdir()
    else:
        db = Path(kind)
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", *command, "--db", str(db)],
        capture_output=True,
        env=env,
        timeout=60,  # a hang guard: the FIFO is never opened
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = error_line(done)
    assert str(db) in line and "--db" in line
    assert {"fifo": "FIFO", "/dev/null": "character device", "directory": "directory"}[kind] in line


# ---- 8: an engine killed by a signal ----------------------------------------------------------
@pytest.mark.measures
def test_an_engine_killed_by_sigsys_is_named(tmp_path):
    """Under a seccomp filter that kills on getppid(2), the engine dies by
    SIGSYS as it starts: the error said 'exit -31'; it names the signal and
    its usual cause, and nothing is stored."""
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("seccomp_jail.py knows no system call numbers for this architecture")
    environ = real_engine_env(tmp_path)
    wrapper = tmp_path / "jailed-engine"
    wrapper.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "{JAIL}" kill=getppid -- '
        f'"{environ["CTXBENCH_ENGINE"]}" "$@"\n'
    )
    wrapper.chmod(0o755)
    done = ctxbench(
        dict(environ, CTXBENCH_ENGINE=str(wrapper)), "run", "syscall.getppid", "--quick"
    )
    assert done.returncode == 1
    line = error_line(done)
    assert "killed by SIGSYS (signal 31: a seccomp filter" in line, line
    assert "exit -" not in line
    assert not Path(environ["CTXBENCH_DB"]).exists() or stored_runs(environ) == []


def engine_child(process: subprocess.Popen) -> int:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(process.pid):
            return int(stat.parent.name)
    raise AssertionError("the engine is not running")


def run_and_kill_the_engine(environ, after_lines: int, *selection: str):
    """`ctxbench run SELECTION` with the real engine; SIGKILL the engine once
    ctxbench printed AFTER_LINES progress lines. Its result and stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxbench", "run", *selection],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environ,
    )
    seen = []
    for line in process.stderr:
        seen.append(line)
        if sum(1 for each in seen if re.match(r"\[(visit \d+|\d+/\d+)\]", each)) >= after_lines:
            break
    os.kill(engine_child(process), signal.SIGKILL)
    _, rest = process.communicate(timeout=120)
    return process, "".join(seen) + rest


def one_error(stderr: str) -> str:
    """As test_reliability.error_line, for text already read."""
    assert "Traceback" not in stderr, stderr
    (line,) = [line for line in stderr.splitlines() if "error:" in line]
    assert line.startswith("ctxbench: error: ") and "unexpected" not in line, line
    return line


# Two variants, four rounds of 100 samples of at least 20 ms: a run of some
# 16 s, long enough that the kill falls inside it.
SELECTION = ("syscall.getppid", "syscall.getpid", "--samples", "400", "--rounds", "4")
SELECTION += ("--min-time", "0.02")


@pytest.mark.measures
def test_a_hard_kill_in_rounds_keeps_the_rounds_taken(tmp_path):
    """Interleaved rounds (the default) wrote a variant after its last round,
    so a SIGKILL of the engine lost every sample taken, and the message said
    'exit -9'. The engine streams each variant as it stands after a round
    (@partial); ctxbench stores those, marked, as SIGINT would have."""
    environ = real_engine_env(tmp_path)
    # Two variants, four rounds: the fifth progress line is round 3 begun,
    # so each variant has two rounds taken.
    process, stderr = run_and_kill_the_engine(environ, 5, *SELECTION)
    assert process.returncode == 1, stderr
    line = one_error(stderr)
    assert "killed by SIGKILL (signal 9" in line and "stored as a partial run" in line, stderr
    with Store.open(Path(environ["CTXBENCH_DB"])) as store:
        stored = store.load("latest")
    assert stored.info.interrupted
    assert {r["probe"] for r in stored.records.results} == {"syscall.getppid", "syscall.getpid"}
    for result in stored.records.results:
        assert any(
            note.startswith("the run ended after 2 of this variant's 4 rounds")
            for note in result["notes"]
        )
        assert 0 < len(result["samples"]) < 400


@pytest.mark.measures
def test_a_run_killed_before_its_first_result_is_not_stored(tmp_path):
    """It was stored with 0 results and became `latest`."""
    environ = real_engine_env(tmp_path)
    assert ctxbench(environ, "import", str(fixture_path("run_b.jsonl"))).returncode == 0
    process, stderr = run_and_kill_the_engine(environ, 1, *SELECTION)
    assert process.returncode == 1, stderr
    line = one_error(stderr)
    assert "killed by SIGKILL" in line and "nothing stored" in line, stderr
    assert stored_runs(environ) == [real_run("run_b.jsonl").run_id]


# ---- 10: the report shows text as the terminal does -------------------------------------------
SPOOF = "host\x1b[2J\x1b]0;owned\x07\u202etxt.exe\u2066"


def test_the_report_replaces_control_and_bidi_characters(env, tmp_path):
    """An imported hostname with ESC and U+202E (right-to-left override)
    reached the page raw: spoofed text in a browser, escapes on `cat`."""
    run = with_run_id(real_run("run_a.jsonl"), "spoof-run-00000001")
    records = copy.deepcopy(run.all())
    records[0]["hostname"] = SPOOF
    for record in records[1:-1]:
        record["params"] = dict(record["params"], note=SPOOF)
    assert all(record_problem(record) is None for record in records)
    spoofed = tmp_path / "spoof.jsonl"
    spoofed.write_text("".join(json.dumps(r) + "\n" for r in group_run(records).all()))
    assert ctxbench(env, "import", str(spoofed)).returncode == 0
    done = ctxbench(env, "report", "latest", "-o", "-")
    assert done.returncode == 0, done.stderr
    page = done.stdout.decode("utf-8")
    assert "<html" in page and not (tmp_path / "-").exists()
    for character in ("\x1b", "\x07", "\u202e", "\u2066"):
        assert character not in page
        escaped = f"\\u{ord(character):04x}"
        assert escaped not in page.lower(), escaped  # nor as JSON escapes for the plots
    assert "host\ufffd[2J" in page


# ---- 11: small ones ---------------------------------------------------------------------------
def test_a_url_that_does_not_parse_is_one_line_and_keeps_its_password(env):
    done = ctxbench(env, "history", "--db", "postgresql://u:secret@[bad")
    assert done.returncode == 2
    line = error_line(done)
    assert "not a valid URL" in line and "secret" not in line


@pytest.mark.parametrize("command", ["list", "env"])
def test_commands_that_read_no_store_say_so_to_db(env, command):
    done = ctxbench(env, command, "--db", "x.db")
    assert done.returncode == 2
    assert "reads no store" in error_line(done)


def test_report_to_stdout(env, tmp_path):
    assert ctxbench(env, "import", str(fixture_path("run_a.jsonl"))).returncode == 0
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", "report", "latest", "-o", "-"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"<!DOCTYPE html>") or b"<html" in done.stdout[:200]
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("option", ["--json", "--report"])
def test_run_side_outputs_refuse_stdout(env, option):
    done = ctxbench(env, "run", option, "-")
    assert done.returncode == 2
    assert "give a file name" in error_line(done)


def test_a_printed_recovery_command_survives_a_shell(env, tmp_path):
    """A store path with a space, '&' and a quote: the import command the
    error prints, pasted into a shell, is the right command (it was not
    quoted: '&' sent half of it to the background)."""
    directory = tmp_path / "team's runs & more"
    directory.mkdir()
    db = directory / "store.db"
    env = dict(env, CTXBENCH_DB=str(db))
    run_a = real_run("run_a.jsonl").run_id
    assert (
        ctxbench(env, "import", str(fixture_path("run_a.jsonl")), "--db", str(db)).returncode == 0
    )
    # The store already holds the run's id: it refuses the run, which stays in the spool.
    done = ctxbench(dict(env, FAKE_ENGINE_RUN_ID=run_a), "run", "--db", str(db))
    assert done.returncode != 0
    command = re.search(r"`(ctxbench import [^`]*)`", error_line(done))
    assert command is not None, error_line(done)
    words = shlex.split(command.group(1))
    (spool,) = directory.glob(".ctxbench-unstored-*.jsonl")
    assert words == ["ctxbench", "import", str(spool), "--db", str(db)]
    parsed = subprocess.run(
        ["sh", "-c", f'printf "%s\\n" {command.group(1)[len("ctxbench ") :]}'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert parsed.stdout.splitlines() == words[1:]


def test_a_printed_command_names_a_postgresql_store_without_its_password():
    """Messages mask the password (u:***@), which no command accepts; a
    command printed for the user drops it, libpq takes it from PGPASSWORD
    or ~/.pgpass."""
    from ctxbench.store.dialects import PostgreSQLDialect

    dialect = PostgreSQLDialect("postgresql://u:secret@db.example:5433/runs", 1.0)
    assert dialect.location == "postgresql://u:***@db.example:5433/runs"
    assert dialect.command_target == "postgresql://u@db.example:5433/runs"


# ---- import: several files, oversized files; export latest (issues 37, 40) ----------------------
def test_import_of_several_files_stores_each_whole_and_names_the_one_that_failed(env, tmp_path):
    """One run per file, each whole or not at all: the good files are stored,
    the bad one is named with its reason, and the exit is its (2). The old
    main took one file only (a usage error)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "env"}\n')
    files = [fixture_path("run_a.jsonl"), bad, fixture_path("run_b.jsonl")]
    done = ctxbench(env, "import", *map(str, files))
    assert done.returncode == 2, done.stderr
    line = error_line(done)
    assert "1 of 3 files were not imported" in line and str(bad) in line
    stderr = done.stderr.decode()
    assert f"{bad} not imported: " in stderr
    assert stderr.count("imported run ") == 2
    assert stored_runs(env) == [real_run("run_a.jsonl").run_id, real_run("run_b.jsonl").run_id]


def test_import_refuses_an_oversized_file_by_its_size(env, tmp_path):
    """A file over 64 MiB is refused by its size, before a line is read (the
    old main validated 70 MB of short lines for 115 s before its cap)."""
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(65 * 2**20)  # sparse: no time spent writing it
    done = ctxbench(env, "import", str(big))
    assert done.returncode == 2, done.stderr
    assert "65 MiB, larger than 64 MiB" in error_line(done)


def test_export_latest_names_the_run_it_took_on_stderr(env, tmp_path):
    """`export latest` says which run `latest` was, on stderr (stdout is the
    export; a file of it is unchanged by the note)."""
    for name in ("run_a.jsonl", "run_b.jsonl"):
        assert ctxbench(env, "import", str(fixture_path(name))).returncode == 0
    done = ctxbench(env, "export", "latest")
    assert done.returncode == 0, done.stderr
    assert f"latest: engine run {real_run('run_b.jsonl').run_id}" in done.stderr.decode()
    assert done.stdout.decode() == fixture_path("run_b.jsonl").read_text()


# ---- option values: finite numbers, probe globs, --host (issue 37.4) -----------------------------
NON_FINITE = {
    "compare --min-effect nan": ["compare", "RUN_A", "RUN_B", "--min-effect", "nan"],
    "compare --alpha nan": ["compare", "RUN_A", "RUN_B", "--alpha", "nan"],
    "compare --min-effect inf": ["compare", "RUN_A", "RUN_B", "--min-effect", "inf"],
    "history --changes --min-effect nan": ["history", "--changes", "--min-effect", "nan"],
    "history --changes --json --min-effect nan": [
        "history",
        "--changes",
        "--json",
        "--min-effect",
        "NaN",
    ],
    "run --min-time nan": ["run", "--min-time", "nan"],
    "run --min-time inf": ["run", "--min-time", "inf"],
    "run --timeout nan": ["run", "--timeout", "nan"],
    "run --timeout 1e999": ["run", "--timeout", "1e999"],
}


@pytest.mark.parametrize("command", NON_FINITE.values(), ids=NON_FINITE.keys())
def test_a_non_finite_number_is_refused_as_an_option_value(env, two_runs, command):
    """The old main took NaN: `compare --min-effect nan` said 'no row differs
    meaningfully' (exit 0) on runs 8.55x apart, `history --changes` hid a
    shift; now one line, exit 2, before anything runs."""
    args = [two_runs[0] if a == "RUN_A" else two_runs[1] if a == "RUN_B" else a for a in command]
    done = ctxbench(env, *args)
    assert done.returncode == 2, done.stderr
    assert "not a finite number" in error_line(done) or "not in the range" in error_line(done)
    assert engine_calls(env) == []  # nothing measured


def test_a_probe_glob_that_matches_nothing_is_a_usage_error_naming_the_probes(env, db, two_runs):
    """The old main passed silently (exit 0, no change found)."""
    done = ctxbench(env, "history", "--changes", "--probe", "sycall.*", "--db", db)
    assert done.returncode == 2, done.stderr
    line = error_line(done)
    assert "'sycall.*' matches no probe" in line and "syscall.getpid" in line


@pytest.mark.parametrize("host", ["@", "", "-oProxyCommand=touch x", "user@", "@host", "a b"])
def test_a_host_ssh_would_misread_is_a_usage_error(env, host):
    """The old main handed `--host @` or `--host ''` to ssh: the tail of its
    usage text or 'Could not resolve hostname', exit 1."""
    done = ctxbench(env, "run", "--host", host)
    assert done.returncode == 2, done.stderr
    line = error_line(done)
    assert "--host" in line and "ssh" not in done.stderr.decode().split("error:")[0]
    assert engine_calls(env) == []
