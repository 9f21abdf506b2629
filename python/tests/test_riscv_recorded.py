"""The RISC-V lab's answer, read from a recorded run (python/tests/fixtures/riscv/lab_run.jsonl,
see fixtures/README.md): runs anywhere, no simulator needed.

What they establish: for every target, call and unit the parts of the split
are never negative and add up to the round trip; the answer is one line per
simulator with the largest part and its share, then one sentence per
question; instruction counts and loop cycles print as whole numbers; records
written before the handlers' shape was recorded still get a split that adds
up, with save/restore and dispatch together and a note that says why.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from ctxbench.records.result import Result, results_of
from ctxbench.riscv import answer, report
from ctxbench.riscv.catalog import CALLS, VARIANTS

FIXTURE = Path(__file__).parent / "fixtures" / "riscv" / "lab_run.jsonl"
TARGETS = ("spike", "qemu", "rvsim-inorder", "rvsim-p550", "rvsim-basic")


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def results(records: list[dict]) -> tuple[Result, ...]:
    """The lab's results, as the store hands them out."""
    return results_of(r for r in records if r["kind"] == "result")


def _without_shape(records: list[dict]) -> list[dict]:
    """The records as a lab run before records version 3 wrote them."""
    old = copy.deepcopy(records)
    for record in old:
        for key in ("handler_instructions", "handler_loads_stores"):
            record.get("derived", {}).pop(key, None)
    return old


def test_the_fixture_holds_every_target_variant_and_call(records) -> None:
    targets = answer.lab_targets(results(records))
    assert [t.name for t in targets] == list(TARGETS)
    for target in targets:
        assert target.problem is None, target.problem
        assert set(target.values) == {(v, c) for v in VARIANTS for c in CALLS}
        assert target.shape is not None


@pytest.mark.parametrize("unit", [None, "instructions"])
@pytest.mark.parametrize("strip", [False, True], ids=["with-shape", "without-shape"])
def test_every_split_adds_up_and_no_part_is_negative(records, unit, strip) -> None:
    shown = _without_shape(records) if strip else records
    parts = answer.lab_parts(results(shown), CALLS, unit)
    assert set(parts) == set(TARGETS)
    for name, calls in parts.items():
        for call, split in calls.items():
            assert split.parts, (name, call)
            assert all(value >= 0 for value in split.parts.values()), (name, call, split)
            assert sum(split.parts.values()) == pytest.approx(split.total, abs=1e-9), (name, call)
            if strip:
                assert "save_restore_dispatch" in split.parts
                assert any("not in these records" in note for note in split.notes)


def test_the_split_starts_from_the_bare_trap(records) -> None:
    # Every call shares the bare trap's entry/exit, save/restore and dispatch;
    # only its own logic differs (the rvsim-basic write once printed a
    # save/restore of 334.93 and a call logic of 394.77 in a 532.76 total).
    for name, calls in answer.lab_parts(results(records)).items():
        bare = calls["enosys"]
        assert bare.parts["call_logic"] == 0
        for call, split in calls.items():
            for part in ("entry_exit", "save_restore", "dispatch"):
                assert split.parts[part] == pytest.approx(bare.parts[part]), (name, call, part)
    write = answer.lab_parts(results(records), ("write",))["rvsim-basic"]["write"]
    assert write.parts["call_logic"] == pytest.approx(write.total - 137.99)
    assert max(write.share(p) for p in write.parts) <= 1


def test_instructions_match_the_disassembly_counts_recorded(records) -> None:
    # On Spike one load/store is one instruction: save/restore is the full
    # handler's loads/stores, as counted in the image when it was recorded.
    spike = next(t for t in answer.lab_targets(results(records)) if t.name == "spike")
    split = answer.target_parts(spike, ("getpid",))["getpid"]
    assert split.parts["save_restore"] == spike.shape["full"]["loads_stores"]  # type: ignore[index]
    assert split.per_access == 1


def test_the_answer_is_one_line_per_simulator_then_the_questions(records) -> None:
    lines = answer.lab_answer(results(records))
    for name, line in zip(TARGETS, lines, strict=False):
        assert line.startswith(f"{name}: getpid's ecall round trip is "), line
        split = answer.lab_parts(results(records), ("getpid",))[name]["getpid"]
        top = split.ranked[0]
        unit = "cycles" if name.startswith("rvsim") else "instructions"
        assert f"is {split.total:.0f} {unit}" in line
        assert f"({100 * split.share(top):.0f}%)" in line
    rest = lines[len(TARGETS) :]
    assert rest[0].startswith("Which part dominates getpid's round trip: ")
    assert rest[1].startswith("Cold against warm: ")
    assert "times the loop's figure" in rest[1]
    assert rest[2].startswith("Figures: ")


def test_counts_print_as_whole_numbers(records) -> None:
    text = report.format_report(results(records))
    table = text.split("Every handler and call")[1].split("Where the full handler")[0]
    assert not re.search(r"\d\.\d", table), table
    for line in answer.lab_answer(results(records))[: len(TARGETS)]:
        assert not re.search(r"\d\.\d", line), line
    # the figures: 54.99, 158.99 and 173.01 cycles per round trip
    for fraction in ("54.99", "158.99", "173.01", "161.99"):
        assert fraction not in text


def test_single_shot_and_loop_are_told_apart(records) -> None:
    text = report.format_report(results(records))
    assert "One getpid timed alone" in text
    assert "a one-shot figure is a single counter difference" in text
    rows = [line.split() for line in text.split("One getpid timed alone")[1].splitlines()]
    assert ["rvsim-p550", "cycles", "1926", "1911", "162"] in rows
    assert ["spike", "instructions", "108", "107", "107"] in rows
    assert ["spike", "cycles"] not in [row[:2] for row in rows]  # Spike's cycles are instructions


def test_old_records_say_what_is_not_separated(records) -> None:
    text = report.format_report(results(_without_shape(records)))
    assert "save/restore and dispatch" in text
    assert "- every target and call: save/restore and dispatch not separated" in text


def test_a_failed_target_says_why_and_the_others_answer(records) -> None:
    broken = copy.deepcopy(records)
    for record in broken:
        if record.get("kind") == "result" and record["params"].get("sim") == "qemu":
            record.update(summary=None, corrected=None, derived={})
            record["verdict"] = {
                "status": "failed",
                "reasons": [{"code": "child_failed", "detail": "qemu exited with status 3"}],
            }
    lines = answer.lab_answer(results(broken))
    assert lines[1] == "qemu: not measured: qemu exited with status 3"
    assert lines[0].startswith("spike: getpid's ecall round trip is 107 instructions")
    assert "qemu" not in report.format_report(results(broken)).split("Every handler and call")[1]


def test_explain_lines_give_every_call_with_how_each_part_is_computed(records) -> None:
    lines = report.explain_lines(results(records), ("write",))
    heads = [line for line in lines if line.startswith("riscv.ecall.write on ")]
    assert len(heads) == len(TARGETS)
    shares = [int(m) for m in re.findall(r"\s(-?\d+)%\s", "\n".join(lines))]
    assert shares and all(0 <= share <= 100 for share in shares)
    assert any("call logic: this call's round trip less the bare trap's" in ln for ln in lines)
