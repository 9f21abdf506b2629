"""The ``ctxbench`` command: a thin layer over runner, store, compare and report.

stdout carries data (tables, JSON, CSV); progress and diagnostics go to
stderr. Every error is one line, ``ctxbench: error: ...``, naming the
problem and the fix, never a traceback; usage errors exit 2, failures 1, an
output that could not be written 3, a run stopped by a signal 128+n (after
storing what finished), a closed stdout pipe 141. A measured run is stored
before any side output (table, --json, --report) can fail, and text that came
from records or the user is stripped of control characters before it reaches
a terminal.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import io
import json
import math
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment

from ctxbench import __version__, fmt, tables
from ctxbench import export as export_formats
from ctxbench import riscv as riscv_lab
from ctxbench.compare import Comparison, summary_lines
from ctxbench.errors import BadInput, CtxbenchError, EngineError, OutputError, RecordError
from ctxbench.explain import explain as explain_run
from ctxbench.explain_phases import render_trace_detail
from ctxbench.explain_view import render_text as render_explanation
from ctxbench.records import (
    RunRecords,
    dumps,
    group_run,
    read_records,
    read_run_file,
    record_problem,
    shared_unsupported_reason,
)
from ctxbench.runner import (
    EngineRun,
    RunOptions,
    capture_env,
    find_engine,
    list_probes,
    param_problem,
    plan_variants,
)
from ctxbench.runner import Progress as EngineProgress
from ctxbench.store import Store, StoredRun

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# ---- consoles ---------------------------------------------------------------
class _TerminalConsole(Console):
    """A rich console that strips control characters from every piece of text
    it shows (labels, host names, probe names, reasons: anything a record or
    a user may have filled), while keeping rich's own styling."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text:
                yield Segment(fmt.terminal_text(segment.text), segment.style)
            else:
                yield segment

    def on_broken_pipe(self) -> None:
        # rich would exit 1 here; ctxbench's handling says 141 (and, in
        # `run`, stores the run first).
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


class _QuietStream(io.TextIOBase):
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


def _console(stderr: bool = False) -> Console:
    stream = _QuietStream(sys.stderr) if stderr else sys.stdout
    width = None
    if not stream.isatty():
        # Piped or captured: do not squeeze tables into 80 columns.
        width = int(os.environ.get("COLUMNS", "200"))
    return _TerminalConsole(
        file=stream,
        width=width,
        highlight=False,
        soft_wrap=False,
        color_system="auto" if fmt.styled(stream) else None,  # None: no escape codes at all
    )


