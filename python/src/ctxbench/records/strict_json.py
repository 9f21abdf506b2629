"""Strict JSON: a record's line parsed refusing what no producer writes, and written back.

Records come from other machines and other programs, so reading them is
strict: JSON that Python would accept but no producer of records writes is
refused with a one-line message — NaN, Infinity and numbers beyond ±1e18
(1e999 would become infinity), integers of more than 19 digits, nesting
deeper than 32 levels, a key twice in one object, lone UTF-16 surrogates.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32
MAX_NUMBER = 1e18
MAX_INT_DIGITS = 19


class _Refused(ValueError):
    """A JSON text that parses but holds what no record may hold."""


class NotJson(ValueError):
    """A text that is not JSON at all."""


def _refuse_constant(name: str) -> float:
    raise _Refused(f"{name} is not a number a record may hold")


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise _Refused(f"number {text[:30]} is not finite or beyond ±{MAX_NUMBER:g}")
    return value


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    value = int(text)
    if abs(value) > MAX_NUMBER:
        raise _Refused(f"number {text} is beyond ±{MAX_NUMBER:g}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(f"key '{shown(key)}' appears twice in one object")
        result[key] = value
    return result


_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str, limit: int = 40) -> str:
    """A piece of untrusted text for an error message: escaped, short."""
    return text[:limit].encode("unicode_escape").decode("ascii")


def _check_tree(value: Any) -> None:
    """Depth and strings of a parsed record (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            for key, child in item.items():
                stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise _Refused("a string holds a lone UTF-16 surrogate (not a character)")


def loads_record(text: str) -> Any:
    """Parse one line of JSON strictly; raises ValueError (with a one-line message)."""
    try:
        value = json.loads(
            text,
            parse_float=_strict_float,
            parse_int=_strict_int,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as error:
        raise NotJson(f"not JSON ({error.msg})") from None
    _check_tree(value)
    return value


def dumps(record: dict[str, Any]) -> str:
    """A record as one compact line of JSON (its text as it is, not escaped)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


# A JSON object a view writes (a --json document, a chart's settings): output
# being built, never a record that was read (records are read into their
# types: records.result, records.environment, records.runs).
JsonObject = dict[str, Any]
