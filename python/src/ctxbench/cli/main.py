"""The ``ctxbench`` command: wires the commands (ctxbench.commands) into one click group.

Each command lives in its own module under ``ctxbench.cli.commands``; the
terminal plumbing (consoles, the one-line error, exit statuses) in
``ctxbench.cli.console``; a run's lifecycle (progress, signals, spool, storing)
in ``ctxbench.cli.run_lifecycle``.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from ctxbench import __version__
from ctxbench.cli.console import CtxbenchGroup

# Each command's module, imported only when that command runs: `ctxbench
# --version` and `ctxbench --help` import none (--help lists the one-line
# summaries below, so it answers in a tenth of a second), `ctxbench history`
# only its own (a test guards which heavy modules each loads:
# test_package_structure, test_startup). A summary is the command's help in
# one line that fits 80 columns whole (test_startup); `ctxbench CMD --help`
# gives the rest.
COMMANDS = {
    "run": "ctxbench.cli.commands.run:run",
    "list": "ctxbench.cli.commands.list_env:list_command",
    "env": "ctxbench.cli.commands.list_env:env",
    "history": "ctxbench.cli.commands.history:history",
    "show": "ctxbench.cli.commands.show:show",
    "explain": "ctxbench.cli.commands.show:explain",
    "compare": "ctxbench.cli.commands.compare:compare",
    "report": "ctxbench.cli.commands.report:report",
    "import": "ctxbench.cli.commands.import_runs:import_command",
    "export": "ctxbench.cli.commands.export:export",
    "riscv": "ctxbench.cli.commands.riscv:riscv",
    "profile": "ctxbench.cli.commands.profile:profile",
}
SUMMARIES = {
    "run": "Run probes (default: all), store the run, print its summary",
    "list": "The probes: what one operation is, whether it runs here",
    "env": "The environment capture alone: CPU, kernel, clocks, virtualization",
    "history": "The runs in the store; --changes: where a machine's figures shifted",
    "show": "One run, answers first (RUN: id, prefix, 'latest' or a label)",
    "explain": "Where the time of each switch goes, from a run's own figures",
    "compare": "Runs side by side, answers first, each row judged against its noise",
    "report": "A self-contained HTML report (offline, plots inline) of runs",
    "import": "Store engine JSON Lines as runs (ctxbench-engine run --json)",
    "export": "A stored run as JSON Lines, CSV or Bencher Metric Format",
    "riscv": "The RISC-V trap lab: ecall round trips on Spike, QEMU and rvsim",
    "profile": "What switching costs a program: its events, priced",
}


class LazyGroup(CtxbenchGroup):
    """The command group, each command's module imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Any:
        path = COMMANDS.get(cmd_name)
        if path is None:
            return None
        module, _, name = path.partition(":")
        return getattr(importlib.import_module(module), name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from SUMMARIES, whole lines, without importing a command."""
        rows = [(name, SUMMARIES[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxbench")
def cli() -> None:
    """Measure context switches, system calls and traps; keep, compare and report runs."""


def main(argv: list[str] | None = None) -> int:
    return cli.main(args=argv, prog_name="ctxbench", standalone_mode=False)
