"""What the summary of one or more stored runs says: pure data, no rendering.

The one home of "answers first" (issue 11). The HTML report draws it, the
terminal prints it; neither decides what it holds. Every figure in it is a
figure of a stored record (a median, its confidence interval) or comes from
the existing analysis modules: ``ctxbench.analysis.explain.explanation`` for the decomposition of
a switch, ``ctxbench.analysis.compare.comparison`` for ratios, intervals, significance and the
environment diff. Nothing is estimated; what a run does not hold is absent.

API (stable; later changes only add)::

    summarize(runs: list[StoredRun], *, comparison: Comparison | None = None) -> Summary

    Summary
      .runs: list[RunSummary]          one per run, in the order given (A, B, ...)
      .machines: Machines | None       two or more runs: the others against run A
      .ladder / .same_vs_cross / .explanation / .explained / .verdicts
                                       run A's, for the one-run case

    RunSummary
      .name: str                       'A: label (machine)'
      .run_id, .machine: str
      .ladder: list[Rung]              cheapest first (measured cost), only rungs the run
                                       measured; runs after A take A's variant where they
                                       have it, in A's order
      .timer: list[str]                the timer the ladder's figures were corrected for
      .answers: list[Answer]           the seed questions the run answers (analysis.summary.answers)
      .same_vs_cross: list[SameVsCross]
      .explained: Explained | None     explain(run.results) when it explains anything
      .explanation: Explanation | None the switch drawn as a waterfall (WATERFALL_PREFERENCE)
      .verdicts: Verdicts
      .sandbox: list[str]              what sat on every system call (ctxbench.sandbox.warnings)

    Point      one record's figure: probe, params, family, unit, median, ci_low,
               ci_high (None when absent), status, reasons (codes), details
               (the record's own words), anchor (id of its family section,
               ``section_id``), result (the record)
    Rung       key, label, point
    SameVsCross probe, primitive, between, same: Point | None, cross: Point | None,
               ratio (cross median / same median, None unless both measured switches),
               no_ratio (a side did not switch: views/summary/why.py says so in words)
    Verdicts   counts {status: n} (every status of records.STATUSES), notes: list[VerdictNote]
    VerdictNote point, reasons (each distinct reason code once; views.reasons words them)
    Machines   reference: str, others: list[str] (run names), comparison: Comparison
               (compare_runs of the whole runs), figures: list[MachineFigure],
               env: list[EnvDifference], key_comparison: Comparison (the
               comparison's rows of the key figures only; a run that did not
               measure A's variant as written, matched by ``variant_key``: a
               record without the ``idle`` knob, from an older engine, is
               idle=free, judged by the comparison's ``judge_cell``)
    MachineFigure key, label, probe, params, unit, reference_median,
               cells: list[MachineCell] (one per other run), row (the comparison's)
    MachineCell median, ratio, ci_low, ci_high, p_value, significant, decision,
               excluded (why not comparable), note,
               variant (the other run's own variant where it did not measure A's)
    EnvDifference key, label, values (one per run, None where absent)

The rules (which record stands for a rung) live in analysis.summary.rules,
the dataclasses in analysis.summary.data; a reason code's sentence in
views.reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ctxbench import units
from ctxbench.analysis.compare.comparison import (
    Cell,
    Comparison,
    Judging,
    Row,
    compare_runs,
    judge_cell,
)
from ctxbench.analysis.compare.comparison import summarize as compare_summary
from ctxbench.analysis.explain.explanation import REST, Explained, Explanation, explain
from ctxbench.analysis.explain.guest import guest_of
from ctxbench.analysis.explain.interference import run_load
from ctxbench.analysis.summary.answers import answers
from ctxbench.analysis.summary.data import (  # noqa: F401 (section_id, point: their users import them here)
    EnvDifference,
    MachineCell,
    MachineFigure,
    Machines,
    Point,
    Rung,
    RunSummary,
    SameVsCross,
    Summary,
    VerdictNote,
    Verdicts,
    point,
    section_id,
)
from ctxbench.analysis.summary.rules import (
    ABSENT_MEANS,
    ENV_OF_INTEREST,
    LADDER,
    SAME_VS_CROSS_MATCH,
    SWITCH_FAMILY,
    SWITCH_KNOBS,
    WATERFALL_PREFERENCE,
    pick,
)
from ctxbench.records import sandbox
from ctxbench.records.naming import params_key, variant_name
from ctxbench.records.result import Result
from ctxbench.records.runs import StoredRun
from ctxbench.records.schema import STATUSES

_NONE = object()


def run_name(index: int, run: StoredRun) -> str:
    """'A: laptop (vm · Intel(R) Xeon(R) Processor · KVM guest)': the machine, in every legend."""
    return f"{units.run_letter(index)}: {run.info.label or run.run_id} ({run.info.machine})"


def _measured(result: Result | None) -> bool:
    return result is not None and result.median is not None


def ladder(results: Sequence[Result], like: list[Rung] | None = None) -> list[Rung]:
    """The rungs of LADDER the run measured, in the ladder's order. LIKE: another
    run's rungs (run A's); where this run measured the same variant (variant_key),
    that variant stands for the rung, so that runs side by side show like with like."""
    measured = [r for r in results if _measured(r)]
    by_variant = {variant_key(r): r for r in measured}
    theirs = {rung.key: variant_key(rung.point.result) for rung in like or []}
    rungs = []
    for spec in LADDER:
        same = by_variant.get(theirs[spec.key]) if spec.key in theirs else None
        if same is not None:
            rungs.append(Rung(spec.key, spec.label, point(same)))
            continue
        for probe in spec.candidates:
            chosen = pick(measured, probe, spec.match)
            if chosen is not None:
                rungs.append(Rung(spec.key, spec.label, point(chosen)))
                break
    return cheapest_first(rungs, like)


def cheapest_first(rungs: list[Rung], like: Sequence[Rung] | None = None) -> list[Rung]:
    """The ladder in order of measured cost, cheapest first (a rung without a
    figure last). LIKE: run A's rungs, whose order a run compared with it keeps."""
    if like:
        order = {rung.key: index for index, rung in enumerate(like)}
        return sorted(rungs, key=lambda rung: order.get(rung.key, len(order)))

    def cost(rung: Rung) -> tuple[int, float]:
        median = rung.point.median
        return (0, median) if median is not None and rung.point.unit == "ns" else (1, 0.0)

    return sorted(rungs, key=cost)


