"""The summary's rules: which record stands for each rung, which knobs pair, reasons in words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxbench.records.roles import probes_with

# Which record stands for a rung: the first candidate probe the run measured
# (the probes with its role, records.roles),
# with params matching ``match``. A match value is a tuple of accepted values
# in order of preference; None accepts a record without that param (older
# records, or a probe that has no such knob). Params not named are free.
DEFAULT_SWITCH = {"policy": ("normal", "batch", None), "idle": ("free", None)}
# On one CPU the CPU never idles between hand-offs, so a same-CPU switch with
# idle held is the same experiment; a run made with --hold-idle has only that.
SAME_CPU_SWITCH = {**DEFAULT_SWITCH, "idle": ("free", None, "held")}


# The fibers-vs-threads preset's kernel-thread figures (batch first, as the
# preset runs them): the ladder shows them beside the fiber and the coroutine.
BATCH_FIRST = ("batch", "normal", None)


@dataclass(frozen=True)
class RungSpec:
    key: str
    label: str
    # the probes with the role ladder:ROLE stand for it (records.roles); a
    # role with its own prefix ("answer:futex") is taken as it is
    role: str
    match: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def full_role(self) -> str:
        """The role as the engine's descriptors name it."""
        return self.role if ":" in self.role else f"ladder:{self.role}"

    @property
    def candidates(self) -> tuple[str, ...]:
        """The probes that may stand for this rung, preferred first, as the
        engine's descriptors rank them."""
        return probes_with(self.full_role)


LADDER: tuple[RungSpec, ...] = (
    RungSpec("coroutine", "coroutine resume", "coroutine"),
    RungSpec(
        "asm",
        "own asm switch",
        "asm",
        {"fpstate": ("abi", None), "fpcontrol": ("same", None)},
    ),
    RungSpec("fiber", "Boost.Fiber yield", "fiber"),
    RungSpec(
        "vdso",
        "vDSO clock_gettime",
        "vdso",
    ),
    RungSpec("syscall", "bare system call", "syscall"),
    RungSpec("signal", "signal round trip", "signal"),
    RungSpec(
        "thread_switch",
        "thread switch, same CPU",
        "switch",
        {"between": ("threads",), "cpus": ("same",), **SAME_CPU_SWITCH},
    ),
    RungSpec(
        "futex_handoff",
        "futex hand-off, threads, same CPU",
        "answer:futex",
        {"between": ("threads",), "cpus": ("same",), **SAME_CPU_SWITCH, "policy": BATCH_FIRST},
    ),
    RungSpec(
        "round_robin",
        "4-thread round robin, same CPU",
        "answer:round_robin",
        {"cpus": ("same",), "threads": (4, None), "policy": BATCH_FIRST},
    ),
    RungSpec(
        "process_switch",
        "process switch, same CPU",
        "switch",
        {"between": ("processes",), "cpus": ("same",), **SAME_CPU_SWITCH},
    ),
    RungSpec(
        "cross_switch",
        "thread switch, cross CPU",
        "switch",
        {"between": ("threads",), "cpus": ("cross",), **DEFAULT_SWITCH},
    ),
    RungSpec(
        "cross_switch_held",
        "thread switch, cross CPU, idle held",
        "switch",
        {
            "between": ("threads",),
            "cpus": ("cross",),
            "policy": DEFAULT_SWITCH["policy"],
            "idle": ("held",),
        },
    ),
    RungSpec("thread_create", "thread creation", "thread_create"),
    RungSpec("fork", "fork", "fork", {"parent_mib": (0, None)}),
    RungSpec("exec", "fork + exec", "exec"),
)

# Knobs an older engine did not have: a record without one was measured the way
# this value says (no engine held idle before the knob existed), so for machine
# vs machine it is the same variant as one that names the value.
ABSENT_MEANS: dict[str, Any] = {"idle": "free"}

# The same-vs-cross view: switch probes whose params are only these knobs.
SWITCH_FAMILY = "switch"
SWITCH_KNOBS = {"between", "cpus", "policy", "idle"}
# Both sides take idle=free when the run has it, else both idle=held (a run
# made with --hold-idle), so a row never pairs a free side with a held one.
SAME_VS_CROSS_MATCH = {"policy": DEFAULT_SWITCH["policy"], "idle": SAME_CPU_SWITCH["idle"]}

