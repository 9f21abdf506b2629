"""Runs the engine on other machines over SSH (``ctxbench run --host DEST``).

The system OpenSSH client does the connecting, so whatever ``ssh DEST``
understands works here too: ``~/.ssh/config`` aliases, ports, users, jump
hosts, agents and keys, and host keys are checked exactly as ``ssh`` checks
them. ctxbench runs ssh with ``BatchMode=yes``: it never asks for a password
or whether to trust a new host key; an unknown or changed key is refused and
the message says how to accept it.

For each host, one after the other over the same SSH setup:

1. ``uname -m`` and a private temporary directory (``mktemp -d``, mode 0700).
2. The static engine of that arch (and its helpers) is copied into it as
   a tar stream (``make engines`` builds them; see ``engine_for``).
3. The engine runs there under a small POSIX sh wrapper; its records stream
   back over ssh's stdout as they are produced, its progress over stderr,
   exactly as for a local run. The wrapper watches its stdin: when ctxbench
   closes it (Ctrl-C) or the connection drops, the engine gets SIGINT and
   stops after the record it is writing. Whatever way the engine ends, the
   wrapper removes the directory.
4. A last ``rm -rf`` of the directory, for the case where the wrapper never ran.

This module moves data only; what goes on screen is the CLI's business.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import re
import shlex
import subprocess
import tarfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ctxbench.acquire.runner import ENGINE_NAME, EngineRun, RunOptions
from ctxbench.errors import CtxbenchError, EngineError

CONNECT_TIMEOUT_S = 15
STEP_TIMEOUT_S = 120
REMOTE_DIR_PREFIX = "ctxbench."
# The static helpers the engine runs from its own directory (create.* probes).
HELPERS = ("ctxbench-exit0", "ctxbench-forkloop")

# The wrapper around the remote engine: $1 is the private directory, the rest
# the engine's arguments. fd 3 keeps ssh's stdin for the watcher (an
# asynchronous command's stdin is /dev/null otherwise).
REMOTE_WRAPPER = r"""
d=$1; shift
exec 3<&0
"$d/ctxbench-engine" "$@" < /dev/null &
p=$!
( while read -r _ <&3; do :; done; kill -INT "$p" 2> /dev/null ) &
w=$!
exec 3<&-
wait "$p"; rc=$?
kill "$w" 2> /dev/null
rm -rf "$d"
exit "$rc"
"""


class HostError(CtxbenchError):
    """One host could not be used; the message names it and the cause."""

    exit_code = 1

    def __init__(self, host: str, message: str):
        super().__init__(f"host {host}: {message}")
        self.host = host


def destination_problem(destination: str) -> str | None:
    """Why ssh would misread DESTINATION (``--host``), or None: empty, a
    leading '-' (an option to ssh), blanks or control characters, an empty
    user or host around '@' (``@``, ``user@``, ``@host``, ``ssh://@h``)."""
    text = destination.removeprefix("ssh://").rstrip("/")
    if not destination.strip():
        return "is empty; give a host as ssh takes it (HOST, USER@HOST or an ~/.ssh/config alias)"
    if destination.startswith("-"):
        return "starts with '-', which ssh would read as an option; give a host name"
    if any(character.isspace() or not character.isprintable() for character in destination):
        return "holds a blank or a control character; give a host name"
    user, at, host = text.rpartition("@")
    if at and not user:
        return "has '@' with no user before it; give USER@HOST, or HOST alone"
    if destination.startswith("ssh://"):
        host = host.split(":")[0]  # ssh://[USER@]HOST[:PORT]
    if not host:
        return "has no host after '@'; give USER@HOST, or HOST alone"
    return None


@dataclass(frozen=True)
class SSH:
    """How to run ssh: the system client, an optional ``-F`` config file."""

    config: Path | None = None
    executable: str = "ssh"

    def argv(self, host: str, remote_command: str) -> list[str]:
        argv = [self.executable]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        argv += [
            "-o",
            "BatchMode=yes",  # never a password or host-key question
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT_S}",
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=3",
            "-T",
            "--",
            host,
            remote_command,
        ]
        return argv


def ssh_failure(host: str, returncode: int, stderr: str) -> HostError:
    """One line naming the cause of a failed ssh, from what ssh printed."""
    text = stderr.strip()
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key for" in text:
        return HostError(
            host,
            "its host key has CHANGED since it was recorded in known_hosts (refused: "
            "this can be an attack); if the change is expected, remove the old key with "
            f"`ssh-keygen -R {host}` and accept the new one with `ssh {host}`",
        )
    if "Host key verification failed" in text or "No ED25519 host key is known" in text:
        return HostError(
            host,
            "its host key is not known (refused); check its fingerprint and accept it "
            f"once with `ssh {host}`, which records it in known_hosts",
        )
    if "Permission denied" in text and ("publickey" in text or "password" in text):
        return HostError(
            host,
            "login refused (no usable key; ctxbench never asks for passwords): "
            "load a key into ssh-agent or name one with IdentityFile in ~/.ssh/config",
        )
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("mktemp:"):
            return HostError(
                host,
                f"cannot create a private temporary directory there ({_strip_prefix(line)}); "
                "point TMPDIR on that host at a writable directory (or make /tmp writable)",
            )
    for line in lines:
        lowered = line.lower()
        if any(
            cause in lowered
            for cause in (
                "could not resolve",
                "connection refused",
                "timed out",
                "no route to host",
                "network is unreachable",
                "connection closed",
                "connection reset",
                "broken pipe",
            )
        ):
            return HostError(host, f"unreachable ({_strip_prefix(line)})")
    tail = _strip_prefix(lines[-1]) if lines else f"ssh exited with status {returncode}"
    return HostError(host, tail)


