"""``ctxbench report``: the HTML report of stored runs."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
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
    from ctxbench.cli.commands.profile import profile_text, stored_profiles

    profiles = stored_profiles(db, run_refs)
    if profiles:  # stored profiles' ids: each as `show` prints it
        from ctxbench.cli.output_files import write_text
        from ctxbench.views.profile import profile_html

        with open_store(db, create=False):
            check_output_path(output, "-o")  # not the store, nor a file beside it
        sections = [(f"profile {p.run_id}", profile_text(p, db)) for p in profiles]
        write_text(output, profile_html(sections, title), "report")
        if str(output) != "-":
            say(f"report written to {output}")
        return

    with open_store(db, create=False) as store:
        check_output_path(output, "-o")  # not the store, nor a file beside it
        runs = [store.load(ref) for ref in run_refs]
        # Two runs or more: the comparison `compare` renders, history and all.
        comparison = build_comparison(store, runs) if len(runs) > 1 else None
    write_report(runs, output, title, comparison)
