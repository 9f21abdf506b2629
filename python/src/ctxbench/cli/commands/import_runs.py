"""``ctxbench import``: runs from engine JSON Lines or a spool into the store, one per file."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import click

from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
from ctxbench.cli.output_files import file_kind
from ctxbench.errors import BadInput, CtxbenchError
from ctxbench.records.reading import MAX_INPUT_BYTES
from ctxbench.records.runs import RunRecords
from ctxbench.store.db import Store


@click.command("import")
@click.argument(
    "paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="FILE..."
)
@click.option("--label", help="A name for the imported run (each of them, given several files).")
@db_option
def import_command(paths: tuple[Path, ...], label: str | None, db: str | None) -> None:
    """Store runs from engine JSON Lines (e.g. `ctxbench-engine run --json` on a
    board) or a spool a run left: one run per file, each whole or not at all."""
    if sum(str(path) == "-" for path in paths) > 1:
        raise BadInput("- (stdin) is given more than once; it holds one run")
    if len(paths) == 1:
        with open_store(db) as store:
            _import_one(store, paths[0], label)
        return
    failed: list[tuple[Path, CtxbenchError]] = []
    with open_store(db) as store:
        for path in paths:
            try:
                _import_one(store, path, label)
            except CtxbenchError as error:
                say(f"ctxbench: {path} not imported: {error}")
                failed.append((path, error))
    if failed:
        error = failed[0][1]
        names = ", ".join(str(path) for path, _ in failed)
        summary = CtxbenchError(
            f"{len(failed)} of {len(paths)} files were not imported ({names}; each line above "
            f"says why); the other {len(paths) - len(failed)} were stored"
        )
        summary.exit_code = error.exit_code
        raise summary


def _import_one(store: Store, path: Path, label: str | None) -> None:
    from ctxbench.cli.run_lifecycle import store_run  # rich's progress: not for history

    notes: list[str] = []
    run_records = read_input(path, notes)
    for note in notes:
        say(f"ctxbench: note: {note}")
    if not run_records.results:
        # A run without a result would only become `latest`.
        raise BadInput(
            f"{path} holds run {run_records.run_id} without a result (it ended, or was "
            "killed, before its first); nothing was stored"
        )
    stored = store_run(store, run_records, "import", label)
    state = "partial run" if stored.info.interrupted else "run"
    say(f"imported {state} {stored.run_id} ({len(stored.results)} results) into {store.location}")


def read_input(path: Path, notes: list[str]) -> RunRecords:
    """The run in PATH (``-``: stdin), checked before anything is stored: a
    regular file only (a FIFO would block for ever), within the size limit by
    its size, not a spool whose run is still going."""
    from ctxbench.cli.run_lifecycle import spool_in_use
    from ctxbench.cli.spool_records import read_run

    if str(path) == "-":
        return read_run(sys.stdin.buffer, "stdin", notes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(
            f"no file {path}; give the JSON Lines file written by `run --json`"
        ) from None
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror}") from None
    with open(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode) or "a character device"
            raise BadInput(f"{path} is {kind}, not a regular file; give a JSON Lines file")
        if info.st_size > MAX_INPUT_BYTES:
            raise BadInput(
                f"{path}: {info.st_size / 2**20:.0f} MiB, larger than "
                f"{MAX_INPUT_BYTES // 2**20} MiB; one run is far smaller (import one run per file)"
            )
        if spool_in_use(path):
            raise BadInput(
                f"{path} is the spool of a run still going (its ctxbench holds the file's "
                "lock): that run stores it when it ends; wait for it, or stop it with Ctrl-C "
                "(it keeps what was measured)"
            )
        try:
            return read_run(stream, str(path), notes)
        except OSError as error:
            raise BadInput(f"cannot read {path}: {error.strerror}") from None
