"""`ctxbench-engine profile`: its counts on programs whose events are known
(ctxbench-profile-known, built beside the engine), its record against
schema/profile.schema.json, and its answers to bad input, a killed program
and an interrupted profile."""

import json
import os
import pathlib
import signal
import subprocess
import time

import jsonschema
import pytest

from conftest import REPO, as_other_user, run_engine

PROFILE_SCHEMA = json.loads((REPO / "schema" / "profile.schema.json").read_text())
PROFILE_VALIDATOR = jsonschema.Draft202012Validator(PROFILE_SCHEMA)
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2


def parse_profile(text):
    record = json.loads(text)
    errors = sorted(PROFILE_VALIDATOR.iter_errors(record), key=lambda e: list(e.path))
    assert not errors, f"{list(errors[0].path)}: {errors[0].message}"
    return record


@pytest.fixture(scope="module")
def known(engine):
    path = pathlib.Path(engine).parent / "ctxbench-profile-known"
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} not built: build the engine with 'make engine'")
    return str(path)


def profile(engine, *command, status=0):
    proc = run_engine(engine, "profile", "--", *command, status=status, timeout=120)
    return parse_profile(proc.stdout) if status == 0 else proc


def within(measured, expected, share=0.02):
    return abs(measured - expected) <= share * expected


def counted_beyond_start(engine, known, *mode):
    """The counts of `known MODE` less those of `known none` (a C program's
    start and exit): what the mode itself did."""
    base = profile(engine, known, "none")["counts"]
    record = profile(engine, known, *mode)
    counts = record["counts"]
    return record, {k: counts[k] - (base[k] or 0) for k in counts if counts[k] is not None}


@pytest.mark.measures
def test_system_calls_are_counted_by_call(engine, known):
    calls = 50000
    record, extra = counted_beyond_start(engine, known, "getppid", str(calls))
    assert within(extra["syscalls"], calls), extra
    by_call = {c["name"]: c["count"] for c in record["syscalls_by_call"]}
    assert within(by_call["getppid"], calls), by_call
    assert record["sources"]["syscalls"] == "perf_counter"


@pytest.mark.measures
def test_fresh_pages_are_minor_faults(engine, known):
    pages = 20000
    _, extra = counted_beyond_start(engine, known, "pages", str(pages))
    assert within(extra["minor_faults"], pages), extra
    assert within(extra["page_faults"], pages), extra
    assert extra["major_faults"] == 0


@pytest.mark.measures
def test_threads_created_are_counted(engine, known):
    threads = 200
    _, extra = counted_beyond_start(engine, known, "threads", str(threads))
    assert within(extra["creations"], threads), extra
    assert within(extra["threads_created"], threads), extra
    assert extra["processes_created"] == 0


@pytest.mark.measures
@pytest.mark.parametrize("between", ["thread", "process"])
def test_same_cpu_hand_offs_are_switches(engine, known, between):
    """On one CPU each hand-off is one switch: the woken partner runs at once
    (it preempts the waker: involuntary) or once the waker sleeps (voluntary)."""
    round_trips = 5000
    record, extra = counted_beyond_start(
        engine, known, f"{between}-pingpong", str(round_trips), "same"
    )
    counts = record["counts"]
    # Every hand-off is a switch; a preemption by other work on the machine
    # adds one (the load's, not the program's), so the hand-offs are a floor.
    assert extra["context_switches"] >= 0.98 * 2 * round_trips, extra
    # Other work can add preemptions, never sleeps: a task sleeps at most
    # once per message it waits for (two per round trip, both sides), plus
    # the start's and the end's, however loaded the machine.
    assert counts["voluntary_switches"] <= 1.02 * 2 * round_trips + 10, counts
    split = counts["voluntary_switches"] + counts["involuntary_switches"]
    assert within(split, counts["context_switches"]), counts
    # Every sleep ends in a wake-up, and with both pinned to one CPU the
    # hand-offs' wake-ups are same-CPU (the start's and the end's may not be).
    # (Every CPU's events start before the command is let go: started after,
    # a loaded engine missed the first milliseconds' wake-ups, up to 10 %.)
    assert within(counts["wakeups"], counts["voluntary_switches"]), counts
    assert counts["wakeups_cross_cpu"] <= 0.02 * counts["wakeups"], counts
    assert extra["creations"] == 1
    assert extra["threads_created" if between == "thread" else "processes_created"] == 1


