"""``ctxbench run``: measure a selection here (or hand it to run --host), store it, show it."""

from __future__ import annotations

import errno
import shlex
import sqlite3
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from ctxbench.acquire.ab import DEFAULT_AB_ROUNDS, MAX_AB_ROUNDS, wrapper_words
from ctxbench.acquire.repeats import (
    DEFAULT_REPEATS,
    MAX_REPEATS,
    QUICK_REPEATS,
    merge_repeats,
    repeat_selectors,
)
from ctxbench.acquire.runner import (
    EngineRun,
    RunOptions,
    find_engine,
    param_problem,
    plan_variants,
)
from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.commands.run_hosts import run_on_hosts
from ctxbench.cli.console import discard_stdout, say
from ctxbench.cli.option_types import FiniteFloat, check_hosts
from ctxbench.cli.output_files import check_output_path, check_writable, write_report
from ctxbench.cli.run_lifecycle import (
    SPOOL_BYTES_PER_RECORD,
    LineFile,
    Spool,
    StopSignals,
    open_copy,
    store_run,
    stream_engine_run,
)
from ctxbench.cli.run_output import print_run
from ctxbench.errors import EXIT_BROKEN_PIPE, BadInput, CtxbenchError, EngineError, OutputError
from ctxbench.records.runs import RunRecords, StoredRun, group_run, shared_unsupported_reason
from ctxbench.store.db import Store


def _command(words: list[str], db: str | None, store: Store) -> str:
    """A ctxbench command for a message, quoted for a shell; with --db when
    the run was given one."""
    target = ["--db", store.command_target] if db is not None else []
    return shlex.join(["ctxbench", *words, *target])


