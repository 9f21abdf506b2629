"""Exporters: a stored run, or a comparison of runs, as data for other tools.

``json`` gives the run's records verbatim as JSON Lines (env, results,
run_end), so ``ctxbench import`` elsewhere stores the same run; ``csv`` gives
one row per result with its summary, baseline and net figures; ``bmf`` gives
the Bencher Metric Format (https://bencher.dev/docs/reference/bencher-metric-format):
one benchmark per probe variant, named by ``records.variant_name``, with one
measure: ``latency`` for a time per operation (ns, Bencher's own latency
unit), ``throughput`` for a rate, else the record's unit (``cycles``,
``instructions``); its value is the median, lower and upper the ends of the
median's CI. Results without figures (unsupported, failed) are left out and
``omitted`` says which. ``comparison_dict`` gives a comparison of runs as
the plain data of ``compare --json`` (schema/compare.schema.json), ``why_dict``
adds ``--why`` and ``--pair`` to it, and ``changes_dict`` is ``history
--changes --json`` (schema/changes.schema.json). Pure: they return the text
or data, the CLI decides where it goes.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ctxbench import stats, units
from ctxbench.analysis.compare.comparison import Comparison, MatrixComparison, time_ratio
from ctxbench.analysis.compare.gate import Gate, GateRow, judged
from ctxbench.analysis.compare.noise import Noise, detectable
from ctxbench.records.naming import variant_name
from ctxbench.records.runs import StoredRun
from ctxbench.records.strict_json import dumps
from ctxbench.views.compare.comparison import (
    excluded_words,
    summary_line,
    summary_lines,
    why_not_words,
)
from ctxbench.views.compare.gate import gate_detail

if TYPE_CHECKING:  # numpy and ruptures load with them: imported where --why or --changes runs
    from ctxbench.analysis.compare.changes import Change, MachineChanges
    from ctxbench.analysis.compare.difference_parts import PartDifference, RowWhy, Why
    from ctxbench.analysis.compare.pairs import Pairing

FORMATS = ("json", "csv", "bmf")
# Bencher measure slug per record unit (the record schema's unit enum).
BMF_MEASURES = {
    "ns": "latency",
    "msgs/s": "throughput",
    "cycles": "cycles",
    "instructions": "instructions",
}

CSV_COLUMNS = [
    "run_id", "probe", "family", "params", "unit", "status", "reasons", "n", "min", "median",
    "mean", "stddev", "p90", "p99", "max", "median_ci_low", "median_ci_high", "baseline_name",
    "baseline_value", "corrected_median", "corrected_min", "op",
]  # fmt: skip


def json_lines(stored: StoredRun) -> str:
    return "".join(dumps(record) + "\n" for record in stored.records.all())


def _csv_rows(stored: StoredRun) -> Iterator[list[Any]]:
    for result in stored.records.results:
        summary = result.get("summary") or {}
        ci = summary.get("median_ci") or {}
        baseline = result.get("baseline") or {}
        corrected = result.get("corrected") or {}
        yield [
            result["run_id"],
            result["probe"],
            result["family"],
            json.dumps(result["params"], sort_keys=True),
            result["unit"],
            result["verdict"]["status"],
            "; ".join(f"{r['code']}: {r['detail']}" for r in result["verdict"]["reasons"]),
            summary.get("n", 0),
            *(summary.get(k, "") for k in ("min", "median", "mean", "stddev", "p90", "p99", "max")),
            ci.get("low", ""),
            ci.get("high", ""),
            baseline.get("name", ""),
            baseline.get("value", ""),
            corrected.get("median", ""),
            corrected.get("min", ""),
            result["op"],
        ]


def csv_text(stored: StoredRun) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_csv_rows(stored))
    return buffer.getvalue()


def _has_figures(result: dict[str, Any]) -> bool:
    return result["verdict"]["status"] in ("ok", "suspect") and bool(result.get("summary"))


def bmf(stored: StoredRun) -> dict[str, dict[str, dict[str, float]]]:
    """The run as Bencher Metric Format data (only the results with figures)."""
    data: dict[str, dict[str, dict[str, float]]] = {}
    for result in stored.records.results:
        if not _has_figures(result):
            continue
        summary = result["summary"]
        metric = {"value": float(summary["median"])}
        ci = summary.get("median_ci")
        if ci:
            metric["lower_value"] = float(ci["low"])
            metric["upper_value"] = float(ci["high"])
        name = variant_name(result["probe"], result["params"])
        data.setdefault(name, {})[BMF_MEASURES[result["unit"]]] = metric
    return data


def notes(stored: StoredRun, form: str) -> list[str]:
    """What ``form`` cannot say about the run (bmf: the results left out, for
    having no figure, and the suspect ones, exported without their verdict)."""
    if form != "bmf":
        return []
    left_out = [
        variant_name(r["probe"], r["params"]) for r in stored.records.results if not _has_figures(r)
    ]
    suspect = [
        variant_name(r["probe"], r["params"])
        for r in stored.records.results
        if _has_figures(r) and r["verdict"]["status"] != "ok"
    ]
    lines = []
    if left_out:
        lines.append(
            f"{len(left_out)} result(s) left out (unsupported or failed, no figure): "
            + "; ".join(left_out)
        )
    if suspect:
        lines.append(
            f"{len(suspect)} suspect result(s) exported, but BMF has no place for the verdict "
            "(`ctxbench show RUN` gives the reasons): " + "; ".join(suspect)
        )
    return lines


def export_text(stored: StoredRun, form: str) -> str:
    """The run in ``form`` (one of FORMATS)."""
    if form == "json":
        return json_lines(stored)
    if form == "csv":
        return csv_text(stored)
    if form == "bmf":
        return json.dumps(bmf(stored), indent=2, allow_nan=False) + "\n"
    raise ValueError(f"unknown export format {form!r}; use one of {', '.join(FORMATS)}")


# ---- a comparison: compare --json ---------------------------------------------
# 2: every row says what judged it (``noise``); decisions need the whole interval.
# 3: every row states its detectable slowdown and its noise's standard error
# and widenings; --fail-above gives every row an outcome (slower, not slower,
# inconclusive) and the gate passed, failed or inconclusive; suspect rows and
# run options no longer exclude a row.
COMPARISON_SCHEMA_VERSION = 3


def _finite(value: float | None) -> float | None:
    """A number JSON can carry (no NaN or infinity), else None."""
    return value if value is not None and math.isfinite(value) else None


def _difference_dict(difference: stats.Difference | None) -> dict[str, Any]:
    ratio = difference.ratio if difference else None
    u_test = difference.u_test if difference else None
    return {
        "ratio": None
        if ratio is None
        else {
            "value": _finite(ratio.ratio),
            "low": _finite(ratio.low),
            "high": _finite(ratio.high),
            "level": ratio.level,
            "method": ratio.method,
        },
        "p_value": None if u_test is None else _finite(u_test.p_value),
        "significant": bool(difference and difference.significant),
        "why_not_significant": why_not_words(difference.why_not) if difference else None,
    }


def _noise_dict(judged_by: Noise | None, index: int) -> dict[str, Any] | None:
    if judged_by is None:
        return None
    return {
        "source": judged_by.source,
        "statistic": judged_by.statistic,
        "spread": None if judged_by.spread is None else _finite(judged_by.spread),
        "n": judged_by.n,
        "floor": judged_by.floor,
        "se": None if judged_by.se is None else _finite(judged_by.se),
        "df": _finite(judged_by.df),
        "left_out": judged_by.left_out,
        "interfered": judged_by.interfered,
        "widened": [
            {
                "run": units.run_letter(0 if w.side == 0 else index),
                "cause": w.cause,
                "spread": _finite(w.spread),
            }
            for w in judged_by.widened
        ],
    }


def _gate_row_dict(verdict: GateRow) -> dict[str, Any]:
    decider = verdict.decider
    return {
        "variant": variant_name(verdict.row.probe, verdict.row.params),
        "run": units.run_letter(verdict.index),
        **_gate_judgment(verdict),
        "why": verdict.why,
        "detail": gate_detail(verdict),
        "decided_by": None
        if decider is None
        else {
            "repeats": decider.repeats,
            "earlier_runs": decider.earlier_runs,
            "quieter_moment": decider.quieter,
            "two_levels": decider.two_levels,
        },
        "again": None if verdict.again is None else _gate_judgment(verdict.again),
        "third": None if verdict.third is None else _gate_judgment(verdict.third),
    }


def _gate_judgment(verdict: GateRow) -> dict[str, Any]:
    """A gate row's outcome, time ratio, its interval and detectable slowdown."""
    return {
        "outcome": verdict.outcome,
        "time_ratio": _finite(verdict.time_ratio),
        "interval": None
        if verdict.interval is None
        else {"low": _finite(verdict.interval[0]), "high": _finite(verdict.interval[1])},
        "detectable_slowdown": _finite(verdict.detectable),
    }


