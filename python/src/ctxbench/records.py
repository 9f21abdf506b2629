"""The record contract: JSON Schema validation and grouping of records into runs.

A run is one ``env`` record, one ``result`` record per probe variant and one
``run_end`` record (absent when the producer was killed), all with the same
``run_id``. The schema (``schema/record.schema.json``, JSON Schema 2020-12) is
shared with the C++ engine; the wheel carries it as package data (an
installed ctxbench has no repository beside it), a source checkout reads
it from schema/.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from ctxbench.errors import RecordError

SCHEMA_VERSION = 1
KINDS = ("env", "result", "run_end")
STATUSES = ("ok", "suspect", "unsupported", "failed")


SCHEMA_FILE = "record.schema.json"


def schema_path() -> Path:
    """The installed package's copy (wheel data), else schema/ of a source checkout."""
    packaged = Path(str(resources.files("ctxbench").joinpath("data", SCHEMA_FILE)))
    if packaged.is_file():
        return packaged
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "schema" / SCHEMA_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{SCHEMA_FILE} is neither in the package nor in a source checkout")


@cache
def schema() -> dict[str, Any]:
    return json.loads(schema_path().read_text("utf-8"))


@cache
def _validator(kind: str | None) -> jsonschema.protocols.Validator:
    whole = schema()
    if kind is None:
        target = whole
    else:
        # One kind's definition, with the shared $defs, so that an error names
        # the field that is wrong instead of "not valid under any of oneOf".
        target = {"$schema": whole["$schema"], "$ref": f"#/$defs/{kind}", "$defs": whole["$defs"]}
    cls = jsonschema.validators.validator_for(whole)
    return cls(target)


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a valid record, in one line; None when it is."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"'kind' is {kind!r}, expected one of {', '.join(KINDS)}"
    if record.get("schema") != SCHEMA_VERSION:
        return f"'schema' is {record.get('schema')!r}; this ctxbench reads schema {SCHEMA_VERSION}"
    error = best_match(_validator(kind).iter_errors(record))
    if error is None:
        error = best_match(_validator(None).iter_errors(record))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(record)"
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{kind} record, at {where}: {message}"


def validate(record: Any) -> dict[str, Any]:
    problem = record_problem(record)
    if problem is not None:
        raise RecordError(problem)
    return record


def params_key(params: dict[str, Any]) -> str:
    """Canonical text of a params object: equal knobs give equal keys."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={param_value(v)}" for k, v in sorted(params.items()))


def param_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # JSON numbers: 2.0 processes are 2
    return str(value)


def summary_value(result: dict[str, Any], name: str) -> float | None:
    summary = result.get("summary")
    if not summary:
        return None
    value = summary.get(name)
    return float(value) if value is not None else None


@dataclass
class RunRecords:
    """The records of one run, checked to belong together."""

    env: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None

    @property
    def run_id(self) -> str:
        return self.env["run_id"]

    def all(self) -> list[dict[str, Any]]:
        return [self.env, *self.results, *([self.end] if self.end else [])]


def group_run(records: Iterable[dict[str, Any]], origin: str = "input") -> RunRecords:
    """Check that valid records form exactly one run; raise RecordError if not."""
    env = None
    end = None
    results: list[dict[str, Any]] = []
    run_ids: set[str] = set()
    for record in records:
        run_ids.add(record["run_id"])
        if record["kind"] == "env":
            if env is not None:
                raise RecordError(f"{origin}: more than one env record; one file must hold one run")
            env = record
        elif record["kind"] == "run_end":
            if end is not None:
                raise RecordError(f"{origin}: more than one run_end record")
            end = record
        else:
            results.append(record)
    if env is None:
        raise RecordError(f"{origin}: no env record; a run starts with one (engine `run --json`)")
    if len(run_ids) > 1:
        raise RecordError(
            f"{origin}: records of {len(run_ids)} different runs ({', '.join(sorted(run_ids))}); "
            "import one run per file"
        )
    return RunRecords(env=env, results=results, end=end)


def parse_jsonl(text: str, origin: str) -> list[dict[str, Any]]:
    """Parse and validate JSON Lines text; the first problem raises RecordError."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise RecordError(
                f"{origin}, line {number}: not JSON ({error.msg}); expected engine JSON Lines"
            ) from None
        problem = record_problem(record)
        if problem is not None:
            raise RecordError(f"{origin}, line {number}: not a ctxbench record: {problem}")
        records.append(record)
    if not records:
        raise RecordError(f"{origin}: no records; expected engine JSON Lines (`run --json`)")
    return records


def read_run_file(path: Path) -> RunRecords:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise RecordError(f"cannot read {path}: {error.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # tolerate a byte-order mark
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not UTF-8 text; expected engine JSON Lines") from None
    return group_run(parse_jsonl(text, str(path)), str(path))


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


# ---- building records (for producers written in Python: the trap lab) -------
def timestamp() -> str:
    """Now, UTC, to the second, as the records write it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def run_end_record(
    run_id: str, records: Iterable[dict[str, Any]], duration_s: float, interrupted: bool = False
) -> dict[str, Any]:
    """The closing record of a run: its results counted by status."""
    counts = dict.fromkeys(STATUSES, 0)
    for record in records:
        if record.get("kind") == "result":
            counts[record["verdict"]["status"]] += 1
    return {
        "schema": SCHEMA_VERSION,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": timestamp(),
        "duration_s": round(duration_s, 3),
        "counts": counts,
        "interrupted": interrupted,
    }
