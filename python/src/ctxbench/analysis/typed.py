"""Results as their type where analysis takes them in.

Analysis reads a result through its type (``records.result.Result``). A
caller that still holds the records as written (a view not yet converted,
a test's synthetic record) is read here, once, at the entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ctxbench.records.result import Result, result_of


def typed(results: Iterable[Result | Mapping[str, Any]]) -> tuple[Result, ...]:
    """RESULTS as Result, each record read once (a Result passes through)."""
    return tuple(r if isinstance(r, Result) else result_of(r) for r in results)
