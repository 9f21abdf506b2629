"""Where a difference sits, in words: ``compare --why`` and ``compare --pair``.

The first lines say what the runs' own records show of the load each ran
under, then which part carries the difference in most of the rows that
differ and which environment difference acts on it; then each row with its
parts (B less A, the interval, the share of the row's difference; they add
up to it, the remainder included) and, where both runs were traced, its
phases; then the rows with no parts, one line per reason, and the other
environment differences with the parts they act on. The numbers and reason
codes are ``analysis.compare.difference_parts``'s, ``pairs``' and the gate's;
this module only words them (their JSON form is ``export.why_dict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from ctxbench import units
from ctxbench.analysis.compare import difference_parts as split_codes
from ctxbench.analysis.compare.comparison import FASTER, SLOWER, Comparison
from ctxbench.analysis.compare.difference_parts import PartDifference, RowWhy, Unsplit, Why
from ctxbench.analysis.compare.envparts import EVERYTHING, KeyDifference
from ctxbench.analysis.compare.pairs import Pairing, measured_as
from ctxbench.analysis.explain.explanation import Missing, NotExplained
from ctxbench.analysis.explain.interference import RunLoad
from ctxbench.records.naming import variant_name
from ctxbench.records.result import ParamValue, Result
from ctxbench.views.compare.comparison import SHORT_WORDS, describe, excluded_words, noise_words
from ctxbench.views.explain.explanation import missing_reason, missing_words, not_explained_words
from ctxbench.views.machines import options_text
from ctxbench.views.summary.text import MIN_WIDTH, heading_line, styled_line, wrapped_lines
from ctxbench.views.summary.why import load_words

KEYS_SHOWN = 6  # environment differences listed under the rows
METHOD = (
    "percentile bootstrap of the parts' medians, within each run; a baseline keeps its median "
    "and that median's interval only: drawn from a normal of the interval's width"
)


def _signed(ns: float) -> str:
    if abs(ns) < 1e-6:  # a difference that is zero by construction, less rounding
        ns = 0.0
    return ("+" if ns >= 0 else "−") + units.value(abs(ns), "ns")


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "no interval"
    return f"{_signed(low)} to {_signed(high)}"


def key_words(key: KeyDifference) -> str:
    """'sandbox.seccomp.mode disabled → filter (a filter runs on every system call)'."""
    values = " → ".join("—" if v is None else v for v in key.values)
    how = f" ({key.how})" if key.how else " (not known to act on one part)"
    return f"{key.key} {values}{how}"


def unsplit_words(entry: Unsplit) -> str:
    """What could not be split, and why (``difference_parts``' codes)."""
    words = {
        split_codes.VDSO: "answered in the vDSO without entering the kernel: no kernel parts",
        split_codes.NO_BARE: f"{entry.detail} was not measured beside it",
        split_codes.ONE_SIDE: f"only {entry.sides} splits it; the other run has no parts for it",
        split_codes.NO_PARTS: "explain has no parts for this probe",
        split_codes.ACROSS_PAIR: f"{entry.detail}: taken across the pair (the processes variant "
        "of one run against the threads variant of the other: their run-to-run noise is in it), "
        "as the processes run did not measure it apart",
        split_codes.PHASES_ONE_TRACED: "phases: only one run was traced",
        split_codes.PHASES_FAILED: "phases: a traced pass failed",
        split_codes.REST_UNTRACED: "the rest is not split into the wake-up and the switch: both "
        "runs need a traced pass (ctxbench run --trace)",
    }
    if entry.code in words:
        return words[entry.code]
    if entry.items:
        return _per_run_words(entry)
    if entry.missing is not None:
        return missing_words(entry.missing)
    said = not_explained_words(entry.said) if entry.said is not None else entry.detail
    return f"{entry.sides}: {said}" if entry.sides else said


def reason_words(why: Missing | NotExplained | str) -> str:
    """Why a run did not separate a part, without the part's name (that of
    a part explain measured but not as a share: its words after the name)."""
    if isinstance(why, Missing):
        return missing_reason(why)
    if isinstance(why, NotExplained):
        words = not_explained_words(why)
        return words.partition(": ")[2] if why.part else words
    return why


def _per_run_words(entry: Unsplit) -> str:
    """'B: address-space switch: ...', or 'address-space switch: A: ...; B: ...' where
    the two runs give different reasons: the part named once."""
    reasons = [reason_words(why) for _, why in entry.items]
    if len(set(reasons)) == 1:
        said = f"{entry.detail}: {reasons[0]}" if entry.detail and reasons[0] else entry.detail
        said = said or reasons[0]  # about no part (the parts above the whole): its words
        return f"{entry.sides}: {said}"
    return f"{entry.detail}: " + "; ".join(
        f"{side}: {words}" for (side, _), words in zip(entry.items, reasons, strict=True)
    )


# ---- the load, before the machine ----------------------------------------------------
def _load_weight(load: RunLoad) -> float:
    return (load.suspect + load.slowed + load.set_aside_results) / max(load.measured, 1)


def load_lines(result: Why) -> list[str]:
    """The load each run carried, from its own records, heavier side first."""
    if result.load is None:
        return []
    sides = sorted(zip(("A", "B"), result.load, strict=True), key=lambda s: -_load_weight(s[1]))
    carried = [(name, load) for name, load in sides if load.carried]
    if not carried:
        return [
            "Load: neither run's records show interference (no figure suspect for its spread, "
            "no sample set aside, no slowed host reference)."
        ]
    (first, load), rest = carried[0], carried[1:]
    quiet = [name for name, other in sides if not other.carried]
    text = f"Load first: {first} carried interference: {load_words(load)}"
    text += "".join(f"; {name}: {load_words(other)}" for name, other in rest)
    if quiet:
        text += f"; {quiet[0]}: none recorded"
    heavier = _load_weight(load) > 2 * _load_weight(rest[0][1]) if rest else True
    if heavier and (load.suspect or load.slowed):
        text += f". Rows where {first} is the slower side may carry that load, not the machine"
    return [text + "."]


def headline(result: Why, counted: int) -> list[str]:
    """The load, where the difference sits, and the environment difference beside it."""
    lines = load_lines(result)
    if result.top_group is None:
        return [*lines, "No row could be split into parts (see below)."]
    rows = result.groups[result.top_group]
    plural = "s" if counted != 1 else ""
    if result.moved:
        how = f"the largest share, beyond its samples, in {rows} of the {counted} row{plural} split"
    else:
        how = (
            f"the largest share in {rows} of the {counted} row{plural} split, though no part "
            "moved beyond its samples"
        )
    where = f"Where the difference sits: {result.top_group} ({how})."
    specific = [k for k in result.top_keys if EVERYTHING not in k.groups]
    if not result.top_keys:
        beside = (
            f"No difference that the runs record acts on {result.top_group}: the runs' noise, "
            "or a change they do not record."
        )
    else:
        beside = f"What differs and acts on it: {key_words(result.top_keys[0])}"
        if EVERYTHING in result.top_keys[0].groups and specific:
            beside += f"; of what acts on it alone: {key_words(specific[0])}"
        beside += "."
    return [*lines, where, beside]


# ---- one row ----------------------------------------------------------------------------
def _moved(part: PartDifference) -> str:
    if part.low_ns is None:
        return "no interval"
    if not part.moved:
        return "within its samples"
    return "grew" if part.difference_ns > 0 else "shrank"


def part_label(part: PartDifference) -> str:
    """A part's name (the remainder's is the rest's; a part it holds says so on its own line)."""
    return part.name


def _part_lines(part: PartDifference, label_w: int, width: int, style: str) -> list[Text]:
    """One part's row; where it is wider than the screen, its interval on the next line,
    indented, so the terminal does not wrap it to the first column."""
    share = f"{part.share:4.0%}".replace("-", "−") if part.share is not None else "   —"
    where = (
        "no interval"
        if part.low_ns is None
        else f"{_interval(part.low_ns, part.high_ns)}, {_moved(part)}"
    )
    head = f"    {part_label(part):<{label_w}}  {_signed(part.difference_ns):>10}  {share}"
    if len(head) + 2 + len(where) <= width:
        return [styled_line((f"{head}  {where}", style))]
    return [styled_line((head, style)), *wrapped_lines(where, width, 8, style)]


def _unmeasured_words(part: PartDifference) -> list[str]:
    """Per run that did not separate the part: why, and where its time is."""
    out = []
    for side, why in part.unmeasured:
        because = f" ({reason_words(why)})" if why else ""
        out.append(
            f"{side} did not measure it apart{because}: {side}'s is inside {side}'s rest, so "
            "the difference above is the other run's figure"
        )
    return out


def group_beside(name: str, group: str) -> str:
    """' (the primitive's own work)' beside a part's name, '' where the group says no more."""
    plain, plain_group = name.removeprefix("the "), group.removeprefix("the ")
    return "" if plain_group in plain or plain in plain_group else f" ({group})"


def largest_words(part: PartDifference) -> str:
    """'largest: address-space switch', the group beside it only where it says more."""
    return f"largest: {part_label(part)}" + group_beside(part.name, part.group)


def row_lines(row: RowWhy, comparison: Comparison, width: int) -> list[Text]:
    name = variant_name(row.probe, row.params)
    changed = {k: v for k, v in row.other_params.items() if row.params.get(k) != v}
    if changed:
        name += " → " + " ".join(f"{k}={units.param_value(v)}" for k, v in sorted(changed.items()))
    ratio = row.other_ns / row.reference_ns if row.reference_ns else None
    head = (
        f"{name}: {units.value(row.reference_ns, 'ns')} → {units.value(row.other_ns, 'ns')} "
        f"({_signed(row.difference_ns)}"
        + (f", {units.factor(ratio)}×" if ratio else "")
        + f"; within-run {comparison.level:.0%} interval {_interval(row.low_ns, row.high_ns)}"
        + (f"; compare: {row.decision}" if row.decision else "")
        + ")"
    )
    lines = wrapped_lines(head, width, 2)
    if row.excluded:
        lines += wrapped_lines(
            f"not comparable: {'; '.join(excluded_words(row.excluded))}", width, 4, "yellow"
        )
    label_w = max(len(part_label(p)) for p in [*row.parts, *row.phases])
    style = {SLOWER: "red", FASTER: "green"}
    for part in row.parts:
        lines += _part_lines(part, label_w, width, style.get(_direction(part), ""))
        for words in _unmeasured_words(part):
            lines += wrapped_lines(words, width, 6, "dim")
    largest = row.largest
    if largest is not None:
        lines += wrapped_lines(largest_words(largest), width, 4, "bold")
    if row.phases:
        lines += wrapped_lines("traced phases, both runs (share × untraced median):", width, 4)
        for part in row.phases:
            lines += _part_lines(part, label_w, width, style.get(_direction(part), ""))
        phase = row.largest_phase
        if phase is not None:
            lines += wrapped_lines(f"largest phase: {phase.name}", width, 4, "bold")
    for entry in row.not_split:
        lines += wrapped_lines(f"not split: {unsplit_words(entry)}", width, 4, "dim")
    return lines


def _direction(part: PartDifference) -> str | None:
    if not part.moved:
        return None
    return SLOWER if part.difference_ns > 0 else FASTER


def unsplit_lines(result: Why) -> list[str]:
    """The rows with no parts, in one line naming them, grouped by why (a probe
    measured in several variants once, with their count)."""
    by_reason: dict[str, dict[str, int]] = {}
    for variant, entry in result.not_split:
        probes = by_reason.setdefault(unsplit_words(entry), {})
        probe = variant.split(" ")[0]
        probes[probe] = probes.get(probe, 0) + 1
    if not by_reason:
        return []
    groups = [
        ", ".join(f"{p} ({n} variants)" if n > 1 else p for p, n in probes.items()) + f" ({reason})"
        for reason, probes in by_reason.items()
    ]
    return ["; ".join(groups) + "."]


def why_lines(result: Why, comparison: Comparison, width: int) -> list[Text]:
    """The whole --why screen for run B against run A."""
    width = max(width, MIN_WIDTH)
    lines: list[Text] = [heading_line("Where B differs from A, part by part")]
    for sentence in headline(result, len(result.rows)):
        lines += wrapped_lines(sentence, width, 2)
    if result.every_row:
        lines += wrapped_lines(
            "No row differs meaningfully between A and B (compare's decision), so every row "
            "measured in both is split; rows compare leaves out are marked.",
            width,
            2,
            "dim",
        )
    selected = [row for row in result.rows if row.selected]
    if selected and len(selected) < len(result.rows):
        lines += wrapped_lines(
            f"The {len(selected)} row(s) of the probes the runs' selections named come first.",
            width,
            2,
            "dim",
        )
    lines.append(Text(""))
    for row in result.rows:
        lines += row_lines(row, comparison, width)
    if result.not_split:
        lines.append(Text(""))
        lines.append(heading_line("Rows that differ but have no parts"))
        for text in unsplit_lines(result):
            lines += wrapped_lines(text, width, 2, "dim")
    if result.env:
        lines.append(Text(""))
        lines.append(heading_line("What differs, ranked by the part it acts on"))
        for key in result.env[:KEYS_SHOWN]:
            acts = ", ".join(key.groups) if key.groups else "—"
            lines += wrapped_lines(f"{key_words(key)}; acts on: {acts}", width, 2)
        if len(result.env) > KEYS_SHOWN:
            lines += wrapped_lines(
                f"and {len(result.env) - KEYS_SHOWN} more (compare --all shows the whole "
                "environment diff)",
                width,
                2,
                "dim",
            )
    lines.append(Text(""))
    lines += wrapped_lines(
        f"Parts: B less A, share of the row's difference (the parts add up to it, the rest "
        f"included), {comparison.level:.0%} interval: {METHOD}. Within-run: a part that moved "
        "beyond its samples may still be within run-to-run noise; the row's decision (compare) "
        "judges that.",
        width,
        0,
        "dim",
    )
    return lines


# ---- --pair: rows that differ on purpose, judged like the gate ---------------------
HELPED, HURT, NEITHER, UNDECIDED = (
    "helped",
    "made it slower",
    "neither helped nor hurt",
    ("inconclusive"),
)


def pair_outcome(row: Any, comparison: Comparison, judged: Any = None) -> tuple[str, Any]:
    """The pair's outcome in the gate's three (``analysis.compare.gate``): HELPED or HURT
    where compare's decision says so; NEITHER only where the gate, at the
    effect compare needs (the minimum effect or the within-run floor) or at
    --fail-above, calls it not slower; else UNDECIDED. The gate's row beside it."""
    from ctxbench.analysis.compare.comparison import effect_needed
    from ctxbench.analysis.compare.gate import INCONCLUSIVE, NOT_SLOWER, judge_row
    from ctxbench.analysis.compare.gate import SLOWER as GATE_SLOWER
    from ctxbench.analysis.compare.noise import GATE_POWER

    verdict = next((v for v in judged.rows if v.row is row), None) if judged else None
    if verdict is None:
        cell = row.cells[1]
        percent = 100.0 * effect_needed(comparison.min_effect, cell.noise)
        verdict = judge_row(row, 1, percent, comparison.level, GATE_POWER)
    decision = row.cells[1].decision
    if decision == FASTER:
        return HELPED, verdict
    if decision == SLOWER or verdict.outcome == GATE_SLOWER:
        return HURT, verdict
    if verdict.outcome == NOT_SLOWER:
        return NEITHER, verdict
    assert verdict.outcome == INCONCLUSIVE
    return UNDECIDED, verdict


def _pair_words(outcome: str, verdict: Any, change: str, row: Any, comparison: Comparison) -> str:
    from ctxbench.views.compare.gate import inconclusive_words

    cell = row.cells[1]
    if outcome == UNDECIDED:
        return f"{change}: inconclusive: {inconclusive_words(verdict)}"
    words = describe(cell.difference, row.unit, comparison.min_effect, judged_by=cell.noise)
    if outcome == NEITHER:
        source = f" ({SHORT_WORDS[cell.noise.source]})" if cell.noise else ""
        could = (
            f"it could have seen a change of {verdict.detectable:.0%} either way{source}"
            if verdict.detectable is not None
            else noise_words(cell.noise, short=True)
        )
        return f"{change} {NEITHER}: {words}; {could}"
    source = noise_words(cell.noise, short=True)
    return f"{change} {outcome}: {words}" + (f", {source}" if source else "")


def _suspect_sides(reference: Result, other: Result) -> list[str]:
    """'A suspect (unstable)' for each side whose verdict is not ok."""
    marks = []
    for name, result in (("A", reference), ("B", other)):
        verdict = result.verdict
        if verdict.status != "ok":
            codes = ", ".join(sorted(set(verdict.codes)))
            marks.append(f"{name} {verdict.status}" + (f" ({codes})" if codes else ""))
    return marks


def param_words(params: Mapping[str, ParamValue], name: str) -> str:
    """A parameter's value as the record has it; 'absent' where the record has none."""
    return units.param_value(params[name]) if name in params else "absent"


def pair_lines(
    pairing: Pairing, comparison: Comparison, width: int, judged: Any = None
) -> list[Text]:
    """Each pair: A's variant, what changed, both figures, whether the change
    helped, hurt or neither (judged like the gate: JUDGED, the --fail-above gate
    where given), else inconclusive and why; then one summary line that counts
    exactly these rows and names the variants left unpaired."""
    width = max(width, MIN_WIDTH)
    names = ", ".join(pairing.names)
    lines = [heading_line("Runs (A is the reference)")]
    for index, run in enumerate(comparison.runs):
        options = comparison.options[index] if index < len(comparison.options) else {}
        label = f" ({run.info.label})" if run.info.label else ""
        lines += wrapped_lines(
            f"{units.run_letter(index)}: {run.run_id}{label}; {options_text(options, run)}",
            width,
            2,
        )
    lines.append(Text(""))
    lines.append(heading_line(f"Rows paired on {names}: B's variant against A's"))
    counts = {HELPED: 0, HURT: 0, NEITHER: 0, UNDECIDED: 0}
    marked = 0
    styles = {HELPED: "green", HURT: "red", NEITHER: "dim", UNDECIDED: "yellow"}
    for row in comparison.rows:
        a, cell = row.cells[0], row.cells[1]
        if a.result is None or cell.result is None:
            continue
        measured = measured_as(cell.result).params  # B's own, as it was measured
        change = " ".join(
            f"{n}={param_words(a.result.params, n)}→{param_words(measured, n)}"
            for n in pairing.names
        )
        rest = {k: v for k, v in row.params.items() if k not in pairing.names}
        medians = f"{units.value(a.median, row.unit)} → {units.value(cell.median, row.unit)}"
        lines += wrapped_lines(f"{variant_name(row.probe, rest)}: {medians}", width, 2)
        outcome, verdict = pair_outcome(row, comparison, judged)
        counts[outcome] += 1
        text, style = _pair_words(outcome, verdict, change, row, comparison), styles[outcome]
        # A suspect side is judged beside its partner all the same, and marked
        # (issue 30): the answer is never dropped, nor stated as if it held.
        marks = excluded_words(cell.excluded) or _suspect_sides(a.result, cell.result)
        if marks:
            marked += 1
            text += f" [marked: {'; '.join(marks)}]"
        lines += wrapped_lines(text, width, 4, style)
    lines.append(Text(""))
    shown = sum(counts.values())
    summary = (
        f"{shown} pair{'s' if shown != 1 else ''} shown ({names} changed from A to B): "
        f"{counts[HELPED]} helped (faster), {counts[HURT]} slower, "
        f"{counts[NEITHER]} neither (not different at the size each could detect), "
        f"{counts[UNDECIDED]} inconclusive"
        + (f"; {marked} of them marked (a side not ok, or not comparable)" if marked else "")
    )
    lines += wrapped_lines(summary + ".", width, 0)
    for side, names_left in (("A", pairing.unpaired_reference), ("B", pairing.unpaired_other)):
        if names_left:
            listed = ", ".join(names_left[:3]) + (
                f" and {len(names_left) - 3} more" if len(names_left) > 3 else ""
            )
            lines += wrapped_lines(
                f"Not shown: {len(names_left)} variant(s) of {side} with no partner that "
                f"differs only in {names}: {listed}.",
                width,
                0,
                "dim",
            )
    for name in pairing.ambiguous:
        lines += wrapped_lines(f"Not shown: {name} has more than one partner.", width, 0, "dim")
    return lines


# ---- history --changes ---------------------------------------------------------------
def _left_lines(machine: Any, width: int, min_runs: int) -> list[Text]:
    """Why the variants history --changes did not look at were left."""
    if not machine.too_short:
        return []
    why = []
    if machine.few_runs:
        why.append(f"{machine.few_runs} measured in fewer than {2 * min_runs} runs")
    if machine.few_figures:
        why.append(
            f"{machine.few_figures} with fewer than {2 * min_runs} figures that count (ok, or "
            "suspect for their spread alone; the others suspect for another reason, "
            "unsupported or failed)"
        )
    return wrapped_lines(
        f"{machine.too_short} variant(s) not looked at: " + "; ".join(why), width, 2, "dim"
    )


def changes_lines(
    machines: list[Any], min_effect: float, width: int, probe: str | None = None
) -> list[Text]:
    """Per machine: how many runs and variants were looked at, each change
    (where, how large, the interval, what differs across it), the variants
    with none."""
    width = max(width, MIN_WIDTH)
    if not machines:
        return wrapped_lines("No runs in the store to look through.", width, 0)
    lines: list[Text] = []
    for machine in machines:
        lines += _machine_changes_lines(machine, min_effect, width, probe)
        lines.append(Text(""))
    from ctxbench.analysis.compare.changes import METHOD

    lines += wrapped_lines(f"Method: {METHOD}.", width, 0, "dim")
    return lines


def _machine_changes_lines(
    machine: Any, min_effect: float, width: int, probe: str | None
) -> list[Text]:
    """One machine of history --changes: its heading, what was left, each
    change, and the variants with none."""
    from ctxbench.analysis.compare.changes import MIN_RUNS

    measured = units.run_options(machine.options) or "options not recorded"
    selected = f", probes {probe}" if probe else ""
    lines = [
        heading_line(
            f"{machine.hostname} ({measured}{selected}): {len(machine.runs)} runs, "
            f"{machine.examined} of {machine.variants} variants looked at"
        )
    ]
    lines += _left_lines(machine, width, MIN_RUNS)
    if machine.judged_none:
        lines += wrapped_lines(
            "No variant could be judged, so nothing is known of shifts here: neither a "
            f"shift nor its absence (each needs {2 * MIN_RUNS} figures that count).",
            width,
            2,
            "yellow",
        )
    elif not machine.changes:
        among = (
            ""
            if machine.judged_all
            else f" among the {machine.examined} variant(s) looked at (not the "
            f"{machine.too_short} above)"
        )
        lines += wrapped_lines(
            f"No shift that stayed{among}: no variant's figure moved beyond {min_effect:.0%} "
            f"(whole interval) for {MIN_RUNS} runs or more"
            + (
                f" ({machine.proposed} proposed, none held under the test)"
                if machine.proposed
                else ""
            )
            + ".",
            width,
            2,
        )
    changed = set()
    for change in machine.changes:
        changed.add((change.probe, repr(sorted(change.params.items()))))
        lines += _change_lines(change, len(machine.runs), width)
    if machine.changes:
        unchanged = machine.examined - len(changed)
        lines += wrapped_lines(
            f"No shift that stayed in the other {unchanged} variant(s) looked at.", width, 2
        )
    return lines


def _change_lines(change: Any, runs: int, width: int) -> list[Text]:
    """One change of a machine's RUNS: where and how large, the part that
    moved most, and what differs across it."""
    interval = change.difference.ratio
    assert interval is not None
    p = change.difference.u_test
    head = (
        f"{variant_name(change.probe, change.params)}: from run {change.position} of "
        f"{runs} ({change.run_id}), "
        f"{units.value(change.difference.reference_median, change.unit)} → "
        f"{units.value(change.difference.other_median, change.unit)}, "
        f"{units.factor(interval.ratio)}× ({units.factor(interval.low)}–"
        f"{units.factor(interval.high)})"
        + (f", {units.p_value(p.p_value)}" if p else "")
        + f"; {len(change.before)} runs before, {len(change.after)} after"
    )
    style = "red" if interval.ratio > 1 else "green"
    lines = wrapped_lines(head, width, 2, style)
    if change.largest_part:
        lines += wrapped_lines(
            f"the part that moved most between the two runs around it: "
            f"{change.largest_part}"
            + group_beside(change.largest_part, change.largest_group or ""),
            width,
            4,
        )
    return lines + _across_change_lines(change, width)


def _across_change_lines(change: Any, width: int) -> list[Text]:
    """What of the environment differs across a change (the key that acts
    on the part that moved first), or that nothing recorded does."""
    keys = [k for k in change.environment if k.groups] or change.environment
    if not keys:
        return wrapped_lines(
            "across it: the environment records no difference (the runs' own noise, "
            "or a change it does not capture)",
            width,
            4,
            "dim",
        )
    lines = wrapped_lines(f"across it: {key_words(keys[0])}", width, 4)
    if len(change.environment) > 1:
        others = ", ".join(k.key for k in change.environment[1:4])
        more = len(change.environment) - 4
        lines += wrapped_lines(
            f"also differs: {others}" + (f" and {more} more" if more > 0 else ""),
            width,
            4,
            "dim",
        )
    return lines
