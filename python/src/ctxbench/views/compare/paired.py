"""The in-run A/B in words: a line per pair of variants, then the gate's outcome.

Built from ``analysis.compare.paired``: each pair's paired ratio of B over A with
its interval, its rounds and detectable slowdown, and with --fail-above its
outcome, in the words and outcome names of the gate (``views.compare.gate``).
"""

from __future__ import annotations

from ctxbench import units
from ctxbench.analysis.compare.gate import INCONCLUSIVE, NOT_SLOWER, SLOWER
from ctxbench.analysis.compare.paired import (
    ARM,
    FEW_ROUNDS,
    MEDIAN,
    MIN_ROUNDS,
    NOT_AN_AXIS,
    ROUND_SLOWED,
    SAME_VALUE,
    Axis,
    AxisRefused,
    Paired,
    PairedGate,
    PairedVerdict,
)
from ctxbench.records.environment import Environment
from ctxbench.records.naming import variant_name
from ctxbench.records.result import Result
from ctxbench.records.strict_json import JsonObject


def axis_text(axis: Axis) -> str:
    """'seccomp=none:profile': the axis as --ab takes it."""
    return f"{axis.name}={axis.a}:{axis.b}"


def axis_refused_words(refused: AxisRefused) -> str:
    """Why --ab's text is not an A/B axis, naming the form."""
    if refused.code == NOT_AN_AXIS:
        return (
            f"{refused.text!r} is not an A/B axis; give NAME=A:B, e.g. seccomp=none:profile "
            "(or nothing, for a run --ab-wrapper run)"
        )
    assert refused.code == SAME_VALUE, refused.code
    return f"{refused.text!r} names the same value twice; A and B must differ"


def arms_line(run_id: str, axis: Axis, env: Environment) -> str:
    """What A and B are in this run."""
    wrapper = env.options.get("ab_wrapper")
    if axis.name == ARM and wrapper:
        what = f"B = under `{wrapper}`, A = plain"
    else:
        what = f"B = {axis.name}={axis.b}, A = {axis.name}={axis.a}"
    return (
        f"A/B in run {run_id}: {what}; each pair judged by B/A round by round, each round's "
        "fastest sample against the other arm's (Hodges-Lehmann estimate, 95% signed-rank "
        "interval over the rounds)"
    )


def pair_words(paired: Paired) -> str:
    """'1.032× (1.025–1.040) over 8 rounds, could detect 1.1%'."""
    if paired.ratio is None or paired.low is None or paired.high is None:
        aside = f", {paired.set_aside} set aside as slowed" if paired.set_aside else ""
        return f"no ratio: {paired.rounds} paired round(s){aside} ({_arms(paired)})"
    text = (
        f"{units.factor(paired.ratio)}× ({units.factor(paired.low)}–{units.factor(paired.high)}) "
        f"over {paired.rounds} rounds"
    )
    if paired.set_aside:
        text += (
            f" ({paired.set_aside} more set aside: one arm ran slowed there, its ratio "
            f"{ROUND_SLOWED:.2f}× off the rounds' median)"
        )
    if paired.statistic == MEDIAN:
        text += " (the rounds' medians: its samples do not say which round took them)"
    if paired.detectable is not None:
        text += f", could detect {paired.detectable:.1%}"
    return text


def _arms(paired: Paired) -> str:
    return f"A had a figure in {paired.rounds_a} round(s), B in {paired.rounds_b}"


def verdict_words(verdict: PairedVerdict, percent: float) -> str:
    limit = f"{percent:g}%"
    if verdict.outcome == SLOWER:
        return f"slower by more than {limit}"
    if verdict.outcome == NOT_SLOWER:
        return f"not slower by {limit}"
    paired = verdict.paired
    if verdict.why == FEW_ROUNDS:
        aside = f" and {paired.set_aside} set aside as slowed" if paired.set_aside else ""
        return (
            f"inconclusive at {limit}: {paired.rounds} paired round(s){aside}, at least "
            f"{MIN_ROUNDS} needed ({_arms(paired)}); would decide it: more rounds"
            + (", at a quieter moment" if paired.set_aside else "")
        )
    return (
        f"inconclusive at {limit}: its interval spans {limit}; would decide it: more rounds, "
        f"which narrow the interval"
    )


def paired_lines(
    run_id: str, axis: Axis, env: Environment, pairs: list[Paired], judged: PairedGate | None
) -> list[str]:
    lines = [arms_line(run_id, axis, env)]
    verdicts = {id(v.paired): v for v in judged.rows} if judged else {}
    for paired in pairs:
        line = f"  {variant_name(paired.probe, paired.params)}: {pair_words(paired)}"
        verdict = verdicts.get(id(paired))
        if judged is not None and verdict is not None:
            line += f"; {verdict_words(verdict, judged.percent)}"
        lines.append(line)
    if judged is not None:
        lines.append(outcome_line(judged))
    return lines


def alone_line(alone: list[Result], axis: Axis) -> str | None:
    if not alone:
        return None
    names = ", ".join(variant_name(r.probe, r.params) for r in alone[:3])
    more = f" and {len(alone) - 3} more" if len(alone) > 3 else ""
    return f"not paired (no twin with the other value of {axis.name}): {names}{more}"


def outcome_line(judged: PairedGate) -> str:
    """'--fail-above 2 --ab arm=A:B: FAILED (exit 1): 1 slower, ...'."""
    counts = judged.counts
    text = (
        f"--fail-above {judged.percent:g} --ab {axis_text(judged.axis)}: {judged.outcome.upper()}: "
        f"{counts[SLOWER]} slower, {counts[NOT_SLOWER]} not slower, "
        f"{counts[INCONCLUSIVE]} inconclusive of {len(judged.rows)} pair(s)"
    )
    if judged.allow_inconclusive:
        text += f" ({judged.allow_inconclusive:g}% may be inconclusive)"
    if judged.outcome == INCONCLUSIVE and not counts[NOT_SLOWER] and not counts[SLOWER]:
        text += "; no pair was judged, so the gate cannot pass"
    return text


def paired_dict(
    run_id: str, axis: Axis, pairs: list[Paired], judged: PairedGate | None
) -> JsonObject:
    """``compare RUN --ab --json``: the pairs (and the gate) as data."""
    verdicts = {id(v.paired): v for v in judged.rows} if judged else {}
    rows = []
    for paired in pairs:
        verdict = verdicts.get(id(paired))
        rows.append(
            {
                "probe": paired.probe,
                "params": paired.params,
                "unit": paired.unit,
                "statistic": paired.statistic,
                "rounds": paired.rounds,
                "rounds_set_aside": paired.set_aside,
                "rounds_a": paired.rounds_a,
                "rounds_b": paired.rounds_b,
                "ratio": paired.ratio,
                "low": paired.low,
                "high": paired.high,
                "level": paired.level,
                "detectable_slowdown": paired.detectable,
                "outcome": verdict.outcome if verdict else None,
                "why": verdict.why if verdict else None,
            }
        )
    out: JsonObject = {
        "run_id": run_id,
        "axis": {"name": axis.name, "a": axis.a, "b": axis.b},
        "pairs": rows,
    }
    if judged is not None:
        out["gate"] = {
            "percent": judged.percent,
            "outcome": judged.outcome,
            "counts": judged.counts,
            "allow_inconclusive": judged.allow_inconclusive,
        }
    return out
