"""The profile record read on the Python side: the engine's own output
(fixtures recorded by `ctxbench-engine profile`) passes the shared schema;
what breaks it is refused in one line naming the place."""

import json
from pathlib import Path

import pytest

from ctxbench.errors import RecordError
from ctxbench.records.profile import Profile, parse_profile, profile_of, read_profile

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
    profile = read_profile(FIXTURES / name)
    assert isinstance(profile, Profile) and profile.raw["kind"] == "profile"
    assert profile.env.run_id and profile.target.pid >= 1


def test_counts_read_from_a_recorded_profile():
    profile = read_profile(FIXTURES / "profile_getppid.json")
    assert profile.syscall_counts()["getppid"] == 20000
    assert profile.program_time.cpu_s > 0
    assert profile.schema == 1 and profile.target.command and profile.samples.taken
    # A schema-1 record holds no target-state counts: read as None, and not held.
    assert profile.counts.wakeups_idle_target is None
    assert not profile.counts.holds("wakeups_idle_target")
    assert [name for name, _ in profile.counts.named()] == list(profile.raw["counts"])


def test_a_traced_profile_reads_its_wake_ups_in_place():
    profile = read_profile(FIXTURES / "profile_traced.json")
    traced = profile.wakeup_latency
    assert traced is not None and traced.cross_cpu is not None
    group = traced.cross_cpu
    assert group.p10_us <= group.median_us <= group.p90_us <= group.max_us
    assert traced.group("cross_cpu") is group and traced.group("nothing") is None
    counts = profile.counts
    assert counts.holds("wakeups_idle_target")
    assert counts.wakeups_idle_target + counts.wakeups_busy_target <= counts.wakeups
    # Untraced, version 1 and 2 alike: no latencies.
    assert read_profile(FIXTURES / "profile_pingpong.json").wakeup_latency is None


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
    assert parse_profile(json.dumps(record), "p.json").execs[0].migrations == 1
    record["execs"] = [dict(child, syscalls=-1)]
    with pytest.raises(RecordError) as caught:
        parse_profile(json.dumps(record), "p.json")
    assert "execs" in str(caught.value)


def test_unprivileged_leaves_out_what_it_could_not_count():
    profile = read_profile(FIXTURES / "profile_unprivileged.json")
    assert profile.counts.syscalls is None
    assert profile.sources["voluntary_switches"] == "rusage"
    assert any("not counted" in note for note in profile.notes)


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


def test_a_record_without_a_key_it_must_have_is_refused_naming_the_key():
    """profile_of, for a record that was not checked against the schema (as
    the store's rows are read): the missing key named in one line."""
    record = json.loads((FIXTURES / "profile_pingpong.json").read_text())
    del record["samples"]
    with pytest.raises(RecordError) as caught:
        profile_of(record)
    message = str(caught.value)
    assert "'samples'" in message and record["run_id"] in message and "\n" not in message
    record = json.loads((FIXTURES / "profile_pingpong.json").read_text())
    del record["env"]["kernel"]
    with pytest.raises(RecordError) as caught:
        parse_profile(json.dumps(record), "p.json")
    assert str(caught.value).startswith("p.json: ") and "'kernel'" in str(caught.value)
