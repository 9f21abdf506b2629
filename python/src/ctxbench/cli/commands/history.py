"""``ctxbench history``: the runs in the store (``import`` is in import_runs)."""

from __future__ import annotations

import json

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import new_console, say
from ctxbench.cli.option_types import FiniteFloat, check_probe_glob
from ctxbench.errors import BadInput
from ctxbench.records.runs import RunInfo
from ctxbench.views import tables


@click.command()
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the runs as JSON (schema/history.schema.json) instead of a table.",
)
@click.option(
    "--changes",
    is_flag=True,
    help="Find the runs where a variant's figure shifted and stayed shifted, per machine "
    "(host and run options), each with its size, interval and the environment difference "
    "across it. docs/reading-a-difference.md",
)
@click.option("--machine", metavar="HOST", help="With --changes: only this host's runs.")
@click.option(
    "--probe", "probe", metavar="GLOB", help="With --changes: only these probes (e.g. 'syscall.*')."
)
@click.option(
    "--min-effect",
    type=FiniteFloat(0, 10),
    default=0.05,
    show_default=True,
    help="With --changes: the smallest shift that counts (0.05: 5%), its whole interval beyond it.",
)
def history(
    db: str | None,
    as_json: bool,
    changes: bool,
    machine: str | None,
    probe: str | None,
    min_effect: float,
) -> int:
    """The runs in the store, in the order they were measured; --changes: where
    a machine's figures shifted (exit 4 when it could judge no variant)."""
    if not changes and (machine or probe):
        raise click.UsageError("--machine and --probe go with --changes")
    if changes:
        return _print_changes(db, as_json, machine, probe, min_effect)
    with open_store(db, create=False) as store:
        infos = store.runs()
    if as_json:
        _print_history_json(store.location, infos)
        return 0
    if not infos:
        say(f"no runs in {store.location} yet")
        return 0
    console = new_console()
    console.print(tables.history_table(infos, width=console.width))
    return 0


def _print_changes(
    db: str | None, as_json: bool, machine: str | None, probe: str | None, min_effect: float
) -> int:
    """The changes per machine; EXIT_INCONCLUSIVE when no variant of any
    machine could be judged (no all-clear over what was not looked at)."""
    from ctxbench.analysis.compare.changes import find_changes, machine_groups
    from ctxbench.cli.gate_status import EXIT_INCONCLUSIVE
    from ctxbench.views.compare.difference import changes_lines
    from ctxbench.views.export import changes_dict

    with open_store(db, create=False) as store:
        infos = store.runs()
        if machine is not None:
            hosts = sorted({str(info.hostname) for info in infos})
            infos = [info for info in infos if str(info.hostname) == machine]
            if not infos:
                raise BadInput(
                    f"no run of machine {machine} in {store.location}; its hosts: "
                    f"{', '.join(hosts) or 'none'}"
                )
        groups = machine_groups(infos, store.load)
        names = (r.probe for _, runs in groups for run in runs for r in run.results)
        check_probe_glob("--probe", probe, names)
        location = store.location
    found = [find_changes(runs, probe, min_effect) for _, runs in groups]
    status = EXIT_INCONCLUSIVE if all(m.judged_none for m in found) else 0
    if as_json:
        click.echo(json.dumps(changes_dict(location, found, min_effect), indent=2, allow_nan=False))
        return status
    console = new_console()
    for line in changes_lines(found, min_effect, console.width, probe):
        console.print(line)
    return status


def _print_history_json(location: str, infos: list[RunInfo]) -> None:
    history = {
        "schema": 1,
        "kind": "history",
        "store": location,
        "runs": [info.as_dict() for info in infos],
    }
    click.echo(json.dumps(history, indent=2, allow_nan=False))
