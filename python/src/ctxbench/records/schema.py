"""The record schema: its version, kinds and statuses, and one record checked against it.

The schema (``schema/record.schema.json``, JSON Schema 2020-12) is shared with
the C++ engine; the wheel carries it as package data (an installed ctxbench
has no repository beside it), a source checkout reads it from schema/. A
result whose summary contradicts its own samples is refused too.
"""

from __future__ import annotations

import json
import math
import statistics
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ctxbench.errors import RecordError
from ctxbench.records.strict_json import shown

SCHEMA_VERSION = 1
KINDS = ("env", "result", "run_end")
STATUSES = ("ok", "suspect", "unsupported", "failed")


SCHEMA_FILE = "record.schema.json"


def data_path(name: str) -> Path:
    """A file of schema/: the installed package's copy (wheel data), else
    schema/ of a source checkout."""
    packaged = Path(str(resources.files("ctxbench").joinpath("data", name)))
    if packaged.is_file():
        return packaged
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "schema" / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{name} is neither in the package nor in a source checkout")


def schema_path() -> Path:
    return data_path(SCHEMA_FILE)


@cache
def schema() -> dict[str, Any]:
    return json.loads(schema_path().read_text("utf-8"))


@cache
def _validator(kind: str | None) -> Any:
    """A jsonschema validator of one kind of record (jsonschema is imported
    here, by the commands that check records, not by every command)."""
    import jsonschema

    whole = schema()
    if kind is None:
        target = whole
    else:
        # One kind's definition, with the shared $defs, so that an error names
        # the field that is wrong instead of "not valid under any of oneOf".
        target = {"$schema": whole["$schema"], "$ref": f"#/$defs/{kind}", "$defs": whole["$defs"]}
    cls = jsonschema.validators.validator_for(whole)
    return cls(target)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def summary_problem(record: dict[str, Any]) -> str | None:
    """Where a result's summary contradicts its own samples, in one line."""
    summary = record.get("summary")
    samples = record.get("samples")
    if not isinstance(summary, dict) or not isinstance(samples, list):
        return None
    if summary.get("n") != len(samples):
        return f"summary says n={summary.get('n')} but the record holds {len(samples)} samples"
    if not samples or not all(isinstance(v, (int, float)) for v in samples):
        return None
    low, high = min(samples), max(samples)
    expected = {
        "min": low,
        "max": high,
        "median": statistics.median(samples),
        "mean": statistics.fmean(samples),
    }
    for name, value in expected.items():
        stated = summary.get(name)
        if isinstance(stated, (int, float)) and not _close(stated, value):
            return f"{name} is {stated:g} but the samples' {name} is {value:g}"
    for name in ("p90", "p99"):
        stated = summary.get(name)
        inside = not isinstance(stated, (int, float)) or low <= stated <= high
        if not inside and not (_close(stated, low) or _close(stated, high)):
            return f"{name} is {stated:g}, outside the samples' range {low:g}..{high:g}"
    return None


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a valid record, in one line; None when it is."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"'kind' is {kind!r}, expected one of {', '.join(KINDS)}"
    if record.get("schema") != SCHEMA_VERSION:
        return f"'schema' is {record.get('schema')!r}; this ctxbench reads schema {SCHEMA_VERSION}"
    from jsonschema.exceptions import best_match

    error = best_match(_validator(kind).iter_errors(record))
    if error is None:
        error = best_match(_validator(None).iter_errors(record))
    if error is None:
        problem = summary_problem(record) if kind == "result" else None
        if problem is None:
            return None
        return f"result record, at summary: {problem} (the summary contradicts the samples)"
    where = "/".join(shown(str(p)) for p in error.absolute_path) or "(record)"
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{kind} record, at {where}: {message}"


def validate(record: Any) -> dict[str, Any]:
    problem = record_problem(record)
    if problem is not None:
        raise RecordError(problem)
    return record
