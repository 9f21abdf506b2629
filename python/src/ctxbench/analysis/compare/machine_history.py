"""The store's earlier runs of one machine, per variant: the figures that give a run-to-run spread.

A machine, for this purpose, is the host name, the CPU model, the kernel
release and the sandbox the engine ran in (the env's ``sandbox`` block,
when the record has one: a seccomp filter or a tracer changes every system
call). Run options (--quick, samples, batch time, repeats) are not part of
it: they change how sure a figure is, not what it measures. The history is
that of the reference run's machine (run A): the runs with its key measured
before the latest compared run (in the store's measured order), the
compared runs left out, newest first, at most MAX_RUNS. ``ok`` and
``suspect`` figures count, a suspect one as ``noise.SUSPECT_WEIGHT`` of a
run: a machine whose runs are often suspect has that spread. Each figure
says whether it carried interference (``noise.carried_interference``), or
its run as a whole did (``noise.run_carried_interference``): the noise
leaves those out where the clean ones suffice.
"""

from __future__ import annotations

import json
from typing import Any

from ctxbench.analysis.compare.noise import (
    carried_interference,
    history_weight,
    p10,
    run_carried_interference,
    run_cpu_loop,
)
from ctxbench.records.naming import params_key
from ctxbench.store.db import Store, StoredRun

MAX_RUNS = 20  # the newest earlier runs of the machine that make its history
MAX_LOADED = 60  # runs of the same host loaded at most while looking for them


def machine_key(env: dict[str, Any]) -> tuple[str, ...]:
    """(host, CPU model, kernel release, what of the sandbox changes a figure, as JSON)."""
    cpu = env.get("cpu") or {}
    kernel = env.get("kernel") or {}
    return (
        str(env.get("hostname")),
        str(cpu.get("model")),
        str(kernel.get("release")),
        json.dumps(sandbox_key(env.get("sandbox")), sort_keys=True),
    )


def sandbox_key(sandbox: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of the sandbox block changes a figure: the seccomp mode and filters,
    being traced, auditing, tracepoints recording; not the pids, the count of
    events enabled or where tracefs is mounted."""
    if not sandbox:
        return sandbox
    seccomp = sandbox.get("seccomp") or {}
    audit = sandbox.get("audit") or {}
    return {
        "seccomp": [seccomp.get("mode"), seccomp.get("filters")],
        "traced": sandbox.get("traced"),
        "audit": [audit.get("state"), audit.get("rules")],
        "tracepoints_recording": (sandbox.get("tracepoints") or {}).get("recording"),
    }


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


Figures = dict[tuple[str, str], list[tuple[float, float, bool]]]


def variant_figures(runs: list[StoredRun]) -> Figures:
    """Per variant key (probe, params), the (p10, weight, interfered) of
    each of ``runs`` that measured it ok or suspect (``noise.p10``,
    ``noise.history_weight``, ``noise.carried_interference``)."""
    figures: Figures = {}
    for run in runs:
        whole = run_carried_interference(run.results)
        for result in run.results:
            if result["verdict"]["status"] not in ("ok", "suspect"):
                continue
            value = p10(result)
            if not value or value <= 0:
                continue
            key = (result["probe"], params_key(result["params"]))
            figures.setdefault(key, []).append(
                (
                    value,
                    history_weight(result),
                    whole or carried_interference(result),
                )
            )
    return figures


def loop_history(runs: list[StoredRun]) -> list[float]:
    """The plain loop of each of ``runs`` that has one (``noise.run_cpu_loop``)."""
    loops = [run_cpu_loop(run.results) for run in runs]
    return [loop for loop in loops if loop is not None]


def variant_history(store: Store, runs: list[StoredRun]) -> Figures:
    """``compare_runs``'s history: per variant, the figures of the machine's earlier runs."""
    return variant_figures(history_runs(store, runs))
