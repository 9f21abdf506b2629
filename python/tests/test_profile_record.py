"""The profile record read on the Python side: the engine's own output
(fixtures recorded by `ctxbench-engine profile`) passes the shared schema;
what breaks it is refused in one line naming the place."""

import json
from pathlib import Path

import pytest

from ctxbench.errors import RecordError
from ctxbench.records.profile import parse_profile, program_time, read_profile, syscall_counts

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "name", ["profile_pingpong.json", "profile_getppid.json", "profile_unprivileged.json"]
)
def test_the_engines_records_pass(name):
    record = read_profile(FIXTURES / name)
    assert record["kind"] == "profile"


def test_counts_read_from_a_recorded_profile():
    record = read_profile(FIXTURES / "profile_getppid.json")
    assert syscall_counts(record)["getppid"] == 20000
    assert program_time(record).cpu_s > 0


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
        (lambda r: r.update(schema=2), "profile schema 1"),
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
