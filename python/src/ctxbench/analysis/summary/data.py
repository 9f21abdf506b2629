"""The summary's data: what a summary of runs holds, as frozen dataclasses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ctxbench import units
from ctxbench.analysis.compare.comparison import Comparison, Exclusion, Row
from ctxbench.analysis.compare.noise import Noise
from ctxbench.analysis.explain.explanation import Explained, Explanation
from ctxbench.records.result import ParamValue, Result
from ctxbench.stats import NotSignificant, RatioInterval, bootstrap_ratio_of_medians


@dataclass(frozen=True)
class Point:
    """One record's figure, as the summary shows it."""

    probe: str
    params: dict[str, ParamValue]
    family: str
    unit: str
    median: float | None
    ci_low: float | None
    ci_high: float | None
    status: str
    reasons: tuple[str, ...]  # its verdict's reason codes, each once (views.reasons words them)
    details: tuple[str, ...]  # the record's own words, one per reason
    anchor: str  # id of the family section it belongs to
    result: Result

    @property
    def params_text(self) -> str:
        return units.params(self.params)


def ratio(reference: Point | None, other: Point | None) -> RatioInterval | None:
    """OTHER's median over REFERENCE's, with the percentile bootstrap interval of
    their samples (ctxbench.stats); None unless both have samples to resample."""
    if reference is None or other is None:
        return None
    first, second = list(reference.result.samples), list(other.result.samples)
    if not first or not second:
        return None
    return bootstrap_ratio_of_medians(first, second)


@dataclass(frozen=True)
class Rung:
    key: str
    label: str
    point: Point


def section_id(family: str) -> str:
    """The HTML id of a family's section: 'family-switch' (safe for any family name)."""
    return "family-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", family).strip("-") or "x")


def point(result: Result) -> Point:
    ci = (result.summary.median_ci if result.summary else None) or {}
    reasons = result.verdict.reasons
    codes = list(dict.fromkeys(result.verdict.codes))
    return Point(
        probe=result.probe,
        params=dict(result.params),
        family=result.family,
        unit=result.unit,
        median=result.median,
        ci_low=float(ci["low"]) if ci.get("low") is not None else None,
        ci_high=float(ci["high"]) if ci.get("high") is not None else None,
        status=result.verdict.status,
        reasons=tuple(codes),
        details=tuple(reason.detail for reason in reasons),
        anchor=section_id(result.family),
        result=result,
    )


@dataclass(frozen=True)
class SameVsCross:
    probe: str
    primitive: str  # the probe name without its family: 'pipe', 'futex'
    between: str | None
    same: Point | None
    cross: Point | None
    ratio: float | None  # cross median / same median, both measured and both switches
    no_ratio: bool = False  # no ratio because a side did not switch (not_a_switch)


@dataclass(frozen=True)
class VerdictNote:
    point: Point
    reasons: tuple[str, ...]  # its verdict's reason codes (views.reasons words them)


@dataclass(frozen=True)
class Verdicts:
    counts: dict[str, int]
    notes: list[VerdictNote]  # every result that is not ok

    @property
    def not_ok(self) -> int:
        return sum(n for status, n in self.counts.items() if status != "ok")


@dataclass(frozen=True)
class RunSummary:
    name: str
    run_id: str
    machine: str
    ladder: list[Rung]
    same_vs_cross: list[SameVsCross]
    explained: Explained | None
    explanation: Explanation | None
    verdicts: Verdicts
    sandbox: list[str] = field(default_factory=list)
    # the timer the ladder's figures were corrected for, in words (units.timer)
    timer: list[str] = field(default_factory=list)
    # the seed questions this run answers (analysis.summary.answers.Answer), first on every screen
    answers: list[Any] = field(default_factory=list)
    load: Any = None  # interference.RunLoad: what the run's own records show of its load
    guest: Any = None  # guest.Guest: the virtual machine it ran in, None on bare metal


@dataclass(frozen=True)
class MachineCell:
    median: float | None
    ratio: float | None  # other / reference
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    significant: bool
    decision: str | None  # compare.SLOWER, FASTER, NO_DIFFERENCE, ONLY_ONE
    excluded: tuple[Exclusion, ...]
    note: str | None  # why there is no ratio
    noise: Noise | None = None  # what judged the difference (repeats, history, within-run)
    # the run's own variant, where it did not measure run A's and its ladder drew this one
    variant: str | None = None
    why_not: NotSignificant | None = None  # why the difference is not significant


@dataclass(frozen=True)
class MachineFigure:
    key: str
    label: str
    probe: str
    params: dict[str, ParamValue]
    unit: str
    reference_median: float | None
    cells: list[MachineCell]  # one per run after the reference
    row: Row | None = None  # the row of Machines.key_comparison it comes from


@dataclass(frozen=True)
class EnvDifference:
    key: str
    label: str
    values: list[str | None]


@dataclass(frozen=True)
class Machines:
    reference: str
    others: list[str]
    comparison: Comparison
    figures: list[MachineFigure]
    env: list[EnvDifference]
    # compare_runs over the key figures only, variants matched by variant_key
    key_comparison: Comparison | None = None


@dataclass(frozen=True)
class Summary:
    runs: list[RunSummary]
    machines: Machines | None

    @property
    def ladder(self) -> list[Rung]:
        return self.runs[0].ladder

    @property
    def same_vs_cross(self) -> list[SameVsCross]:
        return self.runs[0].same_vs_cross

    @property
    def explained(self) -> Explained | None:
        return self.runs[0].explained

    @property
    def explanation(self) -> Explanation | None:
        return self.runs[0].explanation

    @property
    def verdicts(self) -> Verdicts:
        return self.runs[0].verdicts
