"""``ctxbench run --host DEST...``: the same selection on several hosts at once.

One thread per host drives a ``RemoteEngineRun`` (ctxbench.remote); the main
thread shows one progress line per host, forwards Ctrl-C to every host, and
stores one run per host once all have ended, labelled with the host. A host
that fails gives one line naming it and the cause; the others go on, and the
finished records of a host that broke mid-run are stored as a partial run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ctxbench.cli import _error_line, _print_run, _ProgressView, _say, _Spool, _store_run
from ctxbench.errors import CtxbenchError
from ctxbench.records import group_run
from ctxbench.remote import SSH, HostError, RemoteEngineRun
from ctxbench.runner import EXIT_INTERRUPTED, RunOptions
from ctxbench.runner import Progress as EngineProgress
from ctxbench.store import Store, StoredRun


@dataclass
class _HostRun:
    host: str
    engine_run: RemoteEngineRun
    records: list[dict[str, Any]] = field(default_factory=list)
    error: CtxbenchError | None = None
    stored: StoredRun | None = None


class _HostsView(_ProgressView):
    """One progress line per host on stderr: a live bar each on a terminal, lines otherwise."""

    def __init__(self, hosts: list[str]):
        super().__init__()
        self.hosts = hosts
        self._lock = threading.Lock()  # hosts report from their own threads
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> _HostsView:
        if self.live:
            self._progress = Progress(
                TextColumn("{task.fields[host]}", markup=False),
                TextColumn("{task.fields[position]}"),
                BarColumn(bar_width=20),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),
                console=self.console,
            )
            self._progress.start()
            for host in self.hosts:
                self._tasks[host] = self._progress.add_task(
                    "connecting", total=None, host=host, position=""
                )
        else:
            self.console.print(f"running on {', '.join(self.hosts)}...", markup=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def host_update(self, host: str, progress: EngineProgress) -> None:
        with self._lock:
            self.update(progress, task=self._tasks.get(host), prefix=f"{host}: ")

    def state(self, host: str, text: str) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.update(self._tasks[host], description=text)
            else:
                self.console.print(f"{host}: {text}", markup=False)

    def host_message(self, host: str, line: str) -> None:
        with self._lock:
            self.message(f"{host}: {line}")


def _drive(job: _HostRun, view: _HostsView, spool: _Spool) -> None:
    run = job.engine_run
    run.on_progress = lambda progress: view.host_update(job.host, progress)
    run.on_diagnostic = lambda line: view.host_message(job.host, line)
    try:
        run.prepare()
        if run.interrupts:
            return
        view.state(job.host, f"running ({run.arch})")
        run.start()
        for record in run.records():
            job.records.append(record)
            spool.write(record)
        job.error = run.host_failure()
        view.state(job.host, "failed" if job.error else "done")
    except CtxbenchError as error:
        job.error = error
        view.state(job.host, "failed")
    except Exception as error:  # one host's surprise must not take down the others
        job.error = HostError(job.host, f"{type(error).__name__}: {error}")
        view.state(job.host, "failed")
    finally:
        run.cleanup()


# Ctrl-C, and what `timeout`, CI cancellation and a closed terminal send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _forward_interrupts(jobs: list[_HostRun], view: _HostsView) -> Iterator[list[int]]:
    """Every stop signal stops every host (a second one kills ssh); yields the
    signals received."""
    received: list[int] = []

    def on_interrupt(signum: int, frame: object) -> None:
        received.append(signum)
        for job in jobs:
            job.engine_run.interrupt()
        for job in jobs:
            view.state(job.host, "stopping" if len(received) == 1 else "killing")

    previous = {number: signal.signal(number, on_interrupt) for number in STOP_SIGNALS}
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_on_hosts(
    store: Store,
    hosts: list[str],
    options: RunOptions,
    label: str | None,
    ssh_config: Path | None,
    report_path: Path | None,
    show_all: bool = False,
) -> int:
    hosts = list(dict.fromkeys(hosts))  # a host named twice runs once
    ssh = SSH(config=ssh_config)
    jobs = [_HostRun(host, RemoteEngineRun(host, options, ssh)) for host in hosts]
    spools = [_Spool(store.spool_dir, tag=f"-{index}") for index in range(len(jobs))]
    with _HostsView(hosts) as view, _forward_interrupts(jobs, view) as received:
        for spool in spools:
            spool.__enter__()
        threads = [
            threading.Thread(target=_drive, args=(job, view, spool), daemon=True)
            for job, spool in zip(jobs, spools, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)  # short waits: Ctrl-C is handled between them
    interrupted = any(job.engine_run.interrupted for job in jobs)
    for job, spool in zip(jobs, spools, strict=True):
        stored_error: BaseException | None = None
        try:
            if any(record["kind"] == "env" for record in job.records):
                records = group_run(job.records, f"output of {job.host}")
                host_label = job.host if label is None else f"{label} ({job.host})"
                job.stored = _store_run(store, records, "run", host_label)
        except CtxbenchError as error:
            stored_error = error
            job.error = job.error or HostError(job.host, f"not stored: {error}")
        finally:
            spool.__exit__(None, stored_error, None)
    for job in jobs:
        if job.stored is not None:
            _print_run(job.stored, show_all, title=f"{job.host}: run {job.stored.run_id}")
    for job in jobs:
        if job.stored is not None:
            state = "partial run" if job.stored.info.interrupted else "run"
            _say(
                f"{job.host}: stored {state} {job.stored.run_id} "
                f"({len(job.stored.results)} results) in {store.location}"
            )
    stored = [job.stored for job in jobs if job.stored is not None]
    if report_path is not None and stored:
        from ctxbench.cli import _write_report

        _write_report(stored, report_path)
    failed = [job for job in jobs if job.error is not None]
    for job in failed:
        kept = ""
        if job.stored is not None:
            kept = (
                f"; its {len(job.stored.results)} finished results are stored as "
                f"partial run {job.stored.run_id}"
            )
        _error_line(f"{job.error}{kept}")
    if failed:
        return 1
    if received:
        return 128 + received[0]  # 130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP
    return EXIT_INTERRUPTED if interrupted else 0