@click.command()
@click.argument("probes", nargs=-1, metavar="[PROBE|GLOB]...")
@click.option("--quick", is_flag=True, help="Fewer samples and shorter runs (smoke run).")
@click.option("--samples", type=click.IntRange(min=1), help="Samples per probe variant.")
@click.option("--min-time", type=FiniteFloat(min=0, min_open=True), help="Seconds per sample.")
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
    type=FiniteFloat(min=0, min_open=True),
    help="Seconds a variant may take before it is stopped and recorded as failed.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0, max=10),
    help="Measure a variant again, up to N times, when a reference loop of system calls timed "
    "before each sample ran slowed (the host took the CPU's time); keep the attempt whose "
    "reference ran fastest; a sample taken while it ran slowed is set aside and taken again "
    "(default 2, 1 with --quick; 0 records the reference and takes nothing again).",
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
    "otherwise the run stops before it measures, saying why and what would permit it; as root "
    "the engine mounts tracefs in a mount namespace of its own where it is not mounted). "
    "docs/tracing.md",
)
@click.option(
    "--trace-optional",
    is_flag=True,
    help="With --trace: where the traced pass cannot record here, say so once and run untraced "
    "(each record says why) instead of stopping.",
)
@db_option
@click.option(
    "--without-spool",
    is_flag=True,
    help="Run even where no spool (the safety copy that keeps the records until the store "
    "has them) can be made; by default such a run is refused before it measures.",
)
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
    callback=check_hosts,
    help="Run on DEST over SSH instead of here (as `ssh DEST` understands it: "
    "~/.ssh/config aliases, user@host, ports, jump hosts); repeat for several "
    "hosts, run in parallel, one stored run each.",
)
@click.option(
    "--ssh-config",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="An ssh_config file for --host (ssh -F).",
)
@click.option(
    "--interleave",
    metavar="off|rounds",
    help="off: the engine measures each variant whole, one after the other; rounds: it "
    "splits every variant's samples into rounds and visits the variants in a seeded random "
    "order each round, so a slow spell of the host falls on many variants a little "
    "(default: the engine's, rounds).",
)
@click.option(
    "--rounds", type=click.IntRange(min=1), help="Rounds per variant with --interleave rounds."
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="Seed of the rounds' order with --interleave rounds (default: drawn and recorded); "
    "with --repeat, repeat k uses SEED + k - 1.",
)
@click.option(
    "--host-reference",
    metavar="on|off",
    help="on: time a reference loop before each sample and set aside the samples the host "
    "slowed (both figures kept); off: take no reference, set nothing aside "
    "(default: the engine's).",
)
@click.option(
    "--shield",
    type=click.Choice(["weight"]),
    help="weight: run the engine in a cgroup of the highest CPU weight, so other work of "
    "ordinary weight gets the CPU after the measuring tasks (needs root or a delegated "
    "cgroup; otherwise the run goes on unshielded and says why; off by default). "
    "docs/accuracy.md#shielding",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1, max=MAX_REPEATS),
    help="Run the selection in N separate engine processes, one after another (even ones "
    "in reverse order), stored as one run: each figure over all of them with a hierarchical "
    f"bootstrap interval, each repeat's figure kept; compare then judges by their spread "
    f"(default {DEFAULT_REPEATS}, {QUICK_REPEATS} with --quick).",
)
@click.option(
    "--ab-wrapper",
    "ab_wrapper",
    metavar="'CMD ...'",
    help="A/B in one run: each round runs the selection once plain (arm=A) and once under "
    "CMD (arm=B; e.g. 'ctxbench-seccomp-exec allow --', 'env LD_PRELOAD=lib.so'), the "
    "order alternating (AB, BA, ...), stored as one run whose records carry arm=A|B and "
    "their figure per round; `compare RUN --ab --fail-above PCT` judges B by the paired "
    "ratio. docs/accuracy.md#ab-in-one-run",
)
@click.option(
    "--ab-rounds",
    type=click.IntRange(min=2, max=MAX_AB_ROUNDS),
    help=f"Rounds of an --ab-wrapper run (default {DEFAULT_AB_ROUNDS}); each runs the "
    "selection twice.",
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
    trace_optional: bool,
    db: str | None,
    without_spool: bool,
    json_path: Path | None,
    report_path: Path | None,
    label: str | None,
    show_all: bool,
    hosts: tuple[str, ...],
    ssh_config: Path | None,
    interleave: str | None,
    rounds: int | None,
    seed: int | None,
    host_reference: str | None,
    shield: str | None,
    repeat: int | None,
    ab_wrapper: str | None,
    ab_rounds: int | None,
) -> int:
    """Run probes (default: the whole suite), store the run, print its summary.

    PROBE is a probe name (`ctxbench list`), a family (`syscall`) or a glob
    (`'switch.*'`). Ctrl-C (or SIGTERM, SIGHUP) stops cleanly and keeps the
    finished results as a partial run.
    """
    _check_choices(params, probes, json_path, report_path, ssh_config, hosts, repeat)
    count = repeat if repeat is not None else (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    prefix = _ab_check(ab_wrapper, ab_rounds, hosts, repeat)
    if prefix is not None:
        count = 2 * (ab_rounds or DEFAULT_AB_ROUNDS)  # engine processes, for the spool
    outputs = RunOutputs(db, json_path, report_path, label, show_all)
    with open_store(db) as store:
        check_output_path(json_path, "--json", stdout=False)  # not the store, nor beside it
        check_output_path(report_path, "--report", stdout=False)
        engine = find_engine()
        options = RunOptions(
            selectors=list(probes),  # what they select is the engine's to say (plan_variants)
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
            trace_optional=trace_optional,
            interleave=interleave,
            rounds=rounds,
            seed=seed,
            host_reference=host_reference,
            shield=shield,
        )
        # The engine's own selection rules check the choices (axis values,
        # parameters, presets) before anything runs or is stored.
        variants = plan_variants(options, engine)
        if hosts:
            return run_on_hosts(
                store, list(hosts), options, label, ssh_config, report_path, show_all
            )
        return _run_here(
            store, engine, options, variants, count, prefix, ab_wrapper, without_spool, outputs
        )


@dataclass(frozen=True)
class RunOutputs:
    """Where a run measured here goes besides the store, and how it is shown."""

    db: str | None  # the --db the run was given, for the commands its messages name
    json_path: Path | None
    report_path: Path | None
    label: str | None
    show_all: bool


def _check_choices(
    params: tuple[str, ...],
    probes: tuple[str, ...],
    json_path: Path | None,
    report_path: Path | None,
    ssh_config: Path | None,
    hosts: tuple[str, ...],
    repeat: int | None,
) -> None:
    """The refusals that need neither the store nor the engine."""
    if (problem := param_problem(params, probes)) is not None:
        raise BadInput(problem)
    check_output_path(json_path, "--json", stdout=False)
    check_output_path(report_path, "--report", stdout=False)
    check_writable(report_path, "--report")
    if ssh_config is not None and not hosts:
        raise click.UsageError("--ssh-config is for --host runs; give --host DEST too")
    if hosts and json_path is not None:
        raise click.UsageError(
            "--json takes one run; with --host, export each stored run (`ctxbench export RUN`)"
        )
    if hosts and repeat is not None and repeat > 1:
        raise click.UsageError(
            "--repeat is not supported with --host yet; run each host without --repeat"
        )


def _run_here(
    store: Store,
    engine: Path,
    options: RunOptions,
    variants: list[dict[str, Any]],
    count: int,
    prefix: list[str] | None,
    ab_wrapper: str | None,
    without_spool: bool,
    outputs: RunOutputs,
) -> int:
    """Measure here (COUNT engine processes; with PREFIX, the A/B rounds
    under the wrapper), store the run, show it; the exit status."""
    copy = open_copy(outputs.json_path)
    with StopSignals() as stop:
        reserve = SPOOL_BYTES_PER_RECORD * (len(variants) * count + 2)
        with Spool(store.spool_dir, store_location=store.command_target, reserve=reserve) as spool:
            _check_spool(spool, without_spool)
            if prefix is not None:
                from ctxbench.cli.ab_run import measure_ab

                assert ab_wrapper is not None
                records, engine_runs = measure_ab(
                    options, engine, prefix, ab_wrapper, count // 2, copy, spool, stop
                )
            else:
                records, engine_runs = _measure(options, engine, variants, count, copy, spool, stop)
            problems = [problem for each in engine_runs for problem in each.problems]
            failure = next((f for each in engine_runs if (f := each.failure())), None)
            interrupted = any(each.interrupted for each in engine_runs)
            for problem in problems[:5]:
                say(f"ctxbench: warning: {problem}")
            run_records = _run_to_store(records, failure, interrupted, stop, spool)
            if run_records is None:  # stopped before anything was finished
                return stop.exit_code
            stored = _store(store, run_records, outputs.label, spool)
        side_failure, stdout_closed = _show_stored_run(stored, store, copy, outputs)
    if side_failure is not None:
        raise side_failure
    if problems:
        raise EngineError(
            f"{len(problems)} engine output line(s) were not valid records "
            f"(first: {problems[0]}); the valid ones were stored"
        )
    if failure is not None:
        raise EngineError(f"{failure}; the finished results were stored as a partial run")
    if stop.received is not None or interrupted:
        return stop.exit_code
    return EXIT_BROKEN_PIPE if stdout_closed else 0


def _check_spool(spool: Spool, without_spool: bool) -> None:
    """A run that no spool can keep is refused before it measures, unless
    --without-spool says to run anyway."""
    if spool.ready:
        return
    if not without_spool:
        raise CtxbenchError(
            f"{spool.refusal()}; nothing was run: free some space, choose "
            "another --db, or give --without-spool to run anyway"
        )
    say(f"ctxbench: warning: {spool.refusal()}; running anyway (--without-spool)")
    spool.without_room()


def _run_to_store(
    records: list[dict[str, Any]],
    failure: EngineError | BadInput | None,
    interrupted: bool,
    stop: StopSignals,
    spool: Spool,
) -> RunRecords | None:
    """The engine's records as a run to store; None where the run was stopped
    before it had anything to store (said so). Raises where nothing can be
    stored: no env record, no result, or every result unsupported here."""
    if not any(r["kind"] == "env" for r in records):
        if failure is not None:
            raise failure
        if stop.received is not None or interrupted:
            say("interrupted before the engine wrote anything; nothing stored")
            return None
        raise EngineError("the engine wrote no env record; nothing stored")
    run_records = group_run(records, "engine output")
    if not run_records.results:
        # A run without a result would only become `latest`.
        spool.discard = True
        if failure is not None:
            raise EngineError(f"{failure}; no result was finished, nothing stored")
        if stop.received is not None or interrupted:
            say("interrupted before the first result; nothing stored")
            return None
        raise EngineError("the engine wrote no result; nothing stored")
    reason = shared_unsupported_reason(run_records.results)
    if reason is not None:
        spool.discard = True
        raise EngineError(
            f"nothing was measured: all {len(run_records.results)} results are "
            f"unsupported here ({reason}); nothing stored"
        )
    return run_records


def _store(store: Store, run_records: RunRecords, label: str | None, spool: Spool) -> StoredRun:
    """The run stored; where the store refuses it, the error says the spool
    keeps it and how to store it later."""
    try:
        return store_run(store, run_records, "run", label)
    except (CtxbenchError, sqlite3.Error, OSError) as error:
        spool.reported = True
        why = error.strerror if isinstance(error, OSError) else str(error)
        failure = CtxbenchError(
            f"the run was measured but could not be stored in {store.location} "
            f"({why}); {spool.hint()}"
        )
        failure.exit_code = getattr(error, "exit_code", CtxbenchError.exit_code)
        raise failure from None


SEEDS = 2**32  # the engine's --seed is a 32-bit number


def _ab_check(
    wrapper: str | None, rounds: int | None, hosts: tuple[str, ...], repeat: int | None
) -> list[str] | None:
    """--ab-wrapper's command as words (None without it); usage errors for
    what it does not go with."""
    if wrapper is None:
        if rounds is not None:
            raise click.UsageError("--ab-rounds goes with --ab-wrapper 'CMD ...'")
        return None
    if hosts:
        raise click.UsageError("--ab-wrapper runs here only; leave out --host")
    if repeat is not None and repeat > 1:
        raise click.UsageError(
            "--ab-wrapper runs each arm once per round already; leave out --repeat "
            "(--ab-rounds N sets the rounds)"
        )
    try:
        return wrapper_words(wrapper)
    except ValueError as error:
        raise BadInput(str(error)) from None


def _measure(
    options: RunOptions,
    engine: Path,
    variants: list[dict[str, Any]],
    count: int,
    copy: LineFile | None,
    spool: Spool,
    stop: StopSignals,
) -> tuple[list[dict[str, Any]], list[EngineRun]]:
    """The run's records and the engine runs that made them: one engine
    process, or COUNT of them (``--repeat``) merged into one run
    (``repeats.merge_repeats``). A repeat that fails or is stopped ends the
    repeats; what was measured until then is the run."""
    if count == 1:
        engine_run = EngineRun(options, engine=engine)
        return stream_engine_run(engine_run, copy, spool, stop), [engine_run]
    # The probes in the selection's order, reversed for even repeats (a
    # preset keeps its own order).
    probes = list(dict.fromkeys(variant["probe"] for variant in variants))
    repeats, engine_runs = [], []
    for number in range(1, count + 1):
        if stop.received is not None:
            break
        selectors = options.selectors if options.preset else repeat_selectors(probes, number)
        seed = None if options.seed is None else (options.seed + number - 1) % SEEDS
        engine_run = EngineRun(replace(options, selectors=selectors, seed=seed), engine=engine)
        engine_runs.append(engine_run)
        say(f"repeat {number} of {count}")
        spool.mark_repeat(number, count)  # a killed run's spool is importable as one run
        records = stream_engine_run(engine_run, None, spool, stop)
        if any(record["kind"] == "env" for record in records):
            repeats.append(records)
        if engine_run.interrupted or engine_run.failure() is not None:
            break
    merged = merge_repeats(repeats, asked=count) if repeats else []
    if copy is not None:
        for record in merged:
            copy.write(record)
        copy.close()
    return merged, engine_runs


def _show_stored_run(
    stored: StoredRun, store: Store, copy: LineFile | None, outputs: RunOutputs
) -> tuple[OutputError | None, bool]:
    """The outputs of a stored run: the summary (and with show_all the table),
    the status line, the report.
    One failing does not stop the others. Returns the failures, as one line
    that says the run is safe and how to write that output again, and
    whether stdout's reader went away (no message for that: exit 141)."""
    run_id = stored.run_id
    db, report_path = outputs.db, outputs.report_path
    failures: list[str] = []
    closed = False
    try:
        print_run(stored, outputs.show_all)
        sys.stdout.flush()
    except OSError as error:
        discard_stdout()
        if error.errno == errno.EPIPE:  # a reader that went away wanted no more: no message
            closed = True
        else:
            failures.append(
                f"stdout failed ({error.strerror}); "
                f"`{_command(['show', run_id], db, store)}` shows it"
            )
    state = "partial run" if stored.info.interrupted else "run"
    say(f"stored {state} {run_id} ({len(stored.results)} results) in {store.location}")
    if copy is not None and copy.error is not None:
        failures.append(
            f"--json {copy.path} failed after {copy.lines} records ({copy.error.strerror}); "
            f"`{_command(['export', run_id, '-o', str(copy.path)], db, store)}` "
            "writes them all again"
        )
    if report_path is not None:
        try:
            write_report([stored], report_path)
        except OutputError as error:
            again = _command(["report", run_id, "-o", str(report_path)], db, store)
            failures.append(f"{error}; `{again}` writes it again")
    if not failures:
        return None, closed
    return OutputError(f"run {run_id} is stored and safe, but " + "; and ".join(failures)), False
