"""The lab's figures as ctxbench records.

The lab's figures as ctxbench records (schema/record.schema.json): one env
record, one result per (target, variant, call), one run_end. Summaries and
the run_end come from the shared code (ctxbench.stats, ctxbench.records).

On Spike and QEMU a result's unit is ``instructions``. On an rvsim model it
is ``cycles`` of that model; the op text, the notes and ``derived`` say which
model ("cycles (rvsim p550)") and carry the instruction figures beside.
"""

from __future__ import annotations

import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxbench.records.building import timestamp
from ctxbench.records.schema import SCHEMA_VERSION
from ctxbench.riscv.catalog import ARG0, CALL_WORDS, EXPECTED_RETURN, VARIANT_WORDS
from ctxbench.riscv.decompose import Figures, Split, figures, single_shot
from ctxbench.riscv.parse import SimOutput
from ctxbench.riscv.simulators import SPIKE_ISA, Target
from ctxbench.riscv.tools import CROSS_PREFIX
from ctxbench.stats import summarize

SOURCE = "riscv-lab"
# 3: derived carries the handler's shape (handler_instructions,
# handler_loads_stores) and the parts split from the bare trap.
PRODUCER_VERSION = "3"


def _unit(target: Target) -> str:
    return "cycles" if target.counts_cycles else "instructions"


def _counter(target: Target) -> str:
    return "cycles" if target.counts_cycles else "instret"


def result_base(run_id: str, target: Target, variant: str, call: str) -> dict[str, Any]:
    params: dict[str, Any] = {"variant": variant, "sim": target.sim}
    if target.model is not None:
        params["model"] = target.model
    read = "rdcycle" if target.counts_cycles else "rdinstret"
    return {
        "schema": SCHEMA_VERSION,
        "kind": "result",
        "run_id": run_id,
        "probe": f"riscv.ecall.{call}",
        "family": "riscv",
        "params": params,
        "unit": _unit(target),
        "op": (
            f"one ecall round trip from U-mode, {CALL_WORDS[call]}, handled by the "
            f"{VARIANT_WORDS[variant]}; counted with {read} on {target.name}, "
            f"in {target.cycle_unit}"
        ),
        "timer": {
            "source": f"{read} ({target.name})",
            "overhead_ns": None,
            "resolution_ns": None,
            "corrected": True,
        },
        "placement": {"requested": "none", "cpus": []},
        "source": SOURCE,
    }


