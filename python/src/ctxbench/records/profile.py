"""The profile record read strictly into frozen types (``Profile``), once, where it is read.

A profile record is what ``ctxbench-engine profile`` counted of one program
(schema/profile.schema.json, shared with the engine); it is parsed as a
run's records are (records.strict_json), checked against its schema, and
read into ``Profile`` once, where it is read (``read_profile``, the store's
``load_profile``), then passed inward. The JSON it came from stays beside it
(``Profile.raw``) for the edges that write JSON or rows. A key the record
must have and lacks is a ``RecordError`` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ctxbench.errors import RecordError
from ctxbench.records.environment import Environment, environment_of
from ctxbench.records.result import Verbatim
from ctxbench.records.schema import data_path
from ctxbench.records.strict_json import loads_record

PROFILE_SCHEMA_FILE = "profile.schema.json"
# Version 2 added profile --trace's wake-up latencies and target-state
# counts; version-1 records (without them) are still read.
PROFILE_SCHEMA_VERSIONS = (1, 2)
MAX_PROFILE_BYTES = 4 * 1024 * 1024


@cache
def _profile_validator() -> Any:
    import json

    import jsonschema

    whole = json.loads(data_path(PROFILE_SCHEMA_FILE).read_text("utf-8"))
    return jsonschema.validators.validator_for(whole)(whole)


def profile_problem(record: Any) -> str | None:
    """Why ``record`` is not a profile record, in one line; None when it is."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    if record.get("kind") != "profile":
        return f"'kind' is {record.get('kind')!r}, expected 'profile'"
    if record.get("schema") not in PROFILE_SCHEMA_VERSIONS:
        return (
            f"'schema' is {record.get('schema')!r}; this ctxbench reads profile schema "
            + " and ".join(str(v) for v in PROFILE_SCHEMA_VERSIONS)
        )
    from jsonschema.exceptions import best_match

    error = best_match(_profile_validator().iter_errors(record))
    if error is None:
        return None
    where = "/".join(
        str(p)[:40].encode("unicode_escape").decode("ascii") for p in error.absolute_path
    )
    where = where or "(record)"
    return f"profile record, at {where}: {error.message[:200]}"