@pytest.mark.measures
@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
@pytest.mark.parametrize("between", ["thread", "process"])
def test_cross_cpu_hand_offs_are_cross_cpu_wake_ups(engine, known, between):
    round_trips = 3000
    record = profile(engine, known, f"{between}-pingpong", str(round_trips), "cross")
    counts = record["counts"]
    # Each side sleeps for its partner's answer, and each wake-up comes from
    # the other CPU. (How often a side finds the answer already there, and so
    # does not sleep, is the load's: the count of sleeps is not asserted.)
    split = counts["voluntary_switches"] + counts["involuntary_switches"]
    assert within(split, counts["context_switches"]), counts
    assert within(counts["wakeups"], counts["voluntary_switches"], 0.05), counts
    assert counts["wakeups_cross_cpu"] >= 0.98 * counts["wakeups"], counts
    assert counts["voluntary_switches"] <= 2 * round_trips * 1.02, counts
    assert record["samples"]["lost"] == 0


@pytest.mark.measures
@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
@pytest.mark.parametrize("cpus", ["same", "cross"])
def test_trace_gives_each_sleep_its_wake_up_latency(engine, known, cpus):
    proc = run_engine(
        engine, "profile", "--trace", "--", known, "thread-pingpong", "3000", cpus, timeout=120
    )
    record = parse_profile(proc.stdout)
    counts, latency = record["counts"], record["wakeup_latency"]
    assert record["samples"]["lost"] == 0
    # Every wake-up recorded of a sleeping thread ends in the switch that
    # runs it again: one latency each, in its group. (The wake-ups against the
    # sleeps: test_same_cpu_hand_offs_are_switches.)
    every = latency["all"]
    assert counts["wakeups"] - 3 <= every["n"] <= counts["wakeups"], (counts, every)
    groups = [latency[g]["n"] for g in ("same_cpu", "cross_cpu") if latency[g]]
    assert sum(groups) == every["n"]
    assert latency["cross_cpu" if cpus == "cross" else "same_cpu"]["n"] >= 0.98 * every["n"]
    found = counts["wakeups_idle_target"] + counts["wakeups_busy_target"]
    assert counts["wakeups"] - 2 <= found <= counts["wakeups"], counts
    if cpus == "same":
        # A hand-off's waker runs on the target CPU, so it never finds it idle.
        # One wake-up may come from the other CPU: the program's own pin() at
        # its start, when it began on that CPU (the migration's completion wakes
        # it onto the pinned CPU, which may be idle). Started already on it
        # (the engine under `taskset -c 0`) there was none in 12 of 12 runs;
        # unpinned, 7 of 12 runs had that one cross-CPU wake-up, 1 of them to
        # an idle CPU. So an idle target is only ever that cross-CPU wake-up.
        assert counts["wakeups_idle_target"] <= counts["wakeups_cross_cpu"] <= 1, counts
    for group in filter(None, latency.values()):
        assert group["p10_us"] <= group["median_us"] <= group["p90_us"] <= group["max_us"]
    assert not any("not counted" in note for note in record["notes"]), record["notes"]


@as_other_user
def test_trace_refused_says_so_once(reachable_engine):
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"]
    proc = run_engine(reachable_engine, "profile", "--trace", "--", "true", prefix=setpriv, cwd="/")
    record = parse_profile(proc.stdout)
    if record["wakeup_latency"] is not None:
        pytest.skip("this machine lets an unprivileged user record every CPU's switches")
    about = [n for n in record["notes"] if "latenc" in n]
    assert len(about) == 1 and "not counted" in about[0], record["notes"]


def test_without_trace_the_in_place_fields_are_null(engine, known):
    record = profile(engine, known, "none")
    assert record["wakeup_latency"] is None
    assert record["counts"]["wakeups_idle_target"] is None
    assert any("--trace" in note for note in record["notes"])


def test_the_record_says_what_ran_and_how_it_ended(engine, known):
    record = profile(engine, known, "none")
    assert record["kind"] == "profile"
    assert record["target"]["command"] == [known, "none"]
    assert record["ended"] == "exited" and record["exit_status"] == 0
    assert record["env"]["kind"] == "env"
    assert record["wall_s"] > 0
    assert record["cpu_user_s"] is not None


def test_a_childs_life_before_its_exec_is_listed_apart(engine, known):
    """`sh -c 'KNOWN none; exit 0'`: the shell forks a child that execs
    KNOWN; what that child did between its fork and its exec is its `execs`
    entry, and the shell's own exec (the profile's start) is none."""
    record = profile(engine, "/bin/sh", "-c", f"{known} none; exit 0")
    (child,) = record["execs"]
    assert child["tid"] != record["target"]["pid"]
    assert child["syscalls"] >= 1  # the execve that ends it, at least
    assert record["counts"]["processes_created"] == 1


