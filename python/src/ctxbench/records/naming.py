"""The names of probe variants: a canonical key of their params, and one stable name."""

from __future__ import annotations

import json
from typing import Any

from ctxbench.units import params_text


def params_key(params: dict[str, Any]) -> str:
    """Canonical text of a params object: equal knobs give equal keys."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def variant_name(probe: str, params: dict[str, Any]) -> str:
    """'switch.pipe between=threads cpus=same': a probe variant as one stable string
    (params sorted by name), for names other tools key on."""
    text = params_text(params)
    return f"{probe} {text}" if text else probe
