"""How a command names a stored run: a run id, a unique prefix of one, ``latest``, or a label."""

from __future__ import annotations

import socket

import sqlalchemy as sa

from ctxbench.errors import BadInput
from ctxbench.store_schema import MEASURED_ORDER, RUNS


def resolve_reference(conn: sa.Connection, reference: str, location: str) -> str:
    """A full run id from a full id, a unique prefix, ``latest``, or a label
    (the latest run with that label); BadInput naming the fix otherwise."""
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
    query = (
        sa.select(RUNS.c.run_id)
        .where(RUNS.c.run_id.startswith(reference, autoescape=True))
        .order_by(RUNS.c.stored_seq)
    )
    # SQLite's LIKE ignores ASCII case; run ids are compared exactly.
    matches = [row[0] for row in conn.execute(query) if row[0].startswith(reference)]
    if reference in matches:
        return reference
    if not matches:
        # A label names the latest run stored with it (e.g. a host of `run --host`).
        labelled = conn.execute(
            sa.select(RUNS.c.run_id)
            .where(RUNS.c.label == reference)
            .order_by(RUNS.c.stored_seq.desc())
            .limit(1)
        ).first()
        if labelled is not None:
            return labelled[0]
        raise BadInput(
            f"no run '{reference}' in {location}; see `ctxbench history` for the run ids"
        )
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise BadInput(f"run id prefix '{reference}' is ambiguous ({shown}); give more characters")
    return matches[0]
