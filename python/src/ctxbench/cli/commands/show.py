"""``ctxbench show`` and ``explain``: one stored run, answers first."""

from __future__ import annotations

import json
from typing import Any

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
from ctxbench.cli.run_output import print_run
from ctxbench.records.runs import StoredRun
from ctxbench.riscv.answer import is_lab_run, lab_dict
from ctxbench.store import run_choice
from ctxbench.views.explain import explanation as explain_view
from ctxbench.views.explain.phases import render_trace_detail


@click.command()
@click.argument("run_ref", metavar="RUN")
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the run as JSON: what the store knows of it, its summary and its records.",
)
@click.option(
    "--all", "show_all", is_flag=True, help="After the summary, print the table of every result."
)
def show(run_ref: str, db: str | None, as_json: bool, show_all: bool) -> None:
    """One run, answers first: what things cost, same vs other CPU, where a
    switch's time goes, verdicts in words (--all: then every result); a RISC-V
    lab run: the lab's answer. RUN: a run id, a unique prefix, 'latest', or a label;
    a stored profile's id shows the profile (ctxbench profile --show)."""
    from ctxbench.cli.commands.profile import print_profile, stored_profiles

    profiles = stored_profiles(db, [run_ref])
    if profiles:  # a stored profile's id: shown as `profile --show` shows it
        print_profile(profiles[0], db, as_json)
        return
    with open_store(db, create=False) as store:
        stored, note = run_choice.pick(store, run_ref)
    if note:
        say(note)
    if as_json:
        click.echo(json.dumps(_run_json(stored), indent=2, allow_nan=False))
        return
    print_run(stored, show_all)


def _run_json(stored: StoredRun) -> dict[str, Any]:
    from ctxbench.analysis.summary.build import summarize
    from ctxbench.views.summary.text import as_dict

    data = {
        "schema": 1,
        "kind": "stored_run",
        "run": stored.info.as_dict(),
        "summary": as_dict(summarize([stored]).runs[0]),
        "records": stored.records.all(),
    }
    if is_lab_run(stored.results):
        data["lab"] = lab_dict(stored.results)
    return data


@click.command()
@click.argument("words", nargs=-1, metavar="[RUN] [PROBE-GLOB]...")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only the figures with this parameter value (repeatable), e.g. cpus=cross.",
)
@click.option(
    "--all", "show_all", is_flag=True, help="Every switch figure, not only the headline ones."
)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the decomposition as JSON.")
@click.option(
    "--trace",
    "trace_detail",
    is_flag=True,
    help="Print every traced pass in full instead (run --trace): each phase's median, interval, "
    "count, and the events recorded in it.",
)
def explain(
    words: tuple[str, ...],
    params: tuple[str, ...],
    show_all: bool,
    db: str | None,
    as_json: bool,
    trace_detail: bool,
) -> None:
    """Where the time of each switch goes, from figures measured in RUN (default:
    the latest run explain can use): the headline switches and a count of the
    rest (--all: every one), or the figures PROBE-GLOB and --param name; on a
    RISC-V lab run, each ecall's parts per simulator."""
    chosen = explain_view.parse_params(params)
    with open_store(db, create=False) as store:
        run_ref, globs = run_choice.run_and_globs(store, words)
        stored, note = run_choice.pick(store, run_ref, run_choice.wants_lab(globs))
    if note:
        say(note)
    if trace_detail and not as_json:
        click.echo(render_trace_detail(stored.results), nl=False)
        return
    if as_json:
        data = explain_view.run_dict(stored.results, stored.run_id, globs, chosen)
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        text = explain_view.run_text(stored.results, stored.run_id, globs, chosen, show_all)
        click.echo(text, nl=False)
