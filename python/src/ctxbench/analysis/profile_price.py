"""Prices a profile's counted events with this machine's stored figures.

Numbers only (views/profile.py words them). Each counted event is priced
once, with the median (and its interval) of the matching figure of a stored
run of the same machine (host, CPU, virtualization and kernel release):

- a wake-up of the program (a hand-off) with the switch figure of the
  primitive it mostly waits on (from its system calls: futex, pipe-like
  read/write, socket calls), same-CPU. A hand-off's own two system calls (the
  waker's wake, the woken side's wait) are inside that figure, so they are
  taken off the system calls priced below;
- a cross-CPU wake-up's CPU work is priced as a same-CPU one: the switch
  figure's cross-CPU variant is mostly the woken side's wait, which is
  latency, not CPU time. That latency is given apart (``wait``);
- every other system call with the bare kernel entry and exit
  (syscall.getppid): the work inside calls is not priced;
- a minor fault with trap.pagefault (touch=write); major faults are I/O and
  not priced;
- a thread created with create.pthread, a process with create.fork
  (parent_mib=0); a signal with trap.signal.

Involuntary switches (preemptions) are not priced: no figure measures one
alone. What caches lose is not included (ring probe: the bound where stored).

It takes the typed profile (records/profile.py) and the stored results
(records/result.py) and returns numbers and codes: what is not priced says
why as a code (``NotPriced.why``), a counterfactual names its change as a
code (``Counterfactual.change``); views/profile.py words both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ctxbench.records.environment import Environment
from ctxbench.records.machines import machine_name
from ctxbench.records.profile import LATENCY_GROUPS, Counts, Profile
from ctxbench.records.result import ParamValue, Result
from ctxbench.records.roles import probe_with

# The calls that show which primitive a hand-off goes through.
PRIMITIVE_CALLS = {
    "futex": ("futex", "futex_waitv"),
    "pipe": ("read", "write", "readv", "writev"),
    "socketpair": ("recvfrom", "sendto", "recvmsg", "sendmsg", "recvmmsg", "sendmmsg"),
}
# What each counted event is priced with: the probe the engine's descriptors
# give the role (records/roles.py), so Python names no probe.
SWITCH_ROLE = "profile:switch:{primitive}"
EVENT_ROLES = {
    "syscall": "profile:syscall",
    "minor_fault": "profile:minor_fault",
    "thread": "profile:thread",
    "process": "profile:process",
    "signal": "profile:signal",
}

# Why a count is not priced (``NotPriced.why``); views.profile words them.
NO_FIGURE_ALONE = "no figure alone"  # preemptions: no figure measures one alone
WAITS_FOR_IO = "waits for I/O"  # major faults: I/O, not CPU
NOT_COUNTED = "not counted"  # the count itself is null (not counted here)

# The changes a counterfactual prices (``Counterfactual.change``); views.profile words them.
USER_LEVEL = "user-level"  # the hand-offs as user-level switches
PINNED = "pinned"  # the cross-CPU wake-ups made same-CPU
SECCOMP_FILTER = "seccomp filter"  # the system calls under a container-like seccomp filter


@dataclass(frozen=True)
class Figure:
    """One stored figure: a variant's median and its interval, in ns."""

    probe: str
    params: dict[str, ParamValue]
    median_ns: float
    low_ns: float
    high_ns: float
    run_id: str
    status: str


@dataclass(frozen=True)
class Wanted:
    """A figure pricing needs: a probe with the params it must have (sorted
    pairs, so that it can key a dict). Without a seccomp param it must be
    unfiltered."""

    probe: str
    params: tuple[tuple[str, ParamValue], ...] = ()

    @staticmethod
    def of(probe: str, **params: ParamValue) -> Wanted:
        return Wanted(probe, tuple(sorted(params.items())))

    def matches(self, probe: str, params: Mapping[str, ParamValue]) -> bool:
        mine = dict(self.params)
        if probe != self.probe or params.get("seccomp", "none") != mine.get("seccomp", "none"):
            return False
        return all(params.get(k) == v for k, v in mine.items())


@dataclass
class Part:
    """One kind of event priced: count x figure."""

    kind: str
    count: int
    figure: Figure | None
    wanted: Wanted | None

    @property
    def cpu_s(self) -> float | None:
        return None if self.figure is None else self.count * self.figure.median_ns / 1e9

    @property
    def interval_s(self) -> tuple[float, float] | None:
        if self.figure is None:
            return None
        return (self.count * self.figure.low_ns / 1e9, self.count * self.figure.high_ns / 1e9)


@dataclass(frozen=True)
class NotPriced:
    """A kind of event counted (or not) but not priced: its count (0 where
    not counted) and why, a code (NO_FIGURE_ALONE, WAITS_FOR_IO, NOT_COUNTED)."""

    kind: str  # preemption, major_fault; syscalls, wakeups (not counted)
    count: int
    why: str