def parse_profile(text: str, origin: str) -> Profile:
    """One profile from its record's JSON text; RecordError naming ``origin``."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PROFILE_BYTES:
        raise RecordError(f"{origin}: a profile record over {MAX_PROFILE_BYTES} bytes")
    try:
        record = loads_record(text.strip())
    except ValueError as error:
        raise RecordError(f"{origin}: {error}") from None
    problem = profile_problem(record)
    if problem is not None:
        raise RecordError(f"{origin}: {problem}")
    try:
        return profile_of(record)
    except RecordError as error:
        raise RecordError(f"{origin}: {error}") from None


def read_profile(path: Path) -> Profile:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: cannot read ({error})") from None
    return parse_profile(text, str(path))


@dataclass(frozen=True, slots=True)
class Target:
    """What was profiled: a command run, or a process attached to for a window."""

    command: tuple[str, ...] | None  # None: attached to a running process
    pid: int
    duration_s: float | None  # the window asked for when attached; None for a command


# The counts a profile record holds, as the schema names them; the last two
# only from schema 2 on (profile --trace's target-state counts).
COUNT_NAMES = (
    "context_switches",
    "voluntary_switches",
    "involuntary_switches",
    "migrations",
    "page_faults",
    "minor_faults",
    "major_faults",
    "syscalls",
    "creations",
    "threads_created",
    "processes_created",
    "signals",
    "wakeups",
    "wakeups_same_cpu",
    "wakeups_cross_cpu",
    "wakeups_idle_target",
    "wakeups_busy_target",
)


@dataclass(frozen=True, slots=True)
class Counts:
    """What the kernel counted of the program (the record's ``counts``); None: not counted."""

    context_switches: int | None
    voluntary_switches: int | None
    involuntary_switches: int | None
    migrations: int | None
    page_faults: int | None
    minor_faults: int | None
    major_faults: int | None
    syscalls: int | None
    creations: int | None
    threads_created: int | None
    processes_created: int | None
    signals: int | None
    wakeups: int | None
    wakeups_same_cpu: int | None
    wakeups_cross_cpu: int | None
    wakeups_idle_target: int | None  # --trace only; None also where the record has none
    wakeups_busy_target: int | None
    names: tuple[str, ...]  # the counts the record holds, in its order (schema 1: not the last two)

    def named(self) -> tuple[tuple[str, int | None], ...]:
        """(name, count) of each count the record holds, in its order."""
        return tuple((name, getattr(self, name)) for name in self.names)

    def holds(self, name: str) -> bool:
        """Whether the record holds this count (null or not): a schema-1 record
        holds no target-state counts."""
        return name in self.names


@dataclass(frozen=True, slots=True)
class SyscallCount:
    """One of the most frequent system calls (sampled)."""

    nr: int
    name: str
    count: int


@dataclass(frozen=True, slots=True)
class TaskCounts:
    """One task's counts from the samples (a thread of ``threads``, or an exec of ``execs``)."""

    tid: int
    voluntary_switches: int
    involuntary_switches: int
    syscalls: int
    wakeups: int
    migrations: int | None = None  # None: a profile written before it was counted


@dataclass(frozen=True, slots=True)
class Samples:
    """Whether samples were taken, and what of them was lost or written twice."""

    taken: bool
    lost: int
    duplicates: int
    complete: bool


@dataclass(frozen=True, slots=True)
class ProgramTime:
    """The program's CPU time (user + system), None when not counted."""

    user_s: float | None
    system_s: float | None

    @property
    def cpu_s(self) -> float | None:
        if self.user_s is None or self.system_s is None:
            return None
        return self.user_s + self.system_s


@dataclass(frozen=True, slots=True)
class Latency:
    """Wake-up latencies in place (profile --trace), microseconds."""

    n: int
    p10_us: float
    p25_us: float
    median_us: float
    p75_us: float
    p90_us: float
    max_us: float


LATENCY_GROUPS = ("all", "same_cpu", "cross_cpu", "idle_target", "busy_target")


@dataclass(frozen=True, slots=True)
class InPlace:
    """What --trace measured of the program's wake-ups: latencies of all of
    them, by where the task was woken and by the target CPU's state (None:
    none of that group)."""

    all: Latency | None
    same_cpu: Latency | None
    cross_cpu: Latency | None
    idle_target: Latency | None
    busy_target: Latency | None

    def group(self, name: str) -> Latency | None:
        """A group by its name in the record ('all', 'same_cpu', ...)."""
        return getattr(self, name) if name in LATENCY_GROUPS else None


@dataclass(frozen=True, slots=True)
class Profile(Verbatim):
    """One program profiled: what it was, how it ended, what was counted, on which machine."""

    schema: int
    run_id: str
    producer: str
    started_at: str
    finished_at: str
    env: Environment  # the machine a stored figure must match to price it
    target: Target
    ended: str  # exited, killed, interrupted, window or target_ended
    exit_status: int | None
    signal: int | None
    wall_s: float
    cpu_user_s: float | None
    cpu_system_s: float | None
    run_queue_wait_s: float | None
    counts: Counts
    sources: Mapping[str, str | None]  # where each count came from (perf_counter, samples, ...)
    syscalls_by_call: tuple[SyscallCount, ...]  # the most frequent, most first
    threads: tuple[TaskCounts, ...]
    execs: tuple[TaskCounts, ...] | None  # None: no samples, or a record before execs
    samples: Samples
    notes: tuple[str, ...]
    wakeup_latency: InPlace | None  # None: not traced (or a schema-1 record)
    raw: Mapping[str, Any] = field(repr=False, compare=False)  # the record, verbatim

    @property
    def program_time(self) -> ProgramTime:
        return ProgramTime(self.cpu_user_s, self.cpu_system_s)

    def syscall_counts(self) -> dict[str, int]:
        """The sampled system calls by name (the most frequent ones)."""
        return {call.name: call.count for call in self.syscalls_by_call}


def _counts(block: Mapping[str, Any]) -> Counts:
    values = {name: block.get(name) for name in COUNT_NAMES}
    return Counts(**values, names=tuple(name for name in block if name in COUNT_NAMES))


def _in_place(block: Mapping[str, Any] | None) -> InPlace | None:
    if not block:
        return None
    groups = (block[name] for name in LATENCY_GROUPS)
    return InPlace(*(None if group is None else Latency(**group) for group in groups))


# The record's values typed as they are written, under their own names.
AS_WRITTEN = (
    "schema",
    "run_id",
    "producer",
    "started_at",
    "finished_at",
    "ended",
    "exit_status",
    "signal",
    "wall_s",
    "cpu_user_s",
    "cpu_system_s",
    "run_queue_wait_s",
)


def _target(block: Mapping[str, Any]) -> Target:
    command = block["command"]
    return Target(None if command is None else tuple(command), block["pid"], block["duration_s"])


def profile_of(record: Mapping[str, Any]) -> Profile:
    """The profile a record holds; a key it must have and lacks raises RecordError."""
    try:
        execs = record.get("execs")
        return Profile(
            **{name: record[name] for name in AS_WRITTEN},
            env=environment_of(record["env"]),
            target=_target(record["target"]),
            counts=_counts(record["counts"]),
            sources=dict(record["sources"]),
            syscalls_by_call=tuple(SyscallCount(**call) for call in record["syscalls_by_call"]),
            threads=tuple(TaskCounts(**thread) for thread in record["threads"]),
            execs=None if execs is None else tuple(TaskCounts(**task) for task in execs),
            samples=Samples(**record["samples"]),
            notes=tuple(record["notes"]),
            wakeup_latency=_in_place(record.get("wakeup_latency")),
            raw=record,
        )
    except (KeyError, TypeError) as error:
        name = record.get("run_id", "?") if isinstance(record, Mapping) else "?"
        raise RecordError(f"profile record of run {name}: missing or malformed {error}") from None
