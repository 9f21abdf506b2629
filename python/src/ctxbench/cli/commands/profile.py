"""``ctxbench profile``: counts a program's events and prices them with stored figures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from ctxbench.acquire.runner import run_profile
from ctxbench.analysis import profile_price
from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import say
from ctxbench.errors import BadInput, StoreError
from ctxbench.records.environment import Environment
from ctxbench.records.profile import Profile, read_profile
from ctxbench.views import profile as view


def run_engine_profile(args: list[str]) -> Profile:
    """The engine's profile record, read back from a file so that the
    program's own output stays on the terminal."""
    with tempfile.TemporaryDirectory(prefix="ctxbench-profile-") as tmp:
        out = Path(tmp) / "profile.json"
        run_profile(args, out)
        return read_profile(out)


def store_lookup(db: str | None, env: Environment) -> profile_price.Lookup:
    """Figures from the store's runs of the machine of a profile's environment, newest first."""

    def lookup(
        wanted: list[profile_price.Wanted],
    ) -> dict[profile_price.Wanted, profile_price.Figure]:
        try:
            store = open_store(db, create=False)
        except StoreError:
            return {}  # no store yet: every figure is missing, and the view says what to run
        with store:
            infos = [i for i in reversed(store.runs()) if i.origin != "riscv"]

            def runs():
                for info in infos:
                    stored = store.load(info.run_id)
                    if profile_price.same_machine(stored.env, env):
                        yield stored.run_id, stored.results

            return profile_price.find_figures(wanted, runs())

    return lookup


def stored_profiles(db: str | None, refs: tuple[str, ...] | list[str]) -> list[Profile]:
    """The stored profiles REFS name, when every one names a profile and none
    a run (so that `show` and `report` take a profile's id as they take a
    run's); else an empty list."""
    try:
        store = open_store(db, create=False)
    except StoreError:
        return []
    with store:
        return _all_profiles(store, refs)


def profiles_compared(store: Any, refs: tuple[str, ...] | list[str]) -> list[Profile]:
    """For `compare`, in the store it has open: the two stored profiles REFS
    name (before and after a change to the program); an empty list when they
    name runs; one line (BadInput) for a stored profile's id given among runs
    or with more than one other."""
    profiles = _all_profiles(store, refs) if len(refs) == 2 else []
    if profiles:
        return profiles
    for ref in refs:
        if store.profile_id(ref) and not _names_a_run(store, ref):
            raise BadInput(
                f"'{ref}' is a stored profile, not a run: compare it with another stored "
                "profile by id (`ctxbench profile --list` lists them)"
            )
    return []


def _all_profiles(store: Any, refs: tuple[str, ...] | list[str]) -> list[Profile]:
    ids = [store.profile_id(ref) for ref in refs]
    if not all(ids) or any(_names_a_run(store, ref) for ref in refs):
        return []  # a run's reference too: the run wins
    return [store.load_profile(i) for i in ids if i]


def _names_a_run(store: Any, reference: str) -> bool:
    """Whether REFERENCE names a run, or could (a prefix of several runs' ids,
    which the run commands call ambiguous): then it is left to them."""
    try:
        store.resolve(reference)
    except BadInput:
        return any(info.run_id.startswith(reference) for info in store.runs())
    return True


def profile_text(record: Profile, db: str | None) -> str:
    """What `show` prints of a profile: its counts, price and counterfactuals."""
    lookup = store_lookup(db, record.env)
    price = profile_price.price(record, lookup)
    counterfactuals = profile_price.counterfactuals(price, lookup)
    return view.counts_text(record) + view.price_text(price, counterfactuals, record.wakeup_latency)


def print_profile(record: Profile, db: str | None, as_json: bool) -> None:
    """A stored or recorded profile with its price and what would change it."""
    if as_json:
        lookup = store_lookup(db, record.env)
        price = profile_price.price(record, lookup)
        counterfactuals = profile_price.counterfactuals(price, lookup)
        click.echo(json.dumps(view.profile_dict(record, price, counterfactuals), indent=2))
        return
    click.echo(profile_text(record, db), nl=False)


def print_profile_comparison(a: Profile, b: Profile, db: str | None, as_json: bool) -> None:
    """Two profiles side by side, count by count, and the direct cost of each."""
    rows = profile_price.compare_counts(a, b)
    pa, pb = (profile_price.price(r, store_lookup(db, r.env)) for r in (a, b))
    if as_json:
        click.echo(json.dumps(view.comparison_dict(a, b, rows, (pa, pb)), indent=2))
    else:
        click.echo(view.compare_text(a, b, rows, (pa, pb)), nl=False)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--pid", type=int, help="Attach to this running process instead of running COMMAND.")
