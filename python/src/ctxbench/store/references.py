"""How a command names a stored run: a run id or a unique prefix, ``latest``, or a label.

A reference is tried in this order: ``latest``; a whole run id; the start
of run ids; a label (the latest run stored with it); the start of the hash
part of run ids (what follows the timestamp, at least MIN_HASH_PREFIX
characters). A start that fits several runs is an error naming them.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from difflib import get_close_matches

import sqlalchemy as sa

from ctxbench.errors import BadInput
from ctxbench.store.schema import MEASURED_ORDER, RUNS

# A hash part shorter than this names no run (git's shortest abbreviation):
# one or two hex digits would pick a run by chance for a mistyped label.
MIN_HASH_PREFIX = 4
SHOWN = 5  # candidates named in the message for an ambiguous reference


def resolve_reference(conn: sa.Connection, reference: str, location: str) -> str:
    """The run id REFERENCE names (module docstring); BadInput naming the fix otherwise."""
    if reference == "latest":
        # The most recently measured run of this host, else of any host.
        newest = sa.select(RUNS.c.run_id).order_by(*(key.desc() for key in MEASURED_ORDER))
        row = (
            conn.execute(newest.where(RUNS.c.hostname == socket.gethostname()).limit(1)).first()
            or conn.execute(newest.limit(1)).first()
        )
        if row is None:
            raise BadInput(
                f"no runs in {location} yet; `ctxbench run` or `ctxbench import` one first"
            )
        return row[0]
    if not reference:
        raise BadInput("empty run id; give a run id, a unique prefix of one, or 'latest'")
    # SQL's LIKE narrows the rows (SQLite's ignores ASCII case); the exact
    # test is done here.
    by_id = _matches(
        conn,
        RUNS.c.run_id.startswith(reference, autoescape=True),
        lambda run_id: run_id.startswith(reference),
    )
    if reference in by_id:
        return reference
    if by_id:
        return _only(by_id, reference, "run id prefix")
    # A label names the latest run stored with it (e.g. a host of `run --host`).
    labelled = conn.execute(
        sa.select(RUNS.c.run_id)
        .where(RUNS.c.label == reference)
        .order_by(RUNS.c.stored_seq.desc())
        .limit(1)
    ).first()
    if labelled is not None:
        return labelled[0]
    if len(reference) >= MIN_HASH_PREFIX:
        by_hash = _matches(
            conn,
            RUNS.c.run_id.contains("-" + reference, autoescape=True),
            lambda run_id: hash_part(run_id).startswith(reference),
        )
        if by_hash:
            return _only(by_hash, reference, "run id hash prefix")
    raise BadInput(f"no run '{reference}' in {location}{_did_you_mean(conn, reference)}")


def hash_part(run_id: str) -> str:
    """What follows the timestamp in a run id: '2291752d' of '20261122T063714Z-2291752d'."""
    return run_id.partition("-")[2]


def _matches(
    conn: sa.Connection, where: sa.ColumnElement[bool], keep: Callable[[str], bool]
) -> list[str]:
    """The run ids WHERE selects and KEEP keeps, in the order they were stored."""
    query = sa.select(RUNS.c.run_id).where(where).order_by(RUNS.c.stored_seq)
    return [run_id for (run_id,) in conn.execute(query) if keep(run_id)]


def _only(matches: list[str], reference: str, what: str) -> str:
    if len(matches) == 1:
        return matches[0]
    shown = ", ".join(matches[:SHOWN])
    if len(matches) > SHOWN:
        shown += f" and {len(matches) - SHOWN} more"
    raise BadInput(
        f"{what} '{reference}' is ambiguous: {len(matches)} runs match ({shown}); "
        "give more characters"
    )


def _did_you_mean(conn: sa.Connection, reference: str) -> str:
    """'; did you mean ...?' from the run ids, their hash parts and the labels
    close to REFERENCE, and where to look."""
    rows = conn.execute(sa.select(RUNS.c.run_id, RUNS.c.label)).all()
    names = {name for run_id, label in rows for name in (run_id, hash_part(run_id), label) if name}
    close = get_close_matches(reference, sorted(names), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return hint + " (`ctxbench history` lists the run ids)"
