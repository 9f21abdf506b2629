"""The profile record read on the Python side: the engine's own output
(fixtures recorded by `ctxbench-engine profile`) passes the shared schema;
what breaks it is refused in one line naming the place."""

import json
from pathlib import Path

import pytest

from ctxbench.errors import RecordError
from ctxbench.records.profile import (
    in_place,
    parse_profile,
    program_time,
    read_profile,
    syscall_counts,
)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "name",
    [
        "profile_pingpong.json",
        "profile_getppid.json",
        "profile_unprivileged.json",
        "profile_traced.json",
    ],
)
def test_the_engines_records_pass(name):
    record = read_profile(FIXTURES / name)
    assert record["kind"] == "profile"


def test_counts_read_from_a_recorded_profile():
    record = read_profile(FIXTURES / "profile_getppid.json")
    assert syscall_counts(record)["getppid"] == 20000
    assert program_time(record).cpu_s > 0


def test_a_traced_profile_reads_its_wake_ups_in_place():
    record = read_profile(FIXTURES / "profile_traced.json")
    traced = in_place(record)
    assert traced is not None and traced.cross_cpu is not None
    group = traced.cross_cpu
    assert group.p10_us <= group.median_us <= group.p90_us <= group.max_us
    counts = record["counts"]
    assert counts["wakeups_idle_target"] + counts["wakeups_busy_target"] <= counts["wakeups"]
    # Untraced, version 1 and 2 alike: no latencies.
    assert in_place(read_profile(FIXTURES / "profile_pingpong.json")) is None


def test_a_traced_record_with_a_broken_latency_is_refused():
    record = json.loads((FIXTURES / "profile_traced.json").read_text())
    record["wakeup_latency"]["cross_cpu"]["n"] = 0
    with pytest.raises(RecordError) as caught:
        parse_profile(json.dumps(record), "p.json")
    assert "wakeup_latency" in str(caught.value)


def test_a_childs_counts_before_its_exec_are_read_and_checked():
    """`execs`: each exec of the program's tasks with that task's counts
    before it (profiles written before it have none)."""
    record = json.loads((FIXTURES / "profile_pingpong.json").read_text())
    assert "execs" not in record
    child = {"tid": 4242, "voluntary_switches": 1, "involuntary_switches": 0, "syscalls": 14,
             "wakeups": 1, "migrations": 1}  # fmt: skip
    record["execs"] = [child]
    assert parse_profile(json.dumps(record), "p.json")["execs"][0]["migrations"] == 1
    record["execs"] = [dict(child, syscalls=-1)]
    with pytest.raises(RecordError) as caught:
        parse_profile(json.dumps(record), "p.json")
    assert "execs" in str(caught.value)


def test_unprivileged_leaves_out_what_it_could_not_count():
    record = read_profile(FIXTURES / "profile_unprivileged.json")
    assert record["counts"]["syscalls"] is None
    assert record["sources"]["voluntary_switches"] == "rusage"
    assert any("not counted" in note for note in record["notes"])


@pytest.mark.parametrize(
    "change,says",
    [
        (lambda r: r["counts"].pop("syscalls"), "counts"),
        (lambda r: r.update(kind="result"), "'kind' is 'result'"),
        (lambda r: r.update(schema=3), "profile schema 1 and 2"),
        # Version 2 carries the in-place fields, even when null.
        (lambda r: r.update(schema=2), "wakeup_latency"),
        (lambda r: r["counts"].update(syscalls=-1), "counts/syscalls"),
    ],
)
def test_a_broken_record_is_refused_in_one_line(change, says):
    record = json.loads((FIXTURES / "profile_pingpong.json").read_text())
    change(record)
    with pytest.raises(RecordError) as caught:
        parse_profile(json.dumps(record), "p.json")
    message = str(caught.value)
    assert "\n" not in message and says in message and message.startswith("p.json")
