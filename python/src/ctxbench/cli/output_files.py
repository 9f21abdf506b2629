"""Output files of the commands: checked before a run, written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import Any

from ctxbench.cli.console import say
from ctxbench.errors import BadInput, OutputError
from ctxbench.records.runs import StoredRun

# The files this process keeps, that no output may land on: the store, the
# files SQLite keeps beside it, the run's spool (path -> what it is).
_KEPT: dict[Path, str] = {}


def keep_apart(path: Path, what: str) -> None:
    """No output of this process may be written over PATH (WHAT, for the message)."""
    _KEPT[Path(path)] = what


def kept_file(path: Path) -> str | None:
    """What PATH is among the kept files (through a link or another hard link
    too: compared by device and inode, and by the path links resolve to)."""
    try:
        info = os.stat(path)
        identity: tuple[int, int] | None = (info.st_dev, info.st_ino)
    except OSError:
        identity = None
    real = os.path.realpath(path)
    for kept, what in _KEPT.items():
        if os.path.realpath(kept) == real:
            return what
        with contextlib.suppress(OSError):
            info = os.stat(kept)
            if identity == (info.st_dev, info.st_ino):
                return what
    return None


def file_kind(mode: int) -> str | None:
    """What a file that is neither regular nor a character device is (a FIFO
    would block its opening for ever), or None."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((kind for test, kind in kinds if test(mode)), None)


def check_output_path(path: Path | None, option: str, stdout: bool = True) -> None:
    """Refuses, before anything runs, an output path that cannot be written:
    a directory, FIFO, socket or block device, a missing or read-only
    directory, or a file this process keeps (the store, its journal, the
    spool). ``-`` is stdout where the command allows it (STDOUT). A
    character device (/dev/null, a terminal) is written as such."""
    if path is not None and str(path) == "-" and not stdout:
        raise BadInput(f"{option} -: stdout carries the run's summary; give a file name")
    if path is None or str(path) == "-":
        return
    parent = path.parent if str(path.parent) else Path(".")
    try:
        kind = file_kind(os.stat(path).st_mode)
    except OSError:
        kind = None
    if kind is not None:
        instead = ", or - for stdout" if stdout else ""
        raise BadInput(f"{option} {path} is {kind}, not a regular file; give a file name{instead}")
    kept = kept_file(path)
    if kept is not None:
        raise BadInput(
            f"{option} {path} is {kept}; ctxbench never writes an output over it: "
            "give another file name"
        )
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


def write_report(
    runs: list[StoredRun], path: Path, title: str | None = None, comparison: Any = None
) -> None:
    """COMPARISON: the runs' comparison as `compare` builds it (with the
    machine's history), which the report's comparison sections render."""
    from ctxbench.views.report import has_cartesian_bundle, render  # plotly is slow to import

    write_text(path, render(runs, title=title, comparison=comparison), "report")
    if str(path) != "-":
        say(f"report written to {path}")
    if not has_cartesian_bundle():
        say(
            "note: this install lacks the report's trimmed chart library, so the report "
            "carries plotly's full one (about 1.3 MB more); `make plotly-js` fetches it"
        )
