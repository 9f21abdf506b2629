"""A comparison in words: each difference, each run against A, the noise that judged them.

What analysis/compare/comparison.py decides (``decide``, the summaries per run) and
analysis/compare/noise.py measures (which spread judged a row, what it could
detect), as the sentences compare, show, the report and the gate print.
"""

from __future__ import annotations

from ctxbench import stats, units
from ctxbench.analysis.compare.comparison import (
    CPU_COUNT,
    DEFAULT_MIN_EFFECT,
    MEASUREMENT_OPTIONS,
    NO_DIFFERENCE,
    NOT_THE_OPERATION_SIDE,
    PLACEMENT,
    Comparison,
    Exclusion,
    Summary,
    decide,
    effect_needed,
)
from ctxbench.analysis.compare.noise import (
    HISTORY,
    NOISE_INCLUDES_ONE,
    NOT_POSITIVE,
    REPEATS,
    WIDENED_INCLUDES_ONE,
    WITHIN_RUN,
    Noise,
    detectable,
)
from ctxbench.analysis.summary.data import MachineFigure, Machines

SHORT_WORDS = {
    REPEATS: "by repeats",
    HISTORY: "p10s by history",
    WITHIN_RUN: "within-run only",
}


def exclusion_words(exclusion: Exclusion) -> str:
    """'placement: A ran on one CPU, B on 2 CPUs', 'CPU count: A was allowed 2
    CPUs, B 4', 'A made too few switches per operation: not the operation (...)'."""
    if exclusion.code == NOT_THE_OPERATION_SIDE:
        return (
            f"{exclusion.names[0]} made too few switches per operation: not the operation "
            f"({', '.join(exclusion.codes)})"
        )
    (a, b), (n_a, n_b) = exclusion.names, exclusion.values
    if exclusion.code == PLACEMENT:
        return f"placement: {a} ran on {_cpus(n_a)}, {b} on {_cpus(n_b)}"
    assert exclusion.code == CPU_COUNT, exclusion.code
    return f"CPU count: {a} was allowed {n_a} CPUs, {b} {n_b}"


def _cpus(n: int) -> str:
    return "one CPU" if n == 1 else f"{n} CPUs"


def why_not_words(why: stats.NotSignificant | None) -> str | None:
    """Why a difference is not significant: 'p = 0.41 >= 0.05', '95% interval
    from the repeats includes 1', 'too few samples (1 vs 2; need 2 on each side)'."""
    if why is None:
        return None
    values = why.values
    if why.code == stats.TOO_FEW_SAMPLES:
        n_ref, n_other, least = (int(v) for v in values)
        return f"too few samples ({n_ref} vs {n_other}; need {least} on each side)"
    if why.code == stats.P_AT_LEAST_ALPHA:
        return f"p = {values[0]:.3g} >= {values[1]:g}"
    if why.code == stats.CI_INCLUDES_ONE:
        return f"{values[0]:.0%} CI of the ratio includes 1"
    if why.code == WIDENED_INCLUDES_ONE:
        return f"{values[0]:.0%} interval, widened, includes 1"
    if why.code == NOISE_INCLUDES_ONE:
        return f"{values[0]:.0%} interval from the {why.source} includes 1"
    return UNDEFINED_WORDS[why.code]


UNDEFINED_WORDS = {
    stats.ZERO_MEDIAN: "ratio undefined (zero median)",
    NOT_POSITIVE: "ratio undefined (a figure is not positive)",
}


def excluded_words(excluded: tuple[Exclusion, ...]) -> list[str]:
    """Each reason a cell is left out, in words (``exclusion_words``)."""
    return [exclusion_words(exclusion) for exclusion in excluded]


def noise_words(noise: Noise | None, short: bool = False) -> str:
    """'judged by repeats (run-to-run spread 3.1%, 6 repeats); could detect 8%',
    'judged by within-run samples only (floor 22%); could detect 22%';
    ``short``: 'by repeats, could detect 8%', 'within-run only, could detect 22%'."""
    if noise is None:
        return ""
    could = detectable(noise)
    seen = f"could detect {could:.0%}" if could is not None else ""
    if short:
        return SHORT_WORDS[noise.source] + (f", {seen}" if seen else "")
    spread = f"{noise.spread:.1%}" if noise.spread is not None else "unknown"
    if noise.source == REPEATS:
        text = f"judged by repeats (run-to-run spread {spread}, {noise.n} repeats)"
    elif noise.source == HISTORY:
        text = f"p10s judged by this machine's history (spread {spread} over {noise.n} earlier runs"
        if noise.left_out:
            text += f"; {noise.left_out} that carried interference left out"
        if noise.interfered:
            text += f", {noise.interfered} of them carrying interference"
        text += ")"
    else:
        text = f"judged by within-run samples only (floor {noise.floor_effect:.0%})"
    return text + (f"; {seen}" if seen else "")