def comparison_dict(comparison: Comparison, judged: Gate | None = None) -> dict[str, Any]:
    """The comparison as plain data (schema/compare.schema.json): one row per
    probe variant and run against the reference, the summary counts, the
    environment differences and, when asked, the --fail-above outcome."""
    summaries = _summary_dicts(comparison)
    data: dict[str, Any] = {
        "schema": COMPARISON_SCHEMA_VERSION,
        "kind": "comparison",
        "alpha": comparison.alpha,
        "level": comparison.level,
        "min_effect": comparison.min_effect,
        "runs": _run_dicts(comparison),
        "rows": _row_dicts(comparison),
        "summaries": summaries,
        "notes": summary_lines(comparison)[len(summaries) :],
        "environment": {
            "keys_compared": len(comparison.env.keys),
            "differing": [
                {"key": key, "values": comparison.env.values[key]}
                for key in comparison.env.differing
            ],
        },
        "matrices": [_matrix_dict(m) for m in comparison.matrices],
    }
    if judged is not None:
        data["fail_above"] = _gate_dict(judged)
    return data


def _run_dicts(comparison: Comparison) -> list[dict[str, Any]]:
    """The compared runs, each under its letter, with the options it was run with."""
    return [
        {
            "name": units.run_letter(index),
            "run_id": run.run_id,
            "label": run.info.label,
            "machine": run.info.machine,
            "started_at": run.info.started_at,
            "options": comparison.options[index] if index < len(comparison.options) else {},
        }
        for index, run in enumerate(comparison.runs)
    ]


