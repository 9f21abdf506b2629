"""Environment diff of runs: env records flattened to dotted keys, differing keys first.

The keys that explain differences between machines come first (host, CPU,
kernel, virtualization, the sandbox: seccomp filter, tracer, syscall auditing,
mitigations, clocksource, frequency governor);
decimal measurements in the env (timer overhead, TSC period) within
FLOAT_TOLERANCE of each other are the same value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxbench.records.environment import Environment

# Keys that say why two machines differ, in the order a reader wants them.
ENV_PRIORITY = (
    "hostname",
    "arch",
    "cpu.model",
    "cpu.vendor",
    "cpu.logical",
    "kernel.release",
    "kernel.version",
    "kernel.cmdline",
    "virtualization",
    "sandbox",
    "mitigations",
    "clocksource",
    "frequency",
    "scheduler",
    "libc",
    "compiler",
    "build",
)
# Decimal numbers in the env are measurements (TSC period, timer overhead):
# run-to-run noise below this relative difference is not a difference.
FLOAT_TOLERANCE = 0.05
# Per-run bookkeeping, not environment.
ENV_SKIP = {"schema", "kind", "run_id", "started_at", "options", "notes"}


@dataclass(frozen=True)
class EnvDiff:
    keys: list[str]  # every key, ordered
    values: dict[str, list[str | None]]  # key -> one value per run (None: absent)
    differing: list[str]  # the keys whose values differ


def flatten_env(env: Environment) -> dict[str, str]:
    """Every key of the record as written, dotted ('cpu.model'), but the run's own bookkeeping."""
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for name, inner in value.items():
                walk(f"{prefix}.{name}" if prefix else str(name), inner)
        elif (
            isinstance(value, list) and value and all(not isinstance(v, dict | list) for v in value)
        ):
            flat[prefix] = ", ".join(_scalar(v) for v in value)
        elif isinstance(value, dict | list):
            flat[prefix] = json.dumps(value, sort_keys=True) if value else "(none)"
        else:
            flat[prefix] = _scalar(value)

    for name, value in env.raw.items():
        if name not in ENV_SKIP:
            walk(name, value)
    return flat


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _priority(key: str) -> tuple[int, str]:
    for rank, prefix in enumerate(ENV_PRIORITY):
        if key == prefix or key.startswith(prefix + "."):
            return rank, key
    return len(ENV_PRIORITY), key


def _same(values: list[str | None]) -> bool:
    """Equal values; measured decimals (timer overhead...) within FLOAT_TOLERANCE."""
    if len(set(values)) <= 1:
        return True
    if any(v is None or "." not in v for v in values):
        return False
    try:
        numbers = [float(v) for v in values if v is not None]
    except ValueError:
        return False
    largest = max(abs(n) for n in numbers)
    return max(numbers) - min(numbers) <= FLOAT_TOLERANCE * largest


def env_diff(envs: list[Environment]) -> EnvDiff:
    flats = [flatten_env(env) for env in envs]
    keys = sorted({key for flat in flats for key in flat}, key=_priority)
    values = {key: [flat.get(key) for flat in flats] for key in keys}
    differing = [key for key in keys if not _same(values[key])]
    return EnvDiff(keys=keys, values=values, differing=differing)
