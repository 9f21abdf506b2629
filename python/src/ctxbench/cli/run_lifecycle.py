"""A run's lifecycle around the engine: progress, stop signals, the spool, storing.

Local runs and ``run --host`` runs share it: one progress view, one way to
stop on SIGINT/SIGTERM/SIGHUP, one spool that keeps the records until the
store has them."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ctxbench import units
from ctxbench.acquire.runner import EngineRun
from ctxbench.acquire.runner import Progress as EngineProgress
from ctxbench.cli import spool_records
from ctxbench.cli.console import new_console, say
from ctxbench.cli.output_files import check_output_path, keep_apart
from ctxbench.errors import BadInput
from ctxbench.records.runs import RunRecords, StoredRun
from ctxbench.records.strict_json import dumps
from ctxbench.store.db import Store

# Ctrl-C, and what `timeout`, CI cancellation and a closed terminal send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ProgressView:
    """Progress on stderr: a live bar on a terminal (one per host for ``run
    --host``), one line per variant otherwise. Hosts report from their own
    threads; a signal handler may print while the main thread updates."""

    def __init__(self, hosts: list[str] | None = None) -> None:
        self.console = new_console(stderr=True)
        self.live = self.console.is_terminal and not os.environ.get("CI")
        self.started = time.monotonic()
        self.hosts = hosts
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self._tasks: dict[str | None, Any] = {}  # per host; None: the local run's
        self._visits: dict[str | None, int] = {}  # variants announced so far, per host

    def __enter__(self) -> ProgressView:
        if not self.live:
            where = "the engine" if self.hosts is None else f"on {', '.join(self.hosts)}"
            self.console.print(f"running {where}...", markup=False)
            return self
        if self.hosts is None:
            columns = [TextColumn("probe {task.fields[position]}"), BarColumn(bar_width=24)]
        else:
            columns = [
                TextColumn("{task.fields[host]}", markup=False),
                TextColumn("{task.fields[position]}"),
                BarColumn(bar_width=20),
            ]
        self._progress = Progress(
            *columns,
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        if self.hosts is None:
            self._tasks[None] = self._progress.add_task(
                "starting the engine", total=None, position=""
            )
        for host in self.hosts or []:
            self._tasks[host] = self._progress.add_task(
                "connecting", total=None, host=host, position=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is None:
            return
        local = self._tasks.get(None)
        if local is not None and self._progress.tasks[0].total is not None:
            self._progress.update(local, description="done")
        self._progress.stop()

    def update(self, progress: EngineProgress, host: str | None = None) -> None:
        """Variant ``progress`` starts, on the local run or on ``host``."""
        label = progress.probe
        params = units.params(progress.params)
        if params != "—":
            label += f" {params}"
        if progress.attempt > 1:
            label += f" (attempt {progress.attempt}, host interference)"
        # Under interleaved rounds the variants are visited in a drawn order, so
        # a variant's number is its name, not how far the run is: the lines
        # count visits, in order, and name the variant and round beside.
        rounds = progress.rounds > 0
        with self._lock:
            self._visits[host] = self._visits.get(host, 0) + 1
            where = f"variant {progress.number} of {progress.total}"
            if rounds:
                where += f", round {progress.round} of {progress.rounds}"
            if self._progress is not None:
                # A variant measured again comes after the rest: the bar holds;
                # under rounds, finished results move it (finished_one).
                done = {}
                if progress.attempt == 1 and not rounds:
                    done = {"completed": progress.number - 1}
                self._progress.update(
                    self._tasks[host],
                    total=progress.total,
                    description=label,
                    position=where,
                    **done,
                )
            else:
                elapsed = time.monotonic() - self.started
                prefix = "" if host is None else f"{host}: "
                head = (
                    f"[visit {self._visits[host]}] {label} ({where}, "
                    if rounds
                    else f"[{progress.number}/{progress.total}] {label} ("
                )
                self.console.print(f"{prefix}{head}elapsed {elapsed:.0f} s)", markup=False)

    def finished_one(self) -> None:
        """A result of the local run arrived: the bar moves on."""
        local = self._tasks.get(None)
        if self._progress is not None and local is not None:
            task = self._progress.tasks[0]
            if task.total is None or task.completed < task.total:
                self._progress.advance(local)

    def state(self, host: str, text: str) -> None:
        """What ``host`` is doing (connecting, running, done, failed...)."""
        with self._lock:
            if self._progress is not None:
                self._progress.update(self._tasks[host], description=text)
            else:
                self.console.print(f"{host}: {text}", markup=False)

    def message(self, line: str, host: str | None = None) -> None:
        with self._lock:
            prefix = "" if host is None else f"{host}: "
            self.console.print(prefix + line, markup=False, highlight=False)


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP during a run, alike (Ctrl-C, and what
    `timeout`, CI cancellation and a closed terminal send). Each calls
    ``on_stop(signal, how many so far)``; by default, for a local run, the
    first asks the engine to stop (it ends the current variant and writes
    run_end), the next kills it. What arrived is stored either way; the exit
    status is then 128 + the first signal. A signal while the run is being
    stored waits for the store to finish."""

    def __init__(self, on_stop: Callable[[int, int], None] | None = None) -> None:
        self.received: int | None = None
        self.count = 0
        self.run: EngineRun | None = None
        self.say = say
        self.on_stop = on_stop or self._stop_engine
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for number in STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)

    def _on_signal(self, number: int, frame: object) -> None:
        if self.received is None:
            self.received = number
        self.count += 1
        self.on_stop(number, self.count)

    def _stop_engine(self, number: int, count: int) -> None:
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


