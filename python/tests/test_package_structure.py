"""The package's structure: stages that import only downwards, no cycle, no private name borrowed.

Walks the ``ast`` of every module under python/src/ctxbench (no import is
executed; imports inside functions count) and checks the rules of
docs/architecture.md, "The Python side": each subpackage is a stage of the
data and imports only the stages below it (LAYERS), the import graph has no
cycle, no module imports an underscore name from another ctxbench module,
every module opens with a docstring whose first line states its one job, and
no function is longer than a screen (MAX_FUNCTION_LINES). A module's length
is no rule: a long module with one job is fine.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "python" / "src" / "ctxbench"

# Each stage and the stages it may import, lowest first. The base (errors,
# units, stats, the package's __init__) imports nothing of ctxbench but itself.
# riscv is the RISC-V trap lab, a stage of its own beside analysis: it reads
# records and is drawn by views and the commands. __main__ is `python -m
# ctxbench`, the command line's other door.
LAYERS: dict[str, set[str]] = {
    "base": set(),
    "records": {"base"},
    "acquire": {"base", "records"},
    "store": {"base", "records"},
    # analysis takes the run as data (records.runs) and never reads the
    # store itself: what it needs of the store is passed in.
    "analysis": {"base", "records"},
    "riscv": {"base", "records"},
    "views": {"base", "records", "store", "analysis", "riscv"},
    "cli": {"base", "records", "acquire", "store", "analysis", "riscv", "views"},
}
ENTRY_POINTS = {"ctxbench.__main__": "cli"}

# Inside analysis, one room per question, lowest first: explain (why one
# run's figures are what they are), compare (two runs or more, row by row),
# summary (what a summary holds, drawn from both). A room imports its own
# modules and the rooms below it; a module of analysis outside every room
# (profile_price) imports no room.
ANALYSIS_ROOMS: dict[str, set[str]] = {
    "explain": set(),
    "compare": {"explain"},
    "summary": {"explain", "compare"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
SUBPACKAGES = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))


def stage(module: str) -> str:
    """The stage a module belongs to: its subpackage, or the base for a
    top-level module."""
    if module in ENTRY_POINTS:
        return ENTRY_POINTS[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else "base"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports included)."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, source: str) -> list[tuple[str, str | None, int]]:
    """(imported ctxbench module, name taken from it or None, line) for every
    import anywhere in ``source`` (the text of ``module``), lazy ones inside
    functions included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(module, node)
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                if submodule in MODULES:  # `from ctxbench import units`: a module, not a name
                    found.append((submodule, None, node.lineno))
                else:
                    found.append((origin, alias.name, node.lineno))
    return [(target, name, line) for target, name, line in found if _ours(target)]


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    return imports_of(module, MODULES[module].read_text(encoding="utf-8"))


def _ours(module: str) -> bool:
    return module == "ctxbench" or module.startswith("ctxbench.")


def upward_imports(module: str, source: str) -> list[str]:
    """Every import in ``source`` (the text of ``module``) of a stage that
    ``module``'s stage may not import, as 'module line N imports target (a to b)'."""
    own = stage(module)
    return [
        f"{module} line {line} imports {target} ({own} may not import {stage(target)})"
        for target, _, line in imports_of(module, source)
        if target in MODULES and stage(target) != own and stage(target) not in LAYERS[own]
    ]


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module in MODULES:
        edges = set()
        for target, _, _ in _imports(module):
            # Importing a.b.c runs a/__init__ and a.b/__init__ first: not an
            # edge of its own (the package __init__ files import nothing).
            if target != module and target in MODULES:
                edges.add(target)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_walk_finds_the_package_and_its_imports():
    # Guards the checks below against passing on an empty walk.
    assert {"ctxbench.cli.main", "ctxbench.cli.commands.run", "ctxbench.units"} <= set(MODULES)
    # cli.main names its commands' modules as strings (imported when run:
    # test_startup checks each resolves), so the edge checked is one below it.
    assert "ctxbench.cli.run_lifecycle" in _graph()["ctxbench.cli.commands.run"]


def test_every_subpackage_is_a_stage():
    assert set(SUBPACKAGES) == set(LAYERS) - {"base"}, (
        "each subpackage of ctxbench is a stage: add a new one to LAYERS "
        "(which stages it may import) and to docs/architecture.md"
    )


def against_the_package(check: Callable[[str, str], list[str]]) -> list[str]:
    """What ``check`` (upward_imports or imports_across_rooms) finds in every module."""
    return [
        found
        for module, path in MODULES.items()
        for found in check(module, path.read_text(encoding="utf-8"))
    ]


def test_no_stage_imports_a_stage_above_it():
    upward = against_the_package(upward_imports)
    assert not upward, "imports against the stages (LAYERS):\n" + "\n".join(upward)