@click.option("--duration", type=float, help="With --pid: seconds to count.")
@click.option(
    "--from",
    "from_file",
    type=click.Path(path_type=Path),
    help="Price a record `ctxbench-engine profile --out FILE` wrote, instead of profiling.",
)
@click.option(
    "--measure",
    is_flag=True,
    help="Where a figure is missing from the store, measure it first (ctxbench run --quick).",
)
@click.option(
    "--trace",
    is_flag=True,
    help="Also record every CPU's switches: wake-ups that found the target CPU idle, and each"
    " wake-up's latency in place, beside the figures that price them (root or CAP_PERFMON).",
)
@click.option("--no-store", is_flag=True, help="Do not store the profile.")
@click.option("--list", "list_profiles", is_flag=True, help="List the stored profiles.")
@click.option(
    "--show", "show_ref", metavar="ID", help="A stored profile ('latest', an id or prefix)."
)
@click.option(
    "--compare", "compare_refs", nargs=2, metavar="A B", help="Two stored profiles side by side."
)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the profile and its price as JSON.")
def profile(
    command: tuple[str, ...],
    pid: int | None,
    duration: float | None,
    from_file: Path | None,
    measure: bool,
    trace: bool,
    no_store: bool,
    list_profiles: bool,
    show_ref: str | None,
    compare_refs: tuple[str, str] | None,
    db: str | None,
    as_json: bool,
) -> None:
    """What switching costs your program: counts its switches, wake-ups, system
    calls, faults, creations and signals (ctxbench profile -- CMD [ARGS], or
    --pid PID --duration S), prices them with this machine's stored figures, and
    stores the profile (--list, --show ID, --compare A B read them back)."""
    reading = list_profiles or show_ref or compare_refs
    if reading and (command or pid is not None or from_file):
        raise BadInput("--list, --show and --compare read stored profiles: give no command")
    if trace and (reading or from_file):
        raise BadInput("--trace goes with a command or --pid: it records while profiling")
    if list_profiles:
        _print_profile_list(db, as_json)
        return
    if compare_refs:
        with open_store(db, create=False) as store:
            a, b = (store.load_profile(ref) for ref in compare_refs)
        print_profile_comparison(a, b, db, as_json)
        return
    if show_ref:
        with open_store(db, create=False) as store:
            record = store.load_profile(show_ref)
        no_store = True
    elif from_file is not None:
        if command or pid is not None:
            raise BadInput("--from prices a recorded profile: give no command and no --pid")
        record = read_profile(from_file)
    else:
        record = _profile_now(command, pid, duration, trace)
    if not no_store and not from_file:
        with open_store(db) as store:
            say(f"stored profile {store.add_profile(record)} in {store.location}")
    lookup = store_lookup(db, record.env)
    price = profile_price.price(record, lookup)
    if price.missing and measure:
        _measure_missing(price, db)
    print_profile(record, db, as_json)


def _print_profile_list(db: str | None, as_json: bool) -> None:
    """The stored profiles, one line each (or a JSON list)."""
    with open_store(db, create=False) as store:
        rows = store.profiles()
    if as_json:
        click.echo(json.dumps([{"id": i, "started_at": t, "target": c} for i, t, c in rows]))
    else:
        click.echo("".join(f"{i}  {t}  {c}\n" for i, t, c in rows), nl=False)


def _profile_now(
    command: tuple[str, ...], pid: int | None, duration: float | None, trace: bool
) -> Profile:
    """The engine's profile of COMMAND (or of the process PID): the usual
    mistakes refused in one line before the engine starts."""
    if command and "/" not in command[0] and shutil.which(command[0]) is None:
        raise BadInput(f"cannot run '{command[0]}': not found on PATH; give a program or its path")
    if command and "/" in command[0] and not os.access(command[0], os.X_OK):
        raise BadInput(f"cannot run '{command[0]}': no such executable file")
    if pid is not None and not Path(f"/proc/{pid}").exists():
        raise BadInput(f"--pid {pid}: no such process; give the PID of a running process")
    args: list[str] = []
    if pid is not None:
        args += ["--pid", str(pid)]
    if duration is not None:
        args += ["--duration", repr(duration)]
    if trace:
        args.append("--trace")
    if command:
        args += ["--", *command]
    return run_engine_profile(args)


def _measure_missing(price: profile_price.Price, db: str | None) -> None:
    """Measure the figures the price misses (ctxbench run --quick of their
    probes, in a child of this very package) into the store."""
    selection = sorted({w.probe for w in price.missing})
    say(f"measuring {' '.join(selection)} (ctxbench run --quick)")
    run = [sys.executable, "-m", "ctxbench", "run", "--quick", *selection]
    if db:
        run += ["--db", db]
    # The child runs this very package (not another install of ctxbench).
    package_root = str(Path(__file__).resolve().parents[3])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(run, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=path))
    if done.returncode != 0:
        say(f"measuring failed (exit {done.returncode}); pricing with what is stored")
