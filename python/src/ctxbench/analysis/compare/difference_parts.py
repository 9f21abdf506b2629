"""Where a difference between two runs sits: each row's difference split into its parts.

``perf diff`` and pprof's ``-diff_base`` set a profile against a baseline
symbol by symbol; here the symbols are the parts ``ctxbench.explain`` builds
from one run's own figures (kernel entry/exit, the primitive's own work, the
address-space switch, waking an idle CPU, the rest), and, where both records
carry a traced pass, its phases. For one row (a variant of run A and its
match in run B, ``compare_runs``), each part of B less the same part of A is
that part's share of the row's difference.

The parts always add up to the row's difference. A part one side has by
definition and the other lacks (the address-space switch of a thread
variant, the idle share of an idle=held one) counts as zero there. A part
one run measured and the other did not separate (no twin variant, or its two
figures within that run's noise) is that run's figure against zero, and the
other run's time for it stays in that run's remainder: the remainder of each
side is its median less every part it measured, so the remainder of the row
(B's less A's) is whatever no measurement separates, one part with its share,
and it names the parts it holds (``PartDifference.holds``).

Each part is a sum of coefficients times medians (``explain.Term``), so its
difference gets an interval by a percentile bootstrap: every record's samples
are resampled with replacement and every part recomputed from the resampled
medians, all parts of a replicate from the same draw (Efron & Tibshirani,
ch. 13, as ``stats.bootstrap_ratio_of_medians``). A baseline keeps only its
median and the median's distribution-free interval, so it is drawn from a
normal of that interval's width. A traced phase is its share of the traced
sample times the untraced median; the share is one traced pass's and is held
fixed, so its interval covers the median's sampling only. These are
within-run intervals: they say whether a part moved beyond its own samples'
spread, not beyond run-to-run noise, which the row's decision
(``compare.decide``) already judges.

Before the machine, the load: each run's own records are counted
(``interference.run_load``). The environment keys that differ are ranked by
the parts they act on (``envparts``). Numbers and reason codes;
``views.compare.difference`` words them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ctxbench import stats
from ctxbench.analysis.compare import envparts
from ctxbench.analysis.compare.comparison import FASTER, SLOWER, Comparison, Exclusion, Row
from ctxbench.analysis.compare.pairs import measured_as
from ctxbench.analysis.explain.explanation import (
    BASELINE,
    CALLS_PRICED,
    JOINED,
    MEDIAN,
    MEDIAN_LESS_PARTS,
    REST,
    REST_INSIDE,
    REST_USER,
    WHOLE_MEDIAN,
    Explanation,
    Missing,
    NotExplained,
    Part,
    Term,
    bare_syscall,
    explain,
    term,
)
from ctxbench.analysis.explain.explanation import Source as PartSource
from ctxbench.analysis.explain.interference import RunLoad, run_load
from ctxbench.analysis.explain.phases import traced_view
from ctxbench.records.naming import params_key
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.runs import StoredRun

CALL_WORK = "the call's own work"
KERNEL_ENTRY_PART = "kernel entry/exit"  # explain's part names
OWN_WORK_PART = "primitive's own work"
ADDRESS_SPACE_PART = "address-space switch"
TRACE_REST = "no chain covers it"
RESAMPLES = 2000
SIDES = ("A", "B")

# Why a row, a part or the phases are not split (``Unsplit.code``); views word them.
NO_PARTS = "no parts"  # neither run splits this figure
VDSO = "vdso"  # answered in the vDSO without entering the kernel
NO_BARE = "no bare trap"  # the run has no bare system call (detail: its probe) beside it
ONE_SIDE = "one side"  # only one run splits the figure (sides: that run)
ACROSS_PAIR = "across the pair"  # the processes variant of one run against the threads of the other
PHASES_ONE_TRACED = "one traced"  # only one run was traced
PHASES_FAILED = "trace failed"  # a traced pass failed
REST_UNTRACED = "rest untraced"  # the rest is not split into wake-up and switch: needs --trace
EXPLAIN = "explain"  # what explain could not separate (missing, said: its codes)


@dataclass(frozen=True)
class Unsplit:
    code: str
    sides: str = ""  # "A", "B", "A and B": the runs it is about
    detail: str = ""  # a part's or a probe's name
    missing: Missing | None = None  # EXPLAIN: explain's code for what it could not separate
    said: NotExplained | None = None  # EXPLAIN: a part explain measured but not as a share
    # EXPLAIN, per part: each run's reason (explain's Missing or NotExplained)
    items: tuple[tuple[str, Missing | NotExplained | str], ...] = ()


@dataclass(frozen=True)
class PartDifference:
    name: str
    group: str  # envparts group: what acts on it
    reference_ns: float  # 0 where the part is absent by definition or not separated
    other_ns: float
    difference_ns: float  # other - reference
    low_ns: float | None  # interval of the difference; None when it has no terms
    high_ns: float | None
    share: float | None  # of the row's difference; None when that is zero
    # Runs that did not separate this part (its time is in their remainder), each
    # with explain's reason (its Missing code, or its words): ((side, why), ...).
    unmeasured: tuple[tuple[str, Missing | NotExplained | str], ...] = ()
    # The remainder only: the parts a run did not separate, inside it: ((side, part), ...).
    holds: tuple[tuple[str, str], ...] = ()

    @property
    def moved(self) -> bool:
        """The interval of the difference excludes zero."""
        return self.low_ns is not None and (self.low_ns > 0 or (self.high_ns or 0) < 0)

    @property
    def remainder(self) -> bool:
        return self.name in (REST, REST_USER)


@dataclass
class RowWhy:
    """One row of a comparison (run A's record against run B's), split."""

    probe: str
    params: dict[str, ParamValue]  # run A's
    other_params: dict[str, ParamValue]  # run B's (they differ where rows were paired)
    decision: str | None  # compare's: slower / faster / no difference
    reference_ns: float
    other_ns: float
    low_ns: float | None  # the row's difference, within-run interval
    high_ns: float | None
    parts: list[PartDifference] = field(default_factory=list)  # they add up to the difference
    phases: list[PartDifference] = field(default_factory=list)  # both traced
    not_split: list[Unsplit] = field(default_factory=list)
    excluded: tuple[Exclusion, ...] = ()  # why compare leaves the row out of its summary
    selected: bool = False  # a probe either run named in its selection

    @property
    def difference_ns(self) -> float:
        return self.other_ns - self.reference_ns

    @property
    def largest(self) -> PartDifference | None:
        """The part, remainder included, that carries most of the difference."""
        return _largest(self.parts, self.difference_ns)

    @property
    def largest_phase(self) -> PartDifference | None:
        return _largest(self.phases, self.difference_ns)


@dataclass
class Why:
    """Run B against run A, row by row, and where the difference sits overall."""

    rows: list[RowWhy]  # the selected rows first
    env: list[envparts.KeyDifference]  # what differs, ranked by what it acts on
    groups: dict[str, int]  # per part group: the rows whose largest part is in it
    top_group: str | None
    top_keys: list[envparts.KeyDifference]  # the keys that act on top_group, best first
    not_split: list[tuple[str, Unsplit]]  # (variant, why) of the rows that have no parts
    level: float = stats.DEFAULT_LEVEL
    every_row: bool = False  # no row differed: every row measured in both was split
    moved: bool = False  # the groups count rows whose largest part moved beyond its samples
    load: tuple[RunLoad, RunLoad] | None = None  # each run's own records, counted


def _largest(parts: list[PartDifference], total: float) -> PartDifference | None:
    sign = 1.0 if total >= 0 else -1.0
    candidates = [p for p in parts if p.difference_ns * sign > 0]
    return max(candidates, key=lambda p: p.difference_ns * sign, default=None)


# ---- the parts of one record --------------------------------------------------------
def call_parts(record: Result, bare: Result | None) -> list[Part]:
    """A system call's figure split like a switch's: kernel entry/exit (the bare
    trap, ``syscall.enosys``) and the call's own work (the rest); empty where
    the run has no bare trap or it measured higher than the call."""
    median = _median(record)
    if record.probe == bare_syscall():
        whole = PartSource(WHOLE_MEDIAN)
        return [Part(KERNEL_ENTRY_PART, median, whole, [term(1.0, record, MEDIAN)])]
    if bare is None or bare.summary is None:
        return []
    entry = _median(bare)
    if entry > median:
        return []
    priced = PartSource(CALLS_PRICED, (1.0, entry), bare_syscall())
    return [
        Part(KERNEL_ENTRY_PART, entry, priced, [term(1.0, bare)]),
        Part(
            CALL_WORK,
            median - entry,
            PartSource(MEDIAN_LESS_PARTS),
            [term(1.0, record), term(-1.0, bare)],
        ),
    ]


def _median(record: Result) -> float:
    assert record.summary is not None  # a row compared: measured on both sides
    return float(record.summary.median)


def _key(record: Result) -> tuple[str, str]:
    return record.probe, params_key(dict(record.params))


class RunParts:
    """One run's records by variant key, and each record's parts (explain, once)."""

    def __init__(self, results: Sequence[Result]):
        self.by_key = {_key(r): r for r in results}
        self._results = results
        self._explained: dict[tuple[str, str], Explanation] | None = None

    def explanation(self, record: Result) -> Explanation | None:
        if self._explained is None:
            self._explained = {
                (e.probe, params_key(e.params)): e for e in explain(self._results).explanations
            }
        return self._explained.get(_key(record))

    def parts(self, record: Result) -> tuple[list[Part], list[Unsplit]]:
        """The record's parts, and what its explanation could not separate."""
        if record.probe.endswith("_vdso"):
            return [], [Unsplit(VDSO)]
        if record.family == "syscall" and record.unit == "ns":
            bare = next(
                (
                    r
                    for (probe, _), r in self.by_key.items()
                    if probe == bare_syscall() and r.verdict.measured
                ),
                None,
            )
            parts = call_parts(record, bare)
            return parts, [] if parts else [Unsplit(NO_BARE, detail=bare_syscall())]
        found = self.explanation(record)
        if found is None:
            return [], []
        missing = [Unsplit(EXPLAIN, detail=m.part, missing=m) for m in found.not_separated]
        said = [Unsplit(EXPLAIN, detail=n.part, said=n) for n in found.not_explained]
        return found.parts, missing + said


