"""What each difference between two runs acts on: the one table of it.

A difference between two runs' environments (a key of ``envdiff``), or a
parameter two paired rows differ in on purpose (``compare --pair``), is
known to act on some parts of a switch and not on others: a seccomp filter
runs on every system call, so it acts on kernel entry/exit; the idle driver
decides how deep an idle CPU sleeps, so it acts on waking an idle CPU; a
hypervisor, another CPU model or another kernel act on everything. The
table below says which, once; ``compare --why`` and ``history --changes``
rank the differing keys by it, and name the first key that acts on the part
that moved. The parts are grouped (``GROUPS``) so that explain's parts and
the traced phases meet the same rows of the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ctxbench.analysis.explain.user_switch import STEPS
from ctxbench.records.envdiff import EnvDiff

KERNEL_ENTRY = "kernel entry/exit"
OWN_WORK = "the primitive's own work"
ADDRESS_SPACE = "address-space switch"
IDLE = "idle exit"
SCHEDULER = "scheduler wake-up and switch"
CACHE = "cache refill"
EVERYTHING = "everything"
# Keys that say the machine itself differs (another hypervisor or CPU): when
# they differ they come first, before a key that acts on one part alone.
MACHINE = (
    "virtualization.detected",
    "virtualization.hypervisor_vendor",
    "virtualization.systemd_detect_virt",
    "cpu.model",
    "cpu.vendor",
)
# Where a value was read from, or why it could not be: not a difference.
SKIPPED = (".source", ".why")
USER_LEVEL = "the user-level switch"  # a uswitch figure's steps: no kernel, no scheduler
GROUPS = (KERNEL_ENTRY, OWN_WORK, ADDRESS_SPACE, IDLE, SCHEDULER, CACHE, USER_LEVEL)
USER_WHOLE = "the whole switch, not split"  # explain.REST_USER
IDLE_PART = "waking an idle CPU"  # explain.IDLE_PART

# A hypervisor (hardware virtualization) runs the guest's instructions on the
# CPU and exits to the host on interrupts, idle (a halted vCPU) and some
# instructions: it acts on the wake-up across CPUs, on idle and, with nested
# paging, on what an address-space switch refills. An emulator (QEMU's TCG)
# translates every instruction: it acts on everything.
HYPERVISOR_GROUPS = (SCHEDULER, IDLE, ADDRESS_SPACE)
HYPERVISOR_HOW = (
    "a hypervisor's exits act on interrupts (a wake-up across CPUs), idle (a halted vCPU) and "
    "some instructions, and nested paging on address-space switches"
)
EMULATOR_HOW = "an emulator (QEMU TCG) translates every instruction, so it acts on every part"
EMULATOR_VENDORS = ("TCGTCGTCGTCG",)  # virtualization.hypervisor_vendor of an emulator
EMULATED_KEYS = ("virtualization", "cpu.model", "cpu.vendor")

# (key prefix, the groups it acts on, how). A key matches its longest prefix;
# "param NAME" is a parameter that paired rows differ in. Keys acting on
# EVERYTHING come last, in the order a reader suspects them.
ACTS_ON: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("sandbox.seccomp.mode", (KERNEL_ENTRY, OWN_WORK), "a filter runs on every system call"),
    ("sandbox.seccomp", (KERNEL_ENTRY, OWN_WORK), "a filter runs on every system call"),
    ("param seccomp", (KERNEL_ENTRY, OWN_WORK), "a filter runs on every system call"),
    ("sandbox.traced", (KERNEL_ENTRY, OWN_WORK), "a tracer stops on system calls"),
    ("sandbox.tracer_pid", (KERNEL_ENTRY, OWN_WORK), "a tracer stops on system calls"),
    ("sandbox.audit", (KERNEL_ENTRY,), "auditing sends calls through the audit path"),
    (
        "sandbox.tracepoints.recording",
        (SCHEDULER,),
        "a recording sched_switch or sched_wakeup event fires on every switch and wake-up",
    ),
    (
        "sandbox.tracepoints",
        (SCHEDULER,),
        "an enabled sched_switch or sched_wakeup event fires on every switch and wake-up",
    ),
    ("frequency.cpuidle_driver", (IDLE,), "the idle driver chooses how deep an idle CPU sleeps"),
    (
        "frequency.cpuidle_governor",
        (IDLE,),
        "the idle governor chooses how deep an idle CPU sleeps",
    ),
    ("frequency.idle_states", (IDLE,), "deeper idle states take longer to leave"),
    ("param idle", (IDLE,), "holding idle keeps the CPUs out of deep idle states"),
    (
        "mitigations",
        (KERNEL_ENTRY, ADDRESS_SPACE),
        "mitigations flush or switch state on kernel entry and on address-space switches",
    ),
    ("param between", (ADDRESS_SPACE,), "processes switch address spaces, threads do not"),
    (
        "param policy",
        (SCHEDULER,),
        "SCHED_BATCH does not preempt on wake-up: the woken task waits for the waker",
    ),
    ("scheduler", (SCHEDULER,), "autogroup and sched_ext change how tasks are picked"),
    ("param cpus", (SCHEDULER, IDLE), "across CPUs a wake-up is an interrupt to the other CPU"),
    ("param size_kib", (CACHE,), "a larger working set is refilled after each switch"),
    ("virtualization", HYPERVISOR_GROUPS, HYPERVISOR_HOW),
    (
        "virtualization.container",
        (EVERYTHING,),
        "a container's cgroups and namespaces, not a hypervisor",
    ),
    ("cpu.model", (EVERYTHING,), "another CPU"),
    ("cpu.vendor", (EVERYTHING,), "another CPU"),
    ("cpu.logical", (EVERYTHING,), "another CPU count"),
    ("kernel", (EVERYTHING,), "another kernel"),
    ("frequency", (EVERYTHING,), "the clock the CPU runs at"),
    ("clocksource", (EVERYTHING,), "the clock the kernel reads"),
    ("memory.thp", (CACHE, ADDRESS_SPACE), "huge pages change the TLB's reach"),
    ("hostname", (EVERYTHING,), "another machine"),
)


def group_of(part: str) -> str:
    """The group of an explain part or a traced phase ('waking → IPI entry')."""
    if part in (KERNEL_ENTRY,):
        return KERNEL_ENTRY
    if part.startswith("primitive's own work") or part == "the call's own work":
        return OWN_WORK
    if part == ADDRESS_SPACE:
        return ADDRESS_SPACE
    if part == IDLE_PART or part.endswith("idle exit"):
        return IDLE
    if part.startswith("cache refill"):
        return CACHE
    if "→" in part and (part.startswith("call entry") or part.endswith("next call")):
        return KERNEL_ENTRY
    if part == USER_WHOLE or all(step in STEPS for step in part.split(" + ")):
        return USER_LEVEL
    return SCHEDULER


@dataclass(frozen=True)
class KeyDifference:
    key: str  # an env key ('sandbox.seccomp.mode') or 'param NAME'
    values: tuple[str | None, ...]  # per run, A first
    groups: tuple[str, ...]  # what it acts on; empty: not in the table
    how: str | None

    def acts_on(self, group: str) -> bool:
        return group in self.groups or EVERYTHING in self.groups


def _entry(key: str) -> tuple[int, tuple[str, ...], str] | None:
    best = None
    for rank, (prefix, groups, how) in enumerate(ACTS_ON):
        if (key == prefix or key.startswith(prefix + ".")) and (
            best is None or len(prefix) > best[3]
        ):
            best = (rank, groups, how, len(prefix))
    return None if best is None else best[:3]


def key_difference(key: str, values: Iterable[str | None], emulated: bool = False) -> KeyDifference:
    """What KEY acts on; EMULATED: a run of the two ran under an emulator, whose
    virtualization and CPU keys act on every part."""
    if (
        emulated
        and key.startswith(EMULATED_KEYS)
        and not key.startswith("virtualization.container")
    ):
        return KeyDifference(key, tuple(values), (EVERYTHING,), EMULATOR_HOW)
    found = _entry(key)
    return KeyDifference(key, tuple(values), found[1] if found else (), found[2] if found else None)


def emulated(env: EnvDiff, run: int) -> bool:
    """Run RUN of ENV ran under an emulator (QEMU TCG), not a hypervisor."""
    vendor = (env.values.get("virtualization.hypervisor_vendor") or [None] * (run + 1))[run]
    model = (env.values.get("cpu.model") or [None] * (run + 1))[run]
    return vendor in EMULATOR_VENDORS or "TCG" in str(model or "").split()


def ranked(
    env: EnvDiff, index: int = 1, rows: Iterable[Any] = (), group: str | None = None
) -> list[KeyDifference]:
    """The keys that differ between the two runs (env keys, and the parameters
    paired rows differ in), those acting on GROUP first; among them another
    hypervisor or CPU model first (``MACHINE``), then a key acting on a few
    parts, then the other keys acting on everything, each in the table's
    order; keys the table does not know come last."""
    keys = []
    either = emulated(env, 0) or emulated(env, index)
    for key in env.differing:
        values = env.values[key]
        pair = (values[0], values[index])
        # A key one run does not record (an older engine) is not known to differ.
        if pair[0] != pair[1] and None not in pair and not key.endswith(SKIPPED):
            keys.append(key_difference(key, pair, either))
    params: dict[str, tuple[str, str]] = {}
    for row in rows:
        for name in sorted(set(row.params) | set(row.other_params)):
            a, b = row.params.get(name), row.other_params.get(name)
            if a != b:
                params.setdefault(name, (str(a), str(b)))
    keys += [key_difference(f"param {name}", pair) for name, pair in params.items()]

    def order(k: KeyDifference) -> tuple[int, int, int]:
        found = _entry(k.key)
        acting = 0 if group is None or k.acts_on(group) else 1
        if found is None:
            tier = 3
        elif k.key.startswith(MACHINE):
            tier = 0  # another hypervisor or CPU: named first, it acts on everything
        else:
            tier = 2 if EVERYTHING in k.groups else 1
        return (acting, tier, found[0] if found else 0)

    return sorted(keys, key=order)
