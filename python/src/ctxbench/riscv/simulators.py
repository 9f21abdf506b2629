"""The simulators and core models the lab runs on, one ``Target`` each.

The simulators the lab runs on, one ``Target`` per simulator and core
model, and how to build the images and run one target.

Honest units: Spike models one instruction per cycle, so its ``cycle`` is an
instruction count (riscv-isa-sim #702); QEMU with ``-icount shift=0`` makes
both counters read its instruction counter. rvsim models a pipeline, so its
``rdcycle`` is a model's cycle count: labelled with the model, never as if
it were silicon's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ctxbench.riscv import rvsim_models
from ctxbench.riscv.rvsim_models import MODELS

SPIKE_ISA = "rv64gc_zicntr"  # zicntr: without it rdcycle/rdinstret trap
SIM_TIMEOUT_S = 300


class LabError(Exception):
    """The lab could not be built or a simulator run failed."""


@dataclass(frozen=True)
class Target:
    """One simulator (and, for rvsim, one core model) the lab runs on."""

    name: str  # spike, qemu, rvsim-<model>
    sim: str  # spike, qemu, rvsim
    model: str | None  # the rvsim model
    image: str  # which platform's lab image it boots (spike or qemu)
    counts_cycles: bool  # rdcycle is a cycle model's count, not instructions
    counters: str  # what rdcycle and rdinstret mean here, in words

    @property
    def cycle_unit(self) -> str:
        return f"cycles (rvsim {self.model})" if self.counts_cycles else self.instruction_unit

    @property
    def instruction_unit(self) -> str:
        return {
            "spike": "instructions (Spike)",
            "qemu": "instructions (QEMU icount)",
            "rvsim": f"instructions (rvsim {self.model})",
        }[self.sim]


TARGETS = {
    "spike": Target(
        "spike",
        "spike",
        None,
        "spike",
        False,
        "Spike models one instruction per cycle, so rdcycle equals rdinstret: "
        "both are instruction counts",
    ),
    "qemu": Target(
        "qemu",
        "qemu",
        None,
        "qemu",
        False,
        "with -icount shift=0 QEMU's rdcycle and rdinstret both read its instruction "
        "counter (1 instruction = 1 ns of virtual time); there is no cycle model",
    ),
}
for _model, _words in MODELS.items():
    TARGETS[f"rvsim-{_model}"] = Target(
        f"rvsim-{_model}",
        "rvsim",
        _model,
        "spike",
        True,
        f"rdcycle counts the cycles of a model ({_words}), rdinstret retired "
        "instructions; a model's cycles, not a measurement of hardware",
    )
SIMULATORS = ("spike", "qemu", "rvsim")


def targets_of(sims: tuple[str, ...]) -> list[Target]:
    """The targets of the named simulators ('rvsim' means all its models)."""
    for sim in sims:
        if sim not in SIMULATORS:
            raise ValueError(f"unknown simulator {sim!r} (use one of {', '.join(SIMULATORS)})")
    return [t for t in TARGETS.values() if t.sim in sims]


def build(lab_dir: Path, build_dir: Path, make: Path, cc: Path) -> None:
    """`make -C riscv OUT=build_dir`: both kernel images and their disassembly."""
    command = [
        str(make),
        "-s",
        "-C",
        str(lab_dir),
        f"OUT={build_dir}",
        f"CROSS={str(cc)[: -len('gcc')]}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise LabError(f"building the lab failed (exit {done.returncode}): " + " | ".join(tail))


def command(target: Target, tools: dict[str, Path], elf: Path) -> list[str]:
    if target.sim == "spike":
        return [str(tools["spike"]), f"--isa={SPIKE_ISA}", "-m16", str(elf)]
    if target.sim == "rvsim":
        # The module runs as a script: it needs rvsim, not ctxbench, on the path.
        return [sys.executable, rvsim_models.__file__, str(target.model), str(elf)]
    return [
        str(tools["qemu"]),
        "-machine", "virt",
        "-bios", "none",
        "-nographic",
        "-monitor", "none",
        "-icount", "shift=0",  # counters advance one per instruction: deterministic
        "-kernel", str(elf),
    ]  # fmt: skip


class Children:
    """The simulator processes running now, so that an interrupted lab
    (Ctrl-C, SIGTERM turned into an exception) leaves none behind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        with self._lock:
            child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=env,
            )
            self._running.add(child)
            return child

    def done(self, child: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(child)

    def kill_all(self) -> None:
        with self._lock:
            for child in self._running:
                child.kill()
            for child in self._running:
                child.wait()
            self._running.clear()


def run(target: Target, tools: dict[str, Path], elf: Path, children: Children) -> str:
    """Boot the lab kernel on one target; its exit status is the kernel's pass/fail."""
    env = dict(os.environ)
    if "dtc" in tools:  # Spike runs dtc by name
        env["PATH"] = f"{Path(tools['dtc']).parent}{os.pathsep}{env.get('PATH', '')}"
    child = children.start(command(target, tools, elf), env)
    try:
        stdout, stderr = child.communicate(timeout=SIM_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        child.kill()
        child.communicate()
        raise LabError(f"{target.name} did not finish within {SIM_TIMEOUT_S} s") from error
    finally:
        children.done(child)
    if child.returncode != 0:
        lines = (stdout + stderr).strip().splitlines()
        tail = " | ".join(line[-200:] for line in lines[-3:]) or "no output"
        raise LabError(f"{target.name} exited with status {child.returncode}: {tail}")
    return stdout
