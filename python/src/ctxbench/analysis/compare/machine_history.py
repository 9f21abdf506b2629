"""A machine's earlier runs, per variant: the figures that give a run-to-run spread.

The runs are passed in: the store's earlier runs of the reference run's
machine (``store.earlier_runs.history_runs``; a machine is
``records.machines.machine_key``: host, CPU model, kernel release and the
sandbox the engine ran in). ``ok`` and
``suspect`` figures count, a suspect one as ``noise.SUSPECT_WEIGHT`` of a
run: a machine whose runs are often suspect has that spread. Each figure
says whether it carried interference (``noise.carried_interference``), or
its run as a whole did (``noise.run_carried_interference``): the noise
leaves those out where the clean ones suffice.
"""

from __future__ import annotations

from ctxbench.analysis.compare.noise import (
    carried_interference,
    history_weight,
    p10,
    run_carried_interference,
    run_cpu_loop,
)
from ctxbench.records.naming import params_key
from ctxbench.records.runs import StoredRun

Figures = dict[tuple[str, str], list[tuple[float, float, bool]]]


def variant_figures(runs: list[StoredRun]) -> Figures:
    """Per variant key (probe, params), the (p10, weight, interfered) of
    each of ``runs`` that measured it ok or suspect (``noise.p10``,
    ``noise.history_weight``, ``noise.carried_interference``)."""
    figures: Figures = {}
    for run in runs:
        whole = run_carried_interference(run.results)
        for result in run.results:
            if not result.verdict.measured:
                continue
            value = p10(result)
            if not value or value <= 0:
                continue
            key = (result.probe, params_key(result.params))
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
