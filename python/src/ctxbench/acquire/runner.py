"""Runs ``ctxbench-engine`` and streams its records as they arrive.

The engine writes JSON Lines on stdout (env, one result per probe variant,
run_end) and, with ``--progress``, lines ``@progress {json}`` on stderr
before each variant starts; any other stderr line is a diagnostic to pass
on. This module only moves data: it parses and validates each record and
hands progress and diagnostics to callbacks. It never prints.

The engine runs in its own session, so a Ctrl-C at the terminal reaches
ctxbench only; ctxbench forwards exactly one SIGINT (``interrupt()``), the
engine finishes the record it is writing, writes run_end with
interrupted=true and exits 130. A second interrupt kills it. If ctxbench
itself dies (even by SIGKILL) the engine gets SIGTERM from the kernel
(``--die-with-parent``) and stops the same way, leaving no process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ctxbench.errors import EXIT_INTERRUPTED, BadInput, EngineError
from ctxbench.records.schema import record_problem
from ctxbench.records.strict_json import loads_record

ENGINE_NAME = "ctxbench-engine"
PROGRESS_PREFIX = "@progress "
PARTIAL_PREFIX = "@partial "  # a variant as it stands after a round (interleaved rounds)
ENGINE_ERROR_PREFIX = "ctxbench-engine: error:"
EXIT_USAGE = 2  # the engine's usage error


def find_engine() -> Path:
    """The engine binary: $CTXBENCH_ENGINE, the packaged one, a build tree, or PATH."""
    override = os.environ.get("CTXBENCH_ENGINE")
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EngineError(
                f"CTXBENCH_ENGINE={override} is not an executable file; "
                "point it at a built ctxbench-engine or unset it"
            )
        return path
    packaged = Path(str(resources.files("ctxbench").joinpath("bin", ENGINE_NAME)))
    if packaged.is_file() and os.access(packaged, os.X_OK):
        return packaged
    # Running from a source checkout (PYTHONPATH=python/src): use `make engine`'s output.
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "build" / "engine" / ENGINE_NAME
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        if (parent / "pyproject.toml").exists():
            break
    on_path = shutil.which(ENGINE_NAME)
    if on_path:
        return Path(on_path)
    raise EngineError(
        "ctxbench-engine not found: install ctxbench with `pip install .` (it builds the "
        "engine), run `make engine`, or set CTXBENCH_ENGINE to the binary"
    )


# An engine command a usage error names, as the ctxbench command that does it.
ENGINE_COMMAND = re.compile(r"'ctxbench-engine (list|env)'")


def engine_refusal(message: str) -> str:
    """The engine's usage error in ctxbench's words: its message as it is
    (the engine alone decides what a selector, parameter or preset means),
    the commands it names as ctxbench's."""
    return ENGINE_COMMAND.sub(lambda found: f"`ctxbench {found.group(1)}`", message)


def _engine_failure(command: str, returncode: int, stderr: str) -> EngineError | BadInput:
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(ENGINE_ERROR_PREFIX):
            message = line[len(ENGINE_ERROR_PREFIX) :].strip()
            if returncode == EXIT_USAGE:
                return BadInput(engine_refusal(message))
            return EngineError(f"engine {command} failed: {message}")
    tail = lines[-1] if lines else "no message"
    if returncode < 0:
        return EngineError(f"engine {command} was killed by {signal_text(-returncode)}: {tail}")
    return EngineError(f"engine {command} failed (exit {returncode}): {tail}")


# What usually sends the signals that kill an engine, for the message.
SIGNAL_CAUSES = {
    signal.SIGKILL: "kill -9, or the kernel's out-of-memory killer",
    signal.SIGSYS: "a seccomp filter refused one of its system calls",
    signal.SIGSEGV: "a crash: please report it",
    signal.SIGABRT: "a failed check: please report it",
    signal.SIGBUS: "a crash: please report it",
    signal.SIGXCPU: "its CPU time limit, ulimit -t",
    signal.SIGXFSZ: "a file size limit, ulimit -f",
}