# The switch drawn as a waterfall: the first of these rungs the run explains.
WATERFALL_PREFERENCE = ("process_switch", "thread_switch", "cross_switch")

# Environment keys (flattened, envdiff.flatten_env) that plausibly explain a
# difference between machines, with a reader's name; a key matches itself
# and every key below it.
ENV_OF_INTEREST = (
    ("cpu.model", "CPU"),
    ("cpu.logical", "logical CPUs"),
    ("kernel.release", "kernel"),
    ("kernel.cmdline", "kernel command line"),
    ("virtualization", "virtualization"),
    ("frequency.cpuidle_driver", "idle driver"),
    ("frequency.cpuidle_governor", "idle governor"),
    ("frequency.governor", "frequency governor"),
    ("mitigations", "mitigations"),
    ("clocksource.current", "clocksource"),
    ("sandbox.seccomp.mode", "seccomp filter"),
    ("sandbox.seccomp.filters", "seccomp filters"),
    ("sandbox.traced", "traced"),
    ("sandbox.audit.state", "syscall auditing"),
    ("sandbox.audit.rules", "audit rules"),
)

# ---- verdicts in words ---------------------------------------------------------------
# One sentence per reason code of schema/record.schema.json ($defs.reason_code).
REASON_SENTENCES: dict[str, str] = {
    "too_few_switches": (
        "The kernel counted fewer context switches than this probe needs, so some "
        "operations did not switch and the figure understates a switch."
    ),
    "too_many_switches": (
        "The kernel counted more context switches than this probe makes, so other work "
        "preempted the measurement and its time may be in the figure."
    ),
    "count_mismatch": (
        "A kernel counter disagrees with the number of operations, so the operation "
        "measured is not quite the one intended."
    ),
    "migrated": (
        "A task ran on a CPU other than the one it was pinned to, so the placement "
        "this variant names did not hold throughout."
    ),
    "placement_unavailable": (
        "The CPUs this placement needs are not available to the run (too few CPUs, "
        "or no such pair in the topology)."
    ),
    "nonpositive_after_baseline": (
        "The baseline is not below the result, so what remains after subtracting it "
        "is noise, not a cost."
    ),
    "high_spread": (
        "The samples spread widely, so the median is less certain than its interval suggests."
    ),
    "timer_quantization": (
        "The measured batches were short next to the timer's resolution, so the clock's "
        "steps may show in the figure."
    ),
    "unstable": (
        "The samples do not form one figure (several modes or a wide middle half), "
        "so the machine was not steady while it was measured."
    ),
    "not_supported_here": "This machine, kernel or C library cannot do what the probe measures.",
    "permission_denied": (
        "The run lacked a permission the probe needs (often root, or write access to a device)."
    ),
    "built_without": "The engine was built without the library this probe needs.",
    "child_failed": (
        "A partner process or thread of the measurement failed, so no figure can be trusted."
    ),
    "timeout": "The measurement did not finish within its time limit.",
    "interrupted": "The run was stopped before this variant finished.",
    "error": "An error stopped the measurement (the record's detail says which).",
    "interference": (
        "Another task or the host took the CPU while this variant was measured, and "
        "re-taking its samples did not get clear of it, so the figure carries that time."
    ),
}


def reason_sentence(code: str) -> str:
    """The sentence for a reason code; an unknown code (a newer producer) says so."""
    return REASON_SENTENCES.get(code, f"Reason '{code}' (not known to this version of ctxbench).")


def _rank(result: dict[str, Any], match: dict[str, tuple[Any, ...]]) -> tuple[int, ...] | None:
    """Preference of a record under a match (lower is better); None: it does not match."""
    rank = []
    for name, accepted in match.items():
        value = result["params"].get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value not in accepted:
            return None
        rank.append(accepted.index(value))
    return tuple(rank)


def pick(
    results: list[dict[str, Any]], probe: str, match: dict[str, tuple[Any, ...]]
) -> dict[str, Any] | None:
    """The record of PROBE that best fits MATCH (first in the run among equals), or None."""
    best = None
    best_rank = None
    for result in results:
        if result["probe"] != probe:
            continue
        rank = _rank(result, match)
        if rank is not None and (best_rank is None or rank < best_rank):
            best, best_rank = result, rank
    return best
