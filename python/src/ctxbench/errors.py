"""Errors the command line turns into one clear line and an exit status.

Every message names the problem and, where there is one, the fix. Modules
raise these; only the CLI prints them. The exit statuses they map to are
listed once, in docs/cli.md ("Exit statuses").
"""

import signal

# The exit statuses that are not an error's: stopped by Ctrl-C or SIGTERM (as
# the engine's own), and stdout closed under us (a shell's 128 + SIGPIPE).
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class CtxbenchError(Exception):
    """A failure that is not the user's fault to fix by retyping (exit 1)."""

    exit_code = 1


class BadInput(CtxbenchError):
    """Bad input on the command line: unknown run, probe, path... (exit 2)."""

    exit_code = 2


class RecordError(BadInput):
    """A record or a file of records that does not follow the schema."""


class StoreError(CtxbenchError):
    """The store cannot be used: corrupt, foreign, newer, unreadable."""

    exit_code = 2


class EngineError(CtxbenchError):
    """The engine could not be found, or failed."""


class OutputError(CtxbenchError):
    """An output (stdout, --json, --report, -o) could not be written (exit 3).

    What it would have held is safe: a measured run is stored before any
    side output is written, and the message says how to write it again.
    """

    exit_code = 3


class StoreUnreachable(StoreError):
    """The store's server cannot be reached: it is down, or went away while
    ctxbench used it. Not the user's input and not a bug (exit 1); a run's
    records wait in a spool, and the message says how to store them."""

    exit_code = 1


class StoreWriteError(StoreError):
    """The store could not take a write: disk full, write lock held past the
    timeout, store deleted or replaced, read-only. Nothing of the write was
    stored and earlier runs are intact; the caller still holds the records
    (exit 1). ``reason`` is one of full, locked, gone, readonly, io."""

    exit_code = 1

    def __init__(self, message: str, reason: str = "io"):
        super().__init__(message)
        self.reason = reason