def not_a_switch(point: Point | None) -> bool:
    """Whether the kernel counted too few switches for this figure to be a switch
    (a yield with no other task on its CPU returns at once)."""
    if point is None:
        return False
    return point.result.verdict.has("too_few_switches")


def same_vs_cross(results: Sequence[Result]) -> list[SameVsCross]:
    """Per switch primitive and 'between': the same-CPU and the cross-CPU figure.
    None at all when no primitive has both (a run of one CPU's variants, as the
    fibers-vs-threads preset): a comparison with one side is no comparison,
    and the views leave the section and its chart out."""
    groups: dict[tuple[str, str | None], list[Result]] = {}
    for result in results:
        params = result.params
        if result.family != SWITCH_FAMILY or "cpus" not in params:
            continue
        if not set(params) <= SWITCH_KNOBS:
            continue
        between = params.get("between")
        groups.setdefault((result.probe, None if between is None else str(between)), []).append(
            result
        )
    rows = []
    for (probe, between), members in groups.items():
        # A measured record is preferred to one that only says why it is not.
        sides = []
        for cpus in ("same", "cross"):
            match = {"cpus": (cpus,), **SAME_VS_CROSS_MATCH}
            chosen = pick([r for r in members if _measured(r)], probe, match) or pick(
                members, probe, match
            )
            sides.append(point(chosen) if chosen is not None else None)
        same, cross = sides
        if same is None and cross is None:
            continue
        ratio = None
        no_ratio = not_a_switch(same) or not_a_switch(cross)
        if same and cross and same.median and cross.median is not None and not no_ratio:
            ratio = cross.median / same.median
        rows.append(
            SameVsCross(
                probe=probe,
                primitive=probe.split(".", 1)[-1],
                between=between,
                same=same,
                cross=cross,
                ratio=ratio,
                no_ratio=no_ratio,
            )
        )
    if not any(row.same is not None and row.cross is not None for row in rows):
        return []
    return rows


