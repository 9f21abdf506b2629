"""A result record as a frozen type: its probe, parameters, verdict and summary, and the rest.

A result is read into these types once, where a run is read (the store's
``StoredRun.results``), and passed inward; the JSON it came from stays
beside it (``Result.raw``) for the edges that write JSON or rows and for the
blocks not typed here (``Result.block``: interference, derived, counters,
trace, ...). A key the record must have and lacks (``schema/record.schema.json``)
is a ``RecordError`` here, not a ``None`` three layers in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbench.errors import RecordError
from ctxbench.units import ParamValue


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a verdict is not ``ok``: a code from the schema's closed set, and its detail."""

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """ok, suspect, unsupported or failed, with its reasons (none when ok)."""

    status: str
    reasons: tuple[Reason, ...] = ()

    @property
    def measured(self) -> bool:
        """ok or suspect: the result carries a figure."""
        return self.status in ("ok", "suspect")

    def has(self, code: str) -> bool:
        return any(reason.code == code for reason in self.reasons)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(reason.code for reason in self.reasons)


@dataclass(frozen=True, slots=True)
class Summary:
    """The statistics of a result's per-operation samples (the schema's ``summary``)."""

    n: int
    min: float
    median: float
    mean: float
    stddev: float
    p90: float
    p99: float
    max: float
    median_ci: Mapping[str, Any] | None  # {level, low, high}; None when n is too small

    def value(self, name: str) -> float | None:
        """A figure by its name ('median', 'p99', ...); None for a name it has not."""
        if name not in SUMMARY_FIGURES:
            return None
        return float(getattr(self, name))


SUMMARY_FIGURES = ("n", "min", "median", "mean", "stddev", "p90", "p99", "max")


class Verbatim:
    """What a record type keeps of its JSON (``raw``): the blocks and values not
    typed, read through ``block`` and ``get``."""

    __slots__ = ()
    raw: Mapping[str, Any]

    def block(self, name: str) -> Mapping[str, Any]:
        """A block of the record not typed ('interference', 'derived',
        'mitigations', ...); empty where the record has none."""
        return self.raw.get(name) or {}

    def get(self, name: str, default: Any = None) -> Any:
        """A top-level value of the record not typed ('variant_index', 'notes', ...)."""
        return self.raw.get(name, default)


@dataclass(frozen=True, slots=True)
class Result(Verbatim):
    """One probe variant measured: what it is, its verdict, its summary, and the rest."""

    probe: str
    family: str
    params: Mapping[str, ParamValue]
    unit: str
    verdict: Verdict
    summary: Summary | None  # None: nothing measured (unsupported, failed)
    samples: tuple[float, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)  # the record, verbatim

    def figure(self, name: str) -> float | None:
        """A figure of the summary ('median', 'p99', ...); None where it has none."""
        return None if self.summary is None else self.summary.value(name)

    @property
    def median(self) -> float | None:
        return None if self.summary is None else float(self.summary.median)


def _verdict(block: Mapping[str, Any]) -> Verdict:
    reasons = tuple(Reason(r["code"], r["detail"]) for r in block.get("reasons") or ())
    return Verdict(status=block["status"], reasons=reasons)


def _summary(block: Mapping[str, Any] | None) -> Summary | None:
    if not block:
        return None
    return Summary(
        n=int(block["n"]),
        min=block["min"],
        median=block["median"],
        mean=block["mean"],
        stddev=block["stddev"],
        p90=block["p90"],
        p99=block["p99"],
        max=block["max"],
        median_ci=block.get("median_ci"),
    )


def result_of(record: Mapping[str, Any]) -> Result:
    """The result a record holds; a key it must have and lacks raises RecordError."""
    try:
        return Result(
            probe=record["probe"],
            family=record["family"],
            params=record.get("params") or {},
            unit=record["unit"],
            verdict=_verdict(record["verdict"]),
            summary=_summary(record.get("summary")),
            samples=tuple(record.get("samples") or ()),
            raw=record,
        )
    except (KeyError, TypeError) as error:
        name = record.get("probe", "?") if isinstance(record, Mapping) else "?"
        raise RecordError(f"result record of {name}: missing or malformed {error}") from None


def results_of(records: Iterable[Mapping[str, Any]]) -> tuple[Result, ...]:
    return tuple(result_of(record) for record in records)
