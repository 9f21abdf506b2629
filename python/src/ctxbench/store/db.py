"""The history of runs: one store module over SQLAlchemy Core, for SQLite and PostgreSQL.

* The default store is one SQLite file; ``postgresql://...`` (``--db`` or
  ``CTXBENCH_DB``) names a PostgreSQL database a team shares. Both get the
  same tables, the same ``MIGRATIONS`` (portable SQL) and the same queries;
  what differs between the two lives in one small class per dialect
  (ctxbench.store_dialects): how a store is marked as ours with its
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

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from ctxbench.errors import BadInput, StoreError, StoreUnreachable, StoreWriteError
from ctxbench.records.naming import params_key
from ctxbench.records.profile import Profile, profile_of
from ctxbench.records.runs import RunInfo, RunRecords, StoredRun, group_run
from ctxbench.store.dialects import (
    Dialect,
    PostgreSQLDialect,
    SQLiteDialect,
    default_target,
    first_line,
    is_url,
)
from ctxbench.store.references import resolve_reference
from ctxbench.store.schema import (
    APPLICATION_ID,
    INFO_COLUMNS,
    LATEST_VERSION,
    MEASURED_ORDER,
    MIGRATIONS,
    PROFILES,
    RESULTS,
    RUNS,
    migration_statements,
    run_info,
)

LOCK_TIMEOUT_S = 60.0


# ---- the store -----------------------------------------------------------------
class Store:
    """An open ctxbench store. Use ``Store.open``."""

    def __init__(self, dialect: Dialect, engine: sa.Engine, connection: sa.Connection):
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
    def command_target(self) -> str:
        """The store as --db in a command printed for the user: the path, or
        the URL without its password (never printed), which libpq completes
        from PGPASSWORD or ~/.pgpass."""
        return self._dialect.command_target

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
            dialect: Dialect = PostgreSQLDialect(text, lock_timeout)
        else:
            dialect = SQLiteDialect(Path(text), lock_timeout, create=create, explicit=explicit)
        try:
            engine = dialect.engine()
        except ImportError as error:
            raise StoreError(f"cannot open store {dialect.location}: {error}") from None
        try:
            connection = engine.connect()
        except sa_exc.DBAPIError as error:
            engine.dispose()
            if dialect.unreachable(error) is not None:
                raise StoreUnreachable(
                    f"cannot open store {dialect.location}: its server cannot be reached "
                    f"({first_line(error.orig)}); check that it is up and the --db URL"
                ) from None
            raise StoreError(
                f"cannot open store {dialect.location}: {first_line(error.orig)}; "
                f"check the --db {'URL' if dialect.name == 'postgresql' else 'path'}"
            ) from None
        if isinstance(dialect, SQLiteDialect):
            dialect.opened()
        store = cls(dialect, engine, connection)
        try:
            store._prepare()
        except sa_exc.DBAPIError as error:
            store.close()
            if isinstance(dialect, SQLiteDialect) and isinstance(error.orig, sqlite3.DatabaseError):
                raise StoreError(
                    f"{dialect.location} is damaged or not a database "
                    f"({first_line(error.orig)}); it was left untouched: "
                    "move it aside or choose another --db"
                ) from None
            raise StoreError(
                f"cannot use store {dialect.location}: {first_line(error.orig)}"
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
            self._reopen_for_writing()
            self.migrate(LATEST_VERSION)

    def _reopen_for_writing(self) -> None:
        """A store a command that only reads opened read-only, and that must
        be brought up to this schema: opened again to write, once its
        neighbourhood is checked again."""
        if not getattr(self._dialect, "reading", False):
            return
        self._dialect.for_writing()  # type: ignore[attr-defined]
        self.close()
        self._engine = self._dialect.engine()
        self._conn = self._engine.connect()

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
                    for statement in migration_statements(script):
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
        try:
            with self._conn.begin():
                self._dialect.begin_read(self._conn)
                yield self._conn
        except sa_exc.DBAPIError as error:
            unreachable = self._dialect.unreachable(error)
            if unreachable is not None:
                raise unreachable from None
            raise

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
            # An invalidated connection (the server went away) would try to
            # connect again to reach its info, and fail over the error above.
            if not self._conn.invalidated:
                self._conn.info["write"] = False

    # ---- writing -----------------------------------------------------------
    def add_run(self, run: RunRecords, origin: str, label: str | None = None) -> str:
        """Store one run (env, results, run_end) in one transaction. A run
        already stored is refused, unless what is stored is a copy of it cut
        short (a spool imported while its run went on): the whole run replaces it."""
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
            if self._cut_copy(conn, run, result_rows):
                # A copy of this run cut short (its spool, imported while it
                # ran) is replaced by the run itself.
                conn.execute(RESULTS.delete().where(RESULTS.c.run_id == run.run_id))
                conn.execute(RUNS.delete().where(RUNS.c.run_id == run.run_id))
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

    def _cut_copy(self, conn: sa.Connection, run: RunRecords, rows: list[dict[str, Any]]) -> bool:
        """False when RUN is not in the store; True when the store holds a
        copy of it cut short: no run_end, the same env record, and its results
        the first of RUN's, fewer or without the end RUN has. Otherwise the
        run is refused (BadInput): a stored run is never overwritten."""
        row = conn.execute(
            sa.select(RUNS.c.complete, RUNS.c.env).where(RUNS.c.run_id == run.run_id)
        ).first()
        if row is None:
            return False
        stored = list(
            conn.execute(
                sa.select(RESULTS.c.record)
                .where(RESULTS.c.run_id == run.run_id)
                .order_by(RESULTS.c.seq)
            ).scalars()
        )
        longer = len(rows) > len(stored) or (run.end is not None and len(rows) == len(stored))
        if (
            not row.complete
            and json.loads(row.env) == run.env
            and longer
            and stored == [r["record"] for r in rows[: len(stored)]]
        ):
            return True
        raise BadInput(
            f"run {run.run_id} is already in {self.location}; nothing was stored "
            "(see `ctxbench show " + run.run_id + "`)"
        )

    # ---- reading -----------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """All runs in the order they were measured (an imported run sits where its
        measurement falls, not where it was stored)."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(*INFO_COLUMNS, RUNS.c.env).order_by(*MEASURED_ORDER)
            ).all()
            counts: dict[str, dict[str, int]] = {}
            grouped = sa.select(RESULTS.c.run_id, RESULTS.c.status, sa.func.count()).group_by(
                RESULTS.c.run_id, RESULTS.c.status
            )
            for run_id, status, count in conn.execute(grouped):
                counts.setdefault(run_id, {})[status] = count
        return [
            run_info(tuple(row[:9]), counts.get(row[0], {}), json.loads(row[9])) for row in rows
        ]

    def result_count(self) -> int:
        with self._read() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(RESULTS)).scalar_one()

    def resolve(self, reference: str) -> str:
        """A full run id from a full id, a unique prefix, ``latest``, or a label
        (the latest run with that label)."""
        with self._read() as conn:
            return resolve_reference(conn, reference, self.location)

    def load(self, reference: str) -> StoredRun:
        with self._read() as conn:
            run_id = resolve_reference(conn, reference, self.location)
            row = conn.execute(
                sa.select(*INFO_COLUMNS, RUNS.c.env, RUNS.c.run_end).where(RUNS.c.run_id == run_id)
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
        return StoredRun(info=run_info(tuple(row[:9]), counts, env), records=records)

    # ---- profiles (ctxbench profile) ---------------------------------------
    def add_profile(self, profile: Profile) -> str:
        """Stores a profile (its record, already validated); its id."""
        target = profile.target
        shown = " ".join(target.command) if target.command else f"PID {target.pid}"
        with self._write() as conn:
            conn.execute(
                sa.insert(PROFILES).values(
                    profile_id=profile.run_id,
                    started_at=profile.started_at,
                    hostname=profile.env.hostname,
                    target=shown,
                    stored_at=_now(),
                    record=json.dumps(profile.raw, allow_nan=False),
                )
            )
        return profile.run_id

    def profiles(self) -> list[tuple[str, str | None, str]]:
        """(id, started_at, target) of every stored profile, oldest first."""
        with self._read() as conn:
            rows = conn.execute(
                sa.select(PROFILES.c.profile_id, PROFILES.c.started_at, PROFILES.c.target).order_by(
                    PROFILES.c.started_at, PROFILES.c.profile_id
                )
            ).all()
        return [tuple(row) for row in rows]

    def profile_id(self, reference: str) -> str | None:
        """The stored profile an id or unique id prefix names ('latest' is a
        run's word here), None when none or several do."""
        ids = [row[0] for row in self.profiles()]
        chosen = [i for i in ids if i == reference] or [i for i in ids if i.startswith(reference)]
        return chosen[0] if len(chosen) == 1 and reference != "latest" else None

    def load_profile(self, reference: str) -> Profile:
        """A stored profile by id, unique id prefix, or 'latest'."""
        ids = [row[0] for row in self.profiles()]
        if reference == "latest" and ids:
            chosen = [ids[-1]]
        else:
            chosen = [i for i in ids if i == reference] or [
                i for i in ids if i.startswith(reference)
            ]
        if len(chosen) != 1:
            what = "no stored profile" if not chosen else f"{len(chosen)} stored profiles"
            raise BadInput(f"{what} matches '{reference}'; `ctxbench profile --list` lists them")
        with self._read() as conn:
            text = conn.execute(
                sa.select(PROFILES.c.record).where(PROFILES.c.profile_id == chosen[0])
            ).scalar_one()
        return profile_of(json.loads(text))


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
