"""What each command imports before it does anything (issue 30.7: `ctxbench
--version` and `history` under 0.3 s, `show` of a quick run under 0.6 s on the
development VM). Not a timing: a fresh interpreter runs the command and says
which of the heavy libraries (seconds to import between them) it loaded; each
command may load only what it uses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, fixture_path

SOURCE = REPO / "python" / "src"
HEAVY = ("scipy", "rich", "sqlalchemy", "plotly", "jsonschema", "numpy")

# The command, and the heavy libraries it may load (it needs them for its work).
ALLOWED = {
    ("--version",): set(),
    ("history",): {"sqlalchemy", "rich"},  # the store and the table
    ("show", "latest"): {"sqlalchemy", "rich", "numpy"},  # + the ratios' bootstrap
}

SCRIPT = """
import contextlib, io, json, sys
from ctxbench.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted(name for name in {heavy!r} if name in sys.modules)
print(json.dumps({{"code": code, "heavy": heavy}}))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("startup") / "startup.db"
    # the default run: it has a ring and fork sizes, whose fits once pulled scipy into show
    _loaded(["import", str(fixture_path("default_quick.jsonl")), "--db", str(db)])
    return db


def _loaded(args: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SOURCE), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _script_json(script: str, **env: str) -> dict:
    """What SCRIPT, run by a fresh interpreter with this package (and ENV),
    printed as JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SOURCE), **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_importing_the_command_loads_no_heavy_library():
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys, ctxbench.cli.main; "
         f"print(sorted(n for n in {HEAVY!r} if n in sys.modules))"],
        capture_output=True, text=True, env={"PYTHONPATH": str(SOURCE)}, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("command", sorted(ALLOWED), ids=" ".join)
def test_each_command_loads_only_the_heavy_libraries_it_uses(store, command):
    args = [*command] if command == ("--version",) else [*command, "--db", str(store)]
    loaded = _loaded(args)
    assert loaded["code"] == 0
    assert set(loaded["heavy"]) <= ALLOWED[command], loaded["heavy"]


def test_every_command_the_group_names_resolves_to_its_click_command():
    import click

    from ctxbench.cli.main import COMMANDS, cli

    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command), name
        assert command.name == name, (name, command.name)
    assert cli.get_command(context, "no-such-command") is None


def test_help_lists_every_command_in_whole_lines_without_importing_one():
    """`ctxbench --help` (issue 40: 0.45-0.78 s, the import line cut
    mid-parenthesis): the summaries are listed from the group's own table, so
    no command module (and no heavy library) is imported, and each is one
    line within 80 columns, never shortened with '...'."""
    script = (
        "import contextlib, io, json, sys\n"
        "from ctxbench.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main(['--help'])\n"
        "commands = sorted(n for n in sys.modules if n.startswith('ctxbench.cli.commands.'))\n"
        f"heavy = sorted(n for n in {HEAVY!r} if n in sys.modules)\n"
        "print(json.dumps({'code': code, 'out': out.getvalue(), 'commands': commands,"
        " 'heavy': heavy}))\n"
    )
    done = _script_json(script, PATH="/usr/bin:/bin", COLUMNS="80")
    assert done["code"] == 0 and done["commands"] == [] and done["heavy"] == []
    from ctxbench.cli.main import COMMANDS, SUMMARIES

    assert set(SUMMARIES) == set(COMMANDS)
    lines = done["out"].splitlines()
    listed = lines[lines.index("Commands:") + 1 :]
    assert len(listed) == len(COMMANDS)  # one line each: none wrapped
    for line, name in zip(listed, sorted(COMMANDS), strict=True):
        assert line.split()[0] == name and line.endswith(SUMMARIES[name]), line
        assert len(line) <= 80 and "..." not in line


def test_the_riscv_catalogue_loads_nothing_of_the_lab():
    """The views that name the lab's calls import its catalogue alone:
    ctxbench.riscv imports the lab's public names when they are first used,
    so neither the lab (its simulators, runner and parsers) nor a heavy
    library comes with the catalogue. The names still resolve."""
    script = (
        "import json, sys\n"
        "import ctxbench.riscv.catalog\n"
        "ours = sorted(n for n in sys.modules if n.startswith('ctxbench'))\n"
        f"heavy = sorted(n for n in {HEAVY!r} if n in sys.modules)\n"
        "from ctxbench import riscv\n"
        "names = [name for name in riscv.__all__ if getattr(riscv, name, None) is None]\n"
        "print(json.dumps({'ours': ours, 'heavy': heavy, 'unresolved': names}))\n"
    )
    done = _script_json(script)
    assert done["ours"] == ["ctxbench", "ctxbench.riscv", "ctxbench.riscv.catalog"]
    assert done["heavy"] == [] and done["unresolved"] == []
