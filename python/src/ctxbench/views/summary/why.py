"""Why the large differences in a run's summary are there, one line each.

From figures of the same run (``analysis.explain.explanation``'s parts), the
run's own records of its load (``analysis.explain.interference``, said first) and,
for a guest, what it measured of its virtual machine (``analysis.explain.guest``);
and the words the summary uses, defined where they first appear.

* ``why_lines(explained, rungs)``: another CPU against the same CPU (how much
  of it is waking an idle CPU), processes against threads (the address-space
  switch). A line is only written from parts the run measured; where a
  difference came out the wrong way, the line says so instead of a share.
* ``no_ratio_words(same, cross)``: why a same-vs-other-CPU row has no ratio.
* ``terms(rungs)``: the definitions of the terms the ladder shows.

From the summary's data (``analysis.summary.build``); the terminal and the
report print what these return.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxbench import units
from ctxbench.analysis.explain.explanation import (
    IDLE_PART,
    NO_IDLE_DRIVER,
    OVERLAP,
    SUSPECT,
    Explained,
    Explanation,
)
from ctxbench.analysis.explain.guest import Guest
from ctxbench.analysis.explain.interference import RunLoad
from ctxbench.analysis.summary.build import not_a_switch
from ctxbench.analysis.summary.data import Point, Rung, RunSummary, ratio
from ctxbench.records.naming import params_key
from ctxbench.views.explain.explanation import not_explained_words

ADDRESS_SPACE_PART = "address-space switch"

# Words the ladder may show, defined once where they appear.
TERMS = {
    "idle held": (
        "idle held: while the variant ran, every CPU was kept out of deep idle states "
        "(/dev/cpu_dma_latency = 0), so a wake-up finds the other CPU polling rather than "
        "asleep; idle free is the machine as it is"
    ),
}


def _explanation(explained: Explained | None, point: Point | None) -> Explanation | None:
    if explained is None or point is None:
        return None
    key = params_key(point.params)
    return next(
        (
            e
            for e in explained.explanations
            if e.probe == point.probe and params_key(e.params) == key
        ),
        None,
    )


def _part(explanation: Explanation, name: str) -> float | None:
    return next((p.ns for p in explanation.parts if p.name == name), None)


def _said(explanation: Explanation, name: str) -> bool:
    said = map(not_explained_words, explanation.not_explained)
    return any(words.startswith(name + ":") for words in said)


def _ns(value: float) -> str:
    return units.value(value, "ns")


def _figure(name: str, point: Point) -> str:
    """'idle free 28.59 µs, CI 10.08–31.18 µs, suspect': a figure, its interval, its
    verdict where it is not ok (a suspect side is marked, never dropped)."""
    words = [f"{name} {_ns(point.median or 0.0)}"]
    if point.ci_low is not None:
        words.append("CI " + units.interval(point.ci_low, point.ci_high, point.unit))
    if point.status != "ok":
        words.append(point.status)
    return ", ".join(words)


def _marked(point: Point) -> str:
    """' (suspect)' after a figure that is not ok."""
    return "" if point.status == "ok" else f" ({point.status})"


# Why the idle share is not stated, per explain's WITHHELD code: what the run knows instead.
IDLE_WITHHELD = {
    OVERLAP: "the two intervals overlap, so this run cannot say how much of it is waking an "
    "idle CPU",
    NO_IDLE_DRIVER: "no cpuidle driver is active here, so holding idle cannot change how a CPU "
    "wakes and the difference is noise: this run cannot say how much of it is waking an idle CPU",
    SUSPECT: "a side is suspect for a reason that says it measured something else, so this run "
    "cannot say how much of it is waking an idle CPU",
}


def cross_cpu_line(explained: Explained | None, rungs: dict[str, Rung]) -> str | None:
    """'Another CPU: a thread switch takes 28.59 µs against 983.0 ns on one CPU (29.1×
    (10.2–32.9×)); 26.25 µs of it (92%) is waking an idle CPU (…).' The share only where
    explain's one rule lets it stand (explain.share_withheld); else what is known and why
    the rest is not."""
    same, cross = rungs.get("thread_switch"), rungs.get("cross_switch")
    if same is None or cross is None or not same.point.median or not cross.point.median:
        return None
    if cross.point.params.get("idle") == "held":
        return None  # a run made with --hold-idle: there is no idle-free figure to explain
    times = units.ratio_interval(ratio(same.point, cross.point)) or (
        units.number(cross.point.median / same.point.median) + "×"
    )
    head = (
        f"Another CPU: a thread switch takes {_ns(cross.point.median)}{_marked(cross.point)} "
        f"against {_ns(same.point.median)}{_marked(same.point)} on one CPU, {times}"
    )
    held = rungs.get("cross_switch_held")
    if held is None or held.point.median is None:
        return (
            f"{head}; idle held was not measured (it needs root or --hold-idle), so this run "
            "cannot say how much of it is waking an idle CPU."
        )
    explanation = _explanation(explained, cross.point)
    if explanation is None:
        return head + "."
    both = f"{_figure('idle free', cross.point)}; {_figure('idle held', held.point)}"
    idle = _part(explanation, IDLE_PART)
    if idle is not None:
        share = 100 * idle / explanation.median_ns
        return f"{head}; {_ns(idle)} of it ({share:.0f}%) is waking an idle CPU ({both})."
    code = explanation.withheld.get(IDLE_PART)
    if code is not None:
        return f"{head}; {both}: {IDLE_WITHHELD[code]}."
    return (
        f"{head}; holding the CPUs out of deep idle did not make it faster here ({both}), "
        "so the extra time is the cross-CPU wake-up and switch itself, which this run does "
        "not separate."
    )


def processes_line(explained: Explained | None, rungs: dict[str, Rung]) -> str | None:
    """Processes against threads on one CPU: the address-space switch, a share only
    where explain's one rule lets it stand."""
    threads, processes = rungs.get("thread_switch"), rungs.get("process_switch")
    if threads is None or processes is None:
        return None
    if threads.point.median is None or processes.point.median is None:
        return None
    explanation = _explanation(explained, processes.point)
    if explanation is None:
        return None
    head = (
        f"Processes: a switch between processes takes {_ns(processes.point.median)}"
        f"{_marked(processes.point)} against {_ns(threads.point.median)}"
        f"{_marked(threads.point)} between threads"
    )
    space = _part(explanation, ADDRESS_SPACE_PART)
    if space is not None:
        share = 100 * space / explanation.median_ns
        return f"{head}; the address-space switch is {_ns(space)} of it ({share:.0f}%)."
    code = explanation.withheld.get(ADDRESS_SPACE_PART)
    if code == SUSPECT:
        return (
            f"{head}; a side is suspect for a reason that says it measured something else, "
            "so this run does not say how much of it is the address-space switch."
        )
    if code is not None or _said(explanation, ADDRESS_SPACE_PART):
        return f"{head}; the two differ by less than this run's noise."
    return None


