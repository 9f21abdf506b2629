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


def sshd_binary() -> Path | None:
    for candidate in (os.environ.get("SSHD"), "/usr/sbin/sshd", shutil.which("sshd")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


class SSHServer:
    """An OpenSSH daemon on 127.0.0.1 at a free high port, with a throwaway host
    key, a user key of its own, and a client config (``ssh -F``) naming aliases:

    * ``alpha``, ``beta``: two "hosts", both this sshd (the host key is known);
    * ``unknownkey``: this sshd under a name whose host key is not recorded;
    * ``changed``: this sshd under a name recorded with another host key;
    * ``unreachable``: a port where nothing listens;
    * ``notmp``: this sshd, with a temporary directory that cannot be written.

    The remote temp dir of every alias is ``remote_tmp`` (SetEnv TMPDIR), so
    tests can check that nothing is left there. With ``force_command`` every
    session runs that command instead (sshd's ForceCommand; the client's
    command is in $SSH_ORIGINAL_COMMAND), e.g. to enter another arch's root.
    """

    def __init__(self, sshd: Path, force_command: str | None = None):
        self.sshd = sshd
        self.force_command = force_command
        self.dir = Path(tempfile.mkdtemp(prefix="ctxbench-sshd-"))
        self.dir.chmod(0o755)
        self.port = free_port()
        self.remote_tmp = self.dir / "remote-tmp"
        self.remote_tmp.mkdir()
        self.config = self.dir / "ssh_config"
        self._process: subprocess.Popen[str] | None = None

    def _keygen(self, name: str) -> Path:
        key = self.dir / name
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
            check=True,
            capture_output=True,
        )
        return key

    def start(self) -> None:
        user = pwd.getpwuid(os.geteuid()).pw_name
        host_key = self._keygen("host_key")
        other_key = self._keygen("other_host_key")
        user_key = self._keygen("user_key")
        shutil.copy(f"{user_key}.pub", self.dir / "authorized_keys")
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privsep dir
        (self.dir / "sshd_config").write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {host_key}\n"
            f"PidFile {self.dir / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "PermitRootLogin prohibit-password\n"
            "AcceptEnv TMPDIR\n"
            f"AllowUsers {user}\n"
            "LogLevel ERROR\n"
            + (f"ForceCommand {self.force_command}\n" if self.force_command else "")
        )
        public = lambda key: Path(f"{key}.pub").read_text().split()[:2]  # noqa: E731
        (self.dir / "known_hosts").write_text(
            f"ctxbench-test-sshd {' '.join(public(host_key))}\n"
            f"ctxbench-changed {' '.join(public(other_key))}\n"
        )
        not_writable = "/sys" if os.geteuid() == 0 else str(self.dir / "read-only-tmp")
        if os.geteuid() != 0:
            Path(not_writable).mkdir(mode=0o555)
        aliases = [
            ("alpha beta", self.port, "ctxbench-test-sshd", self.remote_tmp),
            ("unknownkey", self.port, "ctxbench-unknown", self.remote_tmp),
            ("changed", self.port, "ctxbench-changed", self.remote_tmp),
            ("unreachable", free_port(), "ctxbench-test-sshd", self.remote_tmp),
            ("notmp", self.port, "ctxbench-test-sshd", not_writable),
        ]
        blocks = [
            f"Host {names}\n  HostName 127.0.0.1\n  Port {port}\n  HostKeyAlias {alias}\n"
            f"  SetEnv TMPDIR={tmp}\n"
            for names, port, alias, tmp in aliases
        ]
        blocks.append(
            "Host *\n"
            f"  User {user}\n"
            f"  IdentityFile {user_key}\n"
            "  IdentitiesOnly yes\n"
            "  IdentityAgent none\n"
            f"  UserKnownHostsFile {self.dir / 'known_hosts'}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  UpdateHostKeys no\n"
            "  LogLevel ERROR\n"
        )
        self.config.write_text("\n".join(blocks))
        self._process = subprocess.Popen(
            [str(self.sshd), "-D", "-e", "-f", str(self.dir / "sshd_config")],
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "sshd.log", "w"),  # noqa: SIM115
            text=True,
        )
        if not wait_for_port(self.port):
            self.stop()
            raise RuntimeError(f"sshd did not listen on port {self.port}")

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
