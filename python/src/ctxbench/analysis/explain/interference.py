"""What a run's own records say of the load it ran under: counts, no words.

Before a difference between two runs is put down to the machine, the runs'
records say whether one side carried interference: figures ``suspect`` for
their spread (``unstable``, ``high_spread``, ``interference``), samples set
aside and taken again because the host reference ran slowed or the kernel's
counters saw another task or the hypervisor take the CPU, variants whose
host reference was still slowed after every retry, and the hypervisor's
steal time over the kept samples. ``compare --why`` and ``show``'s Why
count them here; the views word them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxbench.records.result import Result

# Verdict reasons that a load on the machine gives a figure (its spread);
# the others say it measured something else (too few switches, a migration).
LOAD_REASONS = ("unstable", "high_spread", "interference")
MEASURED = ("ok", "suspect")


@dataclass(frozen=True)
class RunLoad:
    """One run's records, counted."""

    measured: int  # results with a figure (ok or suspect)
    suspect: int  # of them, suspect for a LOAD_REASONS reason
    reasons: dict[str, int] = field(default_factory=dict)  # LOAD_REASONS code -> results
    set_aside_results: int = 0  # results with samples set aside and taken again
    set_aside_samples: int = 0
    slowed: int = 0  # results whose host reference was still slowed (interference.slowed)
    worst_reference_ratio: float | None = None  # the kept attempts' slowest reference / best
    steal_ns: float = 0.0  # the hypervisor's steal time over the kept samples (counters)
    steal_results: int = 0  # results whose kept samples saw steal
    counted: int = 0  # results whose kernel counters (steal among them) were read

    @property
    def carried(self) -> bool:
        """The run carried interference: a figure suspect for its spread, a sample
        set aside, a slowed host reference or steal time."""
        return bool(self.suspect or self.set_aside_samples or self.slowed or self.steal_results)


def _set_aside(result: Result) -> int:
    count = len(result.block("set_aside").get("samples") or [])
    if count:
        return count
    block = result.block("interference")
    attempts = block.get("attempts") or []
    kept = block.get("kept", 0)
    return int((attempts[kept] if 0 <= kept < len(attempts) else {}).get("set_aside") or 0)


def _reference_ratio(result: Result) -> float | None:
    block = result.block("interference")
    attempts = block.get("attempts") or []
    kept = block.get("kept", 0)
    if not 0 <= kept < len(attempts):
        return None
    ratio = attempts[kept].get("reference_ratio")
    return float(ratio) if ratio is not None else None


def run_load(results: Sequence[Result]) -> RunLoad:
    """The counts of RESULTS (one run's result records)."""
    measured = [r for r in results if r.verdict.status in MEASURED]
    reasons: Counter[str] = Counter()
    suspect = aside_results = aside = slowed = steal_results = counted = 0
    steal = 0.0
    ratios = []
    for r in measured:
        load_codes = set(r.verdict.codes).intersection(LOAD_REASONS)
        if r.verdict.status == "suspect" and load_codes:
            suspect += 1
            reasons.update(load_codes)
        count = _set_aside(r)
        aside += count
        aside_results += bool(count)
        slowed += bool(r.block("interference").get("slowed"))
        ratio = _reference_ratio(r)
        if ratio is not None:
            ratios.append(ratio)
        kept = r.block("counters").get("kept") or {}
        counted += bool(kept)
        if kept.get("steal_ns"):
            steal += float(kept["steal_ns"])
            steal_results += 1
    return RunLoad(
        measured=len(measured),
        suspect=suspect,
        reasons={code: reasons[code] for code in LOAD_REASONS if reasons[code]},
        set_aside_results=aside_results,
        set_aside_samples=aside,
        slowed=slowed,
        worst_reference_ratio=max(ratios) if ratios else None,
        steal_ns=steal,
        steal_results=steal_results,
        counted=counted,
    )
