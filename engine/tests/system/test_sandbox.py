"""The env record's sandbox block, from the real engine: what sits on every
system call (a seccomp filter, a tracer, syscall auditing)."""

import pathlib
import shutil
import subprocess

import pytest

from conftest import parse_records, results, run_engine, run_records


def env_of(engine, prefix=()):
    [env] = parse_records(run_engine(engine, "env", "--json", prefix=prefix, timeout=120).stdout)
    return env


def test_a_plain_engine_runs_unfiltered_and_untraced(engine):
    sandbox = env_of(engine)["sandbox"]
    assert sandbox["seccomp"]["mode"] == "disabled"
    assert sandbox["seccomp"]["filters"] == 0
    assert sandbox["traced"] is False and sandbox["tracer_pid"] == 0
    audit = sandbox["audit"]
    assert audit["state"] in ("enabled", "disabled", "locked", "unknown")
    if audit["state"] == "unknown":
        assert audit["why"]
    tracepoints = sandbox["tracepoints"]
    if tracepoints["enabled"] is None:
        assert tracepoints["why"] and tracepoints["recording"] is None
    else:
        assert tracepoints["source"] and isinstance(tracepoints["recording"], bool)


def test_scheduler_tracepoints_recording_in_an_instance_are_counted(engine, tmp_path):
    tracefs = pathlib.Path("/sys/kernel/tracing")
    if not (tracefs / "set_event").exists():
        pytest.skip(
            "tracefs is not mounted at /sys/kernel/tracing (as root: mount -t tracefs nodev it)"
        )
    before = env_of(engine)["sandbox"]["tracepoints"]
    instance = tracefs / "instances" / f"ctxbench-test-{tmp_path.name[-12:]}"
    try:
        instance.mkdir()
    except PermissionError:
        pytest.skip("tracefs instances need root")
    try:
        (instance / "set_event").write_text("sched:sched_switch\nsched:sched_wakeup\n")
        (instance / "tracing_on").write_text("1\n")
        env = env_of(engine)
    finally:
        (instance / "tracing_on").write_text("0\n")
        (instance / "set_event").write_text("\n")
        instance.rmdir()
    during = env["sandbox"]["tracepoints"]
    assert during["enabled"] == before["enabled"] + 2
    assert during["recording"] is True
    assert any("tracepoint event(s) are enabled" in note for note in env["notes"])


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_an_engine_under_strace_says_it_is_traced(engine):
    env = env_of(engine, prefix=["strace", "-f", "-qq", "-o", "/dev/null"])
    assert env["sandbox"]["traced"] is True
    assert env["sandbox"]["tracer_pid"] > 0
    assert any("traced by process" in note for note in env["notes"])


def seccomp_exec(engine):
    path = pathlib.Path(engine).with_name("ctxbench-seccomp-exec")
    if not path.exists():
        pytest.fail(f"{path} was not built beside the engine")
    return str(path)


@pytest.mark.parametrize("mode", ["allow", "profile"])
def test_an_engine_run_under_a_filter_says_so(engine, mode):
    wrapper = seccomp_exec(engine)
    proc = run_engine(engine, "env", "--json", prefix=[wrapper, mode, "--"], status=None)
    if proc.returncode == 1 and ("without libseccomp" in proc.stderr or "refused" in proc.stderr):
        pytest.skip(proc.stderr.strip())  # no library, or an outer sandbox forbids filters
    assert proc.returncode == 0, proc.stderr
    [env] = parse_records(proc.stdout)
    assert env["sandbox"]["seccomp"]["mode"] == "filter"
    assert env["sandbox"]["seccomp"]["filters"] >= 1
    assert any("every system call here pays the filter" in note for note in env["notes"])


def test_the_wrapper_refuses_bad_usage_in_one_line(engine):
    wrapper = seccomp_exec(engine)
    for args in (["sometimes", "--", "true"], ["allow", "true"], ["allow", "--"]):
        proc = subprocess.run([wrapper, *args], capture_output=True, text=True)
        assert proc.returncode == 2, args
        assert proc.stderr.count("\n") == 1 and "usage:" in proc.stderr


def test_the_axis_measures_each_filter_and_says_what_was_installed(engine):
    records = run_records(
        engine,
        "syscall.getppid",
        "--quick",
        "--samples",
        "5",
        "--param",
        "seccomp=none,allow,profile",
    )
    records = {r["params"]["seccomp"]: r for r in results(records)}
    assert set(records) == {"none", "allow", "profile"}
    assert "seccomp_instructions" not in records["none"]["derived"]
    assert records["allow"]["derived"]["seccomp_instructions"] == 2
    assert records["allow"]["derived"]["seccomp_calls_cached"] == 0
    if records["allow"]["verdict"]["status"] == "unsupported":
        # An outer sandbox forbids filters here: both say so, neither is measured.
        for mode in ("allow", "profile"):
            assert records[mode]["verdict"]["reasons"][0]["code"] in (
                "permission_denied",
                "built_without",
            )
        return
    profile = records["profile"]
    if profile["verdict"]["status"] == "unsupported":
        assert profile["verdict"]["reasons"][0]["code"] == "built_without"
    else:
        assert profile["derived"]["seccomp_rules"] > 200
        assert profile["derived"]["seccomp_calls_cached"] == 1
