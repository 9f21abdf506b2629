"""The history of runs: one SQLite file, versioned, migrated in place.

* The file is marked as ours with ``PRAGMA application_id`` and carries its
  schema version in ``PRAGMA user_version``; ``MIGRATIONS`` lists the steps
  from one version to the next, applied in one transaction.
* A file that is not SQLite, an SQLite database of another program, a
  damaged one, or one written by a newer ctxbench is refused with a clear
  error and never modified.
* Each run is written in one transaction (``BEGIN IMMEDIATE``), so a run is
  stored whole or not at all; concurrent writers wait for each other (busy
  timeout) rather than lose a run.
* Records are kept verbatim (as JSON text) next to a few indexed columns,
  so reports and exports render exactly what the producer wrote.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import platformdirs

from ctxbench.errors import BadInput, StoreError
from ctxbench.records import RunRecords, group_run, machine_name, params_key

APPLICATION_ID = 0x63747862  # "ctxb"
SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60.0
# Runs in the order they were measured (ISO 8601 UTC sorts as text).
MEASURED_ORDER = "COALESCE(started_at, stored_at), rowid"
NEWEST_FIRST = "COALESCE(started_at, stored_at) DESC, rowid DESC"

# Version n is reached by applying step n to a store at version n - 1.
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
            median  REAL,
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
]
LATEST_VERSION = MIGRATIONS[-1][0]


def default_path() -> Path:
    env = os.environ.get("CTXBENCH_DB")
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("ctxbench")) / "ctxbench.db"


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    label: str | None
    origin: str
    started_at: str | None
    hostname: str | None
    arch: str | None
    complete: bool
    interrupted: bool
    stored_at: str
    counts: dict[str, int]
    machine: str = "?"  # host · CPU model · virtualization (records.machine_name)

    @property
    def n_results(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class StoredRun:
    info: RunInfo
    records: RunRecords

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def env(self) -> dict[str, Any]:
        return self.records.env

    @property
    def results(self) -> list[dict[str, Any]]:
        return self.records.results


class Store:
    """An open ctxbench store. Use ``Store.open``."""

    def __init__(self, path: Path, connection: sqlite3.Connection):
        self.path = path
        self._db = connection

    # ---- opening -----------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str | None = None, create: bool = True) -> Store:
        explicit = path is not None
        path = Path(path) if path is not None else default_path()
        _check_path(path, create=create, explicit=explicit)
        exists = path.exists()
        mode = "rw" if exists else "rwc"
        uri = f"file:{quote(str(path.resolve()))}?mode={mode}"
        try:
            connection = sqlite3.connect(
                uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
        except sqlite3.Error as error:
            raise StoreError(f"cannot open store {path}: {error}; check the --db path") from None
        store = cls(path, connection)
        try:
            store._prepare()
        except sqlite3.DatabaseError as error:
            connection.close()
            raise StoreError(
                f"{path} is damaged or not a database ({error}); it was left untouched: "
                "move it aside or choose another --db"
            ) from None
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prepare(self) -> None:
        self._db.execute("PRAGMA foreign_keys = ON")
        version, app_id, tables = self._identity()
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            raise StoreError(
                f"{self.path} is an SQLite database but not a ctxbench store; "
                "it was left untouched: choose another --db"
            )
        if version > LATEST_VERSION:
            raise StoreError(
                f"{self.path} has store schema {version}, newer than this ctxbench knows "
                f"({LATEST_VERSION}); upgrade ctxbench to read it"
            )
        if app_id == APPLICATION_ID:
            problem = self._db.execute("PRAGMA quick_check").fetchone()[0]
            if problem != "ok":
                raise StoreError(
                    f"{self.path} is damaged ({problem}); it was left untouched: "
                    "move it aside or choose another --db"
                )
        if version < LATEST_VERSION:
            self.migrate(LATEST_VERSION)

    def _identity(self) -> tuple[int, int, list[str]]:
        """(schema version, application id, tables), read as one consistent snapshot."""
        if self._db.in_transaction:
            return self._read_identity()
        # One read transaction: read statement by statement, another process
        # could create the store in between (no application_id yet, but
        # tables already), and a fresh store would look foreign.
        self._db.execute("BEGIN")
        try:
            return self._read_identity()
        finally:
            self._db.execute("COMMIT")

    def _read_identity(self) -> tuple[int, int, list[str]]:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        tables = [
            row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return version, app_id, tables

    def migrate(self, target: int) -> None:
        """Bring the store up to schema ``target`` in one transaction."""
        with self._transaction():
            # Read again inside the write lock: another process may have
            # created or migrated the store since we looked.
            version, app_id, tables = self._identity()
            if app_id == 0 and tables:
                raise StoreError(f"{self.path} is not a ctxbench store; left untouched")
            for step, script in MIGRATIONS:
                if version < step <= target:
                    for statement in _statements(script):
                        self._db.execute(statement)
                    version = step
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._db.execute(f"PRAGMA user_version = {version}")

    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ---- writing -----------------------------------------------------------
    def add_run(self, run: RunRecords, origin: str, label: str | None = None) -> str:
        """Store one run (env, results, run_end) in one transaction."""
        env, end = run.env, run.end
        interrupted = end is None or bool(end.get("interrupted"))
        producer = env.get("producer", {})
        with self._transaction():
            if self._db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone():
                raise BadInput(
                    f"run {run.run_id} is already in {self.path}; nothing was stored "
                    "(see `ctxbench show " + run.run_id + "`)"
                )
            self._db.execute(
                "INSERT INTO runs (run_id, started_at, finished_at, hostname, arch, producer,"
                " origin, complete, interrupted, stored_at, env, run_end, label)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    env.get("started_at"),
                    end.get("finished_at") if end else None,
                    env.get("hostname"),
                    env.get("arch"),
                    f"{producer.get('name', '?')} {producer.get('version', '?')}",
                    origin,
                    int(end is not None),
                    int(interrupted),
                    _now(),
                    json.dumps(env),
                    json.dumps(end) if end else None,
                    label,
                ),
            )
            self._db.executemany(
                "INSERT INTO results (run_id, seq, probe, family, params, unit, status, median,"
                " record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run.run_id,
                        seq,
                        result["probe"],
                        result["family"],
                        params_key(result["params"]),
                        result["unit"],
                        result["verdict"]["status"],
                        (result.get("summary") or {}).get("median"),
                        json.dumps(result),
                    )
                    for seq, result in enumerate(run.results)
                ],
            )
        return run.run_id

    # ---- reading -----------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """All runs in the order they were measured (an imported run sits where its
        measurement falls, not where it was stored)."""
        rows = self._db.execute(
            "SELECT run_id, label, origin, started_at, hostname, arch, complete, interrupted,"
            f" stored_at, env FROM runs ORDER BY {MEASURED_ORDER}"
        ).fetchall()
        counts: dict[str, dict[str, int]] = {}
        for run_id, status, count in self._db.execute(
            "SELECT run_id, status, COUNT(*) FROM results GROUP BY run_id, status"
        ):
            counts.setdefault(run_id, {})[status] = count
        return [_run_info(row[:9], counts.get(row[0], {}), json.loads(row[9])) for row in rows]

    def resolve(self, reference: str) -> str:
        """A full run id from a full id, a unique prefix, or ``latest``: the most
        recently measured run of this host, or of any host when this one has none."""
        if reference == "latest":
            row = (
                self._db.execute(
                    f"SELECT run_id FROM runs WHERE hostname = ? ORDER BY {NEWEST_FIRST} LIMIT 1",
                    (socket.gethostname(),),
                ).fetchone()
                or self._db.execute(
                    f"SELECT run_id FROM runs ORDER BY {NEWEST_FIRST} LIMIT 1"
                ).fetchone()
            )
            if row is None:
                raise BadInput(
                    f"no runs in {self.path} yet; `ctxbench run` or `ctxbench import` one first"
                )
            return row[0]
        if not reference:
            raise BadInput("empty run id; give a run id, a unique prefix of one, or 'latest'")
        pattern = reference.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        matches = [
            row[0]
            for row in self._db.execute(
                "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY rowid",
                (pattern,),
            )
            # LIKE ignores ASCII case; run ids are compared exactly.
            if row[0].startswith(reference)
        ]
        if reference in matches:
            return reference
        if not matches:
            raise BadInput(
                f"no run '{reference}' in {self.path}; see `ctxbench history` for the run ids"
            )
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise BadInput(
                f"run id prefix '{reference}' is ambiguous ({shown}); give more characters"
            )
        return matches[0]

    def load(self, reference: str) -> StoredRun:
        run_id = self.resolve(reference)
        row = self._db.execute(
            "SELECT run_id, label, origin, started_at, hostname, arch, complete, interrupted,"
            " stored_at, env, run_end FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        results = [
            json.loads(text)
            for (text,) in self._db.execute(
                "SELECT record FROM results WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        ]
        env = json.loads(row[9])
        end = json.loads(row[10]) if row[10] else None
        records = group_run([env, *results, *([end] if end else [])], origin=str(self.path))
        counts: dict[str, int] = {}
        for result in results:
            status = result["verdict"]["status"]
            counts[status] = counts.get(status, 0) + 1
        return StoredRun(info=_run_info(row[:9], counts, env), records=records)


def _run_info(row: tuple[Any, ...], counts: dict[str, int], env: dict[str, Any]) -> RunInfo:
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
        machine=machine_name(env),
    )


def _check_path(path: Path, create: bool, explicit: bool) -> None:
    """Refuse paths we cannot use, before SQLite makes up an error of its own."""
    hint = "choose another --db (or CTXBENCH_DB)"
    if path.is_dir():
        raise StoreError(f"store path {path} is a directory; {hint}, a file path")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise StoreError(f"cannot read and write store {path} (permission denied); {hint}")
        try:
            with path.open("rb") as handle:
                head = handle.read(len(SQLITE_MAGIC))
        except OSError as error:
            raise StoreError(f"cannot read store {path}: {error.strerror}; {hint}") from None
        if (head and head != SQLITE_MAGIC[: len(head)]) or 0 < len(head) < len(SQLITE_MAGIC):
            raise StoreError(
                f"{path} is not a ctxbench store (not an SQLite file); it was left untouched: "
                f"{hint}"
            )
        return
    if not create:
        raise StoreError(f"no store at {path}; `ctxbench run` or `ctxbench import` creates it")
    parent = path.parent
    if not explicit:
        parent.mkdir(parents=True, exist_ok=True)
    if not parent.is_dir():
        raise StoreError(f"cannot create store {path}: {parent} is not a directory; {hint}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create store {path}: {parent} is not writable; {hint}")


def _statements(script: str) -> list[str]:
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
