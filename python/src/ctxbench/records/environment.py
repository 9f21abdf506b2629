"""An env record as a frozen type: the machine a run measured, and how the run was asked for.

An env record is read into ``Environment`` once, where a run is read
(``StoredRun.env``; ``environment_of`` for an env that comes alone, as in a
profile), and passed inward. The fields typed here are the ones the package
reads: the host, the CPU, the kernel, the virtualization, the idle driver,
the sandbox on the measuring task's system calls, and the run's options,
shield and notes. The JSON it came from stays beside it (``Environment.raw``)
for the edges that write JSON or rows, for the environment diff (every key,
flattened) and for the blocks not typed here (``Environment.block``:
mitigations, clocksource, scheduler, ...). A key the record must have and
lacks (``schema/record.schema.json``) is a ``RecordError`` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbench.errors import RecordError
from ctxbench.records.result import Verbatim


@dataclass(frozen=True, slots=True)
class Virtualization:
    """What the engine saw of a hypervisor or a container (the record's ``virtualization``)."""

    detected: str  # 'none', a hypervisor or container name, or 'unknown'
    hypervisor_bit: bool | None
    hypervisor_vendor: str | None  # the CPUID vendor string ('KVMKVMKVM')
    systemd_detect_virt: str | None
    container: str | None
    wsl: bool


@dataclass(frozen=True, slots=True)
class Sandbox:
    """What sat on every system call of the measuring task (the record's ``sandbox``)."""

    seccomp_mode: str  # disabled, strict, filter or unknown
    seccomp_filters: int | None  # None: a kernel before 5.9
    tracer_pid: int | None
    traced: bool | None
    audit_state: str | None  # absent where the engine could not read it
    audit_rules: int | None
    tracepoints_enabled: int | None  # None: no tracefs read, or an engine before the block
    tracepoints_recording: bool | None


@dataclass(frozen=True, slots=True)
class Environment(Verbatim):
    """The machine of one run and the run's choices, as its env record says them."""

    run_id: str
    producer_name: str  # the engine that wrote it, and its version
    producer_version: str
    hostname: str | None
    arch: str
    started_at: str
    cpu_model: str
    cpu_logical: int | None
    cpu_allowed: tuple[int, ...]
    kernel_release: str
    virtualization: Virtualization
    idle_driver: str | None  # frequency.cpuidle_driver; None where not read
    sandbox: Sandbox | None  # None: an engine before the block
    options: Mapping[str, Any]  # the command-line choices (quick, samples, ...); {} if unsaid
    shield: Mapping[str, Any] | None  # {requested, applied, how | why_not}; None: not asked
    notes: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)  # the record, verbatim


def _virtualization(block: Mapping[str, Any]) -> Virtualization:
    return Virtualization(
        detected=block["detected"],
        hypervisor_bit=block.get("hypervisor_bit"),
        hypervisor_vendor=block.get("hypervisor_vendor"),
        systemd_detect_virt=block.get("systemd_detect_virt"),
        container=block.get("container"),
        wsl=bool(block.get("wsl")),
    )


def _sandbox(block: Mapping[str, Any] | None) -> Sandbox | None:
    if not block:
        return None
    audit = block["audit"]
    tracepoints = block.get("tracepoints") or {}
    return Sandbox(
        seccomp_mode=block["seccomp"]["mode"],
        seccomp_filters=block["seccomp"]["filters"],
        tracer_pid=block["tracer_pid"],
        traced=block["traced"],
        audit_state=audit.get("state"),
        audit_rules=audit.get("rules"),
        tracepoints_enabled=tracepoints.get("enabled"),
        tracepoints_recording=tracepoints.get("recording"),
    )


def environment_of(record: Mapping[str, Any]) -> Environment:
    """The environment an env record holds; a key it must have and lacks raises RecordError."""
    try:
        cpu = record["cpu"]
        return Environment(
            run_id=record["run_id"],
            producer_name=record["producer"]["name"],
            producer_version=record["producer"]["version"],
            hostname=record.get("hostname"),
            arch=record["arch"],
            started_at=record["started_at"],
            cpu_model=cpu["model"],
            cpu_logical=cpu.get("logical"),
            cpu_allowed=tuple(cpu.get("allowed") or ()),
            kernel_release=record["kernel"]["release"],
            virtualization=_virtualization(record["virtualization"]),
            idle_driver=(record.get("frequency") or {}).get("cpuidle_driver"),
            sandbox=_sandbox(record.get("sandbox")),
            options=record.get("options") or {},
            shield=record.get("shield"),
            notes=tuple(record.get("notes") or ()),
            raw=record,
        )
    except (KeyError, TypeError) as error:
        name = record.get("run_id", "?") if isinstance(record, Mapping) else "?"
        raise RecordError(f"env record of run {name}: missing or malformed {error}") from None
