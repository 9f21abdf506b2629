"""The names of probe variants: a canonical key of their params, and one stable name."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxbench.units import ParamValue, params_text


def params_key(params: Mapping[str, ParamValue]) -> str:
    """Canonical text of a params object: equal knobs give equal keys."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def variant_name(probe: str, params: Mapping[str, ParamValue]) -> str:
    """'switch.pipe between=threads cpus=same': a probe variant as one stable string
    (params sorted by name), for names other tools key on."""
    text = params_text(params)
    return f"{probe} {text}" if text else probe
