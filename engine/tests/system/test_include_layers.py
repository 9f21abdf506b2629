"""The engine's source folders: includes point only down the layers.

Each folder of engine/src holds one job (docs/architecture.md, "The
engine"), and an include names its header by folder ("model/record.hpp").
LAYERS lists the folders from the top, the command line, to the bottom, the
record's types: a file includes headers of its own folder and of the folders
below it, never of one above. The probes (engine/probes) and the tests sit
above them all. Reads the files as text; nothing is compiled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

SOURCE = REPO / "engine" / "src"

# The folders, top first; each may include itself and those after it.
# helpers: the small programs the engine runs (exit0, forkloop, seccomp-exec);
# cli: the commands; plan: a run's variants and their order; measure: the
# harness; trace: the kernel's events; report: records written and words;
# os: what the engine reads of the machine and asks of the kernel; model:
# the record's types and the probe registry.
LAYERS = ["helpers", "cli", "plan", "measure", "trace", "report", "os", "model"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SUFFIXES = {".cpp", ".hpp", ".c", ".h"}


def folder_of(path: Path, tree: Path) -> str:
    """The layer folder a file of `tree` (an engine/src) sits in."""
    return path.relative_to(tree).parts[0]


def include_problems(tree: Path) -> list[str]:
    """Every include of a file under `tree` that names a folder above the
    file's own, or a header without its folder."""
    problems = []
    for path in sorted(p for p in tree.rglob("*") if p.suffix in SUFFIXES):
        own = folder_of(path, tree)
        text = path.read_text(encoding="utf-8")
        for match in INCLUDE.finditer(text):
            header = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(tree)}:{line} includes {header}"
            target = header.split("/")[0]
            if target not in LAYERS:
                problems.append(f"{where}: name the header by its folder ({', '.join(LAYERS)})")
            elif own in LAYERS and LAYERS.index(target) < LAYERS.index(own):
                problems.append(f"{where}: {target}/ is above {own}/")
    return problems


def test_every_folder_is_a_layer():
    folders = sorted(p.name for p in SOURCE.iterdir() if p.is_dir())
    assert folders == sorted(LAYERS), (
        "each folder of engine/src is a layer: add a new one to LAYERS (which folders "
        "it may include) and to docs/architecture.md"
    )
    loose = [p.name for p in SOURCE.iterdir() if p.is_file()]
    assert not loose, f"every source file sits in a folder: {', '.join(loose)}"


def test_no_folder_includes_one_above_it():
    problems = include_problems(SOURCE)
    assert not problems, "includes against the layers (LAYERS):\n" + "\n".join(problems)


def plant(tree: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text, encoding="utf-8")
    return tree


@pytest.mark.parametrize(
    "files",
    [
        {"model/record.hpp": '#include "measure/host_reference.hpp"\n'},
        {"os/idle.cpp": '#pragma once\n#include <string>\n  #  include "cli/exits.hpp"\n'},
        {"report/wording.cpp": '#include "report/output.hpp"\n#include "plan/schedule.hpp"\n'},
        {"os/arch/cycle_timer.hpp": '#include "trace/phases.hpp"\n'},
        {"measure/harness.cpp": '#include "harness.hpp"\n'},
    ],
)
def test_an_upward_include_is_found(tmp_path, files):
    # The check above on a tree with one include planted against the layers.
    assert len(include_problems(plant(tmp_path, files))) == 1


def test_downward_and_sideways_includes_are_allowed(tmp_path):
    tree = plant(
        tmp_path,
        {
            "cli/main.cpp": '#include "plan/run_plan.hpp"\n#include "model/record.hpp"\n',
            "measure/harness.cpp": '#include "measure/sampling.hpp"\n#include <vector>\n',
        },
    )
    assert not include_problems(tree)


def test_architecture_names_every_unit():
    # docs/architecture.md's engine table: one row per unit, by folder.
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    files = [p for p in SOURCE.rglob("*") if p.suffix in SUFFIXES]
    units = sorted({str(p.relative_to(SOURCE).with_suffix("")) for p in files})
    missing = [unit for unit in units if f"`{unit}`" not in text]
    assert not missing, f"docs/architecture.md's engine table does not name: {', '.join(missing)}"
