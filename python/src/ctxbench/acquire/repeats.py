"""`run --repeat N`: N engine processes over one selection, stored as one run keeping each repeat.

A run's samples share its process, its placement and the host's state for
those seconds, so they cannot say how much the next run moves. Repeats in
separate engine processes can: the variant's figure is taken over all of
them, its interval resamples the repeats and then the samples within them
(``stats.hierarchical_bootstrap_median``), and ``compare`` judges two runs
with repeats by the repeats' spread (``noise``).

The repeats run one after another, odd ones in the selection's order and
even ones in reverse (``repeat_selectors``), so a variant measured early in
one repeat is measured late in the next and a slow spell of the host does
not fall on the same variants every time.

``merge_repeats`` is pure: per variant it pools the repeats' samples into
one record (the summary over all of them, its median_ci the hierarchical
interval), keeps each repeat's own figure in the record's ``repeats`` block,
and writes one env (``options.repeat``) and one run_end for the run.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ctxbench import stats
from ctxbench.records.building import run_end_record
from ctxbench.records.naming import params_key

# One engine process per suite: two would take the quick suite past its 30 s
# on the 2-vCPU KVM guest, and bench/gate.py met its targets with one
# (docs/accuracy.md, "Repeats").
QUICK_REPEATS = 1
DEFAULT_REPEATS = 1
MAX_REPEATS = 20
RESAMPLES = 2000  # per variant: a run has a hundred variants or more
WORST_FIRST = ("failed", "unsupported", "suspect", "ok")


def repeat_selectors(selectors: Sequence[str], repeat: int) -> list[str]:
    """The selection for repeat ``repeat`` (from 1): as given, or reversed for even repeats."""
    return list(selectors) if repeat % 2 else list(reversed(selectors))


def _variant(record: dict[str, Any]) -> tuple[str, str]:
    return record["probe"], params_key(record["params"])


def _has_figure(record: dict[str, Any]) -> bool:
    return record["verdict"]["status"] in ("ok", "suspect") and bool(record.get("samples"))


def _repeat_entry(number: int, record: dict[str, Any]) -> dict[str, Any]:
    summary = record.get("summary") or {}
    return {
        "repeat": number,
        "run_id": record["run_id"],
        "status": record["verdict"]["status"],
        "n": len(record.get("samples") or []),
        "median": summary.get("median"),
        "median_ci": summary.get("median_ci"),
    }


def _verdict(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst status among the repeats, with every repeat's reasons once."""
    status = min((r["verdict"]["status"] for r in records), key=WORST_FIRST.index)
    reasons, seen = [], set()
    for record in records:
        for reason in record["verdict"]["reasons"]:
            key = (reason["code"], reason["detail"])
            if key not in seen:
                seen.add(key)
                reasons.append(reason)
    return {**records[0]["verdict"], "status": status, "reasons": reasons}


def _set_aside(measured: list[dict[str, Any]], pooled: list[float]) -> dict[str, Any] | None:
    blocks = [r["set_aside"] for r in measured if r.get("set_aside")]
    aside = [v for block in blocks for v in block.get("samples", [])]
    if not aside:
        return None
    merged = {"samples": aside, "summary_with_them": stats.summarize(pooled + aside)}
    # Each sample's reason, where every repeat recorded them.
    if all(len(block.get("reasons", [])) == len(block["samples"]) for block in blocks):
        merged["reasons"] = [reason for block in blocks for reason in block["reasons"]]
    return merged