@dataclass
class Price:
    primitive: str
    primitive_calls: dict[str, int]
    between: str
    parts: list[Part]
    wait: Part | None  # cross-CPU hand-offs' latency (not CPU time)
    program_cpu_s: float | None
    not_priced: list[NotPriced] = field(default_factory=list)
    missing: list[Wanted] = field(default_factory=list)

    @property
    def estimate_s(self) -> float:
        return sum(p.cpu_s or 0.0 for p in self.parts)

    @property
    def hand_off(self) -> Part | None:
        """The part that prices the hand-offs (same-CPU switches), if any."""
        return next((p for p in self.parts if p.kind == "hand_off"), None)

    @property
    def hand_off_figure(self) -> Figure | None:
        """The same-CPU switch figure the hand-offs are priced with."""
        hand = self.hand_off
        return hand.figure if hand else None

    @property
    def interval_s(self) -> tuple[float, float]:
        intervals = [p.interval_s for p in self.parts if p.interval_s]
        return (sum(i[0] for i in intervals), sum(i[1] for i in intervals))

    @property
    def share(self) -> float | None:
        if not self.program_cpu_s:
            return None
        return self.estimate_s / self.program_cpu_s


def same_machine(a: Environment, b: Environment) -> bool:
    """Two environments of one machine as pricing needs it: host, CPU and
    virtualization (machine_name) and the kernel release."""
    return machine_name(a) == machine_name(b) and a.kernel_release == b.kernel_release


def figure_of(result: Result, run_id: str) -> Figure | None:
    median = result.median
    if median is None or not result.verdict.measured:
        return None
    ci = (result.summary.median_ci if result.summary else None) or {}
    return Figure(
        probe=result.probe,
        params=dict(result.params),
        median_ns=median,
        low_ns=float(ci.get("low", median)),
        high_ns=float(ci.get("high", median)),
        run_id=run_id,
        status=result.verdict.status,
    )


def find_figures(
    wanted: Iterable[Wanted], runs: Iterable[tuple[str, Sequence[Result]]]
) -> dict[Wanted, Figure]:
    """The newest figure for each wanted one: ``runs`` newest first, each
    (run_id, results); an ok figure before a suspect one of the same run."""
    found: dict[Wanted, Figure] = {}
    todo = list(wanted)
    for run_id, results in runs:
        for w in list(todo):
            candidates = [figure_of(r, run_id) for r in results if w.matches(r.probe, r.params)]
            figures = sorted((f for f in candidates if f), key=lambda f: f.status != "ok")
            if figures:
                found[w] = figures[0]
                todo.remove(w)
        if not todo:
            break
    return found


def primitive_of(profile: Profile) -> tuple[str, dict[str, int]]:
    """The primitive the program's hand-offs mostly go through, from its calls.
    read and write are mostly file I/O in a program that also waits on
    futexes, so futex is taken wherever its calls could carry the hand-offs
    (at least one call per wake-up); else the primitive with most calls."""
    calls = profile.syscall_counts()
    per = {name: sum(calls.get(c, 0) for c in names) for name, names in PRIMITIVE_CALLS.items()}
    wakeups = profile.counts.wakeups or 0
    if per["futex"] and per["futex"] >= wakeups:
        return "futex", per
    best = max(per, key=lambda name: (per[name], name == "futex"))
    return best, per


def between_of(profile: Profile) -> str:
    counts = profile.counts
    if (counts.processes_created or 0) > 0 and not counts.threads_created:
        return "processes"
    return "threads"


def wanted_for(profile: Profile) -> dict[str, Wanted]:
    primitive, _ = primitive_of(profile)
    between = between_of(profile)
    switch = {"between": between, "idle": "free", "policy": "normal"}
    switch_probe = probe_with(SWITCH_ROLE.format(primitive=primitive))
    return {
        "hand_off": Wanted.of(switch_probe, **switch, cpus="same"),
        "cross_wait": Wanted.of(switch_probe, **switch, cpus="cross"),
        "syscall": Wanted.of(probe_with(EVENT_ROLES["syscall"])),
        "minor_fault": Wanted.of(probe_with(EVENT_ROLES["minor_fault"]), touch="write"),
        "thread": Wanted.of(probe_with(EVENT_ROLES["thread"])),
        "process": Wanted.of(probe_with(EVENT_ROLES["process"]), parent_mib=0),
        "signal": Wanted.of(probe_with(EVENT_ROLES["signal"])),
    }


Lookup = Callable[[list[Wanted]], dict[Wanted, Figure]]


def _not_priced(counts: Counts) -> list[NotPriced]:
    """What is counted but not priced, and the counts the pricing lacks."""
    not_priced = []
    if counts.involuntary_switches:
        not_priced.append(NotPriced("preemption", counts.involuntary_switches, NO_FIGURE_ALONE))
    if counts.major_faults:
        not_priced.append(NotPriced("major_fault", counts.major_faults, WAITS_FOR_IO))
    for name, value in (("syscalls", counts.syscalls), ("wakeups", counts.wakeups)):
        if value is None:
            not_priced.append(NotPriced(name, 0, NOT_COUNTED))
    return not_priced


