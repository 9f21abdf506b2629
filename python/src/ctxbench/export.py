"""Exporters: a stored run as text in another format, for other tools.

``json`` gives the run's records verbatim as JSON Lines (env, results,
run_end), so ``ctxbench import`` elsewhere stores the same run; ``csv`` gives
one row per result with its summary, baseline and net figures. Pure: they
return the text, the CLI decides where it goes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from ctxbench.records import dumps
from ctxbench.store import StoredRun

FORMATS = ("json", "csv")

CSV_COLUMNS = [
    "run_id", "probe", "family", "params", "unit", "status", "reasons", "n", "min", "median",
    "mean", "stddev", "p90", "p99", "max", "median_ci_low", "median_ci_high", "baseline_name",
    "baseline_value", "net_median", "net_min", "op",
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


def export_text(stored: StoredRun, form: str) -> str:
    """The run in ``form`` (one of FORMATS)."""
    if form == "json":
        return json_lines(stored)
    if form == "csv":
        return csv_text(stored)
    raise ValueError(f"unknown export format {form!r}; use one of {', '.join(FORMATS)}")
