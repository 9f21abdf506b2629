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
