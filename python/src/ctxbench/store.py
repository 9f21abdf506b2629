"""The history of runs: one store module over SQLAlchemy Core, for SQLite and PostgreSQL.

* The default store is one SQLite file; ``postgresql://...`` (``--db`` or
  ``CTXBENCH_DB``) names a PostgreSQL database a team shares. Both get the
  same tables, the same ``MIGRATIONS`` (portable SQL) and the same queries;
  what differs between the two lives in one small class per dialect
  (``_SQLite``, ``_PostgreSQL``): how a store is marked as ours with its
  schema version, how a writer takes the write lock, how damage is checked.
* A store that is not ours (another program's database, a file that is not
  SQLite, a damaged one) or written by a newer ctxbench is refused with a
  clear error and never modified. An older one is migrated in one
  transaction when opened.
* Each run is written in one transaction under the write lock, so a run is
  stored whole or not at all and concurrent writers (several processes or
  machines) wait for each other rather than lose a run. A write that fails
  (disk full, lock held past the timeout, store deleted) raises
  ``StoreWriteError`` and leaves the earlier runs as they were.
* Commands that only read open a store they cannot write read-only.
* Records are kept verbatim (as JSON text) next to a few indexed columns,
  so reports and exports render exactly what the producer wrote.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import platformdirs
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import NullPool

from ctxbench.errors import BadInput, StoreError, StoreWriteError
from ctxbench.records import RunRecords, group_run, params_key

APPLICATION_ID = 0x63747862  # "ctxb"
SQLITE_MAGIC = b"SQLite format 3\x00"
LOCK_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 15
POSTGRES_SCHEMES = ("postgresql", "postgres")

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
_INFO_COLUMNS = (
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


def default_target() -> str:
    """$CTXBENCH_DB (a path or a postgresql:// URL), else the user data directory's file."""
    env = os.environ.get("CTXBENCH_DB")
    if env:
        return env
    return str(Path(platformdirs.user_data_dir("ctxbench")) / "ctxbench.db")


def default_path() -> Path:
    return Path(default_target())


def is_url(target: str) -> bool:
    return urlsplit(target).scheme in POSTGRES_SCHEMES


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


# ---- the dialect boundary ----------------------------------------------------
class _Dialect:
    """What differs between SQLite and PostgreSQL; everything else is shared."""

    name = ""
    hint = "choose another --db (or CTXBENCH_DB)"

    def __init__(self, location: str, lock_timeout: float):
        self.location = location  # for messages: a path, or a URL without its password
        self.lock_timeout = lock_timeout
        self.readonly = False

    def engine(self) -> sa.Engine:
        raise NotImplementedError

    def identity(self, conn: sa.Connection) -> tuple[int, int]:
        """(schema version, application id); (0, 0) for an unmarked database."""
        raise NotImplementedError

    def mark(self, conn: sa.Connection, version: int) -> None:
        raise NotImplementedError

    def begin_read(self, conn: sa.Connection) -> None:
        """Called first in every read transaction: all of it sees one snapshot."""

    def lock_for_write(self, conn: sa.Connection) -> None:
        """Called first in every write transaction: writers go one at a time."""

    def damage(self, conn: sa.Connection) -> str | None:
        return None

    def check_still_there(self) -> None:
        """Before a write: the store we opened is still the one at its location."""

    def spool_dir(self) -> Path:
        return Path(platformdirs.user_data_dir("ctxbench"))

    def write_failure(self, error: BaseException) -> StoreWriteError | None:
        """A StoreWriteError for a failed write the user can act on, else None."""
        return None


class _SQLite(_Dialect):
    """One file; marked with PRAGMA application_id, versioned with PRAGMA user_version."""

    name = "sqlite"

    def __init__(self, path: Path, lock_timeout: float, create: bool, explicit: bool):
        super().__init__(str(path), lock_timeout)
        self.path = path
        self.readonly = _check_path(path, create=create, explicit=explicit)
        self._file_id: tuple[int, int] | None = None

    def engine(self) -> sa.Engine:
        mode = "ro" if self.readonly else ("rw" if self.path.exists() else "rwc")
        uri = f"file:{quote(str(self.path.resolve()))}?mode={mode}"

        def connect() -> sqlite3.Connection:
            # isolation_level=None: SQLite's own BEGIN/COMMIT, issued by the
            # "begin" hook below, not the sqlite3 module's implicit ones.
            return sqlite3.connect(
                uri,
                uri=True,
                timeout=self.lock_timeout,
                isolation_level=None,
                check_same_thread=False,
            )

        engine = sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)

        @sa.event.listens_for(engine, "connect")
        def on_connect(dbapi_connection: Any, record: Any) -> None:
            dbapi_connection.execute("PRAGMA foreign_keys = ON")

        @sa.event.listens_for(engine, "begin")
        def on_begin(conn: sa.Connection) -> None:
            # A writer takes the write lock up front (waiting up to the busy
            # timeout), so two writers never both read, then both write.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")

        return engine

    def opened(self) -> None:
        try:
            stat = self.path.stat()
            self._file_id = (stat.st_dev, stat.st_ino)
        except OSError:
            self._file_id = None

    def identity(self, conn: sa.Connection) -> tuple[int, int]:
        version = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
        app_id = conn.exec_driver_sql("PRAGMA application_id").scalar_one()
        return int(version), int(app_id)

    def mark(self, conn: sa.Connection, version: int) -> None:
        conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.exec_driver_sql(f"PRAGMA user_version = {int(version)}")

    def damage(self, conn: sa.Connection) -> str | None:
        problem = conn.exec_driver_sql("PRAGMA quick_check").scalar_one()
        return None if problem == "ok" else str(problem)

    def check_still_there(self) -> None:
        try:
            stat = self.path.stat()
            now = (stat.st_dev, stat.st_ino)
        except OSError:
            now = None
        if self._file_id is not None and now != self._file_id:
            what = "deleted" if now is None else "replaced by another file"
            raise StoreWriteError(
                f"store {self.path} was {what} while ctxbench had it open; nothing was "
                "written to it: check what removed it, then store the run again",
                reason="gone",
            )

    def spool_dir(self) -> Path:
        return self.path.parent

    def write_failure(self, error: BaseException) -> StoreWriteError | None:
        original = getattr(error, "orig", error)
        if not isinstance(original, sqlite3.Error):
            return None
        text = str(original)
        if "locked" in text or "busy" in text:
            return StoreWriteError(
                f"store {self.path} stayed locked by another writer for more than "
                f"{self.lock_timeout:g} s; nothing was written: wait for it to finish, "
                "then store the run again",
                reason="locked",
            )
        if "full" in text:
            return StoreWriteError(
                f"store {self.path}: no space left on its file system (SQLite: {text}); "
                "nothing of this run was written and the earlier runs are intact: "
                "free some space, then store the run again",
                reason="full",
            )
        if "readonly" in text or "read-only" in text:
            self.check_still_there()
            return StoreWriteError(
                f"store {self.path} cannot be written (SQLite: {text}); nothing was written: "
                f"make it writable or {self.hint}",
                reason="readonly",
            )
        if isinstance(original, sqlite3.OperationalError):
            self.check_still_there()
            return StoreWriteError(
                f"store {self.path}: the write failed (SQLite: {text}); nothing of this run "
                "was written and the earlier runs are intact: check the disk (space, file "
                "size limit, permissions), then store the run again",
                reason="io",
            )
        return None


