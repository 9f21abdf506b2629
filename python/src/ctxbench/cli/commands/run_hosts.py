"""``ctxbench run --host DEST...``: the same selection on several hosts at once.

One thread per host drives a ``RemoteEngineRun`` (ctxbench.remote); the main
thread shows one progress line per host, forwards Ctrl-C to every host, and
stores one run per host once all have ended, labelled with the host. A host
that fails gives one line naming it and the cause; the others go on, and the
finished records of a host that broke mid-run are stored as a partial run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.acquire.remote import SSH, HostError, RemoteEngineRun
from ctxbench.acquire.runner import RunOptions
from ctxbench.cli.console import error_line, say
from ctxbench.cli.output_files import write_report
from ctxbench.cli.run_lifecycle import ProgressView, Spool, StopSignals, store_run
from ctxbench.cli.run_output import print_run
from ctxbench.errors import EXIT_INTERRUPTED, CtxbenchError
from ctxbench.records.runs import StoredRun, group_run
from ctxbench.store.db import Store


@dataclass
class _HostRun:
    host: str
    engine_run: RemoteEngineRun
    records: list[dict[str, Any]] = field(default_factory=list)
    error: CtxbenchError | None = None
    stored: StoredRun | None = None


def _drive(job: _HostRun, view: ProgressView, spool: Spool) -> None:
    run = job.engine_run
    run.on_progress = lambda progress: view.update(progress, host=job.host)
    run.on_diagnostic = lambda line: view.message(line, host=job.host)
    run.on_partial = spool.write_partial  # each round survives a kill of ctxbench
    try:
        run.prepare()
        if run.interrupts:
            return
        view.state(job.host, f"running ({run.arch})")
        run.start()
        for record in run.records():
            job.records.append(record)
            spool.write(record)
        for record in run.unfinished():  # the engine died before it wrote them
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


def _stop_hosts(jobs: list[_HostRun], view: ProgressView, count: int) -> None:
    """Every stop signal stops every host (a second one kills ssh)."""
    for job in jobs:
        job.engine_run.interrupt()
    for job in jobs:
        view.state(job.host, "stopping" if count == 1 else "killing")


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
    spools = [Spool(store.spool_dir, tag=f"-{index}") for index in range(len(jobs))]
    view = ProgressView(hosts=hosts)
    stop = StopSignals(on_stop=lambda number, count: _stop_hosts(jobs, view, count))
    with view, stop:
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
                job.stored = store_run(store, records, "run", host_label)
        except CtxbenchError as error:
            stored_error = error
            job.error = job.error or HostError(job.host, f"not stored: {error}")
        finally:
            spool.__exit__(None, stored_error, None)
    for job in jobs:
        if job.stored is not None:
            print_run(job.stored, show_all, title=f"{job.host}: run {job.stored.run_id}")
    for job in jobs:
        if job.stored is not None:
            state = "partial run" if job.stored.info.interrupted else "run"
            say(
                f"{job.host}: stored {state} {job.stored.run_id} "
                f"({len(job.stored.results)} results) in {store.location}"
            )
    stored = [job.stored for job in jobs if job.stored is not None]
    if report_path is not None and stored:
        write_report(stored, report_path)
    failed = [job for job in jobs if job.error is not None]
    for job in failed:
        kept = ""
        if job.stored is not None:
            kept = (
                f"; its {len(job.stored.results)} finished results are stored as "
                f"partial run {job.stored.run_id}"
            )
        error_line(f"{job.error}{kept}")
    if failed:
        return 1
    if stop.received is not None:
        return stop.exit_code  # 130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP
    return EXIT_INTERRUPTED if interrupted else 0
