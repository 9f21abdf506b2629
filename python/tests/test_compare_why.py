"""compare --why and --pair on runs where one thing really changed.

The runs are real engine output recorded by bench/why_fixtures.sh
(fixtures/why/README.md says when and where): a seccomp filter on B,
scheduler tracepoints recording on B, policy batch against normal, threads
against processes, pinned against unpinned, idle free against held, and this
machine against a QEMU guest (fixtures/other_machine.jsonl). Each test checks
what the mechanism acts on, never a speed.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import FIXTURES, fixture_path, invoke
from ctxbench.analysis.compare.comparison import compare_runs
from ctxbench.analysis.compare.difference_parts import why
from ctxbench.analysis.compare.envparts import (
    ADDRESS_SPACE,
    KERNEL_ENTRY,
    SCHEDULER,
    group_of,
    key_difference,
)
from ctxbench.analysis.compare.pairs import pair_runs, waive_placement
from ctxbench.cli.main import cli as main
from ctxbench.records.reading import read_run_file
from ctxbench.views.compare.difference import row_lines

WHY = FIXTURES / "why"
REFERENCE = FIXTURES.parent.parent.parent / "docs" / "data" / "reference-run.jsonl"
SCHEMA = json.loads((FIXTURES.parent.parent.parent / "schema/compare.schema.json").read_text())


def load(store, *names):
    runs = []
    for name in names:
        path = WHY / name if (WHY / name).exists() else fixture_path(name)
        if name == "reference-run.jsonl":
            path = REFERENCE
        runs.append(store.load(store.add_run(read_run_file(path, []), origin="import", label=name)))
    return runs


def split(store, a, b, pair=None):
    runs = load(store, a, b)
    compared = runs
    pairing = None
    if pair:
        pairing = pair_runs(runs[0], runs[1], pair)
        compared = pairing.runs
    comparison = compare_runs(compared)
    if pairing is not None:
        comparison = waive_placement(comparison, pairing.names)
    return why(comparison, measured=runs, every_row=False), comparison, pairing


def cli(db, *args):
    return CliRunner().invoke(main, [*args, "--db", str(db)], catch_exceptions=False)


def test_a_seccomp_filter_moves_kernel_entry_and_names_the_filter(store):
    result, _, _ = split(store, "seccomp_a.jsonl", "seccomp_b.jsonl")
    assert result.rows, "the filter made no row differ"
    assert result.top_group == KERNEL_ENTRY
    assert result.top_keys[0].key.startswith("sandbox.seccomp.")
    mode = next(k for k in result.env if k.key == "sandbox.seccomp.mode")
    assert mode.values == ("disabled", "filter")


def test_recording_tracepoints_move_the_scheduler_part_and_name_the_tracepoints(store):
    result, _, _ = split(store, "tracepoints_a.jsonl", "tracepoints_b.jsonl")
    assert result.top_group == SCHEDULER
    assert result.top_keys[0].key.startswith("sandbox.tracepoints.")
    assert all(row.phases for row in result.rows if row.probe.startswith("switch."))


def test_policy_batch_moves_the_scheduler_part_named_by_the_paired_parameter(store):
    result, _, pairing = split(store, "policy_a.jsonl", "policy_b.jsonl", ("policy",))
    assert pairing.paired >= 1
    assert result.top_group == SCHEDULER
    assert result.top_keys[0].key == "param policy"


def test_processes_against_threads_is_the_address_space_switch(store):
    result, _, pairing = split(store, "between_a.jsonl", "between_b.jsonl", ("between",))
    assert pairing.paired >= 1 and not pairing.ambiguous
    assert result.top_group == ADDRESS_SPACE
    assert result.top_keys[0].key == "param between"
    [row] = [r for r in result.rows if r.probe == "switch.pipe"]
    assert row.params["between"] == "threads" and row.other_params["between"] == "processes"
    part = next(p for p in row.parts if p.name == "address-space switch")
    assert part.reference_ns == 0.0  # a thread variant has none, by definition


def test_the_guest_against_this_machine_names_what_acts_on_everything(store):
    result, _, _ = split(store, "host.jsonl", "other_machine.jsonl")
    assert result.rows
    assert result.top_keys and "virtualization" in result.top_keys[0].key


# Every recorded pair: other machines (the QEMU guest, its broad selection), the
# seccomp, tracepoint, policy, between, affinity and idle pairs, a loaded run.
PAIRS = [
    ("host.jsonl", "other_machine.jsonl", None),
    ("host.jsonl", "other_machine_broad.jsonl", None),
    ("run_a.jsonl", "other_machine.jsonl", None),
    ("run_a.jsonl", "gate_a.jsonl", None),
    ("seccomp_a.jsonl", "seccomp_b.jsonl", None),
    ("tracepoints_a.jsonl", "tracepoints_b.jsonl", None),
    ("policy_a.jsonl", "policy_b.jsonl", ("policy",)),
    ("between_a.jsonl", "between_b.jsonl", ("between",)),
    ("between_a.jsonl", "between_b.jsonl", None),
    ("affinity_a.jsonl", "affinity_b.jsonl", ("cpus",)),
    ("idle_free.jsonl", "idle_held.jsonl", ("idle",)),
    ("gate_a.jsonl", "gate_seccomp2.jsonl", None),
    ("reference-run.jsonl", "other_machine_broad.jsonl", None),  # user-level switches too
]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(x for x in p[:2]))
def test_every_rows_parts_add_up_to_its_difference_and_largest_is_the_largest(store, pair):
    """Done-means 1 of issue 40: for every row of every --why (every row split,
    not only those that differ), the parts' shares, the remainder included, sum
    to 100 % and 'largest' is the part with the largest share."""
    a, b, names = pair
    runs = load(store, a, b)
    compared, pairing = runs, None
    if names:
        pairing = pair_runs(runs[0], runs[1], names)
        compared = pairing.runs
    comparison = compare_runs(compared)
    result = why(comparison, measured=runs, every_row=True)
    assert result.rows or result.not_split
    from ctxbench.views.export import why_dict

    why_schema = {**SCHEMA["properties"]["why"], "$defs": SCHEMA["$defs"]}
    jsonschema.validate(why_dict(result)["why"], why_schema)  # the JSON form of every pair
    for row in result.rows:
        total = sum(p.difference_ns for p in row.parts)
        assert total == pytest.approx(row.difference_ns, rel=1e-9, abs=1e-6), row.probe
        if row.difference_ns:
            assert sum(p.share for p in row.parts) == pytest.approx(1.0, abs=1e-9)
            largest = row.largest
            assert largest is not None
            assert largest.share == max(p.share for p in row.parts)
        if row.phases:  # the traced phases, the time no chain covers included, add up too
            phases = sum(p.difference_ns for p in row.phases)
            assert phases == pytest.approx(row.difference_ns, rel=1e-6, abs=1e-6)
        for part in [*row.parts, *row.phases]:
            if part.low_ns is not None:
                assert part.low_ns <= part.high_ns
        rests = [p for p in row.parts if p.remainder]
        assert len(rests) <= 1  # whatever no measurement separates is one part
        for part in row.parts:
            for side, _ in part.unmeasured:  # a part one run did not separate is in its rest
                assert rests and (side, part.name) in rests[0].holds


def test_a_part_measured_in_one_run_only_has_its_share(store):
    """The guest's address-space switch, measured in its own run (processes less
    threads), is a part with its share, not 'not split': the row's largest."""
    result, _, _ = split(store, "host.jsonl", "other_machine.jsonl")
    [row] = [
        r
        for r in result.rows
        if r.probe == "switch.pipe"
        and r.params == {**r.params, "between": "processes", "policy": "normal"}
    ]
    part = next(p for p in row.parts if p.name == "address-space switch")
    assert part.reference_ns == 0.0 and part.other_ns > 0 and part.unmeasured[0][0] == "A"
    assert row.largest is part and part.share > 0.5


