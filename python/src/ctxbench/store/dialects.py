"""What differs between an SQLite and a PostgreSQL store: one small class per dialect.

How a store is marked as ours with its schema version, how a writer takes
the write lock, how damage is checked and how a failed write is worded; the
queries and the migrations are shared (ctxbench.store, ctxbench.store_schema).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
import struct
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import platformdirs
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import NullPool

from ctxbench.errors import StoreError, StoreUnreachable, StoreWriteError
from ctxbench.store.schema import APPLICATION_ID, SQLITE_MAGIC

CONNECT_TIMEOUT_S = 15
POSTGRES_SCHEMES = ("postgresql", "postgres")


def default_target() -> str:
    """$CTXBENCH_DB (a path or a postgresql:// URL), else the user data directory's file."""
    env = os.environ.get("CTXBENCH_DB")
    if env:
        return env
    return str(Path(platformdirs.user_data_dir("ctxbench")) / "ctxbench.db")


def is_url(target: str) -> bool:
    scheme, sep, _ = target.partition("://")
    return bool(sep) and scheme.lower() in POSTGRES_SCHEMES


# ---- the dialect boundary ----------------------------------------------------
class Dialect:
    """What differs between SQLite and PostgreSQL; everything else is shared."""

    name = ""
    hint = "choose another --db (or CTXBENCH_DB)"

    def __init__(self, location: str, lock_timeout: float):
        self.location = location  # for messages: a path, or a URL without its password
        self.command_target = location  # for --db in a command printed for the user
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

    def unreachable(self, error: BaseException) -> StoreUnreachable | None:
        """A StoreUnreachable when ERROR says the server cannot be reached, else None."""
        return None


class SQLiteDialect(Dialect):
    """One file; marked with PRAGMA application_id, versioned with PRAGMA user_version."""

    name = "sqlite"

    def __init__(self, path: Path, lock_timeout: float, create: bool, explicit: bool):
        super().__init__(str(path), lock_timeout)
        self.path = resolve_link(path)  # a link is followed once, then its file is used
        self.readonly = check_path(self.path, create=create, explicit=explicit)
        # A command that only reads opens the store read-only: SQLite then
        # neither creates it nor writes it (a journal it finds is not replayed).
        self.reading = not create
        check_companions(self.path)
        if create and not self.path.exists():
            create_file(self.path)
        self._file_id: tuple[int, int] | None = None

    def for_writing(self) -> None:
        """A store a read command opened read-only, to be written (migrated):
        its neighbourhood is checked again before SQLite opens it to write."""
        check_companions(self.path)
        self.reading = False

    def engine(self) -> sa.Engine:
        mode = "ro" if self.readonly or self.reading else "rw"
        uri = f"file:{quote(str(self.path))}?mode={mode}"

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


class PostgreSQLDialect(Dialect):
    """A PostgreSQL database (libpq connection URI, so ~/.pgpass, PGPASSWORD and
    service files work as for psql). The mark and version live in a one-row
    table ``ctxbench_store``; writers serialize on a transaction-scoped
    advisory lock, bounded by ``lock_timeout``."""

    name = "postgresql"
    MARK_TABLE = "ctxbench_store"

    def __init__(self, url: str, lock_timeout: float):
        try:
            urlsplit(url).port  # noqa: B018 (parsing the port checks it)
        except ValueError as error:
            # The URL is not repeated: it may hold a password.
            raise StoreError(
                f"the --db URL (or CTXBENCH_DB) is not a valid URL ({error}); write it as "
                "postgresql://USER@HOST[:PORT]/DATABASE, an IPv6 host in brackets"
            ) from None
        super().__init__(without_password(url), lock_timeout)
        self.url = url
        self.command_target = without_password(url, mark="")

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

    def unreachable(self, error: BaseException) -> StoreUnreachable | None:
        original = getattr(error, "orig", error)
        state = getattr(original, "sqlstate", None)
        lost = state is None and isinstance(error, sa_exc.OperationalError)
        # 08: connection exception; 57: operator intervention (a shutdown).
        if not (lost or (state or "").startswith(("08", "57"))):
            return None
        return StoreUnreachable(
            f"store {self.location} cannot be reached ({first_line(original)}); "
            "check that its server is up and the --db URL"
        )

    def write_failure(self, error: BaseException) -> StoreWriteError | None:
        original = getattr(error, "orig", error)
        state = getattr(original, "sqlstate", None)
        if state is None:
            if isinstance(error, sa_exc.OperationalError):
                return StoreWriteError(
                    f"store {self.location} cannot be reached: the connection failed during "
                    f"the write ({first_line(original)}); nothing of this run was written: "
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
                f"({first_line(original)}); nothing of this run was written and the "
                "earlier runs are intact: free space on the server, then store the run again",
                reason="full",
            )
        if state in ("25006", "42501"):  # read-only transaction, insufficient privilege
            return StoreWriteError(
                f"store {self.location} cannot be written by this role "
                f"({first_line(original)}); nothing was written",
                reason="readonly",
            )
        if state.startswith("08") or state.startswith("57"):  # connection, shutdown
            return StoreWriteError(
                f"store {self.location} cannot be reached: the server went away during the write "
                f"({first_line(original)}); nothing of this run was written: "
                "store it again when the server is back",
                reason="gone",
            )
        return None


# The files SQLite keeps beside a database, and what each is.
COMPANIONS = {
    "-journal": "rollback journal",
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
}
HINT = "choose another --db (or CTXBENCH_DB)"
# SQLite's lock bytes (os_unix.c): a writer holds RESERVED while its
# journal is live; SHARED is taken by readers, in a range after PENDING.
PENDING_BYTE = 0x40000000
RESERVED_BYTE = PENDING_BYTE + 1


def resolve_link(path: Path) -> Path:
    """PATH, or the file a link at PATH names. A link is followed only where
    it is the user's own (or its directory owner's), and only to a file that
    exists: in a directory shared with other users, a planted link would
    otherwise send the store, and the files SQLite makes beside it, anywhere."""
    try:
        link = os.lstat(path)
    except OSError:
        return path
    if not stat.S_ISLNK(link.st_mode):
        return path
    try:
        parent_owner = os.stat(path.parent if str(path.parent) else ".").st_uid
    except OSError:
        parent_owner = -1
    if link.st_uid not in (os.geteuid(), parent_owner):
        raise StoreError(
            f"store path {path} is a link owned by another user (uid {link.st_uid}); "
            f"ctxbench will not follow it: remove it or {HINT}"
        )
    target = Path(os.path.realpath(path))
    if not target.exists():
        raise StoreError(
            f"store path {path} is a link to {target}, which does not exist; ctxbench "
            f"creates a store only where --db names a file, never through a link: {HINT}"
        )
    return target


def create_file(path: Path) -> None:
    """Makes the store's file new: never through a link, never over a file
    that appeared since it was checked (O_EXCL, O_NOFOLLOW)."""
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise StoreError(
            f"store path {path} appeared while ctxbench was opening it (another process?); "
            "nothing was written: run the command again"
        ) from None
    except OSError as error:
        raise StoreError(f"cannot create store {path}: {error.strerror}; {HINT}") from None
    os.close(fd)


def held_by_a_writer(path: Path) -> bool:
    """Whether another process holds SQLite's RESERVED lock on PATH (a write
    transaction is open: a journal beside the store is that writer's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, RESERVED_BYTE, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        return struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK
    except OSError:
        return False
    finally:
        os.close(fd)


def check_companions(path: Path) -> None:
    """Refuses a store with a file beside it that SQLite would use and this
    process did not expect: a link (it could point at any file), a file that
    is not regular or is another user's, a journal or write-ahead log with
    content while no writer holds the store's lock. SQLite would roll such a
    journal back into the store on its first read (a crafted one destroys
    it), so it is refused before SQLite opens the store, which is left as it is."""
    try:
        store_owner = os.stat(path).st_uid
    except OSError:
        store_owner = os.geteuid()
    for suffix, what in COMPANIONS.items():
        companion = path.with_name(path.name + suffix)
        try:
            info = os.lstat(companion)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(
                f"{companion} is a link where SQLite keeps the store's {what}; ctxbench "
                f"will not write through it: remove it (someone else's?) or {HINT}"
            )
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(
                f"{companion} is {_file_kind(info.st_mode)} where SQLite keeps the store's "
                f"{what}; the store was left untouched: remove it or {HINT}"
            )
        if info.st_uid not in (os.geteuid(), store_owner):
            raise StoreError(
                f"{companion} is owned by another user (uid {info.st_uid}) than the store's; "
                f"SQLite would take it for the store's {what}, so the store was left "
                f"untouched: remove it (someone else's?) or {HINT}"
            )
        if suffix != "-shm" and info.st_size > 0 and not held_by_a_writer(path):
            raise StoreError(
                f"{companion} holds a {what} while no writer has the store open; SQLite "
                "would replay it into the store, so the store was left untouched: if a "
                "write of yours was killed midway, `sqlite3 STORE 'PRAGMA integrity_check'` "
                f"replays it; otherwise remove it (planted?) or {HINT}"
            )


def check_path(path: Path, create: bool, explicit: bool) -> bool:
    """Refuse paths we cannot use, before SQLite makes up an error of its own.

    Returns True when the store must be opened read-only (it exists, can be
    read but not written, and the caller only reads)."""
    hint = "choose another --db (or CTXBENCH_DB)"
    try:
        mode = path.stat().st_mode  # a link to a store is followed, as SQLite does
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise StoreError(f"cannot use store path {path}: {error.strerror}; {hint}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise StoreError(f"store path {path} is a directory; {hint}, a file path")
    if mode is not None and not stat.S_ISREG(mode):
        # Never opened: a FIFO would block the read below for ever.
        raise StoreError(
            f"store path {path} is {_file_kind(mode)}, not a regular file; {hint}, a file path"
        )
    if mode is not None:
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
        if not head and not create:
            # A command that only reads never makes a store of an empty file.
            raise StoreError(
                f"{path} is an empty file, not a ctxbench store; it was left untouched: "
                "`ctxbench run` or `ctxbench import` makes a store there"
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


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((kind for test, kind in kinds if test(mode)), "a special file")


def without_password(url: str, mark: str = ":***") -> str:
    """URL with its password replaced by MARK (for messages); mark="": a URL
    a command can be given (libpq then takes the password from PGPASSWORD or
    ~/.pgpass)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}{mark}@{netloc[1]}"))


def first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