def why_lines(
    explained: Explained | None,
    rungs: Sequence[Rung],
    load: RunLoad | None = None,
    guest: Guest | None = None,
) -> list[str]:
    """The load the run's own records show first, then one line per large
    difference of the ladder that the run's parts explain, then, for a guest,
    what the run measured of its virtual machine and what it could not."""
    by_key = {rung.key: rung for rung in rungs}
    lines = [
        load_line(load),
        cross_cpu_line(explained, by_key),
        processes_line(explained, by_key),
        guest_line(guest, explained, load),
    ]
    return [line for line in lines if line]


def run_why(run: RunSummary) -> list[str]:
    """``why_lines`` of one run's summary (show, the report, --json)."""
    return why_lines(run.explained, run.ladder, run.load, run.guest)


# ---- the load, before the machine ----------------------------------------------------
def load_words(load: RunLoad) -> str:
    """'8 of 8 figures suspect for their spread (unstable 8); 2 samples set aside ...'."""
    said = []
    if load.suspect:
        reasons = ", ".join(f"{code.replace('_', ' ')} {n}" for code, n in load.reasons.items())
        said.append(
            f"{load.suspect} of {load.measured} figures suspect for their spread ({reasons})"
        )
    if load.slowed:
        worst = load.worst_reference_ratio
        said.append(
            f"{load.slowed} measured while the host reference still ran slowed"
            + (f" (up to {worst:.2f}× its best)" if worst else "")
        )
    if load.set_aside_samples:
        said.append(
            f"{load.set_aside_samples} sample{'s' if load.set_aside_samples != 1 else ''} set "
            f"aside and taken again in {load.set_aside_results} figure"
            + ("s" if load.set_aside_results != 1 else "")
        )
    if load.steal_results:
        figures = "figure" if load.steal_results == 1 else "figures"
        said.append(f"steal time in {load.steal_results} {figures} ({_ns(load.steal_ns)} in all)")
    return "; ".join(said) or "no interference recorded"


