"""The store's earlier runs of one machine, per variant: the figures that give a run-to-run spread.

A machine, for this purpose, is the host name, the CPU model, the kernel
release, the sandbox the engine ran in (the env's ``sandbox`` block, when
the record has one: a seccomp filter or a tracer changes every system call)
and the run options that change a figure (``compare.run_options``: --quick,
samples, batch time). The history is that of the reference run's machine
(run A): the runs with its key measured before the latest compared run (in
the store's measured order), the compared runs left out, newest first, at
most MAX_RUNS. Only ``ok`` results count: a suspect figure measured
something else.
"""

from __future__ import annotations

import json
from typing import Any

from ctxbench.compare import MEASUREMENT_OPTIONS, run_options
from ctxbench.records import params_key
from ctxbench.store import Store, StoredRun

MAX_RUNS = 20  # the newest earlier runs of the machine that make its history
MAX_LOADED = 60  # runs of the same host loaded at most while looking for them


def machine_key(env: dict[str, Any]) -> tuple[str, ...]:
    """(host, CPU model, kernel release, sandbox as JSON, run options as JSON)."""
    cpu = env.get("cpu") or {}
    kernel = env.get("kernel") or {}
    return (
        str(env.get("hostname")),
        str(cpu.get("model")),
        str(kernel.get("release")),
        json.dumps(env.get("sandbox"), sort_keys=True),
        json.dumps(
            {k: v for k, v in run_options(env).items() if k in MEASUREMENT_OPTIONS}, sort_keys=True
        ),
    )


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


def variant_figures(runs: list[StoredRun]) -> dict[tuple[str, str], list[float]]:
    """Per variant key (probe, params), the ok figures (medians) of ``runs``."""
    figures: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for result in run.results:
            summary = result.get("summary")
            if result["verdict"]["status"] != "ok" or not summary:
                continue
            key = (result["probe"], params_key(result["params"]))
            figures.setdefault(key, []).append(float(summary["median"]))
    return figures


def variant_history(store: Store, runs: list[StoredRun]) -> dict[tuple[str, str], list[float]]:
    """``compare_runs``'s history: per variant, the figures of the machine's earlier runs."""
    return variant_figures(history_runs(store, runs))
