"""Where a difference sits, in words: ``compare --why`` and ``compare --pair``.

The first lines say which part carries the difference in most of the rows
that differ and which environment difference acts on it; then each row with
its parts (B less A, the interval, the share of the row's difference) and,
where both runs were traced, its phases; then what could not be split and
the other environment differences with the parts they act on. The numbers
are ``compare_why``'s and ``compare_pairs``'s; this module only words them.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ctxbench import fmt
from ctxbench.analysis.compare import FASTER, NO_DIFFERENCE, SLOWER, Comparison
from ctxbench.analysis.compare_pairs import Pairing, original
from ctxbench.analysis.compare_why import RowWhy, Why
from ctxbench.analysis.envparts import EVERYTHING, KeyDifference
from ctxbench.records.core import variant_name
from ctxbench.views.comparison import describe, noise_words
from ctxbench.views.machines import options_text
from ctxbench.views.summary import MIN_WIDTH, heading_line, styled_line, wrapped_lines

KEYS_SHOWN = 6  # environment differences listed under the rows


def _signed(ns: float) -> str:
    if abs(ns) < 1e-6:  # a difference that is zero by construction, less rounding
        ns = 0.0
    return ("+" if ns >= 0 else "−") + fmt.value(abs(ns), "ns")


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "no interval"
    return f"{_signed(low)} to {_signed(high)}"


def key_words(key: KeyDifference) -> str:
    """'sandbox.seccomp.mode disabled → filter (a filter runs on every system call)'."""
    values = " → ".join("—" if v is None else v for v in key.values)
    how = f" ({key.how})" if key.how else " (not known to act on one part)"
    return f"{key.key} {values}{how}"


def headline(result: Why, counted: int) -> list[str]:
    """Where the difference sits, and the environment difference beside it."""
    if result.top_group is None:
        return ["No row could be split into parts (see below)."]
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
    return [where, beside]


def _moved(part: Any) -> str:
    if part.low_ns is None:
        return "no interval"
    if not part.moved:
        return "within its samples"
    return "grew" if part.difference_ns > 0 else "shrank"


def _part_line(part: Any, label_w: int) -> str:
    share = f"{part.share:4.0%}" if part.share is not None else "   —"
    where = (
        "no interval"
        if part.low_ns is None
        else f"{_interval(part.low_ns, part.high_ns)}, {_moved(part)}"
    )
    return f"    {part.name:<{label_w}}  {_signed(part.difference_ns):>10}  {share}  {where}"


def row_lines(row: RowWhy, comparison: Comparison, width: int) -> list[Text]:
    name = variant_name(row.probe, row.params)
    changed = {k: v for k, v in row.other_params.items() if row.params.get(k) != v}
    if changed:
        name += " → " + " ".join(f"{k}={fmt.param_value(v)}" for k, v in sorted(changed.items()))
    ratio = row.other_ns / row.reference_ns if row.reference_ns else None
    head = (
        f"{name}: {fmt.value(row.reference_ns, 'ns')} → {fmt.value(row.other_ns, 'ns')} "
        f"({_signed(row.difference_ns)}"
        + (f", {fmt.factor(ratio)}×" if ratio else "")
        + f"; within-run {comparison.level:.0%} interval {_interval(row.low_ns, row.high_ns)}"
        + (f"; compare: {row.decision}" if row.decision else "")
        + ")"
    )
    lines = wrapped_lines(head, width, 2)
    if row.excluded:
        lines += wrapped_lines(f"not comparable: {'; '.join(row.excluded)}", width, 4, "yellow")
    label_w = max(len(p.name) for p in [*row.parts, *row.phases])
    style = {SLOWER: "red", FASTER: "green"}
    for part in row.parts:
        lines.append(styled_line((_part_line(part, label_w), style.get(_direction(part), ""))))
    largest = row.largest
    if largest is not None:
        lines += wrapped_lines(f"largest: {largest.name} ({largest.group})", width, 4, "bold")
    if row.phases:
        lines += wrapped_lines("traced phases, both runs (share × untraced median):", width, 4)
        for part in row.phases:
            lines.append(styled_line((_part_line(part, label_w), style.get(_direction(part), ""))))
        phase = row.largest_phase
        if phase is not None:
            lines += wrapped_lines(f"largest phase: {phase.name}", width, 4, "bold")
    for what in row.not_split:
        lines += wrapped_lines(f"not split: {what}", width, 4, "dim")
    return lines


def _direction(part: Any) -> str | None:
    if not part.moved:
        return None
    return SLOWER if part.difference_ns > 0 else FASTER


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
    lines.append(Text(""))
    for row in result.rows:
        lines += row_lines(row, comparison, width)
    if result.not_split:
        lines.append(Text(""))
        lines.append(heading_line("Rows that differ but have no parts"))
        for what in result.not_split:
            lines += wrapped_lines(what, width, 2, "dim")
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
        f"Parts: B less A, share of the row's difference, {comparison.level:.0%} interval: "
        + result.method
        + ". Within-run: a part that moved beyond its samples may still be within "
        "run-to-run noise; the row's decision (compare) judges that.",
        width,
        0,
        "dim",
    )
    return lines


# ---- --pair: rows that differ on purpose -------------------------------------------
def _helped(decision: str | None, change: str) -> tuple[str, str]:
    """'idle=free→held helped', 'made it slower' or 'neither helped nor hurt' (no
    difference beyond the noise: the words beside it say which)."""
    if decision == FASTER:
        return f"{change} helped", "green"
    if decision == SLOWER:
        return f"{change} made it slower", "red"
    return f"{change} neither helped nor hurt", "dim"


def _suspect_sides(reference: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """'A suspect (unstable)' for each side whose verdict is not ok."""
    marks = []
    for name, result in (("A", reference), ("B", other)):
        verdict = result["verdict"]
        if verdict["status"] != "ok":
            codes = ", ".join(sorted({reason["code"] for reason in verdict.get("reasons", [])}))
            marks.append(f"{name} {verdict['status']}" + (f" ({codes})" if codes else ""))
    return marks


def pair_lines(pairing: Pairing, comparison: Comparison, width: int) -> list[Text]:
    """Each pair: A's variant, what changed, both figures, whether the change
    helped; then one summary line that counts exactly these rows and names the
    variants left unpaired."""
    width = max(width, MIN_WIDTH)
    names = ", ".join(pairing.names)
    lines = [heading_line("Runs (A is the reference)")]
    for index, run in enumerate(comparison.runs):
        options = comparison.options[index] if index < len(comparison.options) else {}
        label = f" ({run.info.label})" if run.info.label else ""
        lines += wrapped_lines(
            f"{fmt.run_letter(index)}: {run.run_id}{label}; {options_text(options, run)}",
            width,
            2,
        )
    lines.append(Text(""))
    lines.append(heading_line(f"Rows paired on {names}: B's variant against A's"))
    counts = {FASTER: 0, SLOWER: 0, NO_DIFFERENCE: 0}
    unjudged, marked = 0, 0
    for row in comparison.rows:
        a, cell = row.cells[0], row.cells[1]
        if a.result is None or cell.result is None:
            continue
        b = original(cell.result)
        change = " ".join(
            f"{n}={fmt.param_value(a.result['params'].get(n))}→{fmt.param_value(b['params'].get(n))}"
            for n in pairing.names
        )
        rest = {k: v for k, v in row.params.items() if k not in pairing.names}
        label = f"{variant_name(row.probe, rest)}"
        medians = f"{fmt.value(a.median, row.unit)} → {fmt.value(cell.median, row.unit)}"
        lines += wrapped_lines(f"{label}: {medians}", width, 2)
        if cell.note or cell.decision not in counts:
            unjudged += 1
            lines += wrapped_lines(
                f"{change}: not judged ({cell.note or 'no ratio'})", width, 4, "dim"
            )
            continue
        # A suspect side is judged beside its partner all the same, and marked
        # (issue 30): the answer is never dropped, nor stated as if it held.
        helped, style = _helped(cell.decision, change)
        counts[cell.decision] += 1
        words = describe(cell.difference, row.unit, comparison.min_effect, judged_by=cell.noise)
        source = noise_words(cell.noise, short=True)
        text = f"{helped}: {words}" + (f", {source}" if source else "")
        marks = list(cell.excluded) or _suspect_sides(a.result, cell.result)
        if marks:
            marked += 1
            text += f" [marked: {'; '.join(marks)}]"
            style = "yellow"
        lines += wrapped_lines(text, width, 4, style)
    lines.append(Text(""))
    shown = sum(counts.values()) + unjudged
    summary = (
        f"{shown} pair{'s' if shown != 1 else ''} shown ({names} changed from A to B): "
        f"{counts[FASTER]} faster, {counts[SLOWER]} slower, "
        f"{counts[NO_DIFFERENCE]} no meaningful difference, {unjudged} not judged"
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
def changes_lines(
    machines: list[Any], min_effect: float, width: int, probe: str | None = None
) -> list[Text]:
    """Per machine: how many runs and variants were looked at, each change
    (where, how large, the interval, what differs across it), the variants
    with none."""
    from ctxbench.analysis.changes import MIN_RUNS

    width = max(width, MIN_WIDTH)
    if not machines:
        return wrapped_lines("No runs in the store to look through.", width, 0)
    lines: list[Text] = []
    for machine in machines:
        measured = fmt.run_options(machine.options) or "options not recorded"
        selected = f", probes {probe}" if probe else ""
        lines.append(
            heading_line(
                f"{machine.hostname} ({measured}{selected}): {len(machine.runs)} runs, "
                f"{machine.examined} variants looked at"
            )
        )
        if machine.too_short:
            lines += wrapped_lines(
                f"{machine.too_short} variant(s) with fewer than {2 * MIN_RUNS} figures (ok, or "
                "suspect for their spread alone) were not looked at",
                width,
                2,
                "dim",
            )
        if not machine.changes:
            lines += wrapped_lines(
                f"No shift that stayed: no variant's figure moved beyond {min_effect:.0%} "
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
            interval = change.difference.ratio
            assert interval is not None
            p = change.difference.u_test
            head = (
                f"{variant_name(change.probe, change.params)}: from run {change.position} of "
                f"{len(machine.runs)} ({change.run_id}), "
                f"{fmt.value(change.difference.reference_median, change.unit)} → "
                f"{fmt.value(change.difference.other_median, change.unit)}, "
                f"{fmt.factor(interval.ratio)}× ({fmt.factor(interval.low)}–"
                f"{fmt.factor(interval.high)})"
                + (f", {fmt.p_value(p.p_value)}" if p else "")
                + f"; {len(change.before)} runs before, {len(change.after)} after"
            )
            style = "red" if interval.ratio > 1 else "green"
            lines += wrapped_lines(head, width, 2, style)
            if change.largest_part:
                lines += wrapped_lines(
                    f"the part that moved most between the two runs around it: "
                    f"{change.largest_part} ({change.largest_group})",
                    width,
                    4,
                )
            keys = [k for k in change.environment if k.groups] or change.environment
            if keys:
                lines += wrapped_lines(f"across it: {key_words(keys[0])}", width, 4)
                if len(change.environment) > 1:
                    others = ", ".join(k.key for k in change.environment[1:4])
                    more = len(change.environment) - 4
                    lines += wrapped_lines(
                        f"also differs: {others}" + (f" and {more} more" if more > 0 else ""),
                        width,
                        4,
                        "dim",
                    )
            else:
                lines += wrapped_lines(
                    "across it: the environment records no difference (the runs' own noise, "
                    "or a change it does not capture)",
                    width,
                    4,
                    "dim",
                )
        if machine.changes:
            unchanged = machine.examined - len(changed)
            lines += wrapped_lines(
                f"No shift that stayed in the other {unchanged} variant(s) looked at.", width, 2
            )
        lines.append(Text(""))
    from ctxbench.analysis.changes import METHOD

    lines += wrapped_lines(f"Method: {METHOD}.", width, 0, "dim")
    return lines