def store_run(store: Store, run: RunRecords, origin: str, label: str | None) -> StoredRun:
    store.add_run(run, origin=origin, label=label)
    return store.load(run.run_id)


class LineFile:
    """A JSON Lines file written in whole lines: each record is one write of
    its full line. If a write fails (a full disk, a file-size limit, a closed
    pipe), a regular file is cut back to its last whole line, writing stops
    and ``error`` says why; the caller decides what that means. ``fd``: a
    file already open for writing (the spool's), else ``path`` is created or
    truncated (``--json``, a path the user chose): truncated when its first
    record arrives, not before, so a run that writes none leaves it as it was."""

    def __init__(self, path: Path, fd: int | None = None):
        self.path = path
        self._truncate = fd is None
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._fd: int | None = fd
        self._regular = stat.S_ISREG(os.fstat(fd).st_mode)
        self._size = 0
        self.lines = 0
        self.error: OSError | None = None

    def write(self, record: dict[str, Any]) -> None:
        self.write_line(dumps(record) + "\n")

    def write_line(self, line: str) -> None:
        if self._fd is None:
            return
        data = memoryview(line.encode("utf-8"))
        try:
            if self._truncate and self._regular:
                os.ftruncate(self._fd, 0)
            self._truncate = False
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

    @property
    def size(self) -> int:
        """The bytes written so far, in whole lines."""
        return self._size

    def replace_fd(self, fd: int, path: Path) -> None:
        """Go on writing to FD (a copy of what was written), as PATH."""
        old, self._fd, self.path = self._fd, fd, path
        if old is not None:
            with contextlib.suppress(OSError):
                os.close(old)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as error:
                self.error = self.error or error


SPOOL_PREFIX = ".ctxbench-unstored-"
SPOOL_BYTES_PER_RECORD = 32 * 1024  # a traced switch record is about 15 KiB


def spool_places(store_dir: Path) -> list[Path]:
    """Where a run's spool may go, in order: beside the store, then the
    user's state and data directories (XDG), then $TMPDIR (/tmp where unset)."""
    import platformdirs

    places = [
        store_dir,
        Path(platformdirs.user_state_dir("ctxbench")),
        Path(platformdirs.user_data_dir("ctxbench")),
        # $TMPDIR as named (tempfile.gettempdir() would try other places
        # where it is full, and the run could not be told it has none).
        Path(os.environ.get("TMPDIR") or "/tmp"),
    ]
    return list(dict.fromkeys(places))


