"""``ctxbench compare``: runs side by side, answers first, and the --fail-above gate."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click

from ctxbench import units
from ctxbench.analysis.compare.comparison import Comparison
from ctxbench.cli.commands.db import db_option, open_store
from ctxbench.cli.console import QuietStream, new_console
from ctxbench.cli.gate_status import EXIT_INCONCLUSIVE, gate_status
from ctxbench.cli.option_types import FiniteFloat
from ctxbench.errors import BadInput
from ctxbench.records.runs import StoredRun
from ctxbench.views import tables
from ctxbench.views.compare.comparison import summary_lines


@click.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN_A RUN_B [RUN...]")
@db_option
@click.option(
    "--alpha",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the U test.",
)
@click.option(
    "--min-effect",
    type=FiniteFloat(0, 10),
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
    help="A gate: each row is slower, not slower (it could have seen a slowdown of PCT "
    "percent, at 80% power) or inconclusive (it could not; says what would decide it). "
    "Exit 0 only when every row is not slower, 1 when a row is slower, "
    f"{EXIT_INCONCLUSIVE} otherwise.",
)
@click.option(
    "--allow-inconclusive",
    "allow_inconclusive",
    metavar="PCT",
    callback=lambda ctx, param, value: _percentage(value, "--allow-inconclusive", 100.0),
    help="With --fail-above: pass even when up to PCT percent of the rows are "
    "inconclusive (they are still listed); at least one row must be not slower.",
)
@click.option(
    "--why",
    "split",
    is_flag=True,
    help="Split each row that differs into its parts (kernel entry/exit, the primitive's own "
    "work, the address-space switch, waking an idle CPU, the rest; the traced phases where "
    "both runs were traced): which grew, by how much with an interval, and the environment "
    "difference that acts on the part that moved. docs/reading-a-difference.md",
)
@click.option(
    "--pair",
    "pair",
    metavar="PARAM[,PARAM]",
    help="Pair B's variants with A's that differ only in these parameters (e.g. idle: "
    "idle=free in A against idle=held in B; between: threads against processes; cpus: "
    "pinned against not) and say per pair whether the change helped. Two runs only.",
)
@click.option(
    "--ab",
    "ab",
    is_flag=False,
    flag_value="",
    metavar="[NAME=A:B]",
    help="One run's A and B judged round by round by their paired ratio: a `run "
    "--ab-wrapper` run (arm=A:B), or two values of a parameter the run interleaved, e.g. "
    "--ab seccomp=none:profile. With --fail-above, each pair is slower, not slower or "
    "inconclusive and the exit status is the gate's. docs/accuracy.md#ab-in-one-run",
)
@click.option(
    "--confirm",
    "confirm",
    is_flag=True,
    help="With --fail-above and two runs, where a row is slower: measure those rows again, "
    "here and now (a `ctxbench run` of just those variants with B's options, stored in the "
    "same store): a row slower again stays slower; a row not slower again is measured a third "
    "time, and two of the three runs decide it (else it is inconclusive, not repeated). "
    "docs/accuracy.md#confirming-a-failure",
)
@click.option(
    "--confirm-with",
    "confirm_with",
    metavar="RUN",
    multiple=True,
    help="Like --confirm, with RUN (taken after B, as B was) as the run that measures the "
    "slower rows again; given twice, the second RUN is the third run.",
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
    allow_inconclusive: float | None,
    split: bool,
    pair: str | None,
    ab: str | None,
    confirm: bool,
    confirm_with: tuple[str, ...],
) -> int:
    """Runs side by side, answers first: each key figure's ratio with its
    interval, judged against the row's run-to-run noise (the runs' repeats,
    else this machine's history in the store, else the within-run samples
    with a floor; each row says which), the environment differences that may
    explain them, the summary line; --all adds the table of every row.

    Rows whose tasks ran on a different number of CPUs measure something
    else: they are marked, left out of the summary line, and inconclusive
    for --fail-above. A suspect row is compared with its spread in its noise."""
    from ctxbench.analysis.compare.gate import gate
    from ctxbench.views.export import comparison_dict

    if allow_inconclusive is not None and fail_above is None:
        raise click.UsageError("--allow-inconclusive goes with --fail-above PCT")
    if confirm and confirm_with:
        raise click.UsageError("give --confirm (measure again now) or --confirm-with RUN, not both")
    if len(confirm_with) > 2:
        raise click.UsageError(
            "--confirm-with takes at most two runs: the run again and the third run"
        )
    if (confirm or confirm_with) and (
        fail_above is None or ab is not None or len(run_refs) != 2 or pair or split or baseline
    ):
        raise click.UsageError(
            "--confirm and --confirm-with judge a gate again: give --fail-above PCT and two "
            "runs (RUN_A RUN_B), without --ab, --pair, --why or --baseline"
        )
    if ab is not None:
        from ctxbench.cli.ab_compare import compare_ab

        if pair is not None or split or baseline is not None or show_all:
            raise click.UsageError("--ab judges one A/B run; leave out --pair, --why, "
                                   "--baseline and --all")  # fmt: skip
        return compare_ab(run_refs, ab, db, fail_above, allow_inconclusive, as_json)
    if len(run_refs) < 2:
        raise click.UsageError("compare needs at least two runs (RUN_A RUN_B)")
    from ctxbench.cli.commands.profile import print_profile_comparison, profiles_compared

    with open_store(db, create=False) as store:
        profiles = profiles_compared(store, run_refs)
        if not profiles:
            runs, pairing, comparison = _runs_compared(
                store, run_refs, baseline, split, pair, alpha, min_effect
            )
    if profiles:  # two stored profiles: before and after a change to the program
        if fail_above is not None or pair is not None or split or baseline is not None:
            raise BadInput(
                "two stored profiles are compared count by count: leave out --fail-above, "
                "--pair, --why and --baseline"
            )
        print_profile_comparison(profiles[0], profiles[1], db, as_json)
        return 0
    judged = None if fail_above is None else gate(comparison, fail_above, allow_inconclusive or 0.0)
    if judged is not None and judged.failed and (confirm or confirm_with):
        judged = _confirmed(judged, runs, db, confirm_with, alpha, min_effect)
    if pairing is not None or split:
        _print_why_or_pairs(runs, pairing, split, as_json, comparison, judged)
    elif as_json:
        click.echo(json.dumps(comparison_dict(comparison, judged), indent=2, allow_nan=False))
    else:
        _print_comparison(runs, comparison, show_all, only_common)
    return gate_exit(comparison, judged, as_json)


def _runs_compared(
    store: Any,
    run_refs: tuple[str, ...],
    baseline: str | None,
    split: bool,
    pair: str | None,
    alpha: float,
    min_effect: float,
) -> tuple[list[StoredRun], Any, Comparison]:
    """The runs RUN_REFS name (the --baseline first), their pairing under
    --pair, and the one comparison of them."""
    runs = [store.load(ref) for ref in run_refs]
    if baseline is not None:
        base_id = store.resolve(baseline)
        if base_id not in [run.run_id for run in runs]:
            raise BadInput(f"--baseline {baseline} is not one of the runs compared")
        runs.sort(key=lambda run: run.run_id != base_id)  # stable: others keep their order
    ids = [run.run_id for run in runs]
    if len(set(ids)) != len(ids):
        raise BadInput(f"the same run is named twice ({', '.join(ids)}); compare different runs")
    if split and len(runs) != 2:
        raise click.UsageError(
            "--why splits one run against another: give two runs (RUN_A RUN_B), "
            "or --baseline and one run at a time"
        )
    pairing = None if pair is None else _pairing(runs, pair)
    comparison = build_comparison(
        store,
        runs if pairing is None else pairing.runs,
        alpha=alpha,
        min_effect=min_effect,
        waive=() if pairing is None else pairing.names,
    )
    return runs, pairing, comparison


def build_comparison(
    store: Any,
    runs: list[StoredRun],
    alpha: float = 0.05,
    min_effect: float = 0.05,
    waive: tuple[str, ...] = (),
    leave_out: tuple[StoredRun, ...] = (),
) -> Comparison:
    """The one comparison a `compare` builds, whatever it prints: every row
    judged by ``compare_runs`` against the store's history of run A's
    machine. The key figures, --all, --json, --why, --pair and the gate all
    render this object. WAIVE: the parameters --pair paired on (``cpus``
    keeps a row whose sides ran on a different number of CPUs). LEAVE_OUT:
    runs kept out of the history (a confirmation's B: the run it checks)."""
    from ctxbench.analysis.compare.comparison import compare_runs
    from ctxbench.analysis.compare.machine_history import loop_history, variant_figures
    from ctxbench.analysis.compare.pairs import waive_placement
    from ctxbench.store.earlier_runs import history_runs

    earlier = history_runs(store, [*runs, *leave_out])
    comparison = compare_runs(
        runs,
        alpha=alpha,
        min_effect=min_effect,
        history=variant_figures(earlier),
        loop_history=loop_history(earlier),
    )
    return waive_placement(comparison, waive) if waive else comparison


def _confirmed(
    judged: Any,
    runs: list[StoredRun],
    db: str | None,
    confirm_with: tuple[str, ...],
    alpha: float,
    min_effect: float,
) -> Any:
    """JUDGED with its slower rows judged again (``analysis.compare.gate.confirm``)
    and those not repeated or slower twice a third time (``analysis.compare.gate.decide``):
    by the
    runs CONFIRM_WITH names, or by runs that measure them now."""
    from ctxbench.analysis.compare.gate import (
        confirm,
        decide,
        slower_variants,
        third_variants,
    )

    first = runs[1]
    again_id = confirm_with[0] if confirm_with else None
    if again_id is None:
        from ctxbench.cli.confirm_run import measure_again

        again_id = measure_again(first, slower_variants(judged), db)
    second, again_id = _judged_again(judged, runs, db, again_id, (), alpha, min_effect)
    judged = confirm(judged, second, again_id)
    variants = third_variants(judged)
    if not variants or len(confirm_with) == 1:
        return judged
    third_id = confirm_with[1] if confirm_with else None
    if third_id is None:
        from ctxbench.cli.confirm_run import measure_again

        third_id = measure_again(first, variants, db, third=True)
    third, third_id = _judged_again(judged, runs, db, third_id, (again_id,), alpha, min_effect)
    return decide(judged, third, third_id)


def _judged_again(
    judged: Any,
    runs: list[StoredRun],
    db: str | None,
    ref: str,
    taken: tuple[str, ...],
    alpha: float,
    min_effect: float,
) -> tuple[Any, str]:
    """The gate of run REF against A, at JUDGED's settings, with B and the
    runs TAKEN after it kept out of the history; REF's run id."""
    from ctxbench.analysis.compare.gate import gate

    reference, first = runs
    with open_store(db, create=False) as store:
        again = store.load(ref)
        if again.run_id in (reference.run_id, first.run_id, *taken):
            raise BadInput(
                f"--confirm-with {ref} is one of the runs compared or already taken; give "
                "runs taken after B, each once"
            )
        kept_out = (first, *(store.load(run_id) for run_id in taken))
        comparison = build_comparison(
            store, [reference, again], alpha=alpha, min_effect=min_effect, leave_out=kept_out
        )
    return gate(comparison, judged.percent, judged.allow_inconclusive, judged.power), again.run_id


def gate_exit(comparison: Comparison, judged: Any, as_json: bool) -> int:
    """The gate's tail, whatever was printed before it: its lines (after the
    tables on stdout, or on stderr beside --json's data) and the exit status
    (0 passed, 1 failed, EXIT_INCONCLUSIVE); 0 without --fail-above."""
    from ctxbench.views.compare.gate import gate_lines

    if judged is None:
        return 0
    for line in gate_lines(comparison, judged):
        click.echo(units.terminal_text(line), file=QuietStream(sys.stderr) if as_json else None)
    return gate_status(judged.outcome)


def _print_comparison(
    runs: list[StoredRun], comparison: Comparison, show_all: bool, only_common: bool
) -> None:
    """Answers first: the runs, the key figures against run A, the other rows
    that differ, the environment differences of interest, the summary line,
    the matrices per pair class; with SHOW_ALL then the legend, the whole
    environment diff and every row. Every line renders COMPARISON."""
    from ctxbench.analysis.summary.build import summarize
    from ctxbench.views.machines import machine_lines

    summary = summarize(runs, comparison=comparison)
    console = new_console()
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
        return
    console.print(tables.runs_legend(comparison))
    console.print(tables.env_diff_table(comparison))
    console.print(tables.comparison_table(comparison, width=console.width, only_common=only_common))
    for line in summary_lines(comparison):
        console.print(line, markup=False, highlight=False)


def _pairing(runs: list[StoredRun], pair: str) -> Any:
    """compare --pair PARAM[,PARAM]: B's variants paired with A's that differ
    only in those parameters; a usage error or bad input naming the fix."""
    from ctxbench.analysis.compare.pairs import pair_runs, unknown_names

    names = tuple(name.strip() for name in pair.split(",") if name.strip())
    if len(runs) != 2 or not names:
        raise click.UsageError(
            "--pair takes parameter names (e.g. --pair idle) and compares two runs: RUN_A RUN_B"
        )
    unknown = unknown_names(runs, names)
    if unknown:
        known = sorted({n for run in runs for r in run.results for n in r.params})
        raise BadInput(
            f"no variant of either run has the parameter {', '.join(unknown)}; "
            f"the runs' parameters are {', '.join(known) or 'none'}"
        )
    pairing = pair_runs(runs[0], runs[1], names)
    if not pairing.paired:
        raise BadInput(
            f"no variant of B differs from one of A only in {', '.join(names)}; compare "
            "runs that measured the same variants with other values of it"
        )
    return pairing


def _print_why_or_pairs(
    runs: list[StoredRun],
    pairing: Any,
    split: bool,
    as_json: bool,
    comparison: Comparison,
    judged: Any,
) -> None:
    """compare --pair and/or --why: the pairs and whether each change helped,
    then where each difference sits; both render COMPARISON and its gate."""
    from rich.text import Text

    from ctxbench.analysis.compare.difference_parts import why
    from ctxbench.views.compare.difference import pair_lines, why_lines
    from ctxbench.views.export import comparison_dict, why_dict

    split_result = why(comparison, measured=runs) if split else None
    if as_json:
        out = comparison_dict(comparison, judged)
        if split_result is not None or pairing is not None:
            out.update(why_dict(split_result, pairing))
        click.echo(json.dumps(out, indent=2, allow_nan=False))
        return
    console = new_console()
    lines = []
    if pairing is not None:
        lines += pair_lines(pairing, comparison, console.width, judged)
    if split_result is not None:
        lines += ([Text("")] if lines else []) + why_lines(split_result, comparison, console.width)
    for line in lines:
        console.print(line)


def _percentage(value: str | None, option: str, most: float = math.inf) -> float | None:
    """'5' or '5%' as 5.0 (at most MOST); anything else is a usage error naming the fix."""
    if value is None:
        return None
    text = value.strip().removesuffix("%").strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or number > most:
        raise click.BadParameter(
            f"{value!r} is not a percentage; give a number of percent such as 5 (for 5%)"
            + (f", at most {most:g}" if math.isfinite(most) else ""),
            param_hint=option,
        )
    return number
