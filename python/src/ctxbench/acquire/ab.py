"""`run --ab-wrapper CMD`: A and B on alternate rounds of one run, B the engine under CMD.

A change that wraps the measuring process (a seccomp filter through
`ctxbench-seccomp-exec`, `env LD_PRELOAD=...`, a container runtime, a
cgroup) cannot be one of the engine's own parameters. Two separate runs of
A and B would each meet the host at a different moment; here round k runs
one engine process plain (``arm=A``) and one under the wrapper (``arm=B``)
over the same selection, one right after the other, and the order
alternates from round to round (AB, BA, AB, ...) so a drift within a round
falls on both arms alike (``arm_order``). ``analysis.compare.paired`` then judges
B against A round by round.

``merge_ab`` is pure: the processes' records as one stored run. Its env is
the first A process's (its run id is the run's), with ``options.ab_wrapper``
and ``options.ab_rounds``; per variant and arm one record, the arm's rounds
pooled as ``run --repeat`` pools repeats (``repeats.merge_variant``: the
samples together, a hierarchical interval, each process's figure in the
``repeats`` block), with ``params.arm`` A or B and ``schedule.round_figures``
one entry per round: that round's process (its samples are the record's in
round order, its median less the record's baseline, as the engine writes a
round's), ``round`` the A/B round. Only
whole rounds are kept: a round whose second arm did not finish (Ctrl-C, a
failure) is left out, both arms, so every kept round pairs.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shlex
import shutil
import signal
from collections.abc import Sequence
from typing import Any

from ctxbench.acquire.repeats import merge_variant
from ctxbench.acquire.runner import EngineRun
from ctxbench.records.building import run_end_record
from ctxbench.records.naming import params_key

ARMS = ("A", "B")
DEFAULT_AB_ROUNDS = 10
MAX_AB_ROUNDS = 100


def arm_order(round_index: int) -> tuple[str, str]:
    """The arms of round ROUND_INDEX (from 0) in the order they run: AB, BA, AB, ..."""
    return ARMS if round_index % 2 == 0 else (ARMS[1], ARMS[0])


def wrapper_words(text: str) -> list[str]:
    """The wrapper command as words; ValueError naming the problem and the fix."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise ValueError(f"--ab-wrapper {text!r}: {error}; quote it as a shell would") from None
    if not words:
        raise ValueError(
            "--ab-wrapper is empty; give the command B runs under, e.g. "
            "--ab-wrapper 'ctxbench-seccomp-exec allow --'"
        )
    program = words[0]
    if "=" in program and not program.startswith(("/", ".")):
        raise ValueError(
            f"--ab-wrapper {text!r} starts with a variable; run it through env, "
            f"e.g. --ab-wrapper 'env {text}'"
        )
    found = shutil.which(program)
    if found is None:
        raise ValueError(
            f"--ab-wrapper: {program} is not an executable here (nor on PATH); "
            "give its path or install it"
        )
    return words


class WrappedEngineRun(EngineRun):
    """The engine under a wrapper command: PREFIX then the engine's own command
    line. Stopping signals the whole process group the wrapper leads (a
    wrapper that does not exec the engine would keep it otherwise)."""

    def __init__(self, prefix: Sequence[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = list(prefix)

    def command(self) -> list[str]:
        return [*self.prefix, *super().command()]

    def interrupt(self) -> None:
        self.interrupts += 1
        process = self._process
        if process is None or process.poll() is not None:
            return
        number = signal.SIGINT if self.interrupts == 1 else signal.SIGKILL
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, number)


def round_figure(number: int, record: dict[str, Any], baseline: float) -> dict[str, Any]:
    """One process's record as a round's entry of ``schedule.round_figures``:
    its median less BASELINE, the merged record's (its ``corrected`` uses
    the same), so the entry reads as the engine's entries do."""
    has_figure = record["verdict"]["status"] in ("ok", "suspect") and bool(record.get("samples"))
    median = (record.get("summary") or {}).get("median")
    aside = (record.get("set_aside") or {}).get("samples") or []
    return {
        "round": number,
        "n": len(record.get("samples") or []) if has_figure else 0,
        "median": median - baseline if has_figure and median is not None else None,
        "set_aside": len(aside),
    }


def merge_ab(
    rounds: Sequence[dict[str, Sequence[dict[str, Any]]]],
    wrapper: str,
    asked: int,
    interrupted: bool = False,
) -> list[dict[str, Any]]:
    """The records of whole rounds (each {"A": records, "B": records}, one
    engine process's env, results and run_end per arm) as one run: env, a
    result per variant and arm, run_end. ValueError when no round is whole."""
    whole = [r for r in rounds if all(any(x["kind"] == "env" for x in r[arm]) for arm in ARMS)]
    if not whole:
        raise ValueError("no round finished both arms")
    first_env = next(x for x in whole[0]["A"] if x["kind"] == "env")
    env = copy.deepcopy(first_env)
    run_id = env["run_id"]
    env.setdefault("options", {}).update({"ab_wrapper": wrapper, "ab_rounds": asked})
    env["notes"] = [
        *(env.get("notes") or []),
        f"A/B run: {len(whole)} of {asked} rounds, each one engine process plain (arm=A) and "
        f"one under `{wrapper}` (arm=B), in the order AB, BA, AB...; each record's "
        "schedule.round_figures has its figure per round, its repeats block each process",
    ]
    results: list[dict[str, Any]] = []
    for arm in ARMS:
        by_variant: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
        for number, one_round in enumerate(whole):
            for record in one_round[arm]:
                if record["kind"] == "result":
                    key = (record["probe"], params_key(record["params"]))
                    by_variant.setdefault(key, []).append((number, record))
        for index, records in enumerate(by_variant.values()):
            # merge_variant numbers the processes from 1, as repeats.
            merged = merge_variant(
                [(number + 1, record) for number, record in records],
                run_id,
                seed=index,
                asked=len(whole),
            )
            merged["params"] = {**merged["params"], "arm": arm}
            baseline = merged.get("baseline") if merged.get("corrected") is not None else None
            value = float(baseline["value"]) if baseline else 0.0
            schedule = {k: v for k, v in (merged.get("schedule") or {}).items() if k != "seed"}
            schedule.update(
                interleave="rounds",
                rounds=len(records),
                round_figures=[round_figure(k, record, value) for k, record in records],
            )
            merged["schedule"] = schedule
            results.append(merged)
    # A's and B's record of one variant side by side, in A's first process's order.
    order = {
        (r["probe"], params_key(r["params"])): r.get("variant_index", 0)
        for r in whole[0]["A"]
        if r["kind"] == "result"
    }

    def place(result: dict[str, Any]) -> tuple[int, str]:
        params = {k: v for k, v in result["params"].items() if k != "arm"}
        return order.get((result["probe"], params_key(params)), 1 << 30), result["params"]["arm"]

    results.sort(key=place)
    for index, result in enumerate(results, start=1):
        result["variant_index"] = index
    ends = [x for r in whole for arm in ARMS for x in r[arm] if x["kind"] == "run_end"]
    stopped = interrupted or len(whole) < asked or any(end["interrupted"] for end in ends)
    duration = sum(float(end.get("duration_s") or 0.0) for end in ends)
    return [env, *results, run_end_record(run_id, results, duration, stopped)]