def price(profile: Profile, lookup: Lookup) -> Price:
    """The profile's direct cost from the figures ``lookup`` finds."""
    counts = profile.counts
    wanted = wanted_for(profile)
    figures = lookup(list(wanted.values()))
    primitive, per = primitive_of(profile)
    wakeups = counts.wakeups or 0
    # A hand-off's two calls are in its figure.
    syscalls_left = max(0, (counts.syscalls or 0) - 2 * wakeups)
    plan = [
        ("hand_off", wakeups),
        ("syscall", syscalls_left),
        ("minor_fault", counts.minor_faults or 0),
        ("thread", counts.threads_created or 0),
        ("process", counts.processes_created or 0),
        ("signal", counts.signals or 0),
    ]
    parts = []
    missing = []
    for kind, n in plan:
        w = wanted[kind]
        f = figures.get(w)
        if n and f is None:
            missing.append(w)
        parts.append(Part(kind, n, f, w))
    cross = counts.wakeups_cross_cpu or 0
    wait = None
    if cross:
        w = wanted["cross_wait"]
        wait = Part("cross_cpu_wait", cross, figures.get(w), w)
        if wait.figure is None:
            missing.append(w)
    return Price(
        primitive=primitive,
        primitive_calls=per,
        between=between_of(profile),
        parts=parts,
        wait=wait,
        program_cpu_s=profile.program_time.cpu_s,
        not_priced=_not_priced(counts),
        missing=missing,
    )


@dataclass(frozen=True)
class Counterfactual:
    """A change to the program priced from measured figures: which change
    (USER_LEVEL, PINNED, SECCOMP_FILTER), the seconds it saves, the figures
    it is the difference of."""

    change: str
    saved_s: float  # seconds (negative: costs more)
    figures: tuple[Figure, ...]
    of: str = "cpu"  # what the seconds are: "cpu", or "wait" (latency)


def counterfactuals(p: Price, lookup: Lookup) -> list[Counterfactual]:
    """What would change, from measured figures only."""
    result = []
    hand = p.hand_off
    if hand and hand.count and hand.figure:
        fiber_w = Wanted.of(probe_with("profile:fiber"))
        asm_w = Wanted.of(probe_with("profile:asm"), fpcontrol="same", fpstate="abi")
        found = lookup([fiber_w, asm_w])
        fiber = found.get(fiber_w) or found.get(asm_w)
        if fiber:
            saved = hand.count * (hand.figure.median_ns - fiber.median_ns) / 1e9
            result.append(Counterfactual(USER_LEVEL, saved, (hand.figure, fiber)))
    if p.wait and p.wait.figure and hand and hand.figure:
        saved = p.wait.count * (p.wait.figure.median_ns - hand.figure.median_ns) / 1e9
        result.append(Counterfactual(PINNED, saved, (p.wait.figure, hand.figure), of="wait"))
    sys_part = next((x for x in p.parts if x.kind == "syscall"), None)
    if sys_part and sys_part.count:
        filtered_w = Wanted.of(probe_with(EVENT_ROLES["syscall"]), seccomp="profile")
        found = lookup([filtered_w])
        filtered = found.get(filtered_w)
        if filtered and sys_part.figure:
            extra = sys_part.count * (filtered.median_ns - sys_part.figure.median_ns) / 1e9
            result.append(Counterfactual(SECCOMP_FILTER, -extra, (sys_part.figure, filtered)))
    return result


# One count of two profiles side by side: (name, A's, B's); None where not counted.
CountRow = tuple[str, int | None, int | None]


def compare_counts(a: Profile, b: Profile) -> list[CountRow]:
    """Two profiles' counts side by side, (name, a, b), in the record's order;
    CPU time and wall time first, in microseconds."""

    def micro(value: float | None) -> int | None:
        return None if value is None else round(value * 1e6)

    rows = [
        ("wall_s_us", micro(a.wall_s), micro(b.wall_s)),
        ("cpu_user_s_us", micro(a.cpu_user_s), micro(b.cpu_user_s)),
        ("cpu_system_s_us", micro(a.cpu_system_s), micro(b.cpu_system_s)),
    ]
    rows += [(name, value, getattr(b.counts, name)) for name, value in a.counts.named()]

    def median_ns(profile: Profile, group: str) -> int | None:
        latency = profile.wakeup_latency.group(group) if profile.wakeup_latency else None
        return None if latency is None else round(latency.median_us * 1e3)

    if a.wakeup_latency or b.wakeup_latency:
        rows += [
            (f"wakeup_{group}_median_ns", median_ns(a, group), median_ns(b, group))
            for group in LATENCY_GROUPS
        ]
    return rows