def test_a_command_that_does_not_exist_is_one_line(engine):
    proc = run_engine(engine, "profile", "--", "no-such-program-ctxbench", status=2)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-program-ctxbench" in lines[0], proc.stderr
    assert "No such file" in lines[0]


def test_a_pid_that_is_gone_is_one_line(engine):
    child = subprocess.Popen(["true"])
    child.wait()
    proc = run_engine(engine, "profile", "--pid", str(child.pid), "--duration", "1", status=2)
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "no such process" in proc.stderr


@pytest.mark.parametrize(
    "args,says",
    [
        ((), "nothing to profile"),
        (("--pid", "1"), "needs --duration"),
        (("--duration", "1", "--", "true"), "goes with --pid"),
        (("--pid", "1", "--duration", "1", "--", "true"), "not both"),
    ],
)
def test_usage_mistakes_are_one_line(engine, args, says):
    proc = run_engine(engine, "profile", *args, status=2)
    assert len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr, proc.stderr


def test_a_program_killed_keeps_what_was_counted(engine, known):
    """The program dies of a signal mid-profile: the record says so, and
    holds what was counted up to then."""
    proc = run_engine(
        engine, "profile", "--", "sh", "-c", f"{known} getppid 20000; kill -9 $$", status=0
    )
    record = parse_profile(proc.stdout)
    assert record["ended"] == "killed" and record["signal"] == signal.SIGKILL
    assert record["counts"]["syscalls"] >= 20000


def test_an_interrupted_profile_keeps_its_counts_and_leaves_nothing_running(
    engine, known, tmp_path
):
    marker = tmp_path / "started"
    engine_proc = subprocess.Popen(
        [engine, "profile", "--", "sh", "-c", f"touch {marker}; exec sleep 30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    engine_proc.send_signal(signal.SIGTERM)
    out, err = engine_proc.communicate(timeout=20)
    assert engine_proc.returncode == 0, err
    record = parse_profile(out)
    assert record["ended"] == "interrupted"
    assert record["signal"] == signal.SIGTERM  # passed on to the program
    assert record["counts"]["syscalls"] > 0
    assert record["wall_s"] < 25
    assert not os.path.exists(f"/proc/{record['target']['pid']}")  # reaped


def test_attach_counts_a_window_and_leaves_the_process_running(engine, known):
    target = subprocess.Popen([known, "thread-pingpong", "100000000", "same"])
    try:
        time.sleep(0.2)
        proc = run_engine(engine, "profile", "--pid", str(target.pid), "--duration", "0.5")
        record = parse_profile(proc.stdout)
        assert record["ended"] == "window"
        assert record["target"] == {"command": None, "pid": target.pid, "duration_s": 0.5}
        assert 0.4 < record["wall_s"] < 5
        counts = record["counts"]
        assert counts["context_switches"] > 100
        assert counts["wakeups"] > 0 and counts["syscalls"] > 100
        assert target.poll() is None  # still running
    finally:
        target.kill()
        target.wait()


def test_attach_ends_with_the_process(engine):
    target = subprocess.Popen(["sleep", "0.5"])
    try:
        proc = run_engine(engine, "profile", "--pid", str(target.pid), "--duration", "20")
        record = parse_profile(proc.stdout)
        assert record["ended"] == "target_ended"
        assert record["wall_s"] < 10
    finally:
        target.kill()
        target.wait()


@as_other_user
def test_unprivileged_counts_what_rusage_has_and_says_what_it_does_not(reachable_engine):
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"]
    proc = run_engine(reachable_engine, "profile", "--", "true", prefix=setpriv, cwd="/")
    record = parse_profile(proc.stdout)
    counts, sources = record["counts"], record["sources"]
    assert counts["minor_faults"] is not None and counts["voluntary_switches"] is not None
    assert record["cpu_user_s"] is not None
    for name, value in counts.items():
        assert (value is None) == (sources[name] is None), name
    not_counted = [name for name, value in counts.items() if value is None]
    if not_counted:  # the machine's perf_event_paranoid decides which
        assert any("not counted" in note for note in record["notes"]), record["notes"]


@as_other_user
def test_another_users_process_is_one_line(reachable_engine):
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"]
    proc = run_engine(
        reachable_engine,
        "profile",
        "--pid",
        "1",
        "--duration",
        "1",
        prefix=setpriv,
        status=2,
        cwd="/",
    )
    assert len(proc.stderr.strip().splitlines()) == 1 and "another user" in proc.stderr
