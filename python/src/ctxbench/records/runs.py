"""Records grouped into one run (one env, a result per probe variant, one run_end); a stored run.

A run is one ``env`` record, one ``result`` record per probe variant and one
``run_end`` record (absent when the producer was killed), all with the same
``run_id``. A stored run (``StoredRun``) is those records with what the
store knows of the run (``RunInfo``): the run as data, which analysis and
views take and the store hands out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ctxbench.errors import RecordError
from ctxbench.records.environment import Environment, environment_of
from ctxbench.records.result import Result, results_of


@dataclass
class RunRecords:
    """The records of one run as read, checked to belong together: the JSON
    the store's rows, the export and the spool keep (``StoredRun`` holds them
    as types)."""

    env: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None

    @property
    def run_id(self) -> str:
        return self.env["run_id"]

    def all(self) -> list[dict[str, Any]]:
        return [self.env, *self.results, *([self.end] if self.end else [])]

    @cached_property
    def environment(self) -> Environment:
        """The env record as its type, read once (``group_run`` reads it to check it)."""
        return environment_of(self.env)

    @cached_property
    def typed_results(self) -> tuple[Result, ...]:
        """The result records as types, read once (``group_run`` reads them to check them)."""
        return results_of(self.results)


def shared_unsupported_reason(results: list[dict[str, Any]]) -> str | None:
    """The one reason every result is unsupported for ("code: detail"), or
    None when something was measured, or the reasons differ. Such a run holds
    no figure, only that reason repeated: it is not worth storing."""
    reasons = set()
    for result in results:
        verdict = result["verdict"]
        if verdict["status"] != "unsupported":
            return None
        reasons.add(tuple((r["code"], r["detail"]) for r in verdict["reasons"]))
    if len(reasons) != 1:
        return None
    return "; ".join(f"{code}: {detail}" for code, detail in next(iter(reasons)))


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
    if results and all("variant_index" in r for r in results):
        # A variant measured again after host interference arrives after the
        # others; the run's results are its selection's variants, in order.
        results.sort(key=lambda r: r["variant_index"])
    # A key the types need and a record lacks is refused here, as the run is
    # read, not where a view first looks; the types read here are the ones
    # StoredRun hands out.
    grouped = RunRecords(env=env, results=results, end=end)
    _ = grouped.environment, grouped.typed_results
    return grouped


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    label: str | None
    origin: str
    started_at: str | None
    hostname: str | None
    arch: str | None
    complete: bool
    interrupted: bool
    stored_at: str
    counts: dict[str, int]
    machine: str = "?"  # host · CPU model · virtualization (records.machine_name)

    @property
    def n_results(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        """What the store knows of the run, as ``show --json`` and ``history
        --json`` give it (``run`` in schema/show.schema.json)."""
        return {
            "run_id": self.run_id,
            "label": self.label,
            "machine": self.machine,
            "origin": self.origin,
            "started_at": self.started_at,
            "stored_at": self.stored_at,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "counts": self.counts,
        }


@dataclass(frozen=True)
class StoredRun:
    """A run as the store hands it out: what it knows of the run, its records
    verbatim (the edge: rows, export) and its env and results as types, read once."""

    info: RunInfo
    records: RunRecords

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def env(self) -> Environment:
        return self.records.environment

    @property
    def results(self) -> tuple[Result, ...]:
        return self.records.typed_results
