"""The env record's sandbox block, from the real engine: what sits on every
system call (a seccomp filter, a tracer, syscall auditing)."""

import shutil
import subprocess

import pytest

from conftest import parse_records


def env_of(command):
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [env] = parse_records(proc.stdout)
    return env


def test_a_plain_engine_runs_unfiltered_and_untraced(engine):
    sandbox = env_of([engine, "env", "--json"])["sandbox"]
    assert sandbox["seccomp"]["mode"] == "disabled"
    assert sandbox["seccomp"]["filters"] == 0
    assert sandbox["traced"] is False and sandbox["tracer_pid"] == 0
    audit = sandbox["audit"]
    assert audit["state"] in ("enabled", "disabled", "locked", "unknown")
    if audit["state"] == "unknown":
        assert audit["why"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_an_engine_under_strace_says_it_is_traced(engine):
    env = env_of(["strace", "-f", "-qq", "-o", "/dev/null", engine, "env", "--json"])
    assert env["sandbox"]["traced"] is True
    assert env["sandbox"]["tracer_pid"] > 0
    assert any("traced by process" in note for note in env["notes"])
