"""The terminal side of every command: consoles, status lines, the one-line error.

stdout carries data (tables, JSON, CSV); progress and diagnostics go to
stderr. Every error is one line, ``ctxbench: error: ...``, naming the
problem and the fix, never a traceback; usage errors exit 2, failures 1, an
output that could not be written 3, a run stopped by a signal 128+n (after
storing what finished), a closed stdout pipe 141. Text that came from records
or the user is stripped of control characters before it reaches a terminal.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sqlite3
import sys
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

import click

from ctxbench import units
from ctxbench.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, CtxbenchError, OutputError

if TYPE_CHECKING:
    from rich.console import Console


# ---- consoles ---------------------------------------------------------------
@cache
def _terminal_console() -> type:
    """The console class, built on first use: rich is imported only by the
    commands that print through it (``ctxbench --version`` does not)."""
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

    class _TerminalConsole(Console):
        """A rich console that strips control characters from every piece of text
        it shows (labels, host names, probe names, reasons: anything a record or
        a user may have filled), while keeping rich's own styling."""

        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterator[Segment]:
            for segment in super().render(renderable, options):
                if segment.control is None and segment.text:
                    yield Segment(units.terminal_text(segment.text), segment.style)
                else:
                    yield segment

        def on_broken_pipe(self) -> None:
            # rich would exit 1 here; ctxbench's handling says 141 (and, in
            # `run`, stores the run first).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return _TerminalConsole


class QuietStream(io.TextIOBase):
    """stderr for status and progress: a failure to write it (a full disk, a
    closed pipe) loses those lines, never the run being measured or stored."""

    def __init__(self, stream: Any):
        self.stream = stream

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")


def new_console(stderr: bool = False) -> Console:
    stream = QuietStream(sys.stderr) if stderr else sys.stdout
    width = None
    if not stream.isatty():
        # Piped or captured: do not squeeze tables into 80 columns.
        width = int(os.environ.get("COLUMNS", "200"))
    return _terminal_console()(
        file=stream,
        width=width,
        highlight=False,
        # stderr to a log or a pipe: each progress or status line whole, as a
        # log parser reads it, never cut at COLUMNS (tables still fit width).
        soft_wrap=stderr and not stream.isatty(),
        color_system="auto" if units.styled(stream) else None,  # None: no escape codes at all
    )


def say(message: str) -> None:
    """A status line on stderr (never on stdout, which carries data)."""
    click.echo(units.terminal_text(message), file=QuietStream(sys.stderr))


# ---- errors: one line each --------------------------------------------------
class CtxbenchGroup(click.Group):
    """A group whose errors are one line: 'ctxbench: error: ...'."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(
                args=args,
                prog_name=prog_name or "ctxbench",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            code = code if isinstance(code, int) else 0
        except click.exceptions.NoArgsIsHelpError as error:
            click.echo(error.ctx.get_help() if error.ctx else str(error), err=True)
            code = 2
        except click.ClickException as error:
            hint = ""
            if isinstance(error, click.UsageError) and error.ctx is not None:
                hint = f" (see '{error.ctx.command_path} --help')"
            error_line(error.format_message() + hint)
            code = error.exit_code
        except CtxbenchError as error:
            error_line(str(error))
            code = error.exit_code
        except click.Abort:
            error_line("aborted")
            code = EXIT_INTERRUPTED
        except _StreamFailed as failure:
            code = _output_failed(failure.error)
        except OSError as error:  # --help or --version, written before any command runs
            code = _output_failed(error)
        except sqlite3.Error as error:
            # The store module turns what it expects into StoreError; this is the rest.
            error_line(f"the store failed: {error}")
            code = 1
        except Exception as error:  # the last line of defence: never a traceback
            if os.environ.get("CTXBENCH_DEBUG"):
                raise
            error_line(
                f"unexpected {type(error).__name__}: {error} "
                "(a bug in ctxbench: CTXBENCH_DEBUG=1 shows where; please report it)"
            )
            code = 1
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: click.Context) -> Any:
        # OSError is caught here, before click's main, which would swallow a
        # broken pipe into its own exit status.
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a failure to write stdout is reported here, not at exit
        except OSError as error:
            raise _StreamFailed(error) from None
        return result


class _StreamFailed(Exception):
    """An OSError that no command handled: almost always stdout failing."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def _output_failed(error: OSError) -> int:
    """stdout (or a file without handling of its own) failed: one line, or
    none for a reader that went away (as `| head` expects); exit 3 or 141."""
    discard_stdout()
    if error.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    if error.filename:
        error_line(f"{error.filename}: {error.strerror or error}")
    else:
        error_line(f"cannot write to stdout: {error.strerror or error}")
    return OutputError.exit_code


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit neither
    fails again nor prints a traceback of its own."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def error_line(message: str) -> None:
    message = " ".join(str(message).split())  # one line, whatever it contained
    with contextlib.suppress(OSError):  # stderr itself may be what failed
        click.echo(f"ctxbench: error: {units.terminal_text(message)}", err=True)