def _say(message: str) -> None:
    """A status line on stderr (never on stdout, which carries data)."""
    click.echo(fmt.terminal_text(message), file=_QuietStream(sys.stderr))


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
            _error_line(error.format_message() + hint)
            code = error.exit_code
        except CtxbenchError as error:
            _error_line(str(error))
            code = error.exit_code
        except click.Abort:
            _error_line("aborted")
            code = EXIT_INTERRUPTED
        except _StreamFailed as failure:
            code = _output_failed(failure.error)
        except OSError as error:  # --help or --version, written before any command runs
            code = _output_failed(error)
        except sqlite3.Error as error:
            # The store module turns what it expects into StoreError; this is the rest.
            _error_line(f"the store failed: {error}")
            code = 1
        except Exception as error:  # the last line of defence: never a traceback
            if os.environ.get("CTXBENCH_DEBUG"):
                raise
            _error_line(
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
    _discard_stdout()
    if error.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    if error.filename:
        _error_line(f"{error.filename}: {error.strerror or error}")
    else:
        _error_line(f"cannot write to stdout: {error.strerror or error}")
    return OutputError.exit_code


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit neither
    fails again nor prints a traceback of its own."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def _error_line(message: str) -> None:
    message = " ".join(str(message).split())  # one line, whatever it contained
    with contextlib.suppress(OSError):  # stderr itself may be what failed
        click.echo(f"ctxbench: error: {fmt.terminal_text(message)}", err=True)


def main(argv: list[str] | None = None) -> int:
    return cli.main(args=argv, prog_name="ctxbench", standalone_mode=False)


db_option = click.option(
    "--db",
    "db",
    default=None,
    help="The store: an SQLite file, or a postgresql:// URL for a shared one "
    "(default: $CTXBENCH_DB, else the user data directory).",
)


def _open_store(db: str | None, create: bool = True) -> Store:
    """create=False: the command only reads (a read-only store opens read-only)."""
    return Store.open(db, create=create)


def _check_output_path(path: Path | None, option: str) -> None:
    if path is None or str(path) == "-":
        return
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise BadInput(f"{option} {path} is a directory; give a file name")
    if not parent.is_dir():
        raise BadInput(f"{option} {path}: directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise BadInput(f"{option} {path}: directory {parent} is not writable")


def _write_text(path: Path, text: str, option: str) -> None:
    """Write a whole output file; if that fails, no cut file is left behind."""
    _check_output_path(path, option)
    existed = path.exists()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        if path.is_file() and not existed:
            path.unlink(missing_ok=True)
        elif path.is_file():
            with contextlib.suppress(OSError):
                path.write_bytes(b"")  # an empty file, not a cut one that looks whole
        raise OutputError(f"cannot write {option} {path}: {error.strerror}") from None


@click.group(cls=CtxbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxbench")
def cli() -> None:
    """Measure context switches, system calls and traps; keep, compare and report runs."""


# ---- run ----------------------------------------------------------------------
def _resolve_selectors(selectors: tuple[str, ...], probes: list[dict[str, Any]]) -> list[str]:
    names = [str(p.get("name")) for p in probes]
    families = {name.split(".", 1)[0] for name in names}
    resolved = []
    for selector in selectors:
        if selector in names:
            resolved.append(selector)
            continue
        if selector in families:
            resolved.append(f"{selector}.*")
            continue
        if any(ch in selector for ch in "*?[") and fnmatch.filter(names, selector):
            resolved.append(selector)
            continue
        close = get_close_matches(selector, names, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise BadInput(f"unknown probe '{selector}'{hint} (`ctxbench list` shows the probes)")
    return resolved


class _ProgressView:
    """Progress on stderr: a live bar on a terminal, one line per variant otherwise."""

    def __init__(self) -> None:
        self.console = _console(stderr=True)
        self.live = self.console.is_terminal and not os.environ.get("CI")
        self.started = time.monotonic()
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> _ProgressView:
        if self.live:
            self._progress = Progress(
                TextColumn("probe {task.fields[position]}"),
                BarColumn(bar_width=24),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("starting the engine", total=None, position="")
        else:
            self.console.print("running the engine...", markup=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            task = self._progress.tasks[0]
            if task.total is not None:
                self._progress.update(self._task, description="done")
            self._progress.stop()

    def update(self, progress: EngineProgress, task: Any = None, prefix: str = "") -> None:
        """Variant ``progress`` starts: on the bar ``task`` (the only one by
        default), or a line beginning with ``prefix``."""
        label = progress.probe
        params = fmt.params(progress.params)
        if params != "—":
            label += f" {params}"
        if progress.attempt > 1:
            label += f" (attempt {progress.attempt}, host interference)"
        if self._progress is not None:
            # A variant measured again comes after the rest: the bar holds.
            done = {"completed": progress.number - 1} if progress.attempt == 1 else {}
            self._progress.update(
                self._task if task is None else task,
                total=progress.total,
                description=label,
                position=f"{progress.number} of {progress.total}",
                **done,
            )
        else:
            elapsed = time.monotonic() - self.started
            self.console.print(
                f"{prefix}[{progress.number}/{progress.total}] {label} (elapsed {elapsed:.0f} s)",
                markup=False,
            )

    def finished_one(self) -> None:
        if self._progress is not None and self._task is not None:
            task = self._progress.tasks[0]
            if task.total is None or task.completed < task.total:
                self._progress.advance(self._task)

    def message(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)


class _StopSignals:
    """SIGINT, SIGTERM and SIGHUP during a run, alike: the first asks the
    engine to stop (it ends the current variant and writes run_end), the next
    kills it. What arrived is stored either way; the exit status is then
    128 + the first signal. A signal while the run is being stored waits for
    the store to finish."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.run: EngineRun | None = None
        self.say = _say
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        for number in STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)

    def _on_signal(self, number: int, frame: object) -> None:
        if self.received is None:
            self.received = number
        name = f"interrupted by {signal.Signals(number).name}"
        run = self.run
        if run is None or not run.running:
            self.say(f"{name}: stopping" + (" once what was measured is stored" if run else ""))
            return
        run.interrupt()
        if run.interrupts == 1:
            self.say(
                f"{name}: stopping the engine; finished results will be kept "
                "(Ctrl-C again to kill it)"
            )
        else:
            self.say("killing the engine")

    @property
    def exit_code(self) -> int:
        return 128 + (self.received or signal.SIGINT)


def _store_run(store: Store, run: RunRecords, origin: str, label: str | None) -> StoredRun:
    store.add_run(run, origin=origin, label=label)
    return store.load(run.run_id)


def _run_header(stored: StoredRun) -> str:
    """'run ID (complete) · machine · arch · kernel release · label L'."""
    info = stored.info
    env = stored.env
    kernel = env.get("kernel", {})
    state = "partial" if info.interrupted else "complete"
    return (
        f"run {info.run_id} ({state}) · {info.machine} · {env.get('arch', '?')} · "
        f"kernel {kernel.get('release', '?')}" + (f" · label {info.label}" if info.label else "")
    )


def _print_run(stored: StoredRun, show_all: bool = False, title: str | None = None) -> None:
    """A stored run on stdout, answers first: the summary (ladder, same vs other
    CPU, where a switch's time goes, verdicts in words), the CPU-pair matrices,
    then, with SHOW_ALL, the full table of every result and the reasons in the
    records' own words (else one line that says how to get it)."""
    from ctxbench.summary import summarize
    from ctxbench.summary_view import run_lines

    console = _console()
    console.print(title or _run_header(stored), markup=False)
    console.print()
    for line in run_lines(summarize([stored]), console.width):
        console.print(line)
    for part in tables.matrix_sections(stored.results):
        console.print(part)
    console.print()
    if not show_all:
        console.print(
            f"{len(stored.results)} results: `ctxbench show {stored.run_id} --all` lists them",
            markup=False,
        )
        return
    console.print(tables.results_table(stored.results, title="every result", width=console.width))
    for note in tables.verdict_notes(stored.results):
        console.print(f"  {note}", markup=False)


class _LineFile:
    """A JSON Lines file written in whole lines: each record is one write of
    its full line. If a write fails (a full disk, a file-size limit, a closed
    pipe), a regular file is cut back to its last whole line, writing stops
    and ``error`` says why; the caller decides what that means."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._regular = os.path.isfile(path)
        self._size = 0
        self.lines = 0
        self.error: OSError | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        data = memoryview((dumps(record) + "\n").encode("utf-8"))
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as error:
            self.error = error
            if self._regular:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
            self.close()
            return
        self._size += len(data.obj)
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as error:
                self.error = self.error or error


class _Spool:
    """Records as they arrive, in a file beside the store, until the run is stored.

    If ctxbench dies or the store refuses the run, the file stays and the
    message says how to store it (`ctxbench import`); once stored, or when
    there is nothing worth storing, it goes.
    """

    def __init__(self, directory: Path, tag: str = "", store_location: str | None = None):
        self.path = directory / f".ctxbench-unstored-{os.getpid()}{tag}.jsonl"
        self.store_location = store_location  # for the import command in messages
        self.file: _LineFile | None = None
        self.reported = False  # the error message already says where the records are
        self.discard = False  # nothing worth keeping (e.g. every result unsupported)

    def __enter__(self) -> _Spool:
        try:
            self.file = _LineFile(self.path)
        except OSError:
            self.file = None  # a read-only directory: run without the safety copy
        return self

    def write(self, record: dict[str, Any]) -> None:
        if self.file is not None:
            self.file.write(record)

    def hint(self) -> str:
        """Where the records are kept and how to store them, for a message."""
        if self.file is None or self.file.lines == 0:
            return "no safety copy of the records could be kept"
        cut = ""
        if self.file.error is not None:
            cut = f" (the copy stopped there: {self.file.error.strerror})"
        where = f" --db {self.store_location}" if self.store_location else ""
        return (
            f"the {self.file.lines} records received are kept in {self.path}{cut}; "
            f"`ctxbench import {self.path}{where}` stores them"
        )

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.file is None:
            return
        self.file.close()
        if error is not None and not self.discard and self.file.lines:
            if not self.reported:
                _say(f"ctxbench: {self.hint()}")
        else:
            self.path.unlink(missing_ok=True)


def _stream(
    engine_run: EngineRun, copy: _LineFile | None, spool: _Spool, stop: _StopSignals
) -> list[dict[str, Any]]:
    """Run the engine with progress on stderr; every record also to --json and the spool."""
    records: list[dict[str, Any]] = []
    with _ProgressView() as view:
        engine_run.on_progress = view.update
        engine_run.on_diagnostic = view.message
        stop.run, stop.say = engine_run, view.message
        try:
            if stop.received is not None:
                return records  # stopped before the engine started
            engine_run.start()
            if stop.received is not None:  # arrived while the engine was starting
                engine_run.interrupt()
            for record in engine_run.records():
                records.append(record)
                spool.write(record)
                if copy is not None:
                    copy.write(record)
                if record["kind"] == "result":
                    view.finished_one()
        finally:
            stop.say = _say
            if copy is not None:
                copy.close()
    return records


def _open_copy(path: Path | None) -> _LineFile | None:
    """--json, opened (and so checked) before anything runs."""
    if path is None:
        return None
    try:
        return _LineFile(path)
    except OSError as error:
        raise BadInput(f"cannot write --json {path}: {error.strerror}") from None


def _check_writable(path: Path | None, option: str) -> None:
    """Open ``path`` for writing without changing it, so a file that cannot be
    written is refused before the run rather than after."""
    if path is None:
        return
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise BadInput(f"cannot write {option} {path}: {error.strerror}") from None
    if not existed:
        path.unlink(missing_ok=True)


def _db_hint(db: Path | None, store: Store) -> str:
    return f" --db {store.location}" if db is not None else ""


@cli.command()
@click.argument("probes", nargs=-1, metavar="[PROBE|GLOB]...")
@click.option("--quick", is_flag=True, help="Fewer samples and shorter runs (smoke run).")
@click.option("--samples", type=click.IntRange(min=1), help="Samples per probe variant.")
@click.option("--min-time", type=click.FloatRange(min=0, min_open=True), help="Seconds per sample.")
@click.option(
    "--cpus", help="Placements to run, comma-separated (the cpus values `ctxbench list` shows)."
)
@click.option(
    "--between",
    help="Task kinds to run, comma-separated (the between values `ctxbench list` shows).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=V1,V2",
    help="Run these values of a probe parameter (repeatable; `ctxbench list` shows them).",
)
@click.option("--preset", help="Run a named experiment (e.g. fibers-vs-threads) instead of probes.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a variant may take before it is stopped and recorded as failed.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0, max=10),
    help="Measure a variant again, up to N times, when a reference loop of system calls timed "
    "before each sample ran slowed (the host took the CPU's time); keep the attempt whose "
    "reference ran fastest (default 2, 1 with --quick; 0 only records it).",
)
@click.option(
    "--hold-idle",
    is_flag=True,
    help="Run the switch probes only with idle=held: CPUs kept out of deep idle through "
    "/dev/cpu_dma_latency for each variant (needs root; otherwise unsupported with the reason).",
)
@click.option(
    "--trace",
    is_flag=True,
    help="After each switch variant, run it again with the kernel's tracepoints recorded and "
    "split its switches into phases that `ctxbench explain` shows (needs root and tracefs; "
    "otherwise each record says why not). docs/tracing.md",
)
@db_option
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path),
    help="Also write the records (JSON Lines) to FILE.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    help="Also write an HTML report to FILE.",
)
@click.option("--label", help="A name for this run (e.g. 'host, mitigations=off').")
@click.option(
    "--all", "show_all", is_flag=True, help="After the summary, print the table of every result."
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="DEST",
    help="Run on DEST over SSH instead of here (as `ssh DEST` understands it: "
    "~/.ssh/config aliases, user@host, ports, jump hosts); repeat for several "
    "hosts, run in parallel, one stored run each.",
)
@click.option(
    "--ssh-config",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="An ssh_config file for --host (ssh -F).",
)
def run(
    probes: tuple[str, ...],
    quick: bool,
    samples: int | None,
    min_time: float | None,
    cpus: str | None,
    between: str | None,
    params: tuple[str, ...],
    preset: str | None,
    timeout: float | None,
    retries: int | None,
    hold_idle: bool,
    trace: bool,
    db: str | None,
    json_path: Path | None,
    report_path: Path | None,
    label: str | None,
    show_all: bool,
    hosts: tuple[str, ...],
    ssh_config: Path | None,
) -> int:
    """Run probes (default: the whole suite), store the run, print its summary.

    PROBE is a probe name (`ctxbench list`), a family (`syscall`) or a glob
    (`'switch.*'`). Ctrl-C (or SIGTERM, SIGHUP) stops cleanly and keeps the
    finished results as a partial run.
    """
    if (problem := param_problem(params, probes)) is not None:
        raise BadInput(problem)
    _check_output_path(json_path, "--json")
    _check_output_path(report_path, "--report")
    _check_writable(report_path, "--report")
    if ssh_config is not None and not hosts:
        raise click.UsageError("--ssh-config is for --host runs; give --host DEST too")
    if hosts and json_path is not None:
        raise click.UsageError(
            "--json takes one run; with --host, export each stored run (`ctxbench export RUN`)"
        )
    with _open_store(db) as store:
        engine = find_engine()
        selectors = _resolve_selectors(probes, list_probes(engine)) if probes else []
        options = RunOptions(
            selectors=selectors,
            quick=quick,
            samples=samples,
            min_time=min_time,
            cpus=cpus,
            between=between,
            params=params,
            preset=preset,
            timeout=timeout,
            retries=retries,
            hold_idle=hold_idle,
            trace=trace,
        )
        # The engine's own selection rules check the choices (axis values,
        # parameters, presets) before anything runs or is stored.
        plan_variants(options, engine)
        if hosts:
            from ctxbench.hosts_cli import run_on_hosts

            return run_on_hosts(
                store, list(hosts), options, label, ssh_config, report_path, show_all
            )
        engine_run = EngineRun(options, engine=engine)
        copy = _open_copy(json_path)
        with _StopSignals() as stop:
            with _Spool(store.spool_dir, store_location=store.location) as spool:
                records = _stream(engine_run, copy, spool, stop)
                for problem in engine_run.problems[:5]:
                    _say(f"ctxbench: warning: {problem}")
                if not any(r["kind"] == "env" for r in records):
                    failure = engine_run.failure()
                    if failure is not None:
                        raise failure
                    if stop.received is not None or engine_run.interrupted:
                        _say("interrupted before the engine wrote anything; nothing stored")
                        return stop.exit_code
                    raise EngineError("the engine wrote no env record; nothing stored")
                run_records = group_run(records, "engine output")
                reason = shared_unsupported_reason(run_records.results)
                if reason is not None:
                    spool.discard = True
                    raise EngineError(
                        f"nothing was measured: all {len(run_records.results)} results are "
                        f"unsupported here ({reason}); nothing stored"
                    )
                try:
                    stored = _store_run(store, run_records, "run", label)
                except (CtxbenchError, sqlite3.Error, OSError) as error:
                    spool.reported = True
                    why = error.strerror if isinstance(error, OSError) else str(error)
                    failure = CtxbenchError(
                        f"the run was measured but could not be stored in {store.location} "
                        f"({why}); {spool.hint()}"
                    )
                    failure.exit_code = getattr(error, "exit_code", CtxbenchError.exit_code)
                    raise failure from None
            side_failure, stdout_closed = _show_stored_run(
                stored, store, db, copy, report_path, show_all
            )
    if side_failure is not None:
        raise side_failure
    if engine_run.problems:
        raise EngineError(
            f"{len(engine_run.problems)} engine output line(s) were not valid records "
            f"(first: {engine_run.problems[0]}); the valid ones were stored"
        )
    failure = engine_run.failure()
    if failure is not None:
        raise EngineError(f"{failure}; the finished results were stored as a partial run")
    if stop.received is not None or engine_run.interrupted:
        return stop.exit_code
    return EXIT_BROKEN_PIPE if stdout_closed else 0


def _show_stored_run(
    stored: StoredRun,
    store: Store,
    db: Path | None,
    copy: _LineFile | None,
    report_path: Path | None,
    show_all: bool = False,
) -> tuple[OutputError | None, bool]:
    """The outputs of a stored run: the summary (and with SHOW_ALL the table),
    the status line, the report.
    One failing does not stop the others. Returns the failures, as one line
    that says the run is safe and how to write that output again, and
    whether stdout's reader went away (no message for that: exit 141)."""
    run_id = stored.run_id
    where = _db_hint(db, store)
    failures: list[str] = []
    closed = False
    try:
        _print_run(stored, show_all)
        sys.stdout.flush()
    except OSError as error:
        _discard_stdout()
        if error.errno == errno.EPIPE:  # a reader that went away wanted no more: no message
            closed = True
        else:
            failures.append(
                f"stdout failed ({error.strerror}); `ctxbench show {run_id}{where}` shows it"
            )
    state = "partial run" if stored.info.interrupted else "run"
    _say(f"stored {state} {run_id} ({len(stored.results)} results) in {store.location}")
    if copy is not None and copy.error is not None:
        failures.append(
            f"--json {copy.path} failed after {copy.lines} records ({copy.error.strerror}); "
            f"`ctxbench export {run_id} -o {copy.path}{where}` writes them all again"
        )
    if report_path is not None:
        try:
            _write_report([stored], report_path)
        except OutputError as error:
            failures.append(f"{error}; `ctxbench report {run_id} -o FILE{where}` writes it again")
    if not failures:
        return None, closed
    return OutputError(f"run {run_id} is stored and safe, but " + "; and ".join(failures)), False


def _write_report(runs: list[StoredRun], path: Path, title: str | None = None) -> None:
    from ctxbench.report import render  # plotly is slow to import; only when needed

    _write_text(path, render(runs, title=title), "report")
    _say(f"report written to {path}")


# ---- list / env ------------------------------------------------------------------
@cli.command("list")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the engine's probe descriptors as JSON."
)
def list_command(as_json: bool) -> None:
    """The probes, with what one operation of each is and whether it runs here."""
    probes = list_probes()
    if as_json:
        click.echo(json.dumps(probes, indent=2))
        return
    _console().print(tables.probes_listing(probes))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the env record as JSON.")
def env(as_json: bool) -> None:
    """The environment capture alone: CPU, kernel, clocksource, virtualization..."""
    record = capture_env()
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    _console().print(tables.env_table(record))


# ---- history / show ----------------------------------------------------------------
@cli.command()
@db_option
def history(db: str | None) -> None:
    """The runs in the store, oldest first."""
    try:
        store = _open_store(db, create=False)
    except CtxbenchError as error:
        if str(error).startswith("no store at"):
            _say(f"{error}")
            return
        raise
    with store:
        infos = store.runs()
        if not infos:
            _say(f"no runs in {store.location} yet")
            return
        console = _console()
        console.print(tables.history_table(infos, width=console.width))


@cli.command()
@click.argument("run_ref", metavar="RUN")
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the run as JSON: what the store knows of it, its summary and its records.",
)
@click.option(
    "--all", "show_all", is_flag=True, help="After the summary, print the table of every result."
)
def show(run_ref: str, db: str | None, as_json: bool, show_all: bool) -> None:
    """One run, answers first: what things cost, same vs other CPU, where a
    switch's time goes, verdicts in words (--all: then every result).
    RUN: a run id, a unique prefix, 'latest', or a label."""
    with _open_store(db, create=False) as store:
        stored = store.load(run_ref)
    if as_json:
        click.echo(json.dumps(_run_json(stored), indent=2, allow_nan=False))
        return
    _print_run(stored, show_all)


def _run_json(stored: StoredRun) -> dict[str, Any]:
    from ctxbench.summary import summarize
    from ctxbench.summary_view import as_dict

    info = stored.info
    return {
        "schema": 1,
        "kind": "stored_run",
        "run": {
            "run_id": info.run_id,
            "label": info.label,
            "machine": info.machine,
            "origin": info.origin,
            "started_at": info.started_at,
            "stored_at": info.stored_at,
            "complete": info.complete,
            "interrupted": info.interrupted,
            "counts": info.counts,
        },
        "summary": as_dict(summarize([stored]).runs[0]),
        "records": stored.records.all(),
    }


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the decomposition as JSON.")
@click.option(
    "--trace",
    "trace_detail",
    is_flag=True,
    help="Print every traced pass in full instead (run --trace): each phase's median, interval, "
    "count, and the events recorded in it.",
)
def explain(run_ref: str, db: str | None, as_json: bool, trace_detail: bool) -> None:
    """Where the time of each switch goes, from figures measured in RUN (default: latest)."""
    with _open_store(db, create=False) as store:
        stored = store.load(run_ref)
    if trace_detail and not as_json:
        click.echo(render_trace_detail(stored.results), nl=False)
        return
    explained = explain_run(stored.results, stored.run_id)
    if as_json:
        click.echo(json.dumps(explained.as_dict(), indent=2, sort_keys=True))
    else:
        click.echo(render_explanation(explained), nl=False)


# ---- compare / report ----------------------------------------------------------------
@cli.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN_A RUN_B [RUN...]")
@db_option
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the U test.",
)
@click.option(
    "--min-effect",
    type=click.FloatRange(0, 10),
    default=0.05,
    show_default=True,
    help="Smallest relative difference that counts (0.05: 5%); a significant difference "
    "below it is 'no meaningful difference'.",
)
@click.option(
    "--only-common",
    is_flag=True,
    help="In the --all table, show only the variants every run measured.",
)
@click.option(
    "--baseline",
    metavar="RUN",
    help="The run the others are compared with (default: the first); "
    "e.g. one host of a `run --host` fleet.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the comparison as JSON (schema/compare.schema.json) instead of tables.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="After the summary, print the runs, the environment diff and the table of every row.",
)
@click.option(
    "--fail-above",
    "fail_above",
    metavar="PCT",
    callback=lambda ctx, param, value: _percentage(value, "--fail-above"),
    help="Exit 1 when a comparable row got slower than the reference by more than PCT "
    "percent: the whole interval of its ratio above 1 + PCT, judged against the row's "
    "run-to-run noise (repeats, history, or within-run with a floor); names each such row.",
)
def compare(
    run_refs: tuple[str, ...],
    db: str | None,
    alpha: float,
    min_effect: float,
    only_common: bool,
    baseline: str | None,
    as_json: bool,
    show_all: bool,
    fail_above: float | None,
) -> int:
    """Runs side by side, answers first: each key figure's ratio with its
    interval, judged against the row's run-to-run noise (the runs' repeats,
    else this machine's history in the store, else the within-run samples
    with a floor; each row says which), the environment differences that may
    explain them, the summary line; --all adds the table of every row.

    Rows whose verdicts are not ok, whose tasks ran on a different number of
    CPUs, or whose runs used different options are marked and left out of the
    summary line (and never fail --fail-above)."""
    from ctxbench.compare import compare_runs
    from ctxbench.export import comparison_dict
    from ctxbench.gate import gate, gate_lines
    from ctxbench.machine_history import variant_history

    if len(run_refs) < 2:
        raise click.UsageError("compare needs at least two runs (RUN_A RUN_B)")
    with _open_store(db, create=False) as store:
        runs = [store.load(ref) for ref in run_refs]
        if baseline is not None:
            base_id = store.resolve(baseline)
            if base_id not in [run.run_id for run in runs]:
                raise BadInput(f"--baseline {baseline} is not one of the runs compared")
            runs.sort(key=lambda run: run.run_id != base_id)  # stable: others keep their order
        history = variant_history(store, runs)
    ids = [run.run_id for run in runs]
    if len(set(ids)) != len(ids):
        raise BadInput(f"the same run is named twice ({', '.join(ids)}); compare different runs")
    if as_json:
        comparison = compare_runs(runs, alpha=alpha, min_effect=min_effect, history=history)
        judged = None if fail_above is None else gate(comparison, fail_above)
        click.echo(json.dumps(comparison_dict(comparison, judged), indent=2, allow_nan=False))
    else:
        options = {"alpha": alpha, "min_effect": min_effect, "history": history}
        comparison = _print_comparison(runs, options, show_all, only_common)
        judged = None if fail_above is None else gate(comparison, fail_above)
    if judged is None:
        return 0
    # The gate's lines: after the tables on stdout, or on stderr beside --json's data.
    for line in gate_lines(comparison, judged):
        click.echo(fmt.terminal_text(line), file=_QuietStream(sys.stderr) if as_json else None)
    return 1 if judged.failed else 0


def _print_comparison(
    runs: list[StoredRun], options: dict[str, Any], show_all: bool, only_common: bool
) -> Comparison:
    """Answers first: the runs, the key figures against run A, the other rows
    that differ, the environment differences of interest, the summary line,
    the matrices per pair class; with SHOW_ALL then the legend, the whole
    environment diff and every row."""
    from ctxbench.summary import summarize
    from ctxbench.summary_view import machine_lines

    summary = summarize(runs, compare_options=options)
    assert summary.machines is not None  # two runs or more
    comparison = summary.machines.comparison
    console = _console()
    for line in machine_lines(summary, console.width):
        console.print(line)
    for table in tables.matrix_comparison_tables(comparison):
        console.print(table)
    console.print()
    if not show_all:
        console.print(
            f"{len(comparison.rows)} rows compared; --all shows every row and "
            "the full environment diff",
            markup=False,
        )
        return comparison
    console.print(tables.runs_legend(comparison))
    console.print(tables.env_diff_table(comparison))
    console.print(tables.comparison_table(comparison, width=console.width, only_common=only_common))
    for line in summary_lines(comparison):
        console.print(line, markup=False, highlight=False)
    return comparison


def _percentage(value: str | None, option: str) -> float | None:
    """'5' or '5%' as 5.0; anything else is a usage error naming the fix."""
    if value is None:
        return None
    text = value.strip().removesuffix("%").strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise click.BadParameter(
            f"{value!r} is not a percentage; give a number of percent such as 5 (for 5%)",
            param_hint=option,
        )
    return number


@cli.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN [RUN...]")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="HTML file to write.",
)
@click.option("--title", help="Title of the page.")
@db_option
def report(run_refs: tuple[str, ...], output: Path, title: str | None, db: str | None) -> None:
    """A self-contained HTML report (offline, plots inline) of one or more runs."""
    _check_output_path(output, "-o")
    with _open_store(db, create=False) as store:
        runs = [store.load(ref) for ref in run_refs]
    _write_report(runs, output, title)


# ---- import / export -----------------------------------------------------------------
@cli.command("import")
@click.argument("path", type=click.Path(path_type=Path), metavar="FILE")
@click.option("--label", help="A name for the imported run.")
@db_option
def import_command(path: Path, label: str | None, db: str | None) -> None:
    """Store a run from engine JSON Lines (e.g. `ctxbench-engine run --json` on a board)."""
    notes: list[str] = []
    if str(path) == "-":
        run_records = group_run(read_records(sys.stdin.buffer, "stdin", notes), "stdin")
    else:
        if not path.exists():
            raise BadInput(f"no file {path}; give the JSON Lines file written by `run --json`")
        if path.is_dir():
            raise BadInput(f"{path} is a directory; give a JSON Lines file")
        run_records = read_run_file(path, notes)
    for note in notes:
        _say(f"ctxbench: note: {note}")
    with _open_store(db) as store:
        stored = _store_run(store, run_records, "import", label)
    state = "partial run" if stored.info.interrupted else "run"
    _say(f"imported {state} {stored.run_id} ({len(stored.results)} results) into {store.location}")


@cli.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format",
    "form",
    type=click.Choice(export_formats.FORMATS),
    default="json",
    show_default=True,
    help="json: the records as JSON Lines (importable); csv: one row per result; "
    "bmf: Bencher Metric Format (median and its CI per probe variant).",
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="File to write (default: stdout)."
)
@db_option
def export(run_ref: str, form: str, output: Path | None, db: str | None) -> None:
    """A stored run as JSON Lines (the engine's records, importable), CSV or
    Bencher Metric Format."""
    _check_output_path(output, "-o")
    with _open_store(db, create=False) as store:
        stored = store.load(run_ref)
    text = export_formats.export_text(stored, form)
    for note in export_formats.notes(stored, form):
        _say(f"ctxbench: note: {note}")
    if output is None:
        click.echo(text, nl=False)
    else:
        _write_text(output, text, "-o")
        _say(f"wrote {stored.run_id} to {output}")


# ---- riscv --------------------------------------------------------------------------
@cli.command()
@click.option(
    "--sim",
    type=click.Choice([*riscv_lab.SIMULATORS, "all"]),
    default="all",
    show_default=True,
    help="Simulator(s) to run the trap lab on (rvsim: each of its core models).",
)
@click.option("--label", help="A name for this run.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    help="Also write an HTML report to FILE.",
)
@db_option
def riscv(sim: str, label: str | None, report_path: Path | None, db: str | None) -> None:
    """The RISC-V trap lab: ecall round trips on Spike, QEMU and rvsim core models,
    decomposed in words and stored as a run."""
    _check_output_path(report_path, "--report")
    sims = riscv_lab.SIMULATORS if sim == "all" else (sim,)
    with _open_store(db) as store:
        _say(f"running the RISC-V trap lab on {', '.join(sims)}...")
        lab = riscv_lab.run_lab(sims, progress=_say)
        for number, record in enumerate(lab.records, start=1):
            problem = record_problem(record)
            if problem is not None:
                raise RecordError(f"riscv lab record {number} is not valid: {problem}")
        stored = _store_run(store, group_run(lab.records, "riscv lab"), "riscv", label)
        click.echo(riscv_lab.format_report(lab.records), nl=False)
        _say(f"stored run {stored.run_id} ({len(stored.results)} results) in {store.location}")
        if report_path is not None:
            _write_report([stored], report_path)
        failed = [run.target.name for run in lab.runs if run.problem]
        if failed:
            raise CtxbenchError(
                f"the lab failed on {', '.join(failed)} (see the report); "
                f"the other figures were stored as {stored.run_id}"
            )