# ---- the bootstrap of a sum of medians ----------------------------------------------
Source = tuple[int, tuple[str, str], str]  # (run: 0 for A, 1 for B, record key, which figure)


class Resampler:
    """Replicates of every figure the parts use, all parts of one replicate from one draw."""

    def __init__(self, runs: list[RunParts], level: float, resamples: int = RESAMPLES):
        self.runs = runs
        self.level = level
        self.resamples = resamples
        self.rng = np.random.default_rng(0)
        self._drawn: dict[Source, np.ndarray | None] = {}

    def _draw(self, source: Source) -> np.ndarray | None:
        if source in self._drawn:
            return self._drawn[source]
        run, key, which = source
        record = self.runs[run].by_key.get(key)
        drawn = None
        if record is not None and which == BASELINE:
            summary = record.block("baseline").get("summary") or {}
            ci = summary.get("median_ci")
            if ci and summary.get("median") is not None:
                from scipy.stats import norm

                width = float(ci["high"]) - float(ci["low"])
                sd = width / (2.0 * float(norm.ppf(0.5 + float(ci["level"]) / 2.0)))
                drawn = self.rng.normal(float(summary["median"]), sd, self.resamples)
        elif record is not None and record.samples:
            samples = np.asarray(record.samples, dtype=float)
            index = self.rng.integers(0, samples.size, size=(self.resamples, samples.size))
            drawn = np.median(samples[index], axis=1)
        self._drawn[source] = drawn
        return drawn

    def interval(self, signed_terms: list[tuple[int, Term]]) -> tuple[float, float] | None:
        """The interval of sum(coefficient x figure) over terms of runs A (0) and B (1)."""
        if not signed_terms:
            return None
        total = np.zeros(self.resamples)
        for run, (coefficient, key, which) in signed_terms:
            drawn = self._draw((run, key, which))
            if drawn is None:
                return None
            total += coefficient * drawn
        alpha = 1.0 - self.level
        low, high = np.quantile(total, [alpha / 2.0, 1.0 - alpha / 2.0])
        return float(low), float(high)


