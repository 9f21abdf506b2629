"""The engine's probe descriptors are the only place that knows a probe.

Python names no probe (a grep of python/src finds none); what it uses a probe
for comes from the roles the engine's descriptors give it, through the
generated schema/probe-names.json (``ctxbench-engine docs probe-names``,
which make lint and the engine's registry test keep current). Here the
engine's data is changed and Python follows, with no Python edit.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import REPO, built_engine, real_run
from ctxbench.analysis.summary.answers import QUESTIONS
from ctxbench.analysis.summary.build import ladder
from ctxbench.analysis.summary.rules import LADDER
from ctxbench.records import roles
from ctxbench.records.result import results_of

PROBE_NAME = re.compile(r'"(switch|syscall|create|trap|uswitch|timer|msgrate|matrix)\.[a-z_]+"')
# The roles Python asks for by name (the ladder's and the answers' come from
# their specs).
NAMED_ROLES = (
    "explain:bare_syscall",
    "explain:ring",
    "explain:fork_size",
    "explain:fork_minimal_parent",
    "explain:headline",
    "seccomp:per_call",
    "uswitch:floor",
    "uswitch:boost_context",
    "uswitch:on_boost_context",
    "uswitch:ucontext",
    "uswitch:compiled",
    "profile:switch:futex",
    "profile:switch:pipe",
    "profile:switch:socketpair",
    "profile:syscall",
    "profile:minor_fault",
    "profile:thread",
    "profile:process",
    "profile:signal",
    "profile:fiber",
    "profile:asm",
)


def test_python_names_no_probe():
    named = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "python" / "src").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PROBE_NAME.search(line)
    ]
    assert not named, "probe names in python/src (give the probe a role instead):\n" + "\n".join(
        named
    )


def test_every_role_python_uses_has_a_probe_in_the_engine_data():
    used = {spec.full_role for spec in LADDER}
    used |= {f"answer:{wanted.role}" for question in QUESTIONS for wanted in question.wanted}
    used |= set(NAMED_ROLES)
    assert not [role for role in sorted(used) if not roles.probes_with(role)]


def test_roles_are_ranked_as_the_engine_says():
    # syscall.enosys is the ladder's first choice for a bare system call in
    # the engine's descriptors: the ladder asks in that order.
    (syscall,) = [spec for spec in LADDER if spec.key == "syscall"]
    assert syscall.candidates[0] == roles.probe_with("explain:bare_syscall")
    assert len(syscall.candidates) >= 2


def _syscall_rung(records) -> str:
    rungs = ladder(results_of(records))
    return next(rung.point.probe for rung in rungs if rung.key == "syscall")


@pytest.fixture
def engine_roles(monkeypatch):
    """A copy of the engine's roles that a test may change, as if the engine's
    descriptors said so."""
    table = {probe: list(ranked) for probe, ranked in roles.table().items()}
    monkeypatch.setattr(roles, "table", lambda: {p: tuple(r) for p, r in table.items()})
    return table


def test_another_rank_in_the_engine_data_changes_the_ladder(engine_roles):
    results = real_run("run_a.jsonl").results
    first = roles.probes_with("ladder:syscall")[0]
    assert _syscall_rung(results) == first
    # The engine ranks syscall.getpid first for the rung (no Python edit).
    second = roles.probes_with("ladder:syscall")[1]
    engine_roles[second] = [
        ("ladder:syscall", -1) if role == "ladder:syscall" else (role, rank)
        for role, rank in engine_roles[second]
    ]
    assert _syscall_rung(results) == second


def test_a_probe_renamed_in_the_engine_keeps_its_rung(engine_roles):
    run = real_run("run_a.jsonl")
    old = roles.probes_with("ladder:syscall")[0]
    new = old + "_renamed"
    engine_roles[new] = engine_roles.pop(old)
    renamed = [{**r, "probe": new} if r["probe"] == old else r for r in run.results]
    assert _syscall_rung(renamed) == new
    # A rung the engine takes away from every probe is not on the ladder.
    for probe in list(engine_roles):
        engine_roles[probe] = [(ro, k) for ro, k in engine_roles[probe] if ro != "ladder:syscall"]
    assert "syscall" not in [rung.key for rung in ladder(results_of(renamed))]


def test_the_roles_file_is_what_the_engine_lists():
    """schema/probe-names.json's roles are the engine's (`list --json`), so
    what Python reads of a stored run is what the engine's descriptors say."""
    engine = built_engine()
    listed = subprocess.run(
        [str(engine), "list", "--json"], capture_output=True, text=True, check=True, timeout=60
    )
    probes = json.loads(listed.stdout)
    from_engine = {
        p["name"]: tuple((r["role"], r["rank"]) for r in p["roles"]) for p in probes if p["roles"]
    }
    assert from_engine == roles.table()
