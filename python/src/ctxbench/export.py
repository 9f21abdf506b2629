"""Exporters: a stored run as text in another format, for other tools.

``json`` gives the run's records verbatim as JSON Lines (env, results,
run_end), so ``ctxbench import`` elsewhere stores the same run; ``csv`` gives
one row per result with its summary, baseline and net figures; ``bmf`` gives
the Bencher Metric Format (https://bencher.dev/docs/reference/bencher-metric-format):
one benchmark per probe variant, named by ``records.variant_name``, with one
measure: ``latency`` for a time per operation (ns, Bencher's own latency
unit), ``throughput`` for a rate, else the record's unit (``cycles``,
``instructions``); its value is the median, lower and upper the ends of the
median's CI. Results without figures (unsupported, failed) are left out and
``omitted`` says which. Pure: they return the text, the CLI decides where it
goes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from ctxbench.records import dumps, variant_name
from ctxbench.store import StoredRun

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
    for result in stored.results:
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
    for result in stored.results:
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
        variant_name(r["probe"], r["params"]) for r in stored.results if not _has_figures(r)
    ]
    suspect = [
        variant_name(r["probe"], r["params"])
        for r in stored.results
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
