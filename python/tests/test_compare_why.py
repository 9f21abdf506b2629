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

import jsonschema
import pytest
from click.testing import CliRunner

from conftest import FIXTURES, fixture_path, invoke
from ctxbench.analysis.compare import compare_runs
from ctxbench.analysis.compare_pairs import pair_runs, waive_placement
from ctxbench.analysis.compare_why import why
from ctxbench.analysis.envparts import (
    ADDRESS_SPACE,
    KERNEL_ENTRY,
    SCHEDULER,
    group_of,
    key_difference,
)
from ctxbench.cli.main import cli as main
from ctxbench.records.core import read_run_file

WHY = FIXTURES / "why"
SCHEMA = json.loads((FIXTURES.parent.parent.parent / "schema/compare.schema.json").read_text())


def load(store, *names):
    runs = []
    for name in names:
        path = WHY / name if (WHY / name).exists() else fixture_path(name)
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


@pytest.mark.parametrize(
    "pair",
    [
        ("seccomp_a.jsonl", "seccomp_b.jsonl", None),
        ("tracepoints_a.jsonl", "tracepoints_b.jsonl", None),
        ("between_a.jsonl", "between_b.jsonl", ("between",)),
    ],
)
def test_the_parts_add_up_to_each_rows_difference(store, pair):
    result, _, _ = split(store, *pair)
    for row in result.rows:
        if any(text.split(": ", 1)[-1].startswith("address-space") for text in row.not_split):
            continue
        total = sum(p.difference_ns for p in row.parts)
        assert total == pytest.approx(row.difference_ns, rel=1e-6, abs=1e-6)
        for part in row.parts:
            if part.low_ns is not None:
                assert part.low_ns <= part.high_ns


def test_pairing_idle_pairs_every_cross_cpu_row_and_says_whether_holding_helped(store, tmp_path):
    runs = load(store, "idle_free.jsonl", "idle_held.jsonl")
    pairing = pair_runs(runs[0], runs[1], ("idle",))
    held = [r for r in runs[1].results if r.get("params", {}).get("idle") == "held"]
    free = [r for r in runs[0].results if r.get("params", {}).get("idle") == "free"]
    assert all(r["params"]["cpus"] == "cross" for r in free + held)
    assert pairing.paired == len(held) == len(free) > 0  # every cross-CPU row of A paired
    result = cli(store.location, "compare", runs[0].run_id, runs[1].run_id, "--pair", "idle")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "idle=free→held" in line]
    assert len(said) == len(held)  # one verdict line per pair, each naming the change
    verdicts = ("helped", "made it slower", "neither helped nor hurt", "not judged")
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
    first = result.output.splitlines()[:4]
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