# ---- one row ------------------------------------------------------------------------
Signed = list[tuple[int, Term]]  # terms of runs A (0) and B (1)


@dataclass
class _Side:
    """One run's side of a row: its parts but the rest, each (ns, signed terms;
    None: not a sum of medians), and the parts it did not separate."""

    run: int
    record: Result
    parts: dict[str, tuple[float, Signed | None]]
    rest: bool  # explain gave the figure a rest
    missing: list[Unsplit]
    unmeasured: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return _median(self.record)


def _side(run: int, record: Result, parts: list[Part], missing: list[Unsplit]) -> _Side:
    """A user-level switch not split (its whole figure one part) is all rest."""
    rests = (REST, REST_USER)
    found = {
        p.name: (p.ns, [(run, t) for t in p.terms] if p.terms else None)
        for p in parts
        if p.name not in rests
    }
    return _Side(run, record, found, any(p.name in rests for p in parts), missing)


def _absent_by_definition(name: str, params: Mapping[str, ParamValue]) -> bool:
    """A part this variant cannot have: zero, not unmeasured."""
    if name == ADDRESS_SPACE_PART:
        return params.get("between") == "threads"
    if name == envparts.IDLE_PART:
        return params.get("idle") == "held" or params.get("cpus") != "cross"
    return False


