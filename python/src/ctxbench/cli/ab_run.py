"""`run --ab-wrapper CMD`: the rounds of an A/B run, each arm one engine process.

The order and the merging are ``acquire.ab``'s; this drives the engine
processes through the run's lifecycle (progress, the spool, stop signals).
A stop signal ends the process in flight as any run's; the rounds already
whole are the run, stored as a partial one, and no engine is left running
(the wrapped arm's whole process group is signalled).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxbench.acquire.ab import WrappedEngineRun, arm_order, merge_ab
from ctxbench.acquire.runner import EngineRun, RunOptions
from ctxbench.cli.console import say
from ctxbench.cli.run_lifecycle import LineFile, Spool, StopSignals, stream_engine_run


def measure_ab(
    options: RunOptions,
    engine: Path,
    prefix: list[str],
    wrapper: str,
    rounds: int,
    copy: LineFile | None,
    spool: Spool,
    stop: StopSignals,
) -> tuple[list[dict[str, Any]], list[EngineRun]]:
    """The A/B run's records (``merge_ab``; empty when no round was whole)
    and every engine run that made them. A process that fails or is stopped
    ends the rounds."""
    taken: list[dict[str, list[dict[str, Any]]]] = []
    engine_runs: list[EngineRun] = []
    ended = False
    for number in range(rounds):
        one_round: dict[str, list[dict[str, Any]]] = {}
        for arm in arm_order(number):
            if stop.received is not None:
                ended = True
                break
            if arm == "A":
                engine_run: EngineRun = EngineRun(options, engine=engine)
            else:
                engine_run = WrappedEngineRun(prefix, options, engine=engine)
            engine_runs.append(engine_run)
            under = f" under {wrapper}" if arm == "B" else ""
            say(f"round {number + 1} of {rounds}: {arm}{under}")
            spool.mark_ab(number + 1, arm, rounds, wrapper)
            one_round[arm] = stream_engine_run(engine_run, None, spool, stop)
            if engine_run.interrupted or engine_run.failure() is not None:
                ended = True
                break
        if ended:
            break  # a round whose second arm did not finish is not kept
        taken.append(one_round)
    try:
        merged = merge_ab(taken, wrapper, rounds, interrupted=ended)
    except ValueError:
        say("no A/B round finished both arms; nothing of this run is kept")
        merged = []
    else:
        say(
            f"A/B run of {len(taken)} round(s): `ctxbench compare {merged[0]['run_id']} --ab "
            "--fail-above PCT` judges B against A round by round"
        )
    if copy is not None:
        for record in merged:
            copy.write(record)
        copy.close()
    return merged, engine_runs
