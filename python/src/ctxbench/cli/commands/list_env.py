"""``ctxbench list`` and ``env``: what the engine can measure here, and where "here" is."""

from __future__ import annotations

import json

import click

from ctxbench.acquire.runner import capture_env, list_probes
from ctxbench.cli.console import new_console
from ctxbench.errors import BadInput
from ctxbench.records.environment import environment_of
from ctxbench.views import tables


def refuse_db(command: str, db: str | None) -> None:
    """--db is taken by every command, so a script may give it to all; these
    read no store, and say so rather than 'no such option'."""
    if db is not None:
        raise BadInput(
            f"{command} reads no store (it asks the engine about this machine); drop --db"
        )


no_store_db = click.option("--db", hidden=True, help="Refused: this command reads no store.")


@click.command("list")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the engine's probe descriptors as JSON."
)
@no_store_db
def list_command(as_json: bool, db: str | None) -> None:
    """The probes, with what one operation of each is and whether it runs here."""
    refuse_db("list", db)
    probes = list_probes()
    if as_json:
        click.echo(json.dumps(probes, indent=2))
        return
    new_console().print(tables.probes_listing(probes))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the env record as JSON.")
@no_store_db
def env(as_json: bool, db: str | None) -> None:
    """The environment capture alone: CPU, kernel, clocksource, virtualization..."""
    refuse_db("env", db)
    record = capture_env()
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    new_console().print(tables.env_table(environment_of(record)))