@pytest.mark.parametrize(
    "module, source",
    [
        ("ctxbench.units", "from ctxbench.records.naming import variant_name\n"),
        ("ctxbench.analysis.compare.gate", "def f():\n    from ctxbench.views import tables\n"),
        ("ctxbench.store.db", "import ctxbench.acquire.runner\n"),
        ("ctxbench.records.schema", "from ctxbench.store import schema\n"),
        ("ctxbench.analysis.machine_history", "import ctxbench.store\n"),
        ("ctxbench.analysis.changes", "def f():\n    from ctxbench.store.db import Store\n"),
    ],
)
def test_an_upward_import_is_found(module, source):
    # The check above on imports planted against the stages, lazy ones included.
    assert upward_imports(module, source)


def test_a_downward_import_is_allowed():
    assert not upward_imports(
        "ctxbench.views.tables", "from ctxbench.analysis.compare import noise\n"
    )
    assert not upward_imports("ctxbench.__main__", "from ctxbench.cli.main import main\n")


def room(module: str) -> str | None:
    """The room of analysis a module sits in, or None outside analysis's rooms."""
    parts = module.split(".")
    if parts[:2] != ["ctxbench", "analysis"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ANALYSIS_ROOMS else ""


def imports_across_rooms(module: str, source: str) -> list[str]:
    """Every import in ``source`` (the text of ``module``) of a room of
    analysis that ``module``'s room may not import."""
    own = room(module)
    if own is None:
        return []
    allowed = ANALYSIS_ROOMS.get(own, set()) | {own}
    return [
        f"{module} line {line} imports {target} ({own or 'analysis'} may not import {room(target)})"
        for target, _, line in imports_of(module, source)
        if room(target) and room(target) not in allowed
    ]


def test_every_room_of_analysis_is_named():
    rooms = {path.parent.name for path in (PACKAGE / "analysis").glob("*/__init__.py")}
    assert rooms == set(ANALYSIS_ROOMS), (
        "each subpackage of analysis is a room: add a new one to ANALYSIS_ROOMS "
        "(which rooms it may import) and to docs/architecture.md"
    )


def test_no_room_of_analysis_imports_a_room_above_it():
    across = against_the_package(imports_across_rooms)
    assert not across, "imports against analysis's rooms (ANALYSIS_ROOMS):\n" + "\n".join(across)


@pytest.mark.parametrize(
    "module, source",
    [
        ("ctxbench.analysis.explain.phases", "from ctxbench.analysis.compare import noise\n"),
        (
            "ctxbench.analysis.compare.gate",
            "def f():\n    from ctxbench.analysis.summary import data\n",
        ),
        ("ctxbench.analysis.profile_price", "import ctxbench.analysis.explain.shares\n"),
    ],
)
def test_an_import_against_the_rooms_is_found(module, source):
    assert imports_across_rooms(module, source)


def test_an_import_down_the_rooms_is_allowed():
    source = "from ctxbench.analysis.explain.explanation import explain\n"
    assert not imports_across_rooms("ctxbench.analysis.summary.build", source)
    assert not imports_across_rooms("ctxbench.views.explain.explanation", source)


def test_the_rooms_of_views_mirror_those_of_analysis():
    # views words what analysis decides: each of its rooms is one of
    # analysis's, and its lowest room (explain) words one run alone, so it
    # imports no other room of views (compare and summary draw on it, and
    # on each other, for a comparison inside a summary and the reverse).
    rooms = {path.parent.name for path in (PACKAGE / "views").glob("*/__init__.py")}
    assert rooms and rooms <= set(ANALYSIS_ROOMS), rooms
    across = against_the_package(views_explain_imports)
    assert not across, "\n".join(across)


def views_explain_imports(module: str, source: str) -> list[str]:
    """Every import of another room of views from views's explain room."""
    if not module.startswith("ctxbench.views.explain"):
        return []
    return [
        f"{module} line {line} imports {target}"
        for target, _, line in imports_of(module, source)
        if target.startswith("ctxbench.views.")
        and target.split(".")[2] in ANALYSIS_ROOMS
        and target.split(".")[2] != "explain"
    ]


def test_an_import_from_views_explain_into_another_room_is_found():
    source = "def f():\n    from ctxbench.views.summary import why\n"
    assert views_explain_imports("ctxbench.views.explain.explanation", source)
    assert not views_explain_imports("ctxbench.views.summary.text", source)


def test_architecture_names_every_stage():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [name for name in SUBPACKAGES if not re.search(rf"`{name}/`", text)]
    assert not missing, f"docs/architecture.md does not describe: {', '.join(missing)}"


def test_find_cycle_finds_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_every_import_of_ctxbench_names_a_module_that_exists():
    # A lazy import of a module that moved fails only when its branch runs.
    missing = [
        f"{module} line {line}: {target}"
        for module in MODULES
        for target, _, line in _imports(module)
        if target not in MODULES
    ]
    assert not missing, "imports of ctxbench modules that do not exist: " + "; ".join(missing)


def test_no_import_cycle():
    cycle = find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")  # __version__ is public


def test_no_private_name_is_imported_from_another_module():
    borrowed = [
        f"{module} line {line}: {name} from {target}"
        for module in MODULES
        for target, name, line in _imports(module)
        if name is not None and _private(name) and target != module
    ]
    assert not borrowed, "private names imported across modules: " + "; ".join(borrowed)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_states_its_job_in_one_line(module):
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    docstring = ast.get_docstring(tree, clean=True)
    assert docstring, f"{module} has no docstring; open it with one line saying its job"
    lines = docstring.splitlines()
    assert len(lines) == 1 or not lines[1].strip(), (
        f"{module}: the docstring's first line runs on into the next; "
        "make the first line a whole sentence of its own, then a blank line"
    )


# A function fits on a screen: counted from its def line to
# its last, the signature and docstring included, decorators not.
MAX_FUNCTION_LINES = 80


def long_functions(module: str, source: str) -> list[str]:
    """Every function (method and nested ones included) in ``source`` (the
    text of ``module``) longer than MAX_FUNCTION_LINES, as 'module.name
    line N: L lines'."""
    return [
        f"{module}.{node.name} line {node.lineno}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_is_longer_than_a_screen():
    long = [
        found
        for module, path in MODULES.items()
        for found in long_functions(module, path.read_text(encoding="utf-8"))
    ]
    assert not long, (
        f"functions over {MAX_FUNCTION_LINES} lines (split each into functions "
        "that do one job):\n" + "\n".join(long)
    )


def test_a_long_function_is_found():
    # The check above on a planted function one line too long, and one that fits.
    body = "    x = 1\n" * (MAX_FUNCTION_LINES - 1)
    assert long_functions("m", "def f():\n" + body + "    x = 2\n") == ["m.f line 1: 81 lines"]
    method = "class C:\n    def f(self):\n" + body.replace("    ", "        ")
    assert not long_functions("m", method)
    assert long_functions("m", method + "        x = 2\n") == ["m.f line 2: 81 lines"]


# A record is a type (records.result.Result, records.environment.Environment,
# records.runs.StoredRun, records.profile.Profile), read once where records
# are read; a record as JSON (``dict[str, Any]``) is held only at the edges
# where JSON is read or written:
RECORD_EDGES = {
    "ctxbench.store",  # the store's rows: records in, records out
    "ctxbench.views.export",  # the JSON export, written as records
    "ctxbench.acquire",  # the engine's JSON Lines stream, as it is received
    "ctxbench.cli.spool_records",  # the stream spooled and read back
    "ctxbench.riscv.records",  # the RISC-V lab writing its records
    "ctxbench.riscv.lab",
    "ctxbench.riscv.rvsim_models",  # a model's parameters, for the lab's env record
    "ctxbench.records.reading",  # JSON Lines read and checked
    "ctxbench.records.strict_json",  # JSON parsed
    "ctxbench.records.schema",  # a record checked against the schema, as JSON
    "ctxbench.records.runs",  # a run's records as read, grouped (RunRecords)
    "ctxbench.records.building",  # records built by producers written in Python
    # The engine's stream as it is received, copied to --json and spooled:
    "ctxbench.cli.run_lifecycle",
    "ctxbench.cli.ab_run",
    "ctxbench.cli.commands.run",
    "ctxbench.cli.commands.run_hosts",
    "ctxbench.cli.commands.show",  # show --json, written
}
UNTYPED_RECORD = re.compile(r"\bdict\[str, Any\]")


def untyped_records(module: str, source: str) -> list[str]:
    """Every annotation in ``source`` (the text of ``module``) that holds a
    ``dict[str, Any]``, as 'module line N: the annotation'."""
    annotations = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.append(node.returns)
    return [
        f"{module} line {annotation.lineno}: {ast.unparse(annotation)}"
        for annotation in annotations
        if UNTYPED_RECORD.search(ast.unparse(annotation))
    ]


def _at_an_edge(module: str) -> bool:
    return any(module == edge or module.startswith(edge + ".") for edge in RECORD_EDGES)


def test_no_record_is_an_untyped_dict_outside_the_edges():
    untyped = [
        found
        for module, path in MODULES.items()
        if not _at_an_edge(module)
        for found in untyped_records(module, path.read_text(encoding="utf-8"))
    ]
    assert not untyped, (
        "dict[str, Any] outside the edges (RECORD_EDGES): read the record into its type "
        "(Result, Environment, StoredRun, Profile) where it is read:\n" + "\n".join(untyped)
    )


def test_an_untyped_record_is_found():
    # The check above on planted annotations: an argument, a return, a field.
    planted = (
        "def f(result: dict[str, Any], n: int) -> list[dict[str, Any]]:\n"
        "    x: dict[str, Any] | None = None\n"
    )
    assert sorted(untyped_records("m", planted)) == [
        "m line 1: dict[str, Any]",
        "m line 1: list[dict[str, Any]]",
        "m line 2: dict[str, Any] | None",
    ]
    assert not untyped_records("m", "def f(result: Result, counts: dict[str, int]) -> None: ...\n")
    assert _at_an_edge("ctxbench.store.db") and not _at_an_edge("ctxbench.units")
