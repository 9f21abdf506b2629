"""The ``ctxbench`` command: wires the commands (ctxbench.commands) into one click group.

Each command lives in its own module under ``ctxbench.cli.commands``; the
terminal plumbing (consoles, the one-line error, exit statuses) in
``ctxbench.cli.console``; a run's lifecycle (progress, signals, spool, storing)
in ``ctxbench.cli.run_lifecycle``.
"""

from __future__ import annotations

import click

from ctxbench import __version__
from ctxbench.cli.commands.compare import compare
from ctxbench.cli.commands.history import export, history, import_command
from ctxbench.cli.commands.list_env import env, list_command
from ctxbench.cli.commands.report import report
from ctxbench.cli.commands.riscv import riscv
from ctxbench.cli.commands.run import run
from ctxbench.cli.commands.show import explain, show
from ctxbench.cli.console import CtxbenchGroup


@click.group(cls=CtxbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxbench")
def cli() -> None:
    """Measure context switches, system calls and traps; keep, compare and report runs."""


for command in (
    run,
    list_command,
    env,
    history,
    show,
    explain,
    compare,
    report,
    import_command,
    export,
    riscv,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    return cli.main(args=argv, prog_name="ctxbench", standalone_mode=False)