def result_record(
    run_id: str,
    target: Target,
    variant: str,
    call: str,
    out: SimOutput,
    parts: dict[str, dict[str, Split]],
    model: dict[str, Any] | None,
    started_at: str,
    shape: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """parts: counter ('instret', 'cycles') -> call -> its split; shape: the
    handlers' instructions and loads/stores (parse.handler_shape)."""
    counter = _counter(target)
    main = figures(out, variant, call, counter)
    instr = figures(out, variant, call, "instret")
    cyc = figures(out, variant, call, "cycles")
    summary = summarize(main.samples)
    baseline_value = statistics.median(main.baseline)
    corrected_median = summary["median"] - baseline_value
    record = result_base(run_id, target, variant, call)
    derived = _derived(target, variant, call, out, parts, instr, cyc, shape)
    derived.update(_model_figures(model))
    checks = _checks(target, variant, call, out, summary, instr, cyc)
    verdict = _verdict(target, call, checks)
    if target.counts_cycles:
        checks[1]["ok"] = True
        checks[1]["expected"] = "recorded only: a cycle model's loops may differ"
    record.update(
        {
            "ops_per_sample": main.round_trips,
            "warmup_samples": 1,
            "samples": main.samples,
            "summary": summary,
            "baseline": {
                "name": "empty timing loop (the same loop without the ecall)",
                "value": baseline_value,
                "unit": _unit(target),
                "summary": summarize(main.baseline),
            },
            "corrected": {
                "median": corrected_median,
                "min": summary["min"] - baseline_value,
                "p99": summary["p99"] - baseline_value,
                "nonpositive": corrected_median <= 0,
            },
            "derived": derived,
            "checks": checks,
            "verdict": verdict,
            "started_at": started_at,
            "notes": [f"counts are {target.cycle_unit}; instructions beside them in derived"]
            if target.counts_cycles
            else [f"counts are {target.instruction_unit}, not cycles"],
        }
    )
    return record


def _derived(
    target: Target,
    variant: str,
    call: str,
    out: SimOutput,
    parts: dict[str, dict[str, Split]],
    instr: Figures,
    cyc: Figures,
    shape: dict[str, dict[str, int]] | None,
) -> dict[str, Any]:
    """A result's ``derived``: the instruction and cycle figures side by side,
    the handler's shape, the parts split from the bare trap, single shots."""
    derived: dict[str, Any] = {
        "per_round_trip_instructions": instr.corrected,
        "per_round_trip_cycles": cyc.corrected,
        "cycle_unit": target.cycle_unit,
        "counters": target.counters,
        "timer_pair_instructions": instr.timer,
        "timer_pair_cycles": cyc.timer,
        "baseline_instructions": statistics.median(instr.baseline),
        "baseline_cycles": statistics.median(cyc.baseline),
        "minus_full_instructions": instr.corrected - parts["instret"][call].total,
    }
    if shape is not None and variant in shape:
        derived["handler_instructions"] = shape[variant]["instructions"]
        derived["handler_loads_stores"] = shape[variant]["loads_stores"]
    if target.counts_cycles:
        derived["minus_full_cycles"] = cyc.corrected - parts["cycles"][call].total
    if variant == "full":
        for part, value in parts["instret"][call].parts.items():
            derived[f"{part}_instructions"] = value
        if target.counts_cycles:
            for part, value in parts["cycles"][call].parts.items():
                derived[f"{part}_cycles"] = value
    if call == "getpid":
        for name, key in (("instructions", "instret"), ("cycles", "cycles")):
            shot = single_shot(out, variant, key)
            if shot is not None:
                derived[f"single_shot_{name}"] = shot["raw"]
                derived[f"single_shot_less_timer_{name}"] = shot["less_timer"]
    return derived


def _model_figures(model: dict[str, Any] | None) -> dict[str, Any]:
    """An rvsim model's settings as flat ``derived`` keys (model_KEY, or
    model_KEY_INNER for a nested one)."""
    flat: dict[str, Any] = {}
    for key, value in (model or {}).items():
        if isinstance(value, dict):
            for inner, item in value.items():
                flat[f"model_{key}_{inner}"] = item
        else:
            flat[f"model_{key}"] = value
    return flat


def _checks(
    target: Target,
    variant: str,
    call: str,
    out: SimOutput,
    summary: dict[str, Any],
    instr: Figures,
    cyc: Figures,
) -> list[dict[str, Any]]:
    """A result's checks: the call's return value first, then whether the
    timed loops agree, then the cycle counter and the clock where they apply."""
    returned = out.returns.get((variant, call))
    expected = ARG0[call] if variant == "empty" else EXPECTED_RETURN[call]
    checks: list[dict[str, Any]] = [
        {
            "name": "return_value",
            "expected": expected,
            "observed": returned,
            "ok": returned == expected,
            "detail": "a0 unchanged: the empty handler runs no call"
            if variant == "empty"
            else "a0 after the last ecall of the loop",
        },
        {
            "name": "deterministic_samples",
            "expected": "every timed loop gives the same count",
            "observed": {"min": summary["min"], "max": summary["max"]},
            "ok": summary["min"] == summary["max"],
        },
    ]
    if not target.counts_cycles:
        checks.append(
            {
                "name": "cycle_counter",
                "expected": "rdcycle delta equals rdinstret delta",
                "observed": {"cycles": cyc.corrected, "instret": instr.corrected},
                "ok": cyc.corrected == instr.corrected,
                "detail": target.counters,
            }
        )
    if call == "clock_gettime" and variant != "empty":
        clock = out.clock.get(variant, {})
        first, last = clock.get("first_ns", -1), clock.get("last_ns", -1)
        checks.append(
            {
                "name": "clock_advances",
                "expected": "last timespec >= first, both > 0",
                "observed": {"first_ns": first, "last_ns": last},
                "ok": 0 < first <= last,
            }
        )
    return checks


def _verdict(target: Target, call: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """failed where the call returned the wrong value; suspect where the
    timed loops of a deterministic simulator differ."""
    returned = checks[0]
    reasons = []
    if not returned["ok"]:
        reasons.append(
            {
                "code": "error",
                "detail": f"{call} returned {returned['observed']}, "
                f"expected {returned['expected']}",
            }
        )
    status = "failed" if reasons else "ok"
    # Spike and QEMU are deterministic loop for loop. A cycle model's loops
    # may differ (caches and predictors warm up), so spread is no fault there.
    if status == "ok" and not checks[1]["ok"] and not target.counts_cycles:
        status = "suspect"
        reasons.append(
            {"code": "high_spread", "detail": "timed loops differ in a deterministic simulator"}
        )
    return {"status": status, "reasons": reasons}


def env_record(
    run_id: str,
    targets: Sequence[Target],
    versions: dict[str, str],
    images: Path | None,
    models: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    uname = platform.uname()
    simulated = "; ".join(f"{t.name}: {versions.get(t.sim) or 'not available'}" for t in targets)
    return {
        "schema": SCHEMA_VERSION,
        "kind": "env",
        "run_id": run_id,
        "producer": {"name": "ctxbench-riscv-lab", "version": PRODUCER_VERSION},
        "started_at": timestamp(),
        "hostname": uname.node,
        "arch": "riscv64",
        "cpu": {
            "model": f"simulated RV64GC hart ({simulated})",
            "vendor": "simulator",
            "logical": 1,
            "online": [0],
            "allowed": [0],
        },
        "kernel": {
            "sysname": "ctxbench trap-lab kernel",
            "release": "bare metal, M-mode, no MMU (riscv/kernel)",
        },
        "virtualization": {"detected": "simulator: " + ", ".join(t.name for t in targets)},
        "mitigations": {},
        "build": {
            "images": str(images) if images else None,
            "cflags": "-march=rv64gc -mabi=lp64 -mcmodel=medany -O2 (riscv/Makefile)",
            "spike_isa": SPIKE_ISA,
            "rvsim_models": "; ".join(
                f"{name}: " + ", ".join(f"{k}={v}" for k, v in model.items())
                for name, model in models.items()
            ),
        },
        "compiler": {"name": CROSS_PREFIX + "gcc", "version": versions.get("cc", "")},
        "options": {"sims": [t.name for t in targets]},
        "notes": [
            f"host: {uname.system} {uname.release} {uname.machine}",
            "figures are counts from simulators (instructions; rvsim: a model's cycles), "
            "not host time and not hardware cycles",
        ],
    }
