"""A stored run printed on stdout, answers first: what `show` and `run` print."""

from __future__ import annotations

import textwrap

from ctxbench import units
from ctxbench.cli.console import new_console
from ctxbench.records.runs import StoredRun
from ctxbench.riscv.answer import is_lab_run
from ctxbench.riscv.report import format_report
from ctxbench.views import tables


def _run_header(stored: StoredRun) -> str:
    """'run ID (complete) · machine · arch · kernel release · label L'."""
    info = stored.info
    env = stored.env
    state = "partial" if info.interrupted else "complete"
    return (
        f"run {info.run_id} ({state}) · {info.machine} · {env.arch} · "
        f"kernel {env.kernel_release}" + (f" · label {info.label}" if info.label else "")
    )


def print_run(stored: StoredRun, show_all: bool = False, title: str | None = None) -> None:
    """A stored run on stdout, answers first: the summary (ladder, same vs other
    CPU, where a switch's time goes, verdicts in words), the CPU-pair matrices,
    then, with SHOW_ALL, the full table of every result and the reasons in the
    records' own words (else one line that says how to get it)."""
    from ctxbench.analysis.summary.build import summarize
    from ctxbench.views.summary.text import run_lines

    console = new_console()
    console.print(title or _run_header(stored), markup=False)
    console.print()
    if is_lab_run(stored.results):
        console.print(format_report(stored.results), markup=False, end="")
    else:
        # run_lines are wrapped to the width already: printed as they are,
        # without rich measuring and wrapping each again (most of show's
        # printing time)
        for line in run_lines(summarize([stored]), console.width):
            console.print(line, soft_wrap=True)
    for part in tables.matrix_sections(stored.results):
        console.print(part)
    console.print()
    if not show_all:
        console.print(
            f"{len(stored.results)} results: `ctxbench show {stored.run_id} --all` lists them",
            markup=False,
        )
        return
    console.print(tables.results_table(stored.results, title="every result", width=console.width))
    for words in units.timer(stored.results):
        indented = textwrap.fill(
            words, console.width - 1, initial_indent="  ", subsequent_indent="  "
        )
        console.print(indented, markup=False)
    for note in tables.verdict_notes(stored.results):
        console.print(f"  {note}", markup=False)