def _negated(terms: Signed) -> Signed:
    return [(run, (-c, k, w)) for run, (c, k, w) in terms]


def split_row(
    reference: Result,
    other: Result,
    runs: list[RunParts],
    resampler: Resampler,
    decision: str | None = None,
) -> RowWhy:
    """Run A's record against run B's, part by part (they add up to the row's
    difference, the remainder included) and phase by phase."""
    total = resampler.interval([(1, term(1.0, other)), (0, term(-1.0, reference))])
    row = RowWhy(
        probe=reference.probe,
        params=dict(reference.params),
        other_params=dict(other.params),
        decision=decision,
        reference_ns=_median(reference),
        other_ns=_median(other),
        low_ns=total[0] if total else None,
        high_ns=total[1] if total else None,
    )
    (a_parts, a_missing), (b_parts, b_missing) = runs[0].parts(reference), runs[1].parts(other)
    if not a_parts or not b_parts:
        row.not_split.append(_no_parts(a_parts, b_parts, a_missing or b_missing))
        return row
    a_parts, b_parts = _same_naming(a_parts, b_parts), _same_naming(b_parts, a_parts)
    a_parts, b_parts = _same_steps(a_parts, b_parts), _same_steps(b_parts, a_parts)
    sides = (_side(0, reference, a_parts, a_missing), _side(1, other, b_parts, b_missing))
    _cross_run_twin(sides, row)
    longer, shorter = (b_parts, a_parts) if len(b_parts) > len(a_parts) else (a_parts, b_parts)
    names = [p.name for p in [*longer, *shorter]] + [n for s in sides for n in s.parts]
    for name in dict.fromkeys(n for n in names if n not in (REST, REST_USER)):
        row.parts.append(_part_difference(name, sides, row, resampler))
    remainder = _remainder(sides, row, resampler)
    if remainder is not None:
        row.parts.append(remainder)
    row.phases = _phase_differences(reference, other, resampler, row)
    row.not_split += _missing(sides, traced=bool(row.phases))
    return row


def _no_parts(a_parts: list[Part], b_parts: list[Part], missing: list[Unsplit]) -> Unsplit:
    if a_parts or b_parts:
        return Unsplit(ONE_SIDE, sides="A" if a_parts else "B")
    return missing[0] if missing else Unsplit(NO_PARTS)


def _part_difference(
    name: str, sides: tuple[_Side, _Side], row: RowWhy, resampler: Resampler
) -> PartDifference:
    """B's part less A's: zero on a side that has none by definition, and zero
    on a side that did not separate it (its time is in that side's remainder)."""
    values: list[float] = []
    signed: Signed | None = []
    unmeasured = []
    for side, params in zip(sides, (row.params, row.other_params), strict=True):
        found = side.parts.get(name)
        if found is None:
            values.append(0.0)
            if not _absent_by_definition(name, params):
                side.unmeasured.append(name)
                unmeasured.append((SIDES[side.run], _why_unmeasured(side, name)))
            continue
        values.append(found[0])
        terms = found[1]
        if signed is not None and terms is not None:
            signed += terms if side.run else _negated(terms)
        else:
            signed = None
    interval = resampler.interval(signed) if signed else None
    return _difference(name, values[0], values[1], interval, row, unmeasured=tuple(unmeasured))