def test_pairing_idle_pairs_every_cross_cpu_row_and_says_whether_holding_helped(store, tmp_path):
    runs = load(store, "idle_free.jsonl", "idle_held.jsonl")
    pairing = pair_runs(runs[0], runs[1], ("idle",))
    held = [r for r in runs[1].records.results if r.get("params", {}).get("idle") == "held"]
    free = [r for r in runs[0].records.results if r.get("params", {}).get("idle") == "free"]
    assert all(r["params"]["cpus"] == "cross" for r in free + held)
    assert pairing.paired == len(held) == len(free) > 0  # every cross-CPU row of A paired
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--pair", "idle")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "idle=free→held" in line]
    assert len(said) == len(held)  # one verdict line per pair, each naming the change
    verdicts = ("helped", "made it slower", "neither helped nor hurt", "inconclusive")
    assert all(any(word in line for word in verdicts) for line in said)
    suspect = [r for r in free + held if r["verdict"]["status"] != "ok"]
    assert suspect and result.output.count("[marked:") >= 1  # a suspect side is marked, kept
    summary = next(
        line for line in result.output.splitlines() if "pair" in line and "shown" in line
    )
    assert summary.startswith(f"{len(held)} pairs shown")


def test_the_pair_summary_counts_the_rows_shown_and_names_the_unpaired(store):
    runs = load(store, "between_a.jsonl", "between_b.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--pair", "between")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    summary = next(line for line in lines if "shown (between changed" in line)
    shown = int(summary.split()[0])
    verdicts = sum(1 for line in lines if "between=threads→processes" in line)
    assert shown == verdicts == 2
    assert any(line.startswith("Not shown:") and "of B" in line for line in lines)