def _strip_prefix(line: str) -> str:
    return re.sub(r"^(ssh|mktemp|sh|cat|rm|chmod): ", "", line.strip())


def _ssh(ssh: SSH, host: str, remote_command: str, data: bytes = b"") -> str:
    """Run one command on the host (``data`` on its stdin); its stdout, or HostError."""
    try:
        done = subprocess.run(
            ssh.argv(host, remote_command),
            input=data,
            capture_output=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise HostError(
            host, f"the OpenSSH client ({ssh.executable}) is not installed; install openssh-client"
        ) from None
    except subprocess.TimeoutExpired:
        raise HostError(host, f"no answer in {STEP_TIMEOUT_S} s") from None
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        raise ssh_failure(host, done.returncode, stderr)
    return stdout


def engine_for(arch: str) -> Path:
    """The engine to copy to a host of ``arch`` (``uname -m``).

    Looked for in $CTXBENCH_ENGINES/<arch>/, the package (ctxbench/engines/<arch>/),
    a source checkout's ``make engines`` output (build/engines/<arch>/); for the
    local arch, the local engine is the last resort.
    """
    candidates: list[Path] = []
    override = os.environ.get("CTXBENCH_ENGINES")
    if override:
        candidates.append(Path(override) / arch / ENGINE_NAME)
    candidates.append(Path(str(resources.files("ctxbench").joinpath("engines", arch, ENGINE_NAME))))
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").exists():
            candidates.append(parent / "build" / "engines" / arch / ENGINE_NAME)
            break
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if arch == platform.machine():
        from ctxbench.acquire.runner import find_engine

        return find_engine()
    raise EngineError(
        f"no ctxbench-engine for {arch}: build the static engines with `make engines` "
        "(it needs the cross compiler of that arch) or set CTXBENCH_ENGINES to a "
        "directory holding <arch>/ctxbench-engine"
    )


def _engine_archive(engine: Path) -> bytes:
    """A tar of the engine and the helpers beside it (mode 0700, no owner names)."""
    files = [(engine, ENGINE_NAME)]
    files += [(engine.parent / name, name) for name in HELPERS if (engine.parent / name).is_file()]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, name in files:
            info = archive.gettarinfo(str(path), name)
            info.mode = 0o700
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with path.open("rb") as handle:
                archive.addfile(info, handle)
    return buffer.getvalue()


class RemoteEngineRun(EngineRun):
    """The engine on one host over ssh: records and progress as for a local run."""

    stdin = subprocess.PIPE

    def __init__(self, host: str, options: RunOptions, ssh: SSH):
        self.host = host
        self.ssh = ssh
        self.remote_dir: str | None = None
        self.arch: str | None = None
        self._copied: Path | None = None
        # The engine path is resolved in prepare(), once the remote arch is known.
        super().__init__(options, engine=Path(ENGINE_NAME))

    def prepare(self) -> None:
        """Find the arch, make the private directory, copy the engine there."""
        answer = _ssh(
            self.ssh,
            self.host,
            f'uname -m && mktemp -d "${{TMPDIR:-/tmp}}/{REMOTE_DIR_PREFIX}XXXXXXXX"',
        )
        lines = answer.split()
        if len(lines) != 2:
            raise HostError(self.host, f"unexpected answer to uname/mktemp: {answer.strip()!r}")
        self.arch, self.remote_dir = lines
        try:
            self.engine = engine_for(self.arch)
        except EngineError as error:
            raise HostError(self.host, str(error)) from None
        _ssh(
            self.ssh,
            self.host,
            f"tar -x -f - -C {shlex.quote(self.remote_dir)}",
            data=_engine_archive(self.engine),
        )

    def command(self) -> list[str]:
        assert self.remote_dir is not None, "prepare() first"
        remote = " ".join(
            shlex.quote(part)
            for part in [
                "sh",
                "-c",
                REMOTE_WRAPPER,
                "ctxbench",
                self.remote_dir,
                *self.options.engine_args(),
            ]
        )
        return self.ssh.argv(self.host, remote)

    def interrupt(self) -> None:
        """First call: close ssh's stdin, so the wrapper stops the engine (SIGINT)
        and its last records still arrive. Second call: kill ssh."""
        self.interrupts += 1
        process = self._process
        if process is None or process.poll() is not None:
            return
        if self.interrupts == 1 and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            return
        process.kill()

    def cleanup(self) -> None:
        """Remove the private directory (the wrapper normally has already)."""
        if self.remote_dir is None:
            return
        # Unreachable now: the wrapper removed it if it ran.
        with contextlib.suppress(HostError):
            _ssh(self.ssh, self.host, f"rm -rf {shlex.quote(self.remote_dir)}")

    def host_failure(self) -> HostError | None:
        """Why the remote run failed, one line naming the host; None if it did not."""
        if self.returncode in (0, None) or self.interrupted:
            return None
        stderr = "\n".join(self._stderr_tail)
        if self.returncode == 255:  # ssh's own failure: the connection went
            lines = [line for line in stderr.splitlines() if line.strip()]
            cause = _strip_prefix(lines[-1]).rstrip(".") if lines else "ssh exited with 255"
            return HostError(
                self.host,
                f"the connection was lost during the run ({cause})",
            )
        if self.returncode > 128:
            signal_number = self.returncode - 128
            return HostError(
                self.host,
                f"the engine was killed by signal {signal_number} during the run",
            )
        failure = self.failure()
        return HostError(self.host, str(failure)) if failure else None