def merge_variant(
    records: list[tuple[int, dict[str, Any]]], run_id: str, seed: int = 0, asked: int = 2
) -> dict[str, Any]:
    """One variant's records of the repeats (repeat number, record) as one record;
    a variant only one repeat measured is that repeat's record, with a note."""
    if len(records) == 1:
        number, only = records[0]
        single = copy.deepcopy(only)
        single["run_id"] = run_id
        single["notes"] = [
            *(single.get("notes") or []),
            f"measured in repeat {number} only, of {asked} asked",
        ]
        return single
    with_figures = [(number, record) for number, record in records if _has_figure(record)]
    measured = [record for _, record in with_figures]
    base = copy.deepcopy(measured[0] if measured else records[0][1])
    base["run_id"] = run_id
    entries = [_repeat_entry(number, record) for number, record in records]
    notes = list(base.get("notes") or [])
    if len(measured) < len(records):
        missing = [e["repeat"] for e in entries if e["status"] not in ("ok", "suspect")]
        notes.append(
            f"repeat(s) {', '.join(map(str, missing))} gave no figure; "
            "the figure is over the others"
        )
    base["verdict"] = _verdict([record for _, record in records])
    if measured and "matrix" not in base:
        pooled = [value for record in measured for value in record["samples"]]
        interval = stats.hierarchical_bootstrap_median(
            [record["samples"] for record in measured], resamples=RESAMPLES, seed=seed
        )
        summary = stats.summarize(pooled)
        if interval is not None:
            summary["median_ci"] = {
                "low": interval.low,
                "high": interval.high,
                "level": interval.level,
                "method": interval.method,
            }
        base["samples"], base["summary"] = pooled, summary
        base.pop("set_aside", None)
        aside = _set_aside(measured, pooled)
        if aside is not None:
            base["set_aside"] = aside
        base.pop("stability", None)  # judged per process; the repeats block keeps each figure
        baseline = base.get("baseline")
        if baseline and base.get("corrected") is not None:
            value = float(baseline["value"])
            corrected = {
                "median": summary["median"] - value,
                "min": summary["min"] - value,
                "p99": summary["p99"] - value,
            }
            corrected["nonpositive"] = corrected["median"] <= 0.0
            base["corrected"] = corrected
        notes.append(
            f"figure over {len(measured)} repeats (separate engine processes): the samples "
            "together, the interval a hierarchical bootstrap (repeats, then samples); "
            "baseline, derived figures, placement, checks and kernel counters are repeat "
            f"{with_figures[0][0]}'s"
        )
    elif "matrix" in base:
        notes.append("a CPU-pair matrix is not pooled over repeats: this is the first repeat's")
    base["duration_s"] = round(sum(float(r.get("duration_s") or 0.0) for _, r in records), 6)
    base["repeats"] = {"count": len(records), "runs": entries}
    if notes:
        base["notes"] = notes
    return base


def merge_repeats(
    repeats: Sequence[Sequence[dict[str, Any]]], asked: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """The records of the repeats (each one engine run: env, results, run_end)
    as the records of one run: the first repeat's run id and env, one result
    per variant in the first repeat's order, one run_end. ``asked``: the
    repeats asked for (default: as many as given); the run is interrupted
    when fewer of them ended."""
    runs = [list(records) for records in repeats if any(r["kind"] == "env" for r in records)]
    if not runs:
        raise ValueError("no repeat wrote an env record")
    env = copy.deepcopy(next(r for r in runs[0] if r["kind"] == "env"))
    run_id = env["run_id"]
    asked = asked or len(repeats)
    env.setdefault("options", {})["repeat"] = asked
    env["notes"] = [
        *(env.get("notes") or []),
        f"{len(runs)} of {asked} repeats in separate engine processes, stored as this run: "
        + ", ".join(next(r["run_id"] for r in run if r["kind"] == "env") for run in runs),
    ]
    by_variant: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for number, records in enumerate(runs, start=1):
        for record in records:
            if record["kind"] == "result":
                by_variant.setdefault(_variant(record), []).append((number, record))
    # The selection's order: the first repeat's variant_index where it has one.
    ordered = sorted(
        by_variant.values(),
        key=lambda records: (
            records[0][1].get("variant_index", 0) if records[0][0] == 1 else 1 << 30
        ),
    )
    results = [
        merge_variant(records, run_id, seed=seed + index, asked=asked)
        for index, records in enumerate(ordered)
    ]
    for index, result in enumerate(results, start=1):
        result["variant_index"] = index
    ends = [r for run in runs for r in run if r["kind"] == "run_end"]
    interrupted = len(ends) < asked or any(end["interrupted"] for end in ends)
    duration = sum(float(end.get("duration_s") or 0.0) for end in ends)
    return [env, *results, run_end_record(run_id, results, duration, interrupted)]