def _part_of(entry: Unsplit) -> str | Missing | NotExplained:
    """The part an EXPLAIN entry is about: its code's part, or, for what is about
    no part (a user-level chain, the parts above the whole), the entry itself."""
    if entry.missing is not None:
        return entry.missing.part or entry.missing
    if entry.said is not None:
        return entry.said.part or entry.said
    return entry.detail


def _reason_of(entry: Unsplit) -> Missing | NotExplained | str:
    """Why: explain's code, what it measured but not as a share, or nothing more."""
    return entry.missing or entry.said or ""


def _why_unmeasured(side: _Side, name: str) -> Missing | NotExplained | str:
    """Explain's reason why SIDE has no part NAME (taken out of its missing list)."""
    for entry in side.missing:
        if entry.code == EXPLAIN and _part_of(entry) == name:
            side.missing.remove(entry)
            return _reason_of(entry)
    return ""


def _remainder(
    sides: tuple[_Side, _Side], row: RowWhy, resampler: Resampler
) -> PartDifference | None:
    """Each side's median less every part it measured, B's less A's: what no
    measurement separates. None where neither side has a rest (a system call's
    two parts are its whole figure)."""
    values: list[float] = []
    signed: Signed | None = []
    for side in sides:
        values.append(side.median - sum(ns for ns, _ in side.parts.values()))
        terms: Signed | None = [(side.run, term(1.0, side.record))]
        for _, part_terms in side.parts.values():
            terms = None if terms is None or part_terms is None else terms + _negated(part_terms)
        if signed is not None and terms is not None:
            signed += terms if side.run else _negated(terms)
        else:
            signed = None
    holds = tuple((SIDES[side.run], name) for side in sides for name in side.unmeasured)
    scale = max(abs(row.reference_ns), abs(row.other_ns), 1.0)
    if not holds and not any(s.rest for s in sides) and abs(values[1] - values[0]) < 1e-9 * scale:
        return None
    interval = resampler.interval(signed) if signed else None
    name = REST_USER if sides[0].record.get("family") == "uswitch" else REST
    return _difference(name, values[0], values[1], interval, row, holds=holds)


def _cross_run_twin(sides: tuple[_Side, _Side], row: RowWhy) -> None:
    """Paired threads against processes (``compare --pair between``), where the
    processes side's own run gives no address-space switch (no thread twin
    there, or its two figures not apart): the other run's thread variant is its
    twin, so the part is corrected(processes) less corrected(threads) across
    the pair, run-to-run noise included; that side's remainder gives it up."""
    kinds = (row.params.get("between"), row.other_params.get("between"))
    if set(kinds) != {"threads", "processes"} or not all(side.rest for side in sides):
        return
    processes = sides[1] if kinds[1] == "processes" else sides[0]
    threads = sides[1 - processes.run]
    if ADDRESS_SPACE_PART in processes.parts:
        return

    def corrected(side: _Side, sign: float) -> tuple[float, Signed]:
        record = side.record
        summary = (record.get("baseline") or {}).get("summary") or {}
        terms = [(side.run, term(sign, record))]
        if summary:
            terms.append((side.run, term(-sign, record, BASELINE)))
        return sign * (side.median - float(summary.get("median") or 0.0)), terms

    (mine, mine_terms), (theirs, their_terms) = corrected(processes, 1.0), corrected(threads, -1.0)
    processes.parts[ADDRESS_SPACE_PART] = (mine + theirs, mine_terms + their_terms)
    for entry in list(processes.missing):  # its own run's words no longer apply
        if entry.code == EXPLAIN and _part_of(entry) == ADDRESS_SPACE_PART:
            processes.missing.remove(entry)
    row.not_split.append(Unsplit(ACROSS_PAIR, detail=ADDRESS_SPACE_PART))