class SpoolFile:
    """One spool file, created as a temporary file is: an unpredictable name,
    O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 (tempfile.mkstemp), so no path that
    exists (a link planted by another user, the spool of an earlier run) is
    ever opened, let alone truncated. An exclusive flock is held while it is
    written: ``import`` refuses a spool whose writer is alive.

    Until it holds something worth storing (a result), the file has no name:
    its room is checked, then its name unlinked, so a ctxbench killed before
    the first result leaves no file behind. ``name_it`` gives it a new name
    (a new file, as above) holding what was written so far."""

    def __init__(self, directory: Path, reserve: int, tag: str = ""):
        self.directory = directory
        self.tag = tag
        self.path: Path | None = None
        fd, name = self._new_file()
        try:
            _reserve(fd, reserve)
        except OSError:
            self._remove(fd, Path(name))
            raise
        self._remove(fd, Path(name), close=False)  # nameless until worth keeping
        self.file = LineFile(directory, fd=os.dup(fd))
        self._lock_fd: int | None = fd  # the lock lives as long as this descriptor

    def _new_file(self) -> tuple[int, str]:
        fd, name = tempfile.mkstemp(
            prefix=f"{SPOOL_PREFIX}{os.getpid()}{self.tag}-", suffix=".jsonl", dir=self.directory
        )
        try:
            os.set_inheritable(fd, False)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._remove(fd, Path(name))
            raise
        return fd, name

    def name_it(self) -> None:
        """Gives the spool a name (once): a new file holding what was written."""
        if self.path is not None or self._lock_fd is None:
            return
        data = os.pread(self._lock_fd, self.file.size, 0)
        fd, name = self._new_file()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            self._remove(fd, Path(name))
            raise
        old = self._lock_fd
        self._lock_fd = fd
        self.file.replace_fd(os.dup(fd), Path(name))
        with contextlib.suppress(OSError):
            os.close(old)
        self.path = Path(name)
        keep_apart(self.path, "the run's spool")

    @staticmethod
    def _remove(fd: int, path: Path | None, close: bool = True) -> None:
        """Unlinks PATH if it still names this file (another user may have
        moved it in a shared directory), then lets go of the lock."""
        with contextlib.suppress(OSError):
            if path is not None and _file_id(os.lstat(path)) == _file_id(os.fstat(fd)):
                path.unlink()
        if close:
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self, remove: bool) -> None:
        self.file.close()
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        if remove:
            self._remove(fd, self.path)
        else:
            with contextlib.suppress(OSError):
                os.close(fd)


