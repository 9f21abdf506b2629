"""``ctxbench history`` and ``import``: the runs in the store, and a run into it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import new_console, say
from ctxbench.errors import BadInput, CtxbenchError
from ctxbench.records.core import group_run, read_records, read_run_file
from ctxbench.store.dialects import default_target
from ctxbench.store.schema import RunInfo
from ctxbench.views import tables


@click.command()
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the runs as JSON (schema/history.schema.json) instead of a table.",
)
def history(db: str | None, as_json: bool) -> None:
    """The runs in the store, in the order they were measured."""
    try:
        store = open_store(db, create=False)
    except CtxbenchError as error:
        if not str(error).startswith("no store at"):
            raise
        say(f"{error}")
        if as_json:
            _print_history_json(db or default_target(), [])
        return
    with store:
        infos = store.runs()
    if as_json:
        _print_history_json(store.location, infos)
        return
    if not infos:
        say(f"no runs in {store.location} yet")
        return
    console = new_console()
    console.print(tables.history_table(infos, width=console.width))


def _print_history_json(location: str, infos: list[RunInfo]) -> None:
    history = {
        "schema": 1,
        "kind": "history",
        "store": location,
        "runs": [info.as_dict() for info in infos],
    }
    click.echo(json.dumps(history, indent=2, allow_nan=False))


@click.command("import")
@click.argument("path", type=click.Path(path_type=Path), metavar="FILE")
@click.option("--label", help="A name for the imported run.")
@db_option
def import_command(path: Path, label: str | None, db: str | None) -> None:
    """Store a run from engine JSON Lines (e.g. `ctxbench-engine run --json` on a board)."""
    notes: list[str] = []
    if str(path) == "-":
        run_records = group_run(read_records(sys.stdin.buffer, "stdin", notes), "stdin")
    else:
        if not path.exists():
            raise BadInput(f"no file {path}; give the JSON Lines file written by `run --json`")
        if path.is_dir():
            raise BadInput(f"{path} is a directory; give a JSON Lines file")
        run_records = read_run_file(path, notes)
    for note in notes:
        say(f"ctxbench: note: {note}")
    from ctxbench.cli.run_lifecycle import store_run  # rich's progress: not for history

    with open_store(db) as store:
        stored = store_run(store, run_records, "import", label)
    state = "partial run" if stored.info.interrupted else "run"
    say(f"imported {state} {stored.run_id} ({len(stored.results)} results) into {store.location}")
