"""``ctxbench riscv``: run the RISC-V trap lab on the simulators and store it as a run."""

from __future__ import annotations

from pathlib import Path

import click

from ctxbench import riscv as riscv_lab
from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
from ctxbench.cli.output_files import check_output_path, write_report
from ctxbench.cli.run_lifecycle import store_run
from ctxbench.errors import CtxbenchError, RecordError
from ctxbench.records.runs import group_run
from ctxbench.records.schema import record_problem


@click.command()
@click.option(
    "--sim",
    type=click.Choice([*riscv_lab.SIMULATORS, "all"]),
    default="all",
    show_default=True,
    help="Simulator(s) to run the trap lab on (rvsim: each of its core models).",
)
@click.option("--label", help="A name for this run.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    help="Also write an HTML report to FILE.",
)
@db_option
def riscv(sim: str, label: str | None, report_path: Path | None, db: str | None) -> None:
    """The RISC-V trap lab: ecall round trips on Spike, QEMU and rvsim core models,
    decomposed in words and stored as a run."""
    check_output_path(report_path, "--report")
    sims = riscv_lab.SIMULATORS if sim == "all" else (sim,)
    with open_store(db) as store:
        say(f"running the RISC-V trap lab on {', '.join(sims)}...")
        lab = riscv_lab.run_lab(sims, progress=say)
        for number, record in enumerate(lab.records, start=1):
            problem = record_problem(record)
            if problem is not None:
                raise RecordError(f"riscv lab record {number} is not valid: {problem}")
        stored = store_run(store, group_run(lab.records, "riscv lab"), "riscv", label)
        click.echo(riscv_lab.format_report(stored.results), nl=False)
        say(f"stored run {stored.run_id} ({len(stored.results)} results) in {store.location}")
        if report_path is not None:
            write_report([stored], report_path)
        failed = [run.target.name for run in lab.runs if run.problem]
        if failed:
            raise CtxbenchError(
                f"the lab failed on {', '.join(failed)} (see the report); "
                f"the other figures were stored as {stored.run_id}"
            )