def test_why_first_screen_says_where_and_what(store):
    runs = load(store, "seccomp_a.jsonl", "seccomp_b.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why")
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[:7]
    assert any("Where the difference sits: kernel entry/exit" in line for line in first)
    assert any("sandbox.seccomp.mode disabled → filter" in line for line in first)


def test_why_and_pair_as_json_follow_the_schema(store):
    runs = load(store, "between_a.jsonl", "between_b.jsonl")
    result = cli(
        store.location,
        "compare",
        runs[0].run_id,
        runs[1].run_id,
        "--pair",
        "between",
        "--why",
        "--json",
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    jsonschema.validate(document, SCHEMA)
    assert document["pairing"]["parameters"] == ["between"]
    assert {p["other_params"]["between"] for p in document["pairing"]["pairs"]} == {"processes"}
    assert {p["params"]["between"] for p in document["pairing"]["pairs"]} == {"threads"}
    assert document["why"]["top_group"] == ADDRESS_SPACE


def test_a_parameter_no_variant_has_is_bad_input(store):
    runs = load(store, "idle_free.jsonl", "idle_held.jsonl")
    result = invoke(
        "compare", runs[0].run_id, runs[1].run_id, "--pair", "idel", "--db", str(store.location)
    )
    assert result.exit_code == 2
    assert "idel" in result.output and "idle" in result.output
    result = invoke(
        "compare", runs[0].run_id, runs[0].run_id, "--pair", "idle", "--db", str(store.location)
    )
    assert result.exit_code == 2
    third = load(store, "host.jsonl")[0]
    ids = [runs[0].run_id, runs[1].run_id, third.run_id]
    result = invoke("compare", *ids, "--why", "--db", str(store.location))
    assert result.exit_code == 2 and "two runs" in result.output


def test_the_table_knows_which_part_each_difference_acts_on():
    assert key_difference("sandbox.seccomp.mode", ("disabled", "filter")).groups == (
        KERNEL_ENTRY,
        "the primitive's own work",
    )
    assert key_difference("sandbox.tracepoints.recording", ("no", "yes")).groups == (SCHEDULER,)
    assert key_difference("frequency.cpuidle_driver", ("haltpoll", "none")).groups == ("idle exit",)
    assert key_difference("frequency.governor", ("a", "b")).groups == ("everything",)
    assert key_difference("memory.total_kib", ("1", "2")).groups == ()
    assert group_of("IPI exit → idle exit") == "idle exit"
    assert group_of("call exit → next call") == KERNEL_ENTRY
    assert group_of("wakeup → switch") == SCHEDULER


@pytest.mark.parametrize(
    "a, b, extra",
    [
        ("host.jsonl", "other_machine.jsonl", []),  # this machine against a VM
        ("affinity_a.jsonl", "affinity_b.jsonl", ["--pair", "cpus"]),  # pinned or not
        ("between_a.jsonl", "between_b.jsonl", ["--pair", "between"]),  # threads, processes
    ],
)
def test_each_seed_comparison_says_where_the_difference_sits_on_its_first_screen(
    store, a, b, extra
):
    runs = load(store, a, b)
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why", *extra)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[:25]
    assert any("Where the difference sits:" in line for line in first), "\n".join(first)
    assert any("What differs and acts on it:" in line for line in first), "\n".join(first)


def test_the_run_lines_show_the_options_the_records_show(store):
    runs = load(store, "idle_free.jsonl", "idle_held.jsonl", "tracepoints_b.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id)
    assert result.exit_code == 0, result.output
    [held] = [line for line in result.output.splitlines() if line.startswith("  B:")]
    assert "--hold-idle" in held
    result = cli(store.location, "compare", runs[0].run_id, runs[2].run_id)
    [traced] = [line for line in result.output.splitlines() if line.startswith("  B:")]
    assert "--trace" in traced and "tracepoints recording" in traced


def test_the_tcg_guest_names_emulation_not_hypervisor_exits(store):
    """QEMU TCG translates every instruction: the key that acts on the part that
    moved is named as an emulator acting on every part, never as a hypervisor's
    exits on interrupts and idle (issue 40, done-means 1)."""
    runs = load(store, "host.jsonl", "other_machine.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why")
    assert result.exit_code == 0, result.output
    first = " ".join(result.output.splitlines()[:8])
    assert "What differs and acts on it: virtualization" in first
    assert "emulator" in first and "every instruction" in first
    assert "exits" not in result.output
    # A hypervisor's exits do not act on a system call's kernel entry/exit.
    kvm = key_difference("virtualization.detected", ("none", "kvm"))
    assert not kvm.acts_on(KERNEL_ENTRY) and kvm.acts_on("idle exit")
    tcg = key_difference("virtualization.detected", ("kvm", "qemu"), emulated=True)
    assert tcg.acts_on(KERNEL_ENTRY)


def test_a_pair_whose_b_carried_interference_says_so_before_the_machine(store):
    """B (gate_a.jsonl) was recorded at load ~12, every figure suspect; A (run_a)
    quiet: the first line says B carried interference, with counts, before any
    environment key (issue 40, done-means 1)."""
    runs = load(store, "run_a.jsonl", "gate_a.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    first = " ".join(lines[1:3])
    assert "B carried interference: 8 of 8 figures suspect for their spread (unstable 8)" in first
    load_at = next(i for i, line in enumerate(lines) if "carried interference" in line)
    keys_at = [i for i, line in enumerate(lines) if "virtualization.detected" in line]
    assert keys_at and load_at < min(keys_at)
    document = json.loads(
        cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why", "--json").output
    )
    jsonschema.validate(document, SCHEMA)
    assert [side["carried"] for side in document["why"]["load"]] == [False, True]


def test_rows_with_no_parts_are_one_line_per_reason_and_largest_is_not_said_twice(store):
    runs = load(store, "host.jsonl", "other_machine_broad.jsonl")
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--why")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not any("no parts: this probe has none" in line for line in lines)
    start = lines.index("Rows that differ but have no parts")
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line)
    said = " ".join(block)
    assert said.count(".") >= 1 and said.endswith(".")  # one sentence naming them all
    assert "syscall.clock_gettime_vdso, syscall.gettimeofday_vdso (answered in the vDSO" in said
    for line in lines:
        if line.strip().startswith("largest: "):
            name = line.strip().removeprefix("largest: ")
            assert not name.endswith(f"({name.split(' (')[0]})")  # 'x (x)' never


def test_the_rows_the_selection_named_come_first(store):
    """host.jsonl ran `syscall.* switch.pipe ...`: switch.pipe was named, the system
    calls came by a glob, so the switch rows lead."""
    result, _, _ = split(store, "host.jsonl", "other_machine.jsonl")
    flags = [row.selected for row in result.rows]
    assert flags[0] and flags == sorted(flags, reverse=True)
    assert {row.probe for row in result.rows if row.selected} == {"switch.pipe"}


def _only(path, out, keep, strip=None):
    """A copy of a recorded run, as a run of its own (the id ends in the copy's
    name), with only the results KEEP accepts (STRIP: a parameter taken out of
    every result's params, as a run recorded without that axis)."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "run_id" in record:
            record["run_id"] = record["run_id"][:-1] + out.stem[0]
        if record.get("kind") == "result":
            if not keep(record):
                continue
            if strip:
                record["params"].pop(strip, None)
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n")
    return out


def test_pair_outcomes_are_the_gates_and_absent_values_say_absent(store, tmp_path):
    """--pair: 'neither helped nor hurt' only where the gate calls the pair not
    slower at a stated detectable size; else inconclusive with why. A parameter
    a record does not have prints as 'absent', never None (issue 40, item 4)."""
    source = fixture_path("seccomp_quick.jsonl")
    a = _only(
        source, tmp_path / "a.jsonl", lambda r: r["params"].get("seccomp") == "none", "seccomp"
    )
    b = _only(source, tmp_path / "b.jsonl", lambda r: r["params"].get("seccomp") == "allow")
    runs = [
        store.load(store.add_run(read_run_file(path, []), origin="import", label=path.name))
        for path in (a, b)
    ]
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--pair", "seccomp")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "seccomp=" in line]
    assert said and all("seccomp=absent→allow" in line for line in said)
    assert "None" not in result.output
    from ctxbench.analysis.compare.gate import NOT_SLOWER
    from ctxbench.views.compare.difference import NEITHER, UNDECIDED, pair_outcome

    for names, pair in (
        (("seccomp",), runs),
        (("idle",), load(store, "idle_free.jsonl", "idle_held.jsonl")),
    ):
        pairing = pair_runs(pair[0], pair[1], names)
        comparison = compare_runs(pairing.runs)
        for row in comparison.rows:
            outcome, verdict = pair_outcome(row, comparison)
            if outcome == NEITHER:
                assert verdict.outcome == NOT_SLOWER and verdict.detectable is not None
            if row.cells[1].decision not in ("slower", "faster"):
                ratio = verdict.time_ratio
                if ratio is not None and (ratio > 2 or ratio < 0.5):
                    assert outcome == UNDECIDED  # a 2x row no test could call the same


def test_user_level_steps_are_their_own_group_and_joined_alike(store):
    """A user-level switch has no scheduler: its steps are the user-level
    switch's group, and where one run joined two steps (one within its noise)
    the other run's are joined under the same name, not set against zero."""
    from ctxbench.analysis.compare.envparts import USER_LEVEL

    result, _, _ = split(store, "reference-run.jsonl", "other_machine_broad.jsonl")
    rows = [row for row in result.rows if row.probe.startswith("uswitch.")]
    assert rows
    for row in rows:
        assert {part.group for part in row.parts} == {USER_LEVEL}, row.probe
        assert not any(part.unmeasured for part in row.parts), row.probe


@pytest.mark.parametrize("width", [80, 100])
def test_a_part_row_wider_than_the_screen_puts_its_interval_on_an_indented_line(store, width):
    """A user at 100 columns saw ', within its samples' wrapped to the first column under a
    long part name (2026-11-27): no line of a row is wider than the screen, and every part
    row's interval stays indented."""
    result, comparison, _ = split(store, "host.jsonl", "gate_loaded_a.jsonl")
    long_name = "primitive's own work, its system calls included"
    rows = [r for r in result.rows if any(p.name == long_name for p in r.parts)]
    assert rows, "the pair has a switch row whose B measured no bare system call"
    for row in rows:
        lines = [line.plain for line in row_lines(row, comparison, width)]
        assert all(len(line) <= width for line in lines), lines
        assert all(line.startswith("  ") for line in lines), lines
        assert not any(re.search(r"\s-\d+%", line) for line in lines), lines  # − for a share