def _row_dicts(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per probe variant and run against the reference (run A)."""
    reference = units.run_letter(0)
    rows = []
    for row in comparison.rows:
        base = row.cells[0]
        for index, cell in enumerate(row.cells[1:], start=1):
            ratio = time_ratio(cell.difference, row.unit) if cell.difference else None
            rows.append(
                {
                    "probe": row.probe,
                    "family": row.family,
                    "params": row.params,
                    "variant": variant_name(row.probe, row.params),
                    "unit": units.unit_name(row.unit),
                    "run": units.run_letter(index),
                    "reference": reference,
                    "reference_median": _finite(base.median),
                    "median": _finite(cell.median),
                    "reference_status": base.status,
                    "status": cell.status,
                    **_difference_dict(cell.difference),
                    "time_ratio": _finite(ratio),
                    "decision": cell.decision,
                    "note": cell.note,
                    "excluded": excluded_words(cell.excluded),
                    "judged": judged(cell),
                    "noise": _noise_dict(cell.noise, index),
                    "detectable_slowdown": _finite(detectable(cell.noise, comparison.level)),
                }
            )
    return rows


def _summary_dicts(comparison: Comparison) -> list[dict[str, Any]]:
    """The counts of each run against the reference, with their line."""
    reference = units.run_letter(0)
    return [
        {
            "run": units.run_letter(index),
            "reference": reference,
            "slower": summary.slower,
            "faster": summary.faster,
            "no_difference": summary.no_difference,
            "only_in_one_run": summary.only_in_one,
            "excluded": summary.excluded,
            "comparable": summary.comparable,
            "geometric_mean": _finite(summary.geometric_mean),
            "line": summary_line(summary, units.run_letter(index), reference),
        }
        for index, summary in enumerate(comparison.summaries, start=1)
    ]


def _gate_dict(judged: Gate) -> dict[str, Any]:
    """The --fail-above outcome: the gate's settings, its counts and its rows."""
    return {
        "percent": judged.percent,
        "power": judged.power,
        "allow_inconclusive": judged.allow_inconclusive,
        "outcome": judged.outcome,
        "failed": judged.failed,
        "confirmed_by": judged.confirmed_by,
        "third_by": judged.third_by,
        "counts": {
            "slower": judged.counts["slower"],
            "not_slower": judged.counts["not slower"],
            "inconclusive": judged.counts["inconclusive"],
            "not_measured": len(judged.not_measured),
        },
        "rows": [_gate_row_dict(verdict) for verdict in judged.rows],
        "not_measured": [_gate_row_dict(verdict) for verdict in judged.not_measured],
    }


def _matrix_dict(compared: MatrixComparison) -> dict[str, Any]:
    return {
        "probe": compared.probe,
        "params": compared.params,
        "unit": units.unit_name(compared.unit),
        "classes": [
            {
                "class": row.pair_class,
                "runs": [
                    {
                        "run": units.run_letter(index),
                        "median": _finite(cell.median),
                        "cells": cell.cells,
                        "note": cell.note,
                        **_difference_dict(cell.difference),
                    }
                    for index, cell in enumerate(row.cells)
                ],
            }
            for row in compared.rows
        ],
    }


# ---- compare --why and --pair, history --changes ---------------------------------------
def _part_dict(p: PartDifference) -> dict[str, Any]:
    from ctxbench.views.compare.difference import reason_words

    out = {
        "name": p.name,
        "group": p.group,
        "reference_ns": p.reference_ns,
        "other_ns": p.other_ns,
        "difference_ns": p.difference_ns,
        "low_ns": p.low_ns,
        "high_ns": p.high_ns,
        "share": p.share,
        "moved": p.moved,
    }
    if p.unmeasured:
        out["unmeasured"] = [{"run": side, "why": reason_words(why)} for side, why in p.unmeasured]
    if p.holds:
        out["holds"] = [{"run": side, "part": part} for side, part in p.holds]
    return out


def _row_dict(row: RowWhy) -> dict[str, Any]:
    from ctxbench.views.compare.difference import unsplit_words

    return {
        "probe": row.probe,
        "params": row.params,
        "other_params": row.other_params,
        "decision": row.decision,
        "reference_ns": row.reference_ns,
        "other_ns": row.other_ns,
        "difference_ns": row.difference_ns,
        "low_ns": row.low_ns,
        "high_ns": row.high_ns,
        "largest": row.largest.name if row.largest else None,
        "parts": [_part_dict(p) for p in row.parts],
        "phases": [_part_dict(p) for p in row.phases],
        "not_split": [unsplit_words(entry) for entry in row.not_split],
        "selected": row.selected,
        "excluded": excluded_words(row.excluded),
    }


def why_dict(result: Why | None, pairing: Pairing | None = None) -> dict[str, Any]:
    """``compare --why`` and ``--pair`` as JSON (schema/compare.schema.json:
    ``why`` and ``pairing``), beside ``comparison_dict``."""
    from dataclasses import asdict

    from ctxbench.analysis.compare.pairs import measured_as
    from ctxbench.views.compare.difference import METHOD, unsplit_words

    out: dict[str, Any] = {}
    if pairing is not None:
        out["pairing"] = {
            "parameters": list(pairing.names),
            "paired": pairing.paired,
            "unpaired_reference": pairing.unpaired_reference,
            "unpaired_other": pairing.unpaired_other,
            "ambiguous": pairing.ambiguous,
            "pairs": [
                {
                    "probe": result.probe,
                    "params": dict(result.params),
                    "other_params": dict(measured_as(result).params),
                }
                for result in pairing.runs[1].results
            ],
        }
    if result is not None:
        out["why"] = {
            "method": METHOD,
            "level": result.level,
            "top_group": result.top_group,
            "groups": result.groups,
            "top_keys": [k.key for k in result.top_keys],
            "environment": [
                {"key": k.key, "values": list(k.values), "acts_on": list(k.groups)}
                for k in result.env
            ],
            "not_split": [f"{variant}: {unsplit_words(e)}" for variant, e in result.not_split],
            "every_row": result.every_row,
            "moved": result.moved,
            "rows": [_row_dict(row) for row in result.rows],
        }
        if result.load is not None:
            out["why"]["load"] = [{**asdict(load), "carried": load.carried} for load in result.load]
    return out


def changes_dict(store: str, machines: list[MachineChanges], min_effect: float) -> dict[str, Any]:
    """``history --changes`` as JSON (schema/changes.schema.json), for a nightly job to alert on."""
    from ctxbench.analysis.compare.changes import METHOD

    def change(c: Change) -> dict[str, Any]:
        interval = c.difference.ratio
        return {
            "probe": c.probe,
            "params": c.params,
            "unit": units.unit_name(c.unit),
            "position": c.position,
            "run_id": c.run_id,
            "before_run_id": c.before_run_id,
            "runs_before": len(c.before),
            "runs_after": len(c.after),
            "median_before": c.difference.reference_median,
            "median_after": c.difference.other_median,
            "ratio": interval.ratio if interval else None,
            "low": interval.low if interval else None,
            "high": interval.high if interval else None,
            "p_value": c.difference.u_test.p_value if c.difference.u_test else None,
            "largest_part": c.largest_part,
            "largest_group": c.largest_group,
            "environment": [
                {"key": k.key, "values": list(k.values), "acts_on": list(k.groups)}
                for k in c.environment
            ],
        }

    return {
        "schema": 1,
        "kind": "changes",
        "store": store,
        "method": METHOD,
        "min_effect": min_effect,
        "variants_examined": sum(m.examined for m in machines),
        "judged_none": all(m.judged_none for m in machines),
        "machines": [
            {
                "hostname": m.hostname,
                "options": m.options,
                "runs": [info.run_id for info in m.runs],
                "variants": m.variants,
                "variants_examined": m.examined,
                "variants_too_short": m.too_short,
                "variants_left": {"few_runs": m.few_runs, "few_figures": m.few_figures},
                "proposed": m.proposed,
                "changes": [change(c) for c in m.changes],
            }
            for m in machines
        ],
    }
