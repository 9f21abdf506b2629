"""Errors the command line turns into one clear line and an exit status.

Every message names the problem and, where there is one, the fix. Modules
raise these; only the CLI prints them.
"""


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


class StoreWriteError(StoreError):
    """The store could not take a write: disk full, write lock held past the
    timeout, store deleted or replaced, read-only. Nothing of the write was
    stored and earlier runs are intact; the caller still holds the records
    (exit 1). ``reason`` is one of full, locked, gone, readonly, io."""

    exit_code = 1

    def __init__(self, message: str, reason: str = "io"):
        super().__init__(message)
        self.reason = reason
