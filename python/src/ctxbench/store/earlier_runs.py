"""The store's earlier runs of one machine: the runs that give a run-to-run spread.

A machine, for this purpose, is ``records.machines.machine_key``: the host
name, the CPU model, the kernel release and the sandbox the engine ran in.
The history is that of the reference run's machine (run A): the runs with
its key measured before the latest compared run (in the store's measured
order), the compared runs left out, newest first, at most MAX_RUNS.
"""

from __future__ import annotations

from ctxbench.records.machines import machine_key
from ctxbench.records.runs import StoredRun
from ctxbench.store.db import Store

MAX_RUNS = 20  # the newest earlier runs of the machine that make its history
MAX_LOADED = 60  # runs of the same host loaded at most while looking for them


def history_runs(store: Store, runs: list[StoredRun]) -> list[StoredRun]:
    """The earlier runs of the reference run's machine (the first of RUNS), newest first."""
    key = machine_key(runs[0].env)
    compared = {run.run_id for run in runs}
    infos = store.runs()  # measured order
    positions = {info.run_id: index for index, info in enumerate(infos)}
    last = max(positions.get(run.run_id, -1) for run in runs)
    earlier = [
        info
        for info in reversed(infos[: max(last, 0)])
        if info.run_id not in compared and info.hostname == key[0]
    ]
    found = []
    for info in earlier[:MAX_LOADED]:
        loaded = store.load(info.run_id)
        if machine_key(loaded.env) == key:
            found.append(loaded)
            if len(found) == MAX_RUNS:
                break
    return found