class _PostgreSQL(_Dialect):
    """A PostgreSQL database (libpq connection URI, so ~/.pgpass, PGPASSWORD and
    service files work as for psql). The mark and version live in a one-row
    table ``ctxbench_store``; writers serialize on a transaction-scoped
    advisory lock, bounded by ``lock_timeout``."""

    name = "postgresql"
    MARK_TABLE = "ctxbench_store"

    def __init__(self, url: str, lock_timeout: float):
        super().__init__(_without_password(url), lock_timeout)
        self.url = url

    def engine(self) -> sa.Engine:
        import psycopg  # only a PostgreSQL store needs the driver

        def connect() -> Any:
            return psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S)

        return sa.create_engine("postgresql+psycopg://", creator=connect, poolclass=NullPool)

    def identity(self, conn: sa.Connection) -> tuple[int, int]:
        if not sa.inspect(conn).has_table(self.MARK_TABLE):
            return 0, 0
        row = conn.execute(
            sa.text(f"SELECT user_version, application_id FROM {self.MARK_TABLE}")
        ).first()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def mark(self, conn: sa.Connection, version: int) -> None:
        conn.execute(
            sa.text(
                f"CREATE TABLE IF NOT EXISTS {self.MARK_TABLE} "
                "(application_id INTEGER NOT NULL, user_version INTEGER NOT NULL)"
            )
        )
        conn.execute(sa.text(f"DELETE FROM {self.MARK_TABLE}"))
        conn.execute(
            sa.text(f"INSERT INTO {self.MARK_TABLE} VALUES (:app, :version)"),
            {"app": APPLICATION_ID, "version": int(version)},
        )

    def spool_dir(self) -> Path:
        directory = super().spool_dir()
        # Without it the caller runs without its safety copy and says so.
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
        return directory

    def begin_read(self, conn: sa.Connection) -> None:
        # READ COMMITTED would give each statement its own snapshot: a store
        # created by another writer between two of them could look foreign.
        # (Writes stay READ COMMITTED: they read after taking the lock.)
        conn.execute(sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))

    def lock_for_write(self, conn: sa.Connection) -> None:
        milliseconds = max(1, int(self.lock_timeout * 1000))
        conn.execute(sa.text(f"SET LOCAL lock_timeout = {milliseconds}"))
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": APPLICATION_ID})

    def write_failure(self, error: BaseException) -> StoreWriteError | None:
        original = getattr(error, "orig", error)
        state = getattr(original, "sqlstate", None)
        if state is None:
            if isinstance(error, sa_exc.OperationalError):
                return StoreWriteError(
                    f"store {self.location}: the connection failed during the write "
                    f"({_first_line(original)}); nothing of this run was written: "
                    "store it again when the server is back",
                    reason="gone",
                )
            return None
        if state == "55P03":  # lock_not_available
            return StoreWriteError(
                f"store {self.location} stayed locked by another writer for more than "
                f"{self.lock_timeout:g} s; nothing was written: wait for it to finish, "
                "then store the run again",
                reason="locked",
            )
        if state.startswith("53"):  # insufficient resources: disk full, out of memory
            return StoreWriteError(
                f"store {self.location}: the server is out of resources "
                f"({_first_line(original)}); nothing of this run was written and the "
                "earlier runs are intact: free space on the server, then store the run again",
                reason="full",
            )
        if state in ("25006", "42501"):  # read-only transaction, insufficient privilege
            return StoreWriteError(
                f"store {self.location} cannot be written by this role "
                f"({_first_line(original)}); nothing was written",
                reason="readonly",
            )
        if state.startswith("08") or state.startswith("57"):  # connection, shutdown
            return StoreWriteError(
                f"store {self.location}: the server went away during the write "
                f"({_first_line(original)}); nothing of this run was written: "
                "store it again when the server is back",
                reason="gone",
            )
        return None