def load_line(load: RunLoad | None) -> str | None:
    """'Load: ...' where the run's own records show interference (None where not)."""
    if load is None or not load.carried:
        return None
    return (
        f"Load first, from this run's own records: {load_words(load)}. A figure marked "
        "suspect, or slower than this machine's usual, may carry that load."
    )


# ---- a guest: what the run measured of its virtual machine ----------------------------
def _idle_measured(explained: Explained | None) -> bool | None:
    """Whether the run has an idle=free cross-CPU figure with its idle=held twin
    (its idle share, or why not, is stated above); None: no cross-CPU figure."""
    if explained is None:
        return None
    cross = [e for e in explained.explanations if e.params.get("cpus") == "cross"]
    if not cross:
        return None
    return any(e.idle is not None for e in cross)


def guest_line(
    guest: Guest | None, explained: Explained | None, load: RunLoad | None
) -> str | None:
    """For a run in a virtual machine: what it measured of the machine (steal,
    the idle wake-up share across CPUs where an idle driver acts) and what it
    could not (the host's own exits, apart from the figures they slow)."""
    if guest is None:
        return None
    if guest.emulated:
        return (
            f"This run ran under an emulator ({guest.hypervisor}, {guest.vendor}): every "
            "instruction was translated in software, so every figure is the emulator's, not "
            "a CPU's; the run cannot separate the translation from the operation it times."
        )
    vcpus = f", {guest.cpus} vCPUs" if guest.cpus else ""
    measured, not_measured = [], []
    if load is not None and load.steal_results:
        measured.append(
            f"steal time in {load.steal_results} of {load.counted} figures "
            f"({_ns(load.steal_ns)} in all; their samples were set aside where it moved)"
        )
    elif load is not None and load.counted:
        measured.append(f"no steal time in the {load.counted} figures whose counters were read")
    else:
        not_measured.append("steal time (no kernel counters in these records)")
    idle = _idle_measured(explained)
    if guest.cpuidle_driver == "none":
        not_measured.append(
            "the idle wake-up share across CPUs: no cpuidle driver acts in this guest, so "
            "holding idle cannot change a wake-up"
        )
    elif idle:
        measured.append(
            "idle=free against idle=held across CPUs, for the idle wake-up share "
            f"({guest.cpuidle_driver or 'its'} idle driver; the line above says what it shows)"
        )
    elif idle is None:
        not_measured.append("the idle wake-up share across CPUs: no cross-CPU figure in this run")
    not_measured.append(
        "the host's own exits (interrupt delivery to a halted vCPU, the host's timer) apart "
        "from the figures they slow: a guest cannot count them"
    )
    text = f"This run is a {guest.hypervisor} guest{vcpus}. Of what the hypervisor adds, "
    if measured:
        text += "it measured " + "; ".join(measured) + "; "
    return text + "it could not measure " + "; ".join(not_measured) + "."


def no_ratio_words(same: Point | None, cross: Point | None) -> str | None:
    """Why a same-vs-other-CPU row has no ratio, in words (None: it has one)."""
    sides = [name for name, p in (("same CPU", same), ("other CPU", cross)) if not_a_switch(p)]
    if not sides:
        return None
    return (
        f"no ratio: on the {' and the '.join(sides)} the kernel counted too few switches, "
        "so that figure is not a switch"
    )


def terms(rungs: Sequence[Rung]) -> list[str]:
    """The definitions of the TERMS that appear in the ladder's labels, each once."""
    labels = [rung.label for rung in rungs]
    return [words for term, words in TERMS.items() if any(term in label for label in labels)]
