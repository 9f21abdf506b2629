"""A run's lifecycle around the engine: progress, stop signals, the spool, storing.

Local runs and ``run --host`` runs share it: one progress view, one way to
stop on SIGINT/SIGTERM/SIGHUP, one spool that keeps the records until the
store has them."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ctxbench import fmt
from ctxbench.acquire.runner import EngineRun
from ctxbench.acquire.runner import Progress as EngineProgress
from ctxbench.cli.console import new_console, say
from ctxbench.errors import BadInput
from ctxbench.records.core import RunRecords, dumps
from ctxbench.store.db import Store
from ctxbench.store.schema import StoredRun

# Ctrl-C, and what `timeout`, CI cancellation and a closed terminal send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ProgressView:
    """Progress on stderr: a live bar on a terminal (one per host for ``run
    --host``), one line per variant otherwise. Hosts report from their own
    threads; a signal handler may print while the main thread updates."""

    def __init__(self, hosts: list[str] | None = None) -> None:
        self.console = new_console(stderr=True)
        self.live = self.console.is_terminal and not os.environ.get("CI")
        self.started = time.monotonic()
        self.hosts = hosts
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self._tasks: dict[str | None, Any] = {}  # per host; None: the local run's
        self._visits: dict[str | None, int] = {}  # variants announced so far, per host

    def __enter__(self) -> ProgressView:
        if not self.live:
            where = "the engine" if self.hosts is None else f"on {', '.join(self.hosts)}"
            self.console.print(f"running {where}...", markup=False)
            return self
        if self.hosts is None:
            columns = [TextColumn("probe {task.fields[position]}"), BarColumn(bar_width=24)]
        else:
            columns = [
                TextColumn("{task.fields[host]}", markup=False),
                TextColumn("{task.fields[position]}"),
                BarColumn(bar_width=20),
            ]
        self._progress = Progress(
            *columns,
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        if self.hosts is None:
            self._tasks[None] = self._progress.add_task(
                "starting the engine", total=None, position=""
            )
        for host in self.hosts or []:
            self._tasks[host] = self._progress.add_task(
                "connecting", total=None, host=host, position=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is None:
            return
        local = self._tasks.get(None)
        if local is not None and self._progress.tasks[0].total is not None:
            self._progress.update(local, description="done")
        self._progress.stop()

    def update(self, progress: EngineProgress, host: str | None = None) -> None:
        """Variant ``progress`` starts, on the local run or on ``host``."""
        label = progress.probe
        params = fmt.params(progress.params)
        if params != "—":
            label += f" {params}"
        if progress.attempt > 1:
            label += f" (attempt {progress.attempt}, host interference)"
        # Under interleaved rounds the variants are visited in a drawn order, so
        # a variant's number is its name, not how far the run is: the lines
        # count visits, in order, and name the variant and round beside.
        rounds = progress.rounds > 0
        with self._lock:
            self._visits[host] = self._visits.get(host, 0) + 1
            where = f"variant {progress.number} of {progress.total}"
            if rounds:
                where += f", round {progress.round} of {progress.rounds}"
            if self._progress is not None:
                # A variant measured again comes after the rest: the bar holds;
                # under rounds, finished results move it (finished_one).
                done = {}
                if progress.attempt == 1 and not rounds:
                    done = {"completed": progress.number - 1}
                self._progress.update(
                    self._tasks[host],
                    total=progress.total,
                    description=label,
                    position=where,
                    **done,
                )
            else:
                elapsed = time.monotonic() - self.started
                prefix = "" if host is None else f"{host}: "
                head = (
                    f"[visit {self._visits[host]}] {label} ({where}, "
                    if rounds
                    else f"[{progress.number}/{progress.total}] {label} ("
                )
                self.console.print(f"{prefix}{head}elapsed {elapsed:.0f} s)", markup=False)

    def finished_one(self) -> None:
        """A result of the local run arrived: the bar moves on."""
        local = self._tasks.get(None)
        if self._progress is not None and local is not None:
            task = self._progress.tasks[0]
            if task.total is None or task.completed < task.total:
                self._progress.advance(local)

    def state(self, host: str, text: str) -> None:
        """What ``host`` is doing (connecting, running, done, failed...)."""
        with self._lock:
            if self._progress is not None:
                self._progress.update(self._tasks[host], description=text)
            else:
                self.console.print(f"{host}: {text}", markup=False)

    def message(self, line: str, host: str | None = None) -> None:
        with self._lock:
            prefix = "" if host is None else f"{host}: "
            self.console.print(prefix + line, markup=False, highlight=False)


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP during a run, alike (Ctrl-C, and what
    `timeout`, CI cancellation and a closed terminal send). Each calls
    ``on_stop(signal, how many so far)``; by default, for a local run, the
    first asks the engine to stop (it ends the current variant and writes
    run_end), the next kills it. What arrived is stored either way; the exit
    status is then 128 + the first signal. A signal while the run is being
    stored waits for the store to finish."""

    def __init__(self, on_stop: Callable[[int, int], None] | None = None) -> None:
        self.received: int | None = None
        self.count = 0
        self.run: EngineRun | None = None
        self.say = say
        self.on_stop = on_stop or self._stop_engine
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for number in STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)

    def _on_signal(self, number: int, frame: object) -> None:
        if self.received is None:
            self.received = number
        self.count += 1
        self.on_stop(number, self.count)

    def _stop_engine(self, number: int, count: int) -> None:
        name = f"interrupted by {signal.Signals(number).name}"
        run = self.run
        if run is None or not run.running:
            self.say(f"{name}: stopping" + (" once what was measured is stored" if run else ""))
            return
        run.interrupt()
        if run.interrupts == 1:
            self.say(
                f"{name}: stopping the engine; finished results will be kept "
                "(Ctrl-C again to kill it)"
            )
        else:
            self.say("killing the engine")

    @property
    def exit_code(self) -> int:
        return 128 + (self.received or signal.SIGINT)