# ---- the store -----------------------------------------------------------------
class Store:
    """An open ctxbench store. Use ``Store.open``."""

    def __init__(self, dialect: _Dialect, engine: sa.Engine, connection: sa.Connection):
        self._dialect = dialect
        self._engine = engine
        self._conn = connection

    @property
    def location(self) -> str:
        """Where the store is, for messages (a path, or a URL without its password)."""
        return self._dialect.location

    @property
    def path(self) -> Path | None:
        """The SQLite file; None for a PostgreSQL store."""
        return getattr(self._dialect, "path", None)

    @property
    def dialect(self) -> str:
        return self._dialect.name

    @property
    def readonly(self) -> bool:
        return self._dialect.readonly

    @property
    def spool_dir(self) -> Path:
        """Where records of a run wait until it is stored (beside an SQLite file)."""
        return self._dialect.spool_dir()

    def __str__(self) -> str:
        return self.location

    # ---- opening -----------------------------------------------------------
    @classmethod
    def open(
        cls,
        target: Path | str | None = None,
        create: bool = True,
        lock_timeout: float | None = None,
    ) -> Store:
        """Open (and migrate) the store at ``target``: a file path or a postgresql:// URL.

        ``create=False`` is for commands that only read: nothing is created,
        and a store this process cannot write is opened read-only.
        """
        if lock_timeout is None:
            lock_timeout = LOCK_TIMEOUT_S
        explicit = target is not None
        text = str(target) if target is not None else default_target()
        if is_url(text):
            dialect: _Dialect = _PostgreSQL(text, lock_timeout)
        else:
            dialect = _SQLite(Path(text), lock_timeout, create=create, explicit=explicit)
        try:
            engine = dialect.engine()
        except ImportError as error:
            raise StoreError(f"cannot open store {dialect.location}: {error}") from None
        try:
            connection = engine.connect()
        except sa_exc.DBAPIError as error:
            engine.dispose()
            raise StoreError(
                f"cannot open store {dialect.location}: {_first_line(error.orig)}; "
                f"check the --db {'URL' if dialect.name == 'postgresql' else 'path'}"
            ) from None
        if isinstance(dialect, _SQLite):
            dialect.opened()
        store = cls(dialect, engine, connection)
        try:
            store._prepare()
        except sa_exc.DBAPIError as error:
            store.close()
            if isinstance(dialect, _SQLite) and isinstance(error.orig, sqlite3.DatabaseError):
                raise StoreError(
                    f"{dialect.location} is damaged or not a database "
                    f"({_first_line(error.orig)}); it was left untouched: "
                    "move it aside or choose another --db"
                ) from None
            raise StoreError(
                f"cannot use store {dialect.location}: {_first_line(error.orig)}"
            ) from None
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prepare(self) -> None:
        with self._read() as conn:
            version, app_id, tables = self._identity(conn)
        self._refuse_foreign(app_id, tables)
        if version > LATEST_VERSION:
            raise StoreError(
                f"{self.location} has store schema {version}, newer than this ctxbench knows "
                f"({LATEST_VERSION}); upgrade ctxbench to read it"
            )
        if app_id == APPLICATION_ID:
            with self._read() as conn:
                problem = self._dialect.damage(conn)
            if problem is not None:
                raise StoreError(
                    f"{self.location} is damaged ({problem}); it was left untouched: "
                    "move it aside or choose another --db"
                )
        if version < LATEST_VERSION:
            if self.readonly:
                raise StoreError(
                    f"{self.location} has store schema {version} and is read-only here, so it "
                    f"cannot be brought up to schema {LATEST_VERSION}: open it once where it "
                    "can be written"
                )
            self.migrate(LATEST_VERSION)

    def _identity(self, conn: sa.Connection) -> tuple[int, int, list[str]]:
        """(schema version, application id, tables), read in one transaction:
        read statement by statement, another process could create the store in
        between (tables already, no mark yet) and a fresh store look foreign."""
        version, app_id = self._dialect.identity(conn)
        tables = sa.inspect(conn).get_table_names()
        return version, app_id, tables

    def _refuse_foreign(self, app_id: int, tables: list[str]) -> None:
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            kind = "an SQLite" if self.dialect == "sqlite" else "a PostgreSQL"
            raise StoreError(
                f"{self.location} is {kind} database but not a ctxbench store; "
                "it was left untouched: choose another --db"
            )

    def migrate(self, target: int) -> None:
        """Bring the store up to schema ``target`` in one transaction."""
        with self._write() as conn:
            # Read again inside the write lock: another process may have
            # created or migrated the store since we looked.
            version, app_id, tables = self._identity(conn)
            self._refuse_foreign(app_id, tables)
            if version >= target:
                return
            for step, script in MIGRATIONS:
                if version < step <= target:
                    for statement in _statements(script):
                        conn.exec_driver_sql(statement)
                    version = step
            self._dialect.mark(conn, version)

    def schema_version(self) -> int:
        with self._read() as conn:
            return self._dialect.identity(conn)[0]

    def table_columns(self) -> dict[str, list[str]]:
        """The columns of ctxbench's tables as the database has them."""
        with self._read() as conn:
            inspector = sa.inspect(conn)
            return {
                name: [column["name"] for column in inspector.get_columns(name)]
                for name in (RUNS.name, RESULTS.name)
            }

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        with self._conn.begin():
            self._dialect.begin_read(self._conn)
            yield self._conn

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """One write transaction under the write lock; a failure the user can
        act on (full disk, lock timeout, store gone) becomes StoreWriteError."""
        if self.readonly:
            raise StoreWriteError(
                f"store {self.location} is read-only here; nothing was written: "
                f"make it writable or {self._dialect.hint}",
                reason="readonly",
            )
        self._dialect.check_still_there()
        self._conn.info["write"] = True
        try:
            with self._conn.begin():
                self._conn.info["write"] = False
                self._dialect.lock_for_write(self._conn)
                yield self._conn
        except sa_exc.DBAPIError as error:
            failure = self._dialect.write_failure(error)
            if failure is not None:
                raise failure from None
            raise
        finally:
            self._conn.info["write"] = False

    # ---- writing -----------------------------------------------------------
    def add_run(self, run: RunRecords, origin: str, label: str | None = None) -> str:
        """Store one run (env, results, run_end) in one transaction."""
        env, end = run.env, run.end
        interrupted = end is None or bool(end.get("interrupted"))
        producer = env.get("producer", {})
        result_rows = [
            {
                "run_id": run.run_id,
                "seq": seq,
                "probe": result["probe"],
                "family": result["family"],
                "params": params_key(result["params"]),
                "unit": result["unit"],
                "status": result["verdict"]["status"],
                "median": (result.get("summary") or {}).get("median"),
                "record": json.dumps(result),
            }
            for seq, result in enumerate(run.results)
        ]
        with self._write() as conn:
            exists = conn.execute(sa.select(RUNS.c.run_id).where(RUNS.c.run_id == run.run_id))
            if exists.first() is not None:
                raise BadInput(
                    f"run {run.run_id} is already in {self.location}; nothing was stored "
                    "(see `ctxbench show " + run.run_id + "`)"
                )
            stored_seq = conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(RUNS.c.stored_seq), 0) + 1)
            ).scalar_one()
            conn.execute(
                RUNS.insert().values(
                    run_id=run.run_id,
                    started_at=env.get("started_at"),
                    finished_at=end.get("finished_at") if end else None,
                    hostname=env.get("hostname"),
                    arch=env.get("arch"),
                    producer=f"{producer.get('name', '?')} {producer.get('version', '?')}",
                    origin=origin,
                    complete=int(end is not None),
                    interrupted=int(interrupted),
                    stored_at=_now(),
                    env=json.dumps(env),
                    run_end=json.dumps(end) if end else None,
                    label=label,
                    stored_seq=stored_seq,
                )
            )
            if result_rows:
                conn.execute(RESULTS.insert(), result_rows)
        return run.run_id

    # ---- reading -----------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """All runs, oldest stored first."""
        with self._read() as conn:
            rows = conn.execute(sa.select(*_INFO_COLUMNS).order_by(RUNS.c.stored_seq)).all()
            counts: dict[str, dict[str, int]] = {}
            grouped = sa.select(RESULTS.c.run_id, RESULTS.c.status, sa.func.count()).group_by(
                RESULTS.c.run_id, RESULTS.c.status
            )
            for run_id, status, count in conn.execute(grouped):
                counts.setdefault(run_id, {})[status] = count
        return [_run_info(tuple(row), counts.get(row[0], {})) for row in rows]

    def result_count(self) -> int:
        with self._read() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(RESULTS)).scalar_one()

    def resolve(self, reference: str) -> str:
        """A full run id from a full id, a unique prefix, ``latest``, or a label
        (the latest run with that label)."""
        with self._read() as conn:
            return self._resolve(conn, reference)

    def _resolve(self, conn: sa.Connection, reference: str) -> str:
        if reference == "latest":
            row = conn.execute(
                sa.select(RUNS.c.run_id).order_by(RUNS.c.stored_seq.desc()).limit(1)
            ).first()
            if row is None:
                raise BadInput(
                    f"no runs in {self.location} yet; `ctxbench run` or `ctxbench import` one first"
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
                f"no run '{reference}' in {self.location}; see `ctxbench history` for the run ids"
            )
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise BadInput(
                f"run id prefix '{reference}' is ambiguous ({shown}); give more characters"
            )
        return matches[0]

    def load(self, reference: str) -> StoredRun:
        with self._read() as conn:
            run_id = self._resolve(conn, reference)
            row = conn.execute(
                sa.select(*_INFO_COLUMNS, RUNS.c.env, RUNS.c.run_end).where(RUNS.c.run_id == run_id)
            ).one()
            texts = conn.execute(
                sa.select(RESULTS.c.record)
                .where(RESULTS.c.run_id == run_id)
                .order_by(RESULTS.c.seq)
            ).scalars()
            results = [json.loads(text) for text in texts]
        env = json.loads(row[9])
        end = json.loads(row[10]) if row[10] else None
        records = group_run([env, *results, *([end] if end else [])], origin=self.location)
        counts: dict[str, int] = {}
        for result in results:
            status = result["verdict"]["status"]
            counts[status] = counts.get(status, 0) + 1
        return StoredRun(info=_run_info(tuple(row[:9]), counts), records=records)


def _run_info(row: tuple[Any, ...], counts: dict[str, int]) -> RunInfo:
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
    )


def _check_path(path: Path, create: bool, explicit: bool) -> bool:
    """Refuse paths we cannot use, before SQLite makes up an error of its own.

    Returns True when the store must be opened read-only (it exists, can be
    read but not written, and the caller only reads)."""
    hint = "choose another --db (or CTXBENCH_DB)"
    if path.is_dir():
        raise StoreError(f"store path {path} is a directory; {hint}, a file path")
    if path.exists():
        if not os.access(path, os.R_OK):
            raise StoreError(f"cannot read store {path} (permission denied); {hint}")
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
        if not os.access(path, os.W_OK):
            if create:
                raise StoreError(
                    f"cannot write store {path} (read-only file or file system); {hint}"
                )
            return True
        return False
    if not create:
        raise StoreError(f"no store at {path}; `ctxbench run` or `ctxbench import` creates it")
    parent = path.parent
    if not explicit:
        parent.mkdir(parents=True, exist_ok=True)
    if not parent.is_dir():
        raise StoreError(f"cannot create store {path}: {parent} is not a directory; {hint}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create store {path}: {parent} is not writable; {hint}")
    return False


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def _first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _statements(script: str) -> list[str]:
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
