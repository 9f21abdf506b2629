"""``ctxbench export``: a stored run as JSON Lines, CSV or Bencher Metric Format."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
from ctxbench.cli.output_files import check_output_path, write_text
from ctxbench.store import run_choice
from ctxbench.views import export as export_formats


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format",
    "form",
    type=click.Choice(export_formats.FORMATS),
    default="json",
    show_default=True,
    help="json: the records as JSON Lines (importable); csv: one row per result; "
    "bmf: Bencher Metric Format (median and its CI per probe variant).",
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="File to write (default: stdout)."
)
@db_option
def export(run_ref: str, form: str, output: Path | None, db: str | None) -> None:
    """A stored run as JSON Lines (the engine's records, importable), CSV or
    Bencher Metric Format."""
    check_output_path(output, "-o")
    with open_store(db, create=False) as store:
        check_output_path(output, "-o")  # not the store, nor a file beside it
        stored, took = run_choice.pick(store, run_ref)
    if took is not None:
        say(took)  # which run `latest` named, on stderr: stdout carries the export
    text = export_formats.export_text(stored, form)
    for note in export_formats.notes(stored, form):
        say(f"ctxbench: note: {note}")
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text(output, text, "-o")
        say(f"wrote {stored.run_id} to {output}")