def store_run(store: Store, run: RunRecords, origin: str, label: str | None) -> StoredRun:
    store.add_run(run, origin=origin, label=label)
    return store.load(run.run_id)


class LineFile:
    """A JSON Lines file written in whole lines: each record is one write of
    its full line. If a write fails (a full disk, a file-size limit, a closed
    pipe), a regular file is cut back to its last whole line, writing stops
    and ``error`` says why; the caller decides what that means."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._regular = os.path.isfile(path)
        self._size = 0
        self.lines = 0
        self.error: OSError | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        data = memoryview((dumps(record) + "\n").encode("utf-8"))
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as error:
            self.error = error
            if self._regular:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
            self.close()
            return
        self._size += len(data.obj)
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as error:
                self.error = self.error or error


class Spool:
    """Records as they arrive, in a file beside the store, until the run is stored.

    If ctxbench dies or the store refuses the run, the file stays and the
    message says how to store it (`ctxbench import`); once stored, or when
    there is nothing worth storing, it goes.
    """

    def __init__(self, directory: Path, tag: str = "", store_location: str | None = None):
        self.path = directory / f".ctxbench-unstored-{os.getpid()}{tag}.jsonl"
        self.store_location = store_location  # for the import command in messages
        self.file: LineFile | None = None
        self.reported = False  # the error message already says where the records are
        self.discard = False  # nothing worth keeping (e.g. every result unsupported)

    def __enter__(self) -> Spool:
        try:
            self.file = LineFile(self.path)
        except OSError:
            self.file = None  # a read-only directory: run without the safety copy
        return self

    def write(self, record: dict[str, Any]) -> None:
        if self.file is not None:
            self.file.write(record)

    def hint(self) -> str:
        """Where the records are kept and how to store them, for a message."""
        if self.file is None or self.file.lines == 0:
            return "no safety copy of the records could be kept"
        cut = ""
        if self.file.error is not None:
            cut = f" (the copy stopped there: {self.file.error.strerror})"
        where = f" --db {self.store_location}" if self.store_location else ""
        return (
            f"the {self.file.lines} records received are kept in {self.path}{cut}; "
            f"`ctxbench import {self.path}{where}` stores them"
        )

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.file is None:
            return
        self.file.close()
        if error is not None and not self.discard and self.file.lines:
            if not self.reported:
                say(f"ctxbench: {self.hint()}")
        else:
            self.path.unlink(missing_ok=True)


def stream_engine_run(
    engine_run: EngineRun, copy: LineFile | None, spool: Spool, stop: StopSignals
) -> list[dict[str, Any]]:
    """Run the engine with progress on stderr; every record also to --json and the spool."""
    records: list[dict[str, Any]] = []
    with ProgressView() as view:
        engine_run.on_progress = view.update
        engine_run.on_diagnostic = view.message
        stop.run, stop.say = engine_run, view.message
        try:
            if stop.received is not None:
                return records  # stopped before the engine started
            engine_run.start()
            if stop.received is not None:  # arrived while the engine was starting
                engine_run.interrupt()
            for record in engine_run.records():
                records.append(record)
                spool.write(record)
                if copy is not None:
                    copy.write(record)
                if record["kind"] == "result":
                    view.finished_one()
        finally:
            stop.say = say
            if copy is not None:
                copy.close()
    return records


def open_copy(path: Path | None) -> LineFile | None:
    """--json, opened (and so checked) before anything runs."""
    if path is None:
        return None
    try:
        return LineFile(path)
    except OSError as error:
        raise BadInput(f"cannot write --json {path}: {error.strerror}") from None