def verdicts(results: Sequence[Result]) -> Verdicts:
    counts = dict.fromkeys(STATUSES, 0)
    notes = []
    for result in results:
        status = result.verdict.status
        counts[status] = counts.get(status, 0) + 1
        if status != "ok":
            shown = point(result)
            notes.append(VerdictNote(shown, shown.reasons))
    return Verdicts(counts, notes)


def _featured(explained: Explained, rungs: list[Rung]) -> Explanation | None:
    by_key = {rung.key: rung for rung in rungs}
    for key in WATERFALL_PREFERENCE:
        rung = by_key.get(key)
        if rung is None:
            continue
        for candidate in explained.explanations:
            if candidate.probe == rung.point.probe and params_key(candidate.params) == params_key(
                rung.point.params
            ):
                return candidate
    return None


def is_remainder(part_name: str) -> bool:
    """The last part of every decomposition: what the run could not separate."""
    return part_name == REST


def summarize_run(index: int, run: StoredRun, like: list[Rung] | None = None) -> RunSummary:
    """One run's summary; LIKE: run A's ladder, when this run is compared with it."""
    results = run.results
    rungs = ladder(results, like)
    explained = explain(
        results, run.run_id, fork=False
    )  # the fork fit: explain's, not the summary's
    has_any = bool(explained.explanations) or explained.fork is not None
    return RunSummary(
        name=run_name(index, run),
        run_id=run.run_id,
        machine=run.info.machine,
        ladder=rungs,
        same_vs_cross=same_vs_cross(results),
        explained=explained if has_any else None,
        explanation=_featured(explained, rungs),
        verdicts=verdicts(results),
        sandbox=sandbox.warnings(run.env),
        timer=units.timer([rung.point.result for rung in rungs]),
        answers=answers(results),
        load=run_load(results),
        guest=guest_of(run.env),
    )


def _env_label(key: str) -> str | None:
    for prefix, label in ENV_OF_INTEREST:
        if key == prefix:
            return label
        if key.startswith(prefix + "."):
            return f"{label}: {key[len(prefix) + 1 :]}"
    return None


def variant_key(result: Result) -> tuple[str, str]:
    """(probe, params) with the knobs of ABSENT_MEANS left out where they have that
    value, so a record of an older engine matches its variant in a newer one."""
    params = {k: v for k, v in result.params.items() if ABSENT_MEANS.get(k, _NONE) != v}
    return result.probe, params_key(params)


def _stand_ins(
    runs: list[StoredRun], summaries: list[RunSummary]
) -> list[dict[tuple[str, str], Result]]:
    """Per run: run A's key figures this run did not measure in A's variant but
    drew in its own (its ladder's rung of the same figure), keyed by A's variant."""
    reference = {rung.key: variant_key(rung.point.result) for rung in summaries[0].ladder}
    out: list[dict[tuple[str, str], Result]] = []
    for run, summary in zip(runs, summaries, strict=True):
        have = {variant_key(result) for result in run.results if _measured(result)}
        found = {}
        for rung in summary.ladder:
            theirs = reference.get(rung.key)
            if theirs is not None and theirs not in have:
                found[theirs] = rung.point.result
        out.append(found)
    return out


