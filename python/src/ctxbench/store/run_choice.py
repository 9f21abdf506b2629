"""Which stored run a reading command takes, and what its words mean.

``latest`` for ``show`` and ``explain`` is the latest run of a kind the
command can use: an engine run for an engine probe glob, a RISC-V lab run
for ``riscv.*``, either without one; the note says which run it took. The
first word of ``explain [RUN] [PROBE-GLOB...]`` is a run when the store knows
it, else a glob when it looks like one (a probe or a glob, or a family or
probe of the latest run); otherwise the store's own error stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxbench.errors import BadInput

LAB_FAMILY = "riscv"
GLOB_CHARACTERS = "*?["


def is_lab(run_id: str, origin: str | None = None) -> bool:
    """A RISC-V trap lab run (``ctxbench riscv``, or its records imported)."""
    return origin == "riscv" or run_id.startswith("riscv-")


def _kind(lab: bool) -> str:
    return "RISC-V lab" if lab else "engine"


def wants_lab(globs: Sequence[str]) -> bool | None:
    """The kind of run GLOBS ask for: True (lab), False (engine), None (either)."""
    if not globs:
        return None
    return all(glob.split(".")[0] == LAB_FAMILY for glob in globs)


def pick(store: Any, reference: str, lab: bool | None = None) -> tuple[Any, str | None]:
    """The stored run REFERENCE names, and a note when it was 'latest': which run
    that is, or, where the latest is of the other kind, the latest of this one."""
    stored = store.load(reference)
    if reference != "latest":
        return stored, None
    latest_is_lab = is_lab(stored.run_id, stored.info.origin)
    if lab is None or latest_is_lab == lab:
        return stored, f"latest: {_kind(latest_is_lab)} run {stored.run_id}"
    fitting = [info for info in store.runs() if is_lab(info.run_id, info.origin) == lab]
    if not fitting:
        raise BadInput(
            f"no {_kind(lab)} run in {store.location}: the latest, {stored.run_id}, is a "
            f"{_kind(latest_is_lab)} run; "
            + ("`ctxbench riscv` makes one" if lab else "`ctxbench run` makes one")
        )
    chosen = store.load(fitting[-1].run_id)
    return chosen, (
        f"latest {_kind(lab)} run: {chosen.run_id} (the latest run, {stored.run_id}, is a "
        f"{_kind(latest_is_lab)} run)"
    )


def run_and_globs(store: Any, words: Sequence[str]) -> tuple[str, list[str]]:
    """(run reference, probe globs) of ``explain [RUN] [PROBE-GLOB...]``."""
    if not words:
        return "latest", []
    first, rest = words[0], list(words[1:])
    try:
        store.load(first)
    except BadInput:
        if _looks_like_a_probe(store, first):
            return "latest", [first, *rest]
        raise
    return first, rest


def _looks_like_a_probe(store: Any, word: str) -> bool:
    if any(c in word for c in GLOB_CHARACTERS) or "." in word:
        return word[:1].isalpha() or word[:1] in GLOB_CHARACTERS
    try:
        results = store.load("latest").results
    except BadInput:
        return False
    return word in {r.family for r in results} | {LAB_FAMILY}
