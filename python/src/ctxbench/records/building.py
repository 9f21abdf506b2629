"""Building records, for producers written in Python (the trap lab, merged repeats, A/B runs)."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ctxbench.records.schema import SCHEMA_VERSION, STATUSES


def timestamp() -> str:
    """Now, UTC, to the second, as the records write it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def run_end_record(
    run_id: str, records: Iterable[dict[str, Any]], duration_s: float, interrupted: bool = False
) -> dict[str, Any]:
    """The closing record of a run: its results counted by status."""
    counts = dict.fromkeys(STATUSES, 0)
    for record in records:
        if record.get("kind") == "result":
            counts[record["verdict"]["status"]] += 1
    return {
        "schema": SCHEMA_VERSION,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": timestamp(),
        "duration_s": round(duration_s, 3),
        "counts": counts,
        "interrupted": interrupted,
    }
