"""Throwaway servers for tests: a PostgreSQL cluster and an OpenSSH daemon.

Each lives in a temporary directory of its own, listens where nothing else
does (a unix socket; 127.0.0.1 on a free high port) and is stopped, and its
directory removed, when the test session ends. No system service is touched.
Where the server binary is absent the caller skips, saying which binary and
which Debian package provides it (``scripts/deps.sh servers``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# PostgreSQL refuses to run as root; as root the cluster runs as this user.
POSTGRES_RUN_AS = "nobody"


def postgres_bindir() -> Path | None:
    """The newest Debian PostgreSQL server's bin directory, or $PG_BINDIR."""
    override = os.environ.get("PG_BINDIR")
    if override:
        return Path(override) if (Path(override) / "initdb").is_file() else None
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parent.parent.name.split(".")[0]),
    )
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresServer:
    """A PostgreSQL cluster in a temp dir, reachable only over a unix socket."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="ctxbench-pg-"))
        self.data = self.dir / "data"
        self.socket_dir = self.dir
        self.port = 5432  # names the socket file only: no TCP listener
        self.user = "ctxbench"
        self._as: dict[str, object] = {}
        if os.geteuid() == 0:
            entry = pwd.getpwnam(POSTGRES_RUN_AS)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
            self._as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        self._databases = 0

    def _run(self, *argv: str) -> None:
        subprocess.run(argv, check=True, capture_output=True, text=True, cwd=self.dir, **self._as)  # type: ignore[call-overload]

    def start(self) -> None:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' "
            f"-p {self.port} -c fsync=off"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.dir / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def execute(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as connection:
            connection.execute(sql)

    def new_database(self) -> str:
        """A URL of a fresh, empty database."""
        self._databases += 1
        name = f"t{self._databases:04d}"
        self.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False
