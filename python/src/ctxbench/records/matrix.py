"""CPU-pair matrices (the ``matrix`` object of ``matrix.*`` records): cells, classes, grid.

Pure functions over a stored result record; they measure and compute nothing
the record does not hold, except choosing how to show it. A cell's samples
are a slice of the record's ``samples`` (``first_sample``, ``n``), so a
class's samples are its cells' slices put together, which is what the
engine summarizes per class and what ``compare`` tests per class.

The terminal grid fits 80 columns for up to 16 CPUs: each cell is three
characters (the median in one unit chosen for the whole grid so that every
value is under 1000; values under one unit keep two decimals, '.01') and one
marker (``*``: the cell is not ok).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxbench.records.result import Result

CLASS_ORDER = ("same_cpu", "smt", "llc", "node", "other_node")
CLASS_LABEL = {
    "same_cpu": "same CPU",
    "smt": "SMT sibling",
    "llc": "same LLC",
    "node": "same node",
    "other_node": "other node",
}
GRID_MAX_CPUS = 16
TIME_UNITS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))


def has_matrix(result: Result) -> bool:
    """A measured result that carries a matrix."""
    return bool(result.block("matrix")) and result.verdict.measured


def cells_by_pair(result: Result) -> dict[tuple[int, int], Mapping[str, Any]]:
    return {(cell["row"], cell["column"]): cell for cell in result.block("matrix")["cells"]}


def cell_samples(result: Result, cell: Mapping[str, Any]) -> list[float]:
    first = cell["first_sample"]
    return list(result.samples[first : first + cell["n"]])


def class_samples(result: Result, pair_class: str) -> list[float]:
    """Every sample of the class's measured cells."""
    samples: list[float] = []
    for cell in result.block("matrix")["cells"]:
        if cell["class"] == pair_class:
            samples += cell_samples(result, cell)
    return samples


def classes(result: Result) -> list[Mapping[str, Any]]:
    """The record's classes with at least one measured cell, nearest first."""
    present = [k for k in result.block("matrix")["classes"] if k.get("measured")]
    return sorted(present, key=lambda k: CLASS_ORDER.index(k["class"]))


@dataclass(frozen=True)
class Block:
    """A run of CPUs, adjacent in the matrix order, that share something."""

    kind: str  # "llc", "node", "smt"
    first: int  # index in matrix.cpus
    last: int


def blocks(result: Result) -> list[Block]:
    """Groups of adjacent CPUs sharing an LLC, a NUMA node or a core (SMT
    siblings), from the topology the matrix was measured on. Only groups of two
    or more; nodes only where there is more than one."""
    matrix = result.block("matrix")
    places = {place["cpu"]: place for place in matrix.get("topology", [])}
    cpus = matrix["cpus"]

    def runs(kind: str, key: Any) -> list[Block]:
        found = []
        start = 0
        for index in range(1, len(cpus) + 1):
            if index == len(cpus) or key(cpus[index]) != key(cpus[start]):
                if index - start >= 2 and key(cpus[start]) is not None:
                    found.append(Block(kind, start, index - 1))
                start = index
        return found

    def place(cpu: int, field: str) -> Any:
        return places.get(cpu, {}).get(field)

    out = runs("llc", lambda cpu: place(cpu, "llc"))
    nodes = {place(cpu, "node") for cpu in cpus}
    if len(nodes) > 1:
        out += runs("node", lambda cpu: place(cpu, "node"))

    def core(cpu: int) -> Any:
        siblings = str(place(cpu, "smt_siblings") or "")
        return siblings if ("," in siblings or "-" in siblings) else None  # one thread: no block

    out += runs("smt", core)
    return out


def grid_unit(values: list[float]) -> tuple[float, str]:
    """One time unit for a whole grid, so that every value is under 1000 of it."""
    largest = max((abs(v) for v in values), default=0.0)
    for factor, name in TIME_UNITS:
        if largest / factor < 999.5:
            return factor, name
    return TIME_UNITS[-1]


def grid_number(value: float) -> str:
    """Three characters: '123', ' 45', '4.5', '.01' (a value far below the
    grid's largest keeps two decimals instead of showing as 0.0)."""
    if round(value, 1) >= 10 or value <= -10:
        return f"{value:3.0f}"
    if 0 <= value < 0.95:
        return f"{value:.2f}"[1:]
    return f"{value:3.1f}"


def grid_lines(result: Result) -> list[str]:
    """The matrix as text, one line per row CPU; None-free for up to 16 CPUs."""
    matrix = result.block("matrix")
    cpus = matrix["cpus"]
    by_pair = cells_by_pair(result)
    factor, _ = grid_unit([cell["median"] for cell in by_pair.values()])
    lines = ["    " + "".join(f"{cpu:>3} " for cpu in cpus).rstrip()]
    for row in cpus:
        text = f"{row:>3} "
        for column in cpus:
            cell = by_pair.get((row, column))
            if cell is None:
                text += "  - "
            else:
                text += grid_number(cell["median"] / factor) + (" " if cell["ok"] else "*")
        lines.append(text.rstrip())
    return lines


def unit_name(result: Result) -> str:
    return grid_unit([cell["median"] for cell in result.block("matrix")["cells"]])[1]