def _same_naming(parts: list[Part], other: list[Part]) -> list[Part]:
    """Where the other run could not price kernel entry/exit (no bare system
    call), this run's entry/exit and own work are set against the other's own
    work with its system calls included: their sum, under that name."""
    names = {p.name for p in parts}
    merged = f"{OWN_WORK_PART}, its system calls included"
    if merged not in {p.name for p in other} or not {KERNEL_ENTRY_PART, OWN_WORK_PART} <= names:
        return parts
    entry = next(p for p in parts if p.name == KERNEL_ENTRY_PART)
    own = next(p for p in parts if p.name == OWN_WORK_PART)
    together = Part(
        merged,
        entry.ns + own.ns,
        PartSource(JOINED, joined=(entry.source, own.source)),
        [*entry.terms, *own.terms],
    )
    kept = [p for p in parts if p.name not in (KERNEL_ENTRY_PART, OWN_WORK_PART)]
    return [together, *kept]


def _same_steps(parts: list[Part], other: list[Part]) -> list[Part]:
    """Where the other run's chain joined steps this run separates (a user-level
    switch: 'register save/restore + Boost.Context's own work' where one run's
    step was within its noise), this run's steps are joined the same way, so
    the two are set against each other under one name."""
    out = list(parts)
    names = {p.name for p in parts}
    for joined in [p.name for p in other if " + " in p.name and p.name not in names]:
        pieces = joined.split(" + ")
        found = [p for p in out if p.name in pieces]
        if len(found) != len(pieces):
            continue
        terms = [t for p in found for t in p.terms] if all(p.terms for p in found) else []
        source = PartSource(JOINED, joined=tuple(p.source for p in found))
        together = Part(joined, sum(p.ns for p in found), source, terms)
        at = out.index(found[0])
        out = [p for p in out if p.name not in pieces]
        out.insert(at, together)
    return out


def _missing(sides: tuple[_Side, _Side], traced: bool) -> list[Unsplit]:
    """What the two explanations could not separate, one entry per part, with
    each run's reason; the rest's wake-up and switch only when neither run's
    traced phases split them."""
    by_part: dict[str | Missing | NotExplained, dict[str, Missing | NotExplained | str]] = {}
    inside = False
    for side in sides:
        for entry in side.missing:
            if entry.code != EXPLAIN:
                continue
            if entry.missing is not None and entry.missing.code == REST_INSIDE:
                inside = True
                continue
            by_part.setdefault(_part_of(entry), {})[SIDES[side.run]] = _reason_of(entry)
    out = [
        Unsplit(
            EXPLAIN,
            sides=" and ".join(said),
            detail=part if isinstance(part, str) else "",
            items=tuple(said.items()),
        )
        for part, said in by_part.items()
    ]
    if inside and not traced:
        out.append(Unsplit(REST_UNTRACED))
    return out


def _difference(
    name: str,
    a_ns: float,
    b_ns: float,
    interval: tuple[float, float] | None,
    row: RowWhy,
    **marks: Any,
) -> PartDifference:
    total = row.difference_ns
    return PartDifference(
        name=name,
        group=envparts.group_of(name),
        reference_ns=a_ns,
        other_ns=b_ns,
        difference_ns=b_ns - a_ns,
        low_ns=interval[0] if interval else None,
        high_ns=interval[1] if interval else None,
        share=(b_ns - a_ns) / total if total else None,
        **marks,
    )


def _phase_differences(
    reference: Result, other: Result, resampler: Resampler, row: RowWhy
) -> list[PartDifference]:
    """Both records traced and tiled: each phase's scaled time, B less A (a phase
    one pass never saw is zero there), and the time no chain covers."""
    views = traced_view(reference), traced_view(other)
    if any(view is None or view.status != "ok" for view in views):
        if any(view is not None for view in views):
            code = PHASES_ONE_TRACED if None in views else PHASES_FAILED
            row.not_split.append(Unsplit(code))
        return []
    a_view, b_view = views
    assert a_view is not None and b_view is not None
    a_by = {p.name: p for p in a_view.phases}
    b_by = {p.name: p for p in b_view.phases}
    out = []
    for name in dict.fromkeys([*a_by, *b_by]):
        a, b = a_by.get(name), b_by.get(name)
        signed = []
        if b is not None:
            signed.append((1, term(b.share, other)))
        if a is not None:
            signed.append((0, term(-a.share, reference)))
        out.append(
            _difference(
                name, a.ns if a else 0.0, b.ns if b else 0.0, resampler.interval(signed), row
            )
        )
    a_rest, b_rest = 1.0 - a_view.covered_share, 1.0 - b_view.covered_share
    if a_rest == 0.0 and b_rest == 0.0:
        return out  # the chains cover both traced samples whole
    interval = resampler.interval([(1, term(b_rest, other)), (0, term(-a_rest, reference))])
    out.append(_difference(TRACE_REST, a_view.rest_ns or 0.0, b_view.rest_ns or 0.0, interval, row))
    return out