def signal_text(number: int) -> str:
    """'SIGKILL (signal 9: kill -9, or ...)': a signal by name, and what sends it."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    cause = SIGNAL_CAUSES.get(signal.Signals(number))
    return f"{name} (signal {number}{': ' + cause if cause else ''})"


def _engine_stdout(engine: Path, args: list[str]) -> str:
    """What a short engine command (list, env, run --dry-run) prints."""
    try:
        done = subprocess.run(
            [str(engine), *args], capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as error:
        raise EngineError(f"cannot start {engine}: {error.strerror}") from None
    except subprocess.TimeoutExpired:
        raise EngineError(f"engine {' '.join(args)} did not answer in 120 s") from None
    if done.returncode != 0:
        raise _engine_failure(args[0], done.returncode, done.stderr)
    return done.stdout


def _run_json(engine: Path, args: list[str]) -> Any:
    stdout = _engine_stdout(engine, args)
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as error:
        raise EngineError(f"engine {args[0]} printed no JSON ({error.msg})") from None


def run_profile(args: list[str], out: Path, engine: Path | None = None) -> None:
    """``ctxbench-engine profile --out OUT ARGS``: the profiled program keeps the
    terminal (stdin, stdout, stderr, which the engine's notes share)."""
    engine = engine or find_engine()
    try:
        done = subprocess.run([str(engine), "profile", "--out", str(out), *args])
    except OSError as error:
        raise EngineError(f"cannot start {engine}: {error.strerror}") from None
    if done.returncode == EXIT_USAGE:
        raise BadInput("ctxbench-engine profile refused it (its line above says why)")
    if done.returncode != 0:
        raise EngineError(f"engine profile failed (exit {done.returncode}; its message is above)")


def list_probes(engine: Path | None = None) -> list[dict[str, Any]]:
    """The engine's probe descriptors (``ctxbench-engine list --json``)."""
    probes = _run_json(engine or find_engine(), ["list", "--json"])
    if not isinstance(probes, list):
        raise EngineError("engine list --json did not print a JSON array")
    return probes


def capture_env(engine: Path | None = None) -> dict[str, Any]:
    """The environment record alone (``ctxbench-engine env --json``)."""
    env = _run_json(engine or find_engine(), ["env", "--json"])
    problem = record_problem(env)
    if problem is not None:
        raise EngineError(f"engine env --json printed an invalid record: {problem}")
    return env


@dataclass(frozen=True)
class Progress:
    """The engine is about to run variant ``number`` of ``total``."""

    number: int  # 1-based
    total: int
    probe: str
    params: dict[str, Any]
    attempt: int = 1  # over 1: measured again after host interference
    round: int = 0  # under interleaved rounds: this visit's round of the variant (1-based)
    rounds: int = 0  # and how many rounds the variant has


def param_problem(params: Sequence[str], probes: Sequence[str]) -> str | None:
    """A --param without '=' in one line that names the fix, or None. With
    `--param procs 2` the value arrives as a probe name: where the first such
    word is a number or a list (no probe is named so), the suggestion puts the
    two back together."""
    for choice in params:
        if "=" in choice:
            continue
        if probes and re.fullmatch(r"[0-9][0-9.]*(,[^,]+)*|[^,]+(,[^,]+)+", probes[0]):
            fixed = f"--param {choice}={probes[0]}"
            return (
                f"--param {choice} {probes[0]}: a parameter and its values are one word, "
                f"NAME=V1,V2; write {fixed}"
            )
        return f"--param {choice}: give the parameter with its values, NAME=V1,V2 (e.g. procs=2,8)"
    return None


@dataclass(frozen=True)
class RunOptions:
    selectors: Sequence[str] = ()
    quick: bool = False
    samples: int | None = None
    min_time: float | None = None
    cpus: str | None = None
    between: str | None = None
    params: Sequence[str] = ()  # NAME=V1,V2, as the engine's --param takes them
    preset: str | None = None
    timeout: float | None = None  # seconds per variant
    hold_idle: bool = False
    retries: int | None = None  # re-measurements after host interference
    trace: bool = False  # each switch variant again with the kernel's tracepoints recorded
    trace_optional: bool = False  # where tracing cannot record here, run untraced (else stop)
    interleave: str | None = None  # off | rounds: how the engine schedules the variants' samples
    rounds: int | None = None  # rounds per variant with interleave=rounds
    seed: int | None = None  # seed of the rounds' order
    host_reference: str | None = None  # on | off: judge samples by the host reference
    shield: str | None = None  # weight: the engine's tasks in a cgroup of the highest CPU weight

    def engine_args(self, dry_run: bool = False) -> list[str]:
        """``ctxbench-engine run`` with these options: the run itself (JSON Lines
        and progress), or with ``dry_run`` the variants it would run."""
        args = ["run", *self.selectors]
        if self.preset:
            args += ["--preset", self.preset]
        if self.quick:
            args.append("--quick")
        if self.samples is not None:
            args += ["--samples", str(self.samples)]
        if self.min_time is not None:
            args += ["--min-time", str(self.min_time)]
        if self.timeout is not None:
            args += ["--timeout", str(self.timeout)]
        if self.retries is not None:
            args += ["--retries", str(self.retries)]
        if self.cpus:
            args += ["--cpus", self.cpus]
        if self.between:
            args += ["--between", self.between]
        for choice in self.params:
            args += ["--param", choice]
        if self.hold_idle:
            args.append("--hold-idle")
        if self.trace:
            args.append("--trace")
        if self.trace_optional:
            args.append("--trace-optional")
        for option, value in (
            ("--interleave", self.interleave),
            ("--rounds", self.rounds),
            ("--seed", self.seed),
            ("--host-reference", self.host_reference),
            ("--shield", self.shield),
        ):
            if value is not None:
                args += [option, str(value)]
        if dry_run:
            return [*args, "--dry-run"]
        # --die-with-parent: the engine runs in its own session, where no
        # hang-up reaches it; it must still stop if ctxbench is killed.
        return [*args, "--json", "--progress", "--die-with-parent"]


def plan_variants(options: RunOptions, engine: Path | None = None) -> list[dict[str, Any]]:
    """The variants ``options`` select, as the engine expands them (``run
    --dry-run``: probe and params, the params as the records will give them),
    without running anything. The engine's selection rules are the only ones:
    a bad probe, parameter, value or preset is its usage error, as BadInput."""
    stdout = _engine_stdout(engine or find_engine(), options.engine_args(dry_run=True))
    try:
        return [json.loads(line) for line in stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise EngineError(
            f"engine run --dry-run printed a line that is not JSON ({error.msg})"
        ) from None


class EngineRun:
    """One ``ctxbench-engine run`` subprocess; iterate ``records()`` to drive it."""

    def __init__(
        self,
        options: RunOptions,
        on_progress: Callable[[Progress], None] = lambda progress: None,
        on_diagnostic: Callable[[str], None] = lambda line: None,
        engine: Path | None = None,
    ):
        self.options = options
        self.engine = engine or find_engine()
        self.on_progress = on_progress
        self.on_diagnostic = on_diagnostic
        # Each @partial as it arrives (the spool keeps it: a kill of ctxbench loses no round).
        self.on_partial: Callable[[dict[str, Any]], None] = lambda record: None
        self._process: subprocess.Popen[str] | None = None
        self._stderr_thread: threading.Thread | None = None
        self._stderr_tail: deque[str] = deque(maxlen=20)
        self._first_index: int | None = None
        self.interrupts = 0
        self.problems: list[str] = []  # stdout lines that were not valid records
        self._partials: dict[int, dict[str, Any]] = {}  # variant_index -> latest @partial
        self._written: set[Any] = set()  # variant_index of every result on stdout
        self._ended = False  # run_end seen
        self.returncode: int | None = None

    def command(self) -> list[str]:
        """The command line that runs the engine (a remote run wraps it in ssh)."""
        return [str(self.engine), *self.options.engine_args()]

    # A remote run keeps ssh's stdin open: closing it is how the remote engine is stopped.
    stdin: int = subprocess.DEVNULL

    def start(self) -> None:
        try:
            self._process = subprocess.Popen(
                self.command(),
                stdin=self.stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,  # Ctrl-C reaches us; we forward it once.
            )
        except OSError as error:
            raise EngineError(f"cannot start {self.engine}: {error.strerror}") from None
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for raw in self._process.stderr:
            line = raw.rstrip("\n")
            if line.startswith(PROGRESS_PREFIX):
                progress = self._parse_progress(line[len(PROGRESS_PREFIX) :])
                if progress is not None:
                    self.on_progress(progress)
                    continue
            if line.startswith(PARTIAL_PREFIX):
                self._keep_partial(line[len(PARTIAL_PREFIX) :])
                continue
            if line.strip():
                self._stderr_tail.append(line)
                if not line.startswith(ENGINE_ERROR_PREFIX):
                    # Errors are not echoed: failure() reports them, once.
                    self.on_diagnostic(line)

    def _valid(self, text: str, where: str) -> dict[str, Any] | None:
        """The record TEXT holds, or None with the problem kept in ``problems``."""
        try:
            record = loads_record(text)
        except ValueError as error:
            self.problems.append(f"engine {where}: {error}")
            return None
        problem = record_problem(record)
        if problem is not None:
            self.problems.append(f"engine {where}: {problem}")
            return None
        return record

    def _keep_partial(self, text: str) -> None:
        record = self._valid(text, "@partial line")
        if record is not None and record["kind"] == "result":
            self._partials[record["variant_index"]] = record
            self.on_partial(record)

    def unfinished(self) -> list[dict[str, Any]]:
        """After the engine ended without its closing record (killed by a
        signal): the variants it had begun and not written, as the last
        round left them (each says in a note how many rounds it holds)."""
        if self._ended or self.returncode is None:
            return []
        return [
            record for index, record in sorted(self._partials.items()) if index not in self._written
        ]

    def _parse_progress(self, text: str) -> Progress | None:
        try:
            data = json.loads(text)
            index, total = int(data["index"]), int(data["total"])
            probe = str(data["probe"])
            params = data.get("params") or {}
            attempt = int(data.get("attempt", 1))
            round_, rounds = int(data.get("round", 0)), int(data.get("rounds", 0))
        except (ValueError, KeyError, TypeError):
            return None
        if self._first_index is None:
            self._first_index = index
        # Accept 0- or 1-based indices: the first announced variant is number 1.
        offset = 1 if self._first_index == 0 else 0
        return Progress(index + offset, total, probe, params, attempt, round_, rounds)

    def records(self) -> Iterator[dict[str, Any]]:
        """Valid records, as the engine writes them; invalid lines go to ``problems``."""
        if self._process is None:
            self.start()
        assert self._process is not None and self._process.stdout is not None
        for number, line in enumerate(self._process.stdout, start=1):
            if not line.strip():
                continue
            record = self._valid(line, f"stdout line {number}")
            if record is None:
                continue
            if record["kind"] == "result":
                self._written.add(record.get("variant_index"))
            elif record["kind"] == "run_end":
                self._ended = True
            yield record
        self.returncode = self._process.wait()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=5)

    def interrupt(self) -> None:
        """First call: ask the engine to stop (SIGINT). Second call: kill it."""
        self.interrupts += 1
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT if self.interrupts == 1 else signal.SIGKILL)

    def failure(self) -> EngineError | BadInput | None:
        """Why the engine failed, or None if it succeeded or was interrupted."""
        if self.returncode in (0, None) or self.interrupted:
            return None
        return _engine_failure("run", self.returncode, "\n".join(self._stderr_tail))

    @property
    def running(self) -> bool:
        """Started, and not known to have ended."""
        return self._process is not None and self.returncode is None

    @property
    def interrupted(self) -> bool:
        return self.interrupts > 0 or self.returncode == EXIT_INTERRUPTED