def _key_row(
    comparison: Comparison,
    runs: list[StoredRun],
    reference: Result,
    stand_ins: list[dict[tuple[str, str], Result]],
) -> Row:
    """The comparison's own row of a key figure (run A's variant), each other
    run's cell as the comparison judged it; where a run did not measure A's
    variant as it is written (an older engine without a knob of
    ABSENT_MEANS, or a stand-in of its own ladder), its cell is judged by the
    comparison's ``judge_cell``, with the history of A's variant."""
    row = comparison.row(reference.probe, reference.params)
    key = variant_key(reference)
    cells = [row.cells[0] if row else Cell(reference, None, None)]
    judging = comparison.judging or Judging()
    for index, run in enumerate(runs[1:], start=1):
        cell = row.cells[index] if row else None
        other = stand_ins[index].get(key)
        if other is None and (cell is None or cell.result is None):
            alike = [r for r in run.results if variant_key(r) == key]
            other = next((r for r in alike if _measured(r)), alike[0] if alike else None)
        if other is not None or cell is None:
            cell = judge_cell(judging, reference, other, index)
        cells.append(cell)
    return Row(
        probe=reference.probe,
        family=reference.family,
        params=reference.params,
        unit=reference.unit,
        cells=cells,
    )


def _variant_of(result: Result | None) -> str | None:
    return None if result is None else variant_name(result.probe, result.params)


def machines(
    runs: list[StoredRun], summaries: list[RunSummary], comparison: Comparison
) -> Machines:
    """The other runs against run A: a ratio per key figure (run A's ladder),
    each the row of COMPARISON (the one the tables, --json and the gate
    render), and the environment differences that plausibly explain them."""
    stand_ins = _stand_ins(runs, summaries)
    figures = []
    for rung in summaries[0].ladder:
        row = _key_row(comparison, runs, rung.point.result, stand_ins)
        cells = []
        for index, cell in enumerate(row.cells[1:], start=1):
            difference = cell.difference
            interval = difference.ratio if difference else None
            cells.append(
                MachineCell(
                    median=cell.median,
                    ratio=interval.ratio if interval else None,
                    ci_low=interval.low if interval else None,
                    ci_high=interval.high if interval else None,
                    p_value=difference.u_test.p_value if difference and difference.u_test else None,
                    significant=bool(difference and difference.significant),
                    decision=cell.decision,
                    excluded=cell.excluded,
                    noise=cell.noise,
                    note=cell.note,
                    why_not=difference.why_not if difference else None,
                    variant=_variant_of(stand_ins[index].get(variant_key(rung.point.result))),
                )
            )
        figures.append(
            MachineFigure(
                key=rung.key,
                label=rung.label,
                probe=rung.point.probe,
                params=rung.point.params,
                unit=row.unit,
                reference_median=row.cells[0].median,
                cells=cells,
                row=row,
            )
        )
    key_rows = [figure.row for figure in figures if figure.row is not None]
    key_comparison = replace(
        comparison,
        rows=key_rows,
        summaries=[compare_summary(key_rows, index) for index in range(1, len(runs))],
        matrices=[],
    )
    env = []
    for key in comparison.env.differing:
        label = _env_label(key)
        if label is not None:
            env.append(EnvDifference(key, label, list(comparison.env.values[key])))
    return Machines(
        reference=summaries[0].name,
        others=[s.name for s in summaries[1:]],
        comparison=comparison,
        figures=figures,
        env=env,
        key_comparison=key_comparison,
    )


def summarize(runs: list[StoredRun], *, comparison: Comparison | None = None) -> Summary:
    """The summary of RUNS (run A first). With two or more runs, the key
    figures are rows of COMPARISON, the one ``compare`` builds and renders in
    every format; a caller with none (the report of runs alone) gets
    ``compare_runs(RUNS)``, which it then renders whole."""
    if not runs:
        raise ValueError("a summary needs at least one run")
    first = summarize_run(0, runs[0])
    summaries = [first] + [
        summarize_run(index, run, first.ladder) for index, run in enumerate(runs[1:], start=1)
    ]
    return Summary(
        runs=summaries,
        machines=machines(runs, summaries, comparison or compare_runs(runs))
        if len(runs) > 1
        else None,
    )