def describe(
    difference: stats.Difference | None,
    unit: str,
    min_effect: float = DEFAULT_MIN_EFFECT,
    name: str = "B",
    reference_name: str = "A",
    judged_by: Noise | None = None,
) -> str:
    """A difference in words: 'B ran 2.19× (2.17–2.21) slower than A', 'not
    significant', 'no meaningful difference (1.08×, 1.03–1.13, not all beyond 5%)'."""
    decision = decide(difference, unit, min_effect, judged_by)
    if difference is None or difference.ratio is None or decision is None:
        return "no ratio"
    if not difference.significant:
        return "not significant"
    interval = difference.ratio
    if decision == NO_DIFFERENCE:
        effect = effect_needed(min_effect, judged_by)
        floor = " (the within-run floor)" if effect > min_effect else ""
        return (
            f"no meaningful difference ({units.factor(interval.ratio)}×, "
            f"{units.factor(interval.low)}–{units.factor(interval.high)}, "
            f"not all beyond {effect:.0%}{floor})"
        )
    # The factor is >= 1 and the interval is turned with it.
    if interval.ratio > 1.0:
        factor, low, high = interval.ratio, interval.low, interval.high
    else:
        factor, low, high = 1.0 / interval.ratio, 1.0 / interval.high, 1.0 / interval.low
    return (
        f"{name} ran {units.factor(factor)}× ({units.factor(low)}–{units.factor(high)}) "
        f"{decision} than {reference_name}"
    )


def summary_line(summary: Summary, name: str = "B", reference_name: str = "A") -> str:
    """'B vs A: 2 slower, 0 faster, 5 no meaningful difference, 3 only in one run,
    4 excluded; over 7 comparable rows B ran 1.23x slower than A (geometric mean)'.
    The geometric mean gets a direction only when the rows that differ all go
    that way; otherwise it is given as a number beside them (issue 30)."""
    head = (
        f"{name} vs {reference_name}: {summary.slower} slower, {summary.faster} faster, "
        f"{summary.no_difference} no meaningful difference, {summary.only_in_one} only in one run, "
        f"{summary.excluded} excluded (unsupported, or placement, CPU count or switches differ)"
    )
    mean = summary.geometric_mean
    if mean is None:
        return head + "; no comparable rows"
    rows = f"{summary.comparable} comparable row{'s' if summary.comparable != 1 else ''}"
    # The mean is said as a direction only where the rows that differ agree with
    # it, so the line never contradicts the rows it counts.
    if summary.slower and not summary.faster and mean > 1.0:
        factor, word = units.factor(mean), "slower"
    elif summary.faster and not summary.slower and mean < 1.0:
        factor, word = units.factor(1.0 / mean), "faster"
    else:
        ratio = f"geometric mean of {name}/{reference_name} over {rows}: {units.factor(mean)}×"
        if not summary.slower and not summary.faster:
            return head + f"; no row differs meaningfully ({ratio}, within the rows' noise)"
        if summary.slower and summary.faster:
            return head + f"; rows differ both ways ({ratio})"
        return head + f"; {ratio}, against the direction of the rows that differ"
    return (
        head + f"; over {rows} {name} ran {factor}× {word} than {reference_name} (geometric mean)"
    )


def summary_lines(comparison: Comparison) -> list[str]:
    """One line per run against A: counts, and the geometric mean over comparable rows."""
    lines = [
        summary_line(summary, units.run_letter(index), units.run_letter(0))
        for index, summary in enumerate(comparison.summaries, start=1)
    ]
    differing = [
        name
        for name in MEASUREMENT_OPTIONS
        if all(name in options for options in comparison.options)
        and len({repr(options[name]) for options in comparison.options}) > 1
    ]
    if differing:
        lines.append(
            "run options differ ("
            + ", ".join(differing)
            + "): they change how sure each figure is, not what it measures; rows are compared"
        )
    return lines


def cell_words(machines: Machines, figure: MachineFigure, index: int) -> str:
    """A key figure of run INDEX against run A in words, as ``describe`` says
    it: 'B ran 1.52× (1.49–1.55) slower than A', 'not significant'."""
    cell = figure.row.cells[index]
    return describe(
        cell.difference,
        figure.unit,
        machines.comparison.min_effect,
        units.run_letter(index),
        units.run_letter(0),
        cell.noise,
    )
