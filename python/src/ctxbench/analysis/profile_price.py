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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.records.machines import machine_name
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
    params: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(probe: str, **params: Any) -> Wanted:
        return Wanted(probe, tuple(sorted(params.items())))

    def matches(self, probe: str, params: Mapping[str, ParamValue]) -> bool:
        mine = dict(self.params)
        if probe != self.probe or params.get("seccomp", "none") != mine.get("seccomp", "none"):
            return False
        return all(params.get(k) == v for k, v in mine.items())

    def selection(self) -> str:
        """The `ctxbench run` arguments that measure it."""
        mine = dict(self.params)
        words = [self.probe]
        if "cpus" in mine:
            words.append(f"--cpus {mine.pop('cpus')}")
        if "between" in mine:
            words.append(f"--between {mine.pop('between')}")
        words += [f"--param {k}={v}" for k, v in mine.items() if k not in ("idle", "policy")]
        return " ".join(words)


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


@dataclass
class Price:
    primitive: str
    primitive_calls: dict[str, int]
    between: str
    parts: list[Part]
    wait: Part | None  # cross-CPU hand-offs' latency (not CPU time)
    program_cpu_s: float | None
    not_priced: list[tuple[str, int, str]] = field(default_factory=list)  # kind, count, why
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

    def as_dict(self) -> dict[str, Any]:
        def figure(f: Figure | None) -> dict[str, Any] | None:
            if f is None:
                return None
            return {
                "probe": f.probe,
                "params": f.params,
                "median_ns": f.median_ns,
                "interval_ns": [f.low_ns, f.high_ns],
                "run_id": f.run_id,
                "status": f.status,
            }

        def part(p: Part) -> dict[str, Any]:
            return {
                "kind": p.kind,
                "count": p.count,
                "seconds": p.cpu_s,
                "interval_s": list(p.interval_s) if p.interval_s else None,
                "figure": figure(p.figure),
            }

        low, high = self.interval_s
        return {
            "primitive": self.primitive,
            "primitive_calls": self.primitive_calls,
            "between": self.between,
            "estimate_cpu_s": self.estimate_s,
            "interval_cpu_s": [low, high],
            "program_cpu_s": self.program_cpu_s,
            "share_of_cpu": self.share,
            "parts": [part(p) for p in self.parts],
            "cross_cpu_wait": part(self.wait) if self.wait else None,
            "not_priced": [{"kind": k, "count": c, "why": w} for k, c, w in self.not_priced],
            "missing": [{"probe": w.probe, "params": dict(w.params)} for w in self.missing],
            "not_included": "what caches and TLBs lose to switching (indirect cost)",
        }


def same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two env records of one machine as pricing needs it: host, CPU and
    virtualization (machine_name) and the kernel release."""
    return machine_name(a) == machine_name(b) and (a.get("kernel") or {}).get("release") == (
        b.get("kernel") or {}
    ).get("release")


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


def primitive_of(profile: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The primitive the program's hand-offs mostly go through, from its calls.
    read and write are mostly file I/O in a program that also waits on
    futexes, so futex is taken wherever its calls could carry the hand-offs
    (at least one call per wake-up); else the primitive with most calls."""
    calls = {c["name"]: c["count"] for c in profile["syscalls_by_call"]}
    per = {name: sum(calls.get(c, 0) for c in names) for name, names in PRIMITIVE_CALLS.items()}
    wakeups = profile["counts"].get("wakeups") or 0
    if per["futex"] and per["futex"] >= wakeups:
        return "futex", per
    best = max(per, key=lambda name: (per[name], name == "futex"))
    return best, per


def between_of(profile: dict[str, Any]) -> str:
    counts = profile["counts"]
    if (counts.get("processes_created") or 0) > 0 and not counts.get("threads_created"):
        return "processes"
    return "threads"


def wanted_for(profile: dict[str, Any]) -> dict[str, Wanted]:
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