def spool_in_use(path: Path) -> bool:
    """Whether a running ctxbench still writes PATH (it holds the spool's
    lock); False for any file nobody has locked, or that cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _file_id(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _reserve(fd: int, size: int) -> None:
    """Checks that the file system can take SIZE bytes now (ENOSPC, EDQUOT or
    EFBIG otherwise), and gives them back: the spool is then empty again."""
    if size <= 0:
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as error:
        if error.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return  # no way to ask: the writes will tell
        raise
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)


class Spool:
    """Records as they arrive, in a file beside the store, until the run is stored.

    The file is created before the engine starts, with room checked for the
    run's records: beside the store, else in the first fallback place that
    can take it (``spool_places``). ``ready`` says whether one could be made
    and ``problems`` why not. If a write fails mid-run (the disk filled), the
    records so far are written again to the next place that takes them.
    If ctxbench dies or the store refuses the run, the file stays and the
    message says how to store it (`ctxbench import`); once stored, or when
    there is nothing worth storing, it goes. An existing file is never
    opened: every spool is a new file.
    """

    def __init__(
        self,
        places: Path | list[Path],
        tag: str = "",
        store_location: str | None = None,
        reserve: int = 0,
    ):
        self.places = spool_places(places) if isinstance(places, Path) else list(places)
        self.tag = tag
        self.store_location = store_location  # for the import command in messages
        self.reserve = reserve
        self.spool: SpoolFile | None = None
        self.problems: list[str] = []  # why a place could not take the spool
        self.reported = False  # the error message already says where the records are
        self.discard = False  # nothing worth keeping (e.g. every result unsupported)
        self._lines: list[str] = []
        self._worth = False  # a result (or a round of one) arrived: the spool is kept
        self._lock = threading.Lock()
        self._error: OSError | None = None  # the last write that failed, where none took over
        self._moved: list[str] = []  # the spools abandoned for a full disk

    @property
    def path(self) -> Path | None:
        return None if self.spool is None else self.spool.path

    @property
    def ready(self) -> bool:
        return self.spool is not None

    def _open(self, places: list[Path]) -> None:
        for directory in places:
            try:
                if directory != self.places[0]:
                    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                size = self.reserve + sum(len(line.encode()) for line in self._lines)
                spool = SpoolFile(directory, size, self.tag)
            except OSError as error:
                self.problems.append(f"{directory}: {error.strerror}")
                continue
            for line in self._lines:
                spool.file.write_line(line)
            if spool.file.error is None and self._worth:
                try:
                    spool.name_it()
                except OSError as error:
                    spool.file.error = error
            if spool.file.error is not None:
                self.problems.append(f"{directory}: {spool.file.error.strerror}")
                spool.close(remove=True)
                continue
            self.spool = spool
            return

    def __enter__(self) -> Spool:
        self._open(self.places)
        return self

    def without_room(self) -> None:
        """No place had room for the whole run: keep what fits, where a file
        can be made at all (the user said to go on)."""
        self.reserve = 0
        self._open(self.places)

    def write(self, record: dict[str, Any]) -> None:
        """A record the engine wrote (or, killed, could not write: ``unfinished``)."""
        self._write_line(dumps(record) + "\n", worth=record.get("kind") == "result")

    def write_partial(self, record: dict[str, Any]) -> None:
        """A variant as it stands after a round (the engine's @partial): kept
        as the spool's own line, superseded on import by the variant's record."""
        self._write_line(spool_records.partial_line(record), worth=True)

    def mark_repeat(self, number: int, count: int) -> None:
        """The records that follow are repeat NUMBER of COUNT (`run --repeat`)."""
        self._write_line(spool_records.repeat_line(number, count), worth=False)

    def mark_ab(self, number: int, arm: str, count: int, wrapper: str) -> None:
        """The records that follow are arm ARM of A/B round NUMBER of COUNT
        (`run --ab-wrapper WRAPPER`)."""
        self._write_line(spool_records.ab_line(number, arm, count, wrapper), worth=False)

    def _write_line(self, line: str, worth: bool) -> None:
        # The engine's stdout (records) and stderr (@partial) are read by two threads.
        with self._lock:
            self._lines.append(line)
            self._worth = self._worth or worth
            if self.spool is None:
                return
            if self._worth:
                try:
                    self.spool.name_it()  # the first result: the spool gets its name
                except OSError as error:
                    self.spool.file.error = error
            if self.spool.file.error is None:
                self.spool.file.write_line(line)
            error = self.spool.file.error
            if error is None:
                return
            # The disk filled: the whole run so far goes to the next place that takes it.
            failed = self.spool
            index = next((i for i, place in enumerate(self.places) if place == failed.directory), 0)
            self.spool = None
            self._open(self.places[index + 1 :])
            if self.spool is None:
                self._error = error
                self.spool = failed  # keep what it holds: whole lines, importable
            else:
                self._moved.append(f"{failed.path or failed.directory} ({error.strerror})")
                failed.close(remove=True)

    def import_command(self) -> str:
        """The command that stores the spool, quoted for a shell."""
        command = ["ctxbench", "import", str(self.path)]
        if self.store_location:
            command += ["--db", self.store_location]
        return shlex.join(command)

    def refusal(self) -> str:
        """Why no spool could be made, for the line said before measuring."""
        where = "; ".join(self.problems) or "no place to try"
        return (
            f"no safety copy of the records can be kept ({where}): if the store could not "
            "take the run at its end, every measurement would be lost"
        )

    def hint(self) -> str:
        """Where the records are kept and how to store them, for a message."""
        if self.spool is None or self.spool.path is None or self.spool.file.lines == 0:
            return "no safety copy of the records could be kept"
        file = self.spool.file
        cut = ""
        if self._error is not None:
            cut = f" (the copy stopped there: {self._error.strerror})"
        return (
            f"the {file.lines} records received are kept in {self.path}{cut}; "
            f"`{self.import_command()}` stores them"
        )

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.spool is None:
            return
        # A spool without a result has no name: nothing of it is left.
        keep = error is not None and not self.discard and self.spool.path is not None
        self.spool.close(remove=not keep)
        if keep and not self.reported:
            say(f"ctxbench: {self.hint()}")


def stream_engine_run(
    engine_run: EngineRun, copy: LineFile | None, spool: Spool, stop: StopSignals
) -> list[dict[str, Any]]:
    """Run the engine with progress on stderr; every record also to --json and the spool."""
    records: list[dict[str, Any]] = []
    with ProgressView() as view:
        engine_run.on_progress = view.update
        engine_run.on_diagnostic = view.message
        engine_run.on_partial = spool.write_partial  # each round survives a kill of ctxbench
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
            # Killed before it wrote them: the variants begun, as their last round left them.
            for record in engine_run.unfinished():
                records.append(record)
                spool.write(record)
                if copy is not None:
                    copy.write(record)
        finally:
            stop.say = say
            if copy is not None:
                copy.close()
    return records


def open_copy(path: Path | None) -> LineFile | None:
    """--json, opened (and so checked) before anything runs."""
    if path is None:
        return None
    check_output_path(path, "--json", stdout=False)
    try:
        return LineFile(path)
    except OSError as error:
        raise BadInput(f"cannot write --json {path}: {error.strerror}") from None
