"""The store's schema: its migrations, and its tables as queries see them.

Version n is reached by applying migration n to a store at version n - 1; the
SQL is portable between SQLite and PostgreSQL. The ``sa.Table`` objects
describe the tables as the migrations leave them, for building queries.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ctxbench.records.environment import environment_of
from ctxbench.records.machines import machine_name
from ctxbench.records.runs import RunInfo

APPLICATION_ID = 0x63747862  # "ctxb"
SQLITE_MAGIC = b"SQLite format 3\x00"

# Version n is reached by applying step n to a store at version n - 1. The SQL
# is portable between SQLite and PostgreSQL (DOUBLE PRECISION has REAL
# affinity in SQLite; version 1 was first written with REAL, which is the same
# thing there).
MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY,
            started_at  TEXT,
            finished_at TEXT,
            hostname    TEXT,
            arch        TEXT,
            producer    TEXT,
            origin      TEXT NOT NULL,     -- run | import | riscv
            complete    INTEGER NOT NULL,  -- a run_end record arrived
            interrupted INTEGER NOT NULL,  -- stopped early (Ctrl-C, or no run_end)
            stored_at   TEXT NOT NULL,
            env         TEXT NOT NULL,     -- the env record, verbatim
            run_end     TEXT               -- the run_end record, verbatim
        );
        CREATE TABLE results (
            run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            seq     INTEGER NOT NULL,      -- order in which the producer wrote it
            probe   TEXT NOT NULL,
            family  TEXT NOT NULL,
            params  TEXT NOT NULL,         -- canonical JSON (sorted keys)
            unit    TEXT NOT NULL,
            status  TEXT NOT NULL,
            median  DOUBLE PRECISION,
            record  TEXT NOT NULL,         -- the result record, verbatim
            PRIMARY KEY (run_id, seq)
        );
        """,
    ),
    (
        2,
        """
        ALTER TABLE runs ADD COLUMN label TEXT;
        CREATE INDEX results_by_probe ON results(probe, params);
        """,
    ),
    (
        3,
        # The order runs were stored in, counted under the write lock: SQLite's
        # rowid has no PostgreSQL equivalent, and clocks of several machines
        # writing to one store do not agree. Older runs are numbered in
        # stored_at order (their insertion order: each was timed under the lock).
        """
        ALTER TABLE runs ADD COLUMN stored_seq INTEGER;
        UPDATE runs SET stored_seq = (
            SELECT COUNT(*) FROM runs AS earlier
            WHERE earlier.stored_at < runs.stored_at
               OR (earlier.stored_at = runs.stored_at AND earlier.run_id <= runs.run_id)
        );
        CREATE UNIQUE INDEX runs_by_stored_seq ON runs(stored_seq);
        """,
    ),
    (
        4,
        # Profiles of programs (`ctxbench profile`, schema/profile.schema.json):
        # a kind of their own, not runs (no results), kept with their record.
        """
        CREATE TABLE profiles (
            profile_id TEXT PRIMARY KEY,   -- the record's run_id
            started_at TEXT,
            hostname   TEXT,
            target     TEXT NOT NULL,      -- the command, or "PID n"
            stored_at  TEXT NOT NULL,
            record     TEXT NOT NULL       -- the profile record, verbatim
        );
        """,
    ),
]
LATEST_VERSION = MIGRATIONS[-1][0]

# The tables as the migrations leave them, for building queries (never created
# from here: the migrations own the schema; a test checks the two agree).
_metadata = sa.MetaData()
RUNS = sa.Table(
    "runs",
    _metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("started_at", sa.Text),
    sa.Column("finished_at", sa.Text),
    sa.Column("hostname", sa.Text),
    sa.Column("arch", sa.Text),
    sa.Column("producer", sa.Text),
    sa.Column("origin", sa.Text, nullable=False),
    sa.Column("complete", sa.Integer, nullable=False),
    sa.Column("interrupted", sa.Integer, nullable=False),
    sa.Column("stored_at", sa.Text, nullable=False),
    sa.Column("env", sa.Text, nullable=False),
    sa.Column("run_end", sa.Text),
    sa.Column("label", sa.Text),
    sa.Column("stored_seq", sa.Integer),
)
RESULTS = sa.Table(
    "results",
    _metadata,
    sa.Column("run_id", sa.Text, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("probe", sa.Text, nullable=False),
    sa.Column("family", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("median", sa.Float),
    sa.Column("record", sa.Text, nullable=False),
)
PROFILES = sa.Table(
    "profiles",
    _metadata,
    sa.Column("profile_id", sa.Text, primary_key=True),
    sa.Column("started_at", sa.Text),
    sa.Column("hostname", sa.Text),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("stored_at", sa.Text, nullable=False),
    sa.Column("record", sa.Text, nullable=False),
)
# Runs in the order they were measured (ISO 8601 UTC sorts as text).
MEASURED_ORDER = (sa.func.coalesce(RUNS.c.started_at, RUNS.c.stored_at), RUNS.c.stored_seq)
INFO_COLUMNS = (
    RUNS.c.run_id,
    RUNS.c.label,
    RUNS.c.origin,
    RUNS.c.started_at,
    RUNS.c.hostname,
    RUNS.c.arch,
    RUNS.c.complete,
    RUNS.c.interrupted,
    RUNS.c.stored_at,
)


def run_info(row: tuple[Any, ...], counts: dict[str, int], env: dict[str, Any]) -> RunInfo:
    run_id, label, origin, started_at, hostname, arch, complete, interrupted, stored_at = row
    return RunInfo(
        run_id=run_id,
        label=label,
        origin=origin,
        started_at=started_at,
        hostname=hostname,
        arch=arch,
        complete=bool(complete),
        interrupted=bool(interrupted),
        stored_at=stored_at,
        counts=counts,
        machine=machine_name(environment_of(env)),
    )


def migration_statements(script: str) -> list[str]:
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]
