"""Option types every command shares: a number option takes finite numbers only."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """click.FloatRange that refuses nan and ±inf: NaN compares false with
    every bound, so a range alone lets it through (compare --min-effect nan
    hid every difference)."""

    name = "finite number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; give one such as 0.05", param, ctx)
        return number


def check_probe_glob(option: str, glob: str | None, probes: Iterable[str]) -> None:
    """A probe glob that matches none of PROBES is a usage error naming them
    (it would otherwise select nothing and pass silently)."""
    if glob is None:
        return
    names = sorted(set(probes))
    if any(fnmatch.fnmatchcase(name, glob) for name in names):
        return
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    raise click.BadParameter(
        f"{glob!r} matches no probe of these runs ({shown or 'none'})", param_hint=option
    )


def check_hosts(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    """``--host`` values ssh would misread (``@``, ``''``, a leading '-') are usage errors."""
    from ctxbench.acquire.remote import destination_problem

    for value in values:
        problem = destination_problem(value)
        if problem is not None:
            raise click.BadParameter(f"{value!r} {problem}", ctx, param)
    return values
