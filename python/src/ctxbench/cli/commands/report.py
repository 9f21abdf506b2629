"""``ctxbench report``: the HTML report of stored runs."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.output_files import check_output_path, write_report


@click.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN [RUN...]")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="HTML file to write ('-': stdout).",
)
@click.option("--title", help="Title of the page.")
@db_option
def report(run_refs: tuple[str, ...], output: Path, title: str | None, db: str | None) -> None:
    """A self-contained HTML report (offline, plots inline) of one or more runs."""
    check_output_path(output, "-o")
    from ctxbench.cli.commands.compare import build_comparison

    with open_store(db, create=False) as store:
        check_output_path(output, "-o")  # not the store, nor a file beside it
        runs = [store.load(ref) for ref in run_refs]
        # Two runs or more: the comparison `compare` renders, history and all.
        comparison = build_comparison(store, runs) if len(runs) > 1 else None
    write_report(runs, output, title, comparison)
