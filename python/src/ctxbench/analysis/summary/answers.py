"""The seed questions a run answers, as figures and ratios: no sentences here.

Each question names the figures that answer it (the record that stands for
each, as the summary's ladder picks its rungs: the first candidate probe the
run measured, with params matching, preferred values first) and the ratios
that say it in one number, each with the percentile bootstrap interval of the
two figures' samples (``summary.data.ratio``). A question is answered when
the run holds at least two of its figures; what it lacks is named, so the
view can say how to get it. A ``suspect`` figure stays in the answer, marked
by its status, never dropped.

* ``answers(results) -> list[Answer]``: the questions this run answers, in
  the order of QUESTIONS.

``ctxbench.views.summary.answers`` words them; ``show``, ``run`` and the report print
them first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.analysis.summary.data import Point, point, ratio
from ctxbench.analysis.summary.rules import BATCH_FIRST, pick  # the ladder's own matching
from ctxbench.records.result import Result
from ctxbench.records.roles import probes_with
from ctxbench.stats import RatioInterval


@dataclass(frozen=True)
class Wanted:
    key: str
    label: str  # what the figure is, in the list of figures
    short: str  # its name in a ratio
    role: str  # the probes with the role answer:ROLE measure it (records.roles)
    match: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def candidates(self) -> tuple[str, ...]:
        return probes_with(f"answer:{self.role}")


@dataclass(frozen=True)
class Question:
    key: str
    title: str
    wanted: tuple[Wanted, ...]
    ratios: tuple[tuple[str, str], ...]  # (figure, against): figure / against
    # how to measure what the run lacks: `ctxbench run ...` arguments; {probes}:
    # the first probe of each wanted figure's role
    command: str

    def run_arguments(self) -> str:
        probes = dict.fromkeys(w.candidates[0] for w in self.wanted if w.candidates)
        return self.command.format(probes=" ".join(probes))


@dataclass(frozen=True)
class Ratio:
    figure: str  # short names
    against: str
    interval: RatioInterval | None  # None: a side has no samples to resample
    value: float  # the ratio of the two medians


@dataclass(frozen=True)
class Answer:
    key: str
    title: str
    figures: list[tuple[str, Point]]  # (label, point), in QUESTIONS order
    ratios: list[Ratio]
    missing: list[str]  # labels of the figures the run did not measure
    command: str


SAME_THREADS = {"between": ("threads",), "cpus": ("same",), "idle": ("free", None)}
NORMAL_FIRST = ("normal", "batch", None)

QUESTIONS: tuple[Question, ...] = (
    Question(
        "fibers",
        "Fibers, coroutines or threads",
        (
            Wanted("coroutine", "coroutine (C++20)", "coroutine", "coroutine"),
            Wanted(
                "fiber",
                "fiber (Boost.Fiber)",
                "fiber",
                "fiber",
                {"fibers": (4, None)},
            ),
            Wanted(
                "futex",
                "thread hand-off (futex, one CPU)",
                "thread hand-off",
                "futex",
                {**SAME_THREADS, "policy": BATCH_FIRST},
            ),
            Wanted(
                "round_robin",
                "4-thread round robin",
                "round robin",
                "round_robin",
                {"cpus": ("same",), "threads": (4, None), "policy": BATCH_FIRST},
            ),
        ),
        (("futex", "fiber"), ("futex", "coroutine"), ("round_robin", "fiber")),
        "--preset fibers-vs-threads",
    ),
    Question(
        "creation",
        "What a system call, a thread, a process cost",
        (
            Wanted(
                "syscall",
                "system call",
                "system call",
                "syscall",
            ),
            Wanted(
                "thread",
                "thread (create + join)",
                "thread",
                "thread",
            ),
            Wanted(
                "process",
                "process (fork + wait)",
                "process",
                "process",
                {"parent_mib": (0, None)},
            ),
            Wanted("exec", "fork + exec", "fork + exec", "exec"),
        ),
        (("thread", "syscall"), ("process", "thread"), ("exec", "process")),
        "{probes}",
    ),
    Question(
        "burst",
        "Switches in a burst (per switch), pinned to one CPU or not",
        tuple(
            Wanted(
                f"{cpus}_{n}",
                f"{'pinned' if cpus == 'same' else 'unpinned'} n={n}",
                f"{'pinned' if cpus == 'same' else 'unpinned'} n={n}",
                "burst",
                {"n": (n,), "cpus": (cpus,), "policy": NORMAL_FIRST},
            )
            for n in (20, 200, 20000)
            for cpus in ("same", "any")
        ),
        tuple((f"any_{n}", f"same_{n}") for n in (20, 200, 20000)),
        "{probes} --cpus same,any",
    ),
    Question(
        "handoff",
        "Pipe vs condvar thread switch, one CPU; round trips per second",
        (
            Wanted(
                "pipe",
                "pipe",
                "pipe",
                "pipe",
                {**SAME_THREADS, "policy": NORMAL_FIRST},
            ),
            Wanted(
                "condvar",
                "condvar",
                "condvar",
                "condvar",
                {**SAME_THREADS, "policy": NORMAL_FIRST},
            ),
            Wanted(
                "rate_same",
                "pipe, 1 byte each way, one CPU",
                "round trips, one CPU",
                "message_rate",
                {
                    "payload": (1,),
                    "cpus": ("same",),
                    "idle": ("free", None),
                    "policy": NORMAL_FIRST,
                },
            ),
            Wanted(
                "rate_cross",
                "across CPUs",
                "round trips across CPUs",
                "message_rate",
                {
                    "payload": (1,),
                    "cpus": ("cross",),
                    "idle": ("free", None),
                    "policy": NORMAL_FIRST,
                },
            ),
        ),
        (("condvar", "pipe"),),
        "{probes} --between threads",
    ),
)


def answers(results: Sequence[Result]) -> list[Answer]:
    """The QUESTIONS this run answers (two or more of their figures measured)."""
    measured = [r for r in results if r.median is not None]
    out = []
    for question in QUESTIONS:
        found: dict[str, Point] = {}
        missing = []
        for wanted in question.wanted:
            chosen = next(
                (
                    record
                    for probe in wanted.candidates
                    if (record := pick(measured, probe, wanted.match)) is not None
                ),
                None,
            )
            if chosen is None:
                missing.append(wanted.label)
            else:
                found[wanted.key] = point(chosen)
        if len(found) < 2:
            continue
        labels = {wanted.key: wanted.short for wanted in question.wanted}
        ratios = [
            Ratio(
                labels[a],
                labels[b],
                ratio(found[b], found[a]),
                (found[a].median or 0.0) / found[b].median,
            )
            for a, b in question.ratios
            if a in found and b in found and found[b].median
        ]
        figures = [(w.label, found[w.key]) for w in question.wanted if w.key in found]
        out.append(
            Answer(question.key, question.title, figures, ratios, missing, question.run_arguments())
        )
    return out
