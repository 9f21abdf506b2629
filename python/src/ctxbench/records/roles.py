"""What each probe is used for (its roles), as the engine's probe descriptors say.

A role names a use, never a probe: ``ladder:syscall`` (the summary ladder's
bare system call), ``answer:thread`` (a figure of a seed question),
``explain:bare_syscall`` (the figure explain prices system calls at),
``explain:ring``, ``explain:fork_size``, ``explain:fork_minimal_parent``,
``explain:headline``, ``seccomp:per_call`` (the probes of the seccomp filter's
per-call cost), ``uswitch:floor`` and the other steps of a user-level switch's
chain (analysis.explain.user_switch). Each probe's descriptor lists its roles with a
rank (``ProbeDescriptor::roles``, ``ctxbench-engine list --json``);
``ctxbench-engine docs probe-names`` writes them to schema/probe-names.json,
which ``make lint`` keeps equal to the engine's and the wheel carries, so a
stored run is read without an engine. Python names no probe: a probe renamed
or given another rung in the engine changes what Python picks.
"""

from __future__ import annotations

import json
from functools import cache

from ctxbench.records.schema import data_path

ROLES_FILE = "probe-names.json"


@cache
def table() -> dict[str, tuple[tuple[str, int], ...]]:
    """{probe: ((role, rank), ...)} from the engine's generated file."""
    doc = json.loads(data_path(ROLES_FILE).read_text("utf-8"))
    return {
        probe: tuple((role["role"], int(role["rank"])) for role in roles)
        for probe, roles in doc.get("roles", {}).items()
    }


def probes_with(role: str) -> tuple[str, ...]:
    """The probes that have ROLE, lowest rank first (then by name)."""
    ranked = sorted(
        (rank, probe) for probe, roles in table().items() for name, rank in roles if name == role
    )
    return tuple(probe for _, probe in ranked)


def probe_with(role: str) -> str:
    """The one probe (the first) that has ROLE; a role no probe has is an
    error of the engine's data, named."""
    probes = probes_with(role)
    if not probes:
        raise LookupError(f"no probe has the role {role!r} in {ROLES_FILE}")
    return probes[0]


def has_role(probe: str, role: str) -> bool:
    return any(name == role for name, _ in table().get(probe, ()))
