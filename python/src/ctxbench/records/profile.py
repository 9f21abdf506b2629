"""Reads the profile record strictly and gives the facts the pricing reads.

A profile record is what ``ctxbench-engine profile`` counted of one program
(schema/profile.schema.json, shared with the engine); it is parsed as a
run's records are (records.strict_json), then checked against its schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ctxbench.errors import RecordError
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


def parse_profile(text: str, origin: str) -> dict[str, Any]:
    """One profile record from its JSON text; RecordError naming ``origin``."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PROFILE_BYTES:
        raise RecordError(f"{origin}: a profile record over {MAX_PROFILE_BYTES} bytes")
    try:
        record = loads_record(text.strip())
    except ValueError as error:
        raise RecordError(f"{origin}: {error}") from None
    problem = profile_problem(record)
    if problem is not None:
        raise RecordError(f"{origin}: {problem}")
    return record


def read_profile(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: cannot read ({error})") from None
    return parse_profile(text, str(path))


@dataclass(frozen=True)
class ProgramTime:
    """The program's CPU time (user + system), None when not counted."""

    user_s: float | None
    system_s: float | None

    @property
    def cpu_s(self) -> float | None:
        if self.user_s is None or self.system_s is None:
            return None
        return self.user_s + self.system_s


def program_time(record: dict[str, Any]) -> ProgramTime:
    return ProgramTime(record["cpu_user_s"], record["cpu_system_s"])


@dataclass(frozen=True)
class Latency:
    """Wake-up latencies in place (profile --trace), microseconds."""

    n: int
    p10_us: float
    p25_us: float
    median_us: float
    p75_us: float
    p90_us: float
    max_us: float


@dataclass(frozen=True)
class InPlace:
    """What --trace measured of the program's wake-ups: latencies of all of
    them, by where the task was woken and by the target CPU's state (None:
    none of that group)."""

    all: Latency | None
    same_cpu: Latency | None
    cross_cpu: Latency | None
    idle_target: Latency | None
    busy_target: Latency | None


def in_place(record: dict[str, Any]) -> InPlace | None:
    """The in-place latencies, None when the profile was not traced."""
    latency = record.get("wakeup_latency")
    if not latency:
        return None

    def group(name: str) -> Latency | None:
        value = latency[name]
        return None if value is None else Latency(**value)

    names = ("all", "same_cpu", "cross_cpu", "idle_target", "busy_target")
    return InPlace(*(group(n) for n in names))


def syscall_counts(record: dict[str, Any]) -> dict[str, int]:
    """The sampled system calls by name (the most frequent ones)."""
    return {c["name"]: c["count"] for c in record["syscalls_by_call"]}
