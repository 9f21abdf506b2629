"""Reading the lab's output: console lines and disassembly.

Reading what the lab produced: the kernel's ``ctxlab ...`` console lines
and the images' disassembly (objdump -d)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxbench.riscv.catalog import ENTRY_SYMBOLS
from ctxbench.riscv.simulators import LabError

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
    single: dict[tuple[str, str], LoopCounts] = field(default_factory=dict)
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
        elif kind in ("sample", "single"):
            key = (fields["variant"], fields["call"])
            counts = LoopCounts(int(fields["n"]), int(fields["cycles"]), int(fields["instret"]))
            if kind == "single":
                out.single[key] = counts
            else:
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
