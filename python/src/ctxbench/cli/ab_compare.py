"""`compare RUN --ab [NAME=A:B]`: an A/B run judged by its paired ratio, round by round.

The numbers are ``analysis.compare.paired``'s, the words ``views.compare.paired``'s; the
exit statuses are the gate's (0 passed, 1 failed, 4 inconclusive; 0 without
--fail-above).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence

import click

from ctxbench import units
from ctxbench.analysis.compare.paired import (
    WRAPPER_AXIS,
    Axis,
    AxisRefused,
    axes_of,
    pair_records,
    paired_gate,
    parse_axis,
)
from ctxbench.cli.commands.db import open_store
from ctxbench.cli.console import QuietStream, new_console
from ctxbench.cli.gate_status import gate_status
from ctxbench.errors import BadInput
from ctxbench.records.result import Result
from ctxbench.views.compare.paired import (
    alone_line,
    axis_refused_words,
    paired_dict,
    paired_lines,
)


def compare_ab(
    run_refs: tuple[str, ...],
    axis_text: str,
    db: str | None,
    fail_above: float | None,
    allow_inconclusive: float | None,
    as_json: bool,
) -> int:
    if len(run_refs) != 1:
        raise click.UsageError(
            "--ab judges one run, its A and B rounds against each other: give one RUN"
        )
    with open_store(db, create=False) as store:
        run = store.load(run_refs[0])
    axis = _axis(axis_text, run.results, run.run_id)
    pairs, alone = pair_records(run.results, axis)
    if not pairs:
        raise BadInput(
            f"run {run.run_id} has no variant measured with both {axis.name}={axis.a} and "
            f"{axis.name}={axis.b}; --ab NAME=A:B names two values of one parameter of it"
        )
    judged = None
    if fail_above is not None:
        judged = paired_gate(run.results, axis, fail_above, allow_inconclusive or 0.0)
        pairs = [verdict.paired for verdict in judged.rows]
    lines = paired_lines(run.run_id, axis, run.env, pairs, judged)
    extra = alone_line(alone, axis)
    if as_json:
        click.echo(json.dumps(paired_dict(run.run_id, axis, pairs, judged), indent=2))
        # The gate's words go to stderr beside the data, as compare --json's do.
        for line in lines[-1:] if judged else []:
            click.echo(units.terminal_text(line), file=QuietStream(sys.stderr))
    else:
        # Each pair's line wraps at the screen's width, its continuation
        # indented under it; the gate's outcome stays one line (CI reads it whole).
        width = new_console().width
        body = lines[:-1] if judged else lines
        for line in body + ([extra] if extra else []):
            indent = " " * (len(line) - len(line.lstrip()) + 4)
            for part in textwrap.wrap(line, width, subsequent_indent=indent) or [""]:
                click.echo(units.terminal_text(part))
        if judged:
            click.echo(units.terminal_text(lines[-1]))
    if judged is None:
        return 0
    return gate_status(judged.outcome)


def _axis(text: str, results: Sequence[Result], run_id: str) -> Axis:
    """--ab's axis: as given, or arm=A:B for a run --ab-wrapper run."""
    if text.strip():
        axis = parse_axis(text)
        if isinstance(axis, AxisRefused):
            raise BadInput(axis_refused_words(axis))
        return axis
    axes = axes_of(results)
    name, a, b = WRAPPER_AXIS
    if name in axes:
        return Axis(name, a, b)
    named = ", ".join(f"{n}={':'.join(v)}" for n, v in axes.items()) or "none"
    raise BadInput(
        f"run {run_id} is not a run --ab-wrapper run (no arm parameter); name the two values "
        f"to pair, --ab NAME=A:B (parameters with several values in it: {named})"
    )
