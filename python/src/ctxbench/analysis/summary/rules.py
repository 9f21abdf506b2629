"""The summary's rules: which record stands for each rung and which knobs pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import probes_with

# Which record stands for a rung: the first candidate probe the run measured
# (the probes with its role, records.roles),
# with params matching ``match``. A match value is a tuple of accepted values
# in order of preference; None accepts a record without that param (older
# records, or a probe that has no such knob). Params not named are free.
# Per parameter, the values a rung accepts, best first (None: the parameter absent).
Match = dict[str, tuple[ParamValue | None, ...]]

DEFAULT_SWITCH: Match = {"policy": ("normal", "batch", None), "idle": ("free", None)}
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
    match: Match = field(default_factory=dict)

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
ABSENT_MEANS: dict[str, ParamValue] = {"idle": "free"}

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


def _rank(result: Result, match: Match) -> tuple[int, ...] | None:
    """Preference of a record under a match (lower is better); None: it does not match."""
    rank = []
    for name, accepted in match.items():
        value = result.params.get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value not in accepted:
            return None
        rank.append(accepted.index(value))
    return tuple(rank)


def pick(results: Sequence[Result], probe: str, match: Match) -> Result | None:
    """The record of PROBE that best fits MATCH (first in the run among equals), or None."""
    best = None
    best_rank = None
    for result in results:
        if result.probe != probe:
            continue
        rank = _rank(result, match)
        if rank is not None and (best_rank is None or rank < best_rank):
            best, best_rank = result, rank
    return best
