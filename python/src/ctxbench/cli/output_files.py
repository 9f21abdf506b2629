"""Output files of the commands: checked before a run, written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ctxbench.cli.console import say
from ctxbench.errors import BadInput, OutputError
from ctxbench.store.schema import StoredRun


def check_output_path(path: Path | None, option: str, stdout: bool = True) -> None:
    """Refuses, before anything runs, an output path that cannot be written.
    ``-`` is stdout where the command allows it (STDOUT)."""
    if path is not None and str(path) == "-" and not stdout:
        raise BadInput(f"{option} -: stdout carries the run's summary; give a file name")
    if path is None or str(path) == "-":
        return
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise BadInput(f"{option} {path} is a directory; give a file name")
    if not parent.is_dir():
        raise BadInput(f"{option} {path}: directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise BadInput(f"{option} {path}: directory {parent} is not writable")


def write_text(path: Path, text: str, option: str) -> None:
    """Write a whole output file; if that fails, no cut file is left behind.
    ``-``: stdout."""
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    check_output_path(path, option)
    existed = path.exists()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        if path.is_file() and not existed:
            path.unlink(missing_ok=True)
        elif path.is_file():
            with contextlib.suppress(OSError):
                path.write_bytes(b"")  # an empty file, not a cut one that looks whole
        raise OutputError(f"cannot write {option} {path}: {error.strerror}") from None


def check_writable(path: Path | None, option: str) -> None:
    """Open ``path`` for writing without changing it, so a file that cannot be
    written is refused before the run rather than after."""
    if path is None:
        return
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise BadInput(f"cannot write {option} {path}: {error.strerror}") from None
    if not existed:
        path.unlink(missing_ok=True)


def write_report(runs: list[StoredRun], path: Path, title: str | None = None) -> None:
    from ctxbench.views.report import has_cartesian_bundle, render  # plotly is slow to import

    write_text(path, render(runs, title=title), "report")
    if str(path) != "-":
        say(f"report written to {path}")
    if not has_cartesian_bundle():
        say(
            "note: this install lacks the report's trimmed chart library, so the report "
            "carries plotly's full one (about 1.3 MB more); `make plotly-js` fetches it"
        )