def price(profile: dict[str, Any], lookup: Callable[[list[Wanted]], dict[Wanted, Figure]]) -> Price:
    """The profile's direct cost from the figures ``lookup`` finds."""
    counts = profile["counts"]
    wanted = wanted_for(profile)
    figures = lookup(list(wanted.values()))
    primitive, per = primitive_of(profile)

    def count(name: str) -> int:
        return int(counts.get(name) or 0)

    wakeups = count("wakeups")
    syscalls_left = max(
        0, count("syscalls") - 2 * wakeups
    )  # a hand-off's two calls are in its figure
    plan = [
        ("hand_off", wakeups),
        ("syscall", syscalls_left),
        ("minor_fault", count("minor_faults")),
        ("thread", count("threads_created")),
        ("process", count("processes_created")),
        ("signal", count("signals")),
    ]
    parts = []
    missing = []
    for kind, n in plan:
        w = wanted[kind]
        f = figures.get(w)
        if n and f is None:
            missing.append(w)
        parts.append(Part(kind, n, f, w))
    cross = count("wakeups_cross_cpu")
    wait = None
    if cross:
        w = wanted["cross_wait"]
        wait = Part("cross_cpu_wait", cross, figures.get(w), w)
        if wait.figure is None:
            missing.append(w)
    not_priced = []
    if count("involuntary_switches"):
        not_priced.append(
            ("preemption", count("involuntary_switches"), "no figure measures a preemption alone")
        )
    if count("major_faults"):
        not_priced.append(("major_fault", count("major_faults"), "waits for I/O"))
    for name, why in (
        ("syscalls", "system calls were not counted"),
        ("wakeups", "wake-ups were not counted"),
    ):
        if counts.get(name) is None:
            not_priced.append((name, 0, why))
    cpu = profile.get("cpu_user_s"), profile.get("cpu_system_s")
    program_cpu = None if None in cpu else cpu[0] + cpu[1]
    return Price(
        primitive=primitive,
        primitive_calls=per,
        between=between_of(profile),
        parts=parts,
        wait=wait,
        program_cpu_s=program_cpu,
        not_priced=not_priced,
        missing=missing,
    )


@dataclass(frozen=True)
class Counterfactual:
    name: str
    saved_s: float  # seconds (negative: costs more)
    figures: tuple[Figure, ...]
    leaves_out: str
    of: str = "cpu"  # what the seconds are: "cpu", or "wait" (latency)


def counterfactuals(
    p: Price, lookup: Callable[[list[Wanted]], dict[Wanted, Figure]]
) -> list[Counterfactual]:
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
            result.append(
                Counterfactual(
                    "the hand-offs as user-level switches",
                    saved,
                    (hand.figure, fiber),
                    "the work that would move into the program's own scheduler, and a "
                    "blocking call's wait, which a fiber cannot make without a thread",
                )
            )
    if p.wait and p.wait.figure and hand and hand.figure:
        saved = p.wait.count * (p.wait.figure.median_ns - hand.figure.median_ns) / 1e9
        result.append(
            Counterfactual(
                "the cross-CPU wake-ups made same-CPU (pinning)",
                saved,
                (p.wait.figure, hand.figure),
                "that one CPU then runs both sides, one after the other",
                of="wait",
            )
        )
    sys_part = next((x for x in p.parts if x.kind == "syscall"), None)
    if sys_part and sys_part.count:
        filtered_w = Wanted.of(probe_with(EVENT_ROLES["syscall"]), seccomp="profile")
        found = lookup([filtered_w])
        filtered = found.get(filtered_w)
        if filtered and sys_part.figure:
            extra = sys_part.count * (filtered.median_ns - sys_part.figure.median_ns) / 1e9
            result.append(
                Counterfactual(
                    "the system calls under a container-like seccomp filter",
                    -extra,
                    (sys_part.figure, filtered),
                    "calls the filter treats apart: measured on getppid only",
                )
            )
    return result


def compare_counts(
    a: dict[str, Any], b: dict[str, Any]
) -> list[tuple[str, int | None, int | None]]:
    """Two profiles' counts side by side, (name, a, b), in the record's order;
    CPU time and wall time first, in microseconds."""

    def micro(record: dict[str, Any], key: str) -> int | None:
        value = record.get(key)
        return None if value is None else round(value * 1e6)

    rows = [
        (f"{key}_us", micro(a, key), micro(b, key))
        for key in ("wall_s", "cpu_user_s", "cpu_system_s")
    ]
    rows += [(name, a["counts"].get(name), b["counts"].get(name)) for name in a["counts"]]

    def median_ns(record: dict[str, Any], group: str) -> int | None:
        latency = record.get("wakeup_latency") or {}
        value = latency.get(group)
        return None if value is None else round(value["median_us"] * 1e3)

    if a.get("wakeup_latency") or b.get("wakeup_latency"):
        rows += [
            (f"wakeup_{group}_median_ns", median_ns(a, group), median_ns(b, group))
            for group in ("all", "same_cpu", "cross_cpu", "idle_target", "busy_target")
        ]
    return rows
