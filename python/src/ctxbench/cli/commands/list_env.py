"""``ctxbench list`` and ``env``: what the engine can measure here, and where "here" is."""

from __future__ import annotations

import json

import click

from ctxbench.acquire.runner import capture_env, list_probes
from ctxbench.cli.console import new_console
from ctxbench.views import tables


@click.command("list")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the engine's probe descriptors as JSON."
)
def list_command(as_json: bool) -> None:
    """The probes, with what one operation of each is and whether it runs here."""
    probes = list_probes()
    if as_json:
        click.echo(json.dumps(probes, indent=2))
        return
    new_console().print(tables.probes_listing(probes))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the env record as JSON.")
def env(as_json: bool) -> None:
    """The environment capture alone: CPU, kernel, clocksource, virtualization..."""
    record = capture_env()
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    new_console().print(tables.env_table(record))