# ---- a whole comparison -------------------------------------------------------------
def why(
    comparison: Comparison,
    index: int = 1,
    every_row: bool = False,
    measured: list[StoredRun] | None = None,
) -> Why:
    """Run ``index`` of the comparison against run A: every row that differs
    (compare's decision slower or faster, not excluded; with ``every_row``, or
    when no row differs, every row measured in both runs, excluded ones marked),
    split, the rows either run selected by name first; each run's load; and the
    environment keys ranked by the parts that moved. ``measured``: the runs as
    stored, where the comparison holds only some of their records
    (``pairs``): parts come from every record of a run."""
    whole = measured or comparison.runs
    pair = [whole[0], whole[index]]
    runs = [RunParts([measured_as(r) for r in run.results]) for run in pair]
    resampler = Resampler(runs, comparison.level)
    pairs = [(row, _pair(row, index)) for row in comparison.rows]
    measured_rows = [(row, found) for row, found in pairs if found is not None]
    differing = [
        (row, found)
        for row, found in measured_rows
        if found[2] in (SLOWER, FASTER) and not row.cells[index].excluded
    ]
    every_row = every_row or not differing
    named = selected_probes(pair)
    rows, unsplit = [], []
    for row, (reference, other, decision) in measured_rows if every_row else differing:
        split = split_row(reference, other, runs, resampler, decision)
        split.excluded = row.cells[index].excluded
        split.selected = row.probe in named
        if split.parts:
            rows.append(split)
        else:
            unsplit.append((_variant(split), split.not_split[0]))
    rows.sort(key=lambda split: not split.selected)  # stable: the rest keep their order
    groups, moved = _groups(rows)
    top_group = max(groups, key=lambda g: groups[g], default=None)
    env = envparts.ranked(comparison.env, index, rows, top_group)
    top_keys = [key for key in env if top_group is not None and key.acts_on(top_group)]
    return Why(
        rows,
        env,
        groups,
        top_group,
        top_keys,
        unsplit,
        comparison.level,
        every_row=every_row,
        moved=moved,
        load=(run_load(pair[0].results), run_load(pair[1].results)),
    )


def _groups(rows: list[RowWhy]) -> tuple[dict[str, int], bool]:
    """Where it sits: per row, its largest part, the remainder included (its
    largest phase where the parts give none); a row counts only where that part
    moved beyond its samples, unless no row's did."""
    largest = [
        (split.largest_phase if split.phases and not split.largest else split.largest)
        for split in rows
    ]
    moved = [part for part in largest if part is not None and part.moved]
    groups: dict[str, int] = {}
    for part in moved or [part for part in largest if part is not None]:
        groups[part.group] = groups.get(part.group, 0) + 1
    return groups, bool(moved)


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def selected_probes(runs: list[StoredRun]) -> set[str]:
    """The probes either run's selection named outright (not by a glob or a
    family): what its user asked about."""
    named = set()
    for run in runs:
        for pattern in (run.env.get("options") or {}).get("probes") or []:
            if isinstance(pattern, str) and not _is_glob(pattern) and "." in pattern:
                named.add(pattern)
    return named


def _variant(split: RowWhy) -> str:
    from ctxbench.records.naming import variant_name

    return variant_name(split.probe, split.params)


def _pair(row: Row, index: int) -> tuple[Result, Result, str | None] | None:
    """Run A's result of the row and run INDEX's as measured (a paired one's own),
    with the row's decision; None where either has no figure."""
    cell = row.cells[index]
    reference = row.cells[0].result
    other = None if cell.result is None else measured_as(cell.result)
    if reference is None or other is None or cell.note:
        return None
    if reference.summary is None or other.summary is None:
        return None
    if not math.isfinite(float(reference.summary.median)):
        return None
    return reference, other, cell.decision
