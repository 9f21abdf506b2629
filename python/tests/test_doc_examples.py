"""Every command example in README.md and docs/*.md is checked against the CLI.

A doc example that names an option the command lacks, a probe that does not
exist or a run id that is not the shipped reference run misleads the reader
who copies it. Examples are the lines of fenced code blocks and the inline
code spans that start with ``ctxbench`` or ``ctxbench-engine`` (any path in
front). Concrete examples are parsed exactly as the command would parse them
(click for ``ctxbench``; for the engine, its own ``--help`` lists the
options and ``list --json`` the probes and their parameters); synopsis lines
(``[--quick]``, ``RUN_A``, ``a|b``) have their option names checked. Nothing
is run.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import click
import pytest

from conftest import REPO, fixture_path, invoke
from ctxbench.acquire.runner import find_engine
from ctxbench.cli.main import cli

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
COMMAND = re.compile(r"^(?:\$\s+)?(?:[\w./-]*/)?(ctxbench-engine|ctxbench)\s+(.+)$")
RUN_ID_LIKE = re.compile(r"^\d{8}T\d{4}")
SYNOPSIS = re.compile(r"[\[\]|]|\.\.\.|^[A-Z][A-Z_]+$")


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        blocks = list(re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M))
        for block in blocks:
            joined = re.sub(r"\\\n\s*", " ", block.group(1))
            for line in joined.splitlines():
                match = COMMAND.match(line.strip())
                if match:
                    found.append((path.name, match.group(1), match.group(2)))
        prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
        for span in re.findall(r"`([^`\n]+)`", prose):
            match = COMMAND.match(span.strip())
            if match:
                found.append((path.name, match.group(1), match.group(2)))
    return found


EXAMPLES = _examples()


def _words(rest: str) -> list[str]:
    return shlex.split(rest, comments=True)


@cache
def _reference_run_id() -> str:
    first = (REPO / "docs" / "data" / "reference-run.jsonl").read_text().splitlines()[0]
    return json.loads(first)["run_id"]


def test_the_docs_have_examples_of_both_commands():
    programs = {program for _, program, _ in EXAMPLES}
    assert programs == {"ctxbench", "ctxbench-engine"}
    assert len(EXAMPLES) >= 15


@pytest.mark.parametrize(
    "doc, rest",
    [(doc, rest) for doc, program, rest in EXAMPLES if program == "ctxbench"],
)
def test_ctxbench_example_parses(doc, rest):
    words = _words(rest)
    if words[0].startswith("-"):  # `ctxbench --help`, `ctxbench --version`: the group's own
        context = click.Context(cli)
        top = {name for param in cli.params for name in param.opts + param.secondary_opts}
        top |= set(cli.get_help_option_names(context))
        assert words[0] in top, f"{doc}: `ctxbench {rest}`: no option {words[0]}"
        return
    command = cli.get_command(click.Context(cli), words[0])
    assert command is not None, f"{doc}: `ctxbench {rest}`: no command '{words[0]}'"
    if len(words) == 1:
        return  # the command named in prose (`ctxbench import`), not an invocation
    if any(SYNOPSIS.search(word) for word in words[1:]):
        known = {name for param in command.params for name in param.opts + param.secondary_opts}
        for word in words[1:]:
            for option in re.findall(r"--[a-z][a-z-]*", word):
                assert option in known, f"{doc}: `ctxbench {rest}`: no option {option}"
        return
    try:
        command.make_context(words[0], words[1:], parent=click.Context(cli))
    except click.ClickException as error:
        pytest.fail(f"{doc}: `ctxbench {rest}` does not parse: {error.format_message()}")
    for word in words[1:]:
        if RUN_ID_LIKE.match(word):
            assert _reference_run_id().startswith(word), (
                f"{doc}: `ctxbench {rest}`: run id {word} is not the shipped reference run "
                f"({_reference_run_id()})"
            )


@cache
def _engine() -> Path:
    return find_engine()


@cache
def _engine_help(subcommand: str) -> str:
    return subprocess.run(
        [str(_engine()), subcommand, "--help"], capture_output=True, text=True, check=True
    ).stdout


@cache
def _engine_subcommands() -> frozenset[str]:
    """The subcommands the engine's own --help lists."""
    top = subprocess.run([str(_engine()), "--help"], capture_output=True, text=True, check=True)
    listed = top.stdout.partition("Subcommands:")[2]
    return frozenset(re.findall(r"^  ([a-z]+)\s", listed, flags=re.MULTILINE))


def _engine_options(subcommand: str) -> frozenset[str]:
    return frozenset(re.findall(r"(--[a-z][a-z-]*)", _engine_help(subcommand)))


@cache
def _catalogue() -> dict[str, dict]:
    listed = subprocess.run(
        [str(_engine()), "list", "--json"], capture_output=True, text=True, check=True
    ).stdout
    return {probe["name"]: probe for probe in json.loads(listed)}


def _presets() -> set[str]:
    refused = subprocess.run(
        [str(_engine()), "run", "--preset", "no-such-preset"], capture_output=True, text=True
    )
    assert refused.returncode == 2
    known = re.search(r"known: (.*)$", refused.stderr.strip())
    return {name.strip() for name in known.group(1).split(",")} if known else set()


@pytest.mark.parametrize(
    "doc, rest",
    [(doc, rest) for doc, program, rest in EXAMPLES if program == "ctxbench-engine"],
)
def test_engine_example_names_what_the_engine_has(doc, rest):
    words = _words(rest)
    subcommand, arguments = words[0], words[1:]
    where = f"{doc}: `ctxbench-engine {rest}`"
    assert subcommand in _engine_subcommands(), f"{where}: no command '{subcommand}'"
    if "--" in arguments:  # what follows a bare -- is the profiled program's command line
        arguments = arguments[: arguments.index("--")]
    options = _engine_options(subcommand)
    catalogue = _catalogue()
    selected: list[str] = []
    index = 0
    takes_value = {"--samples", "--min-time", "--timeout", "--cpus", "--between", "--param"}
    takes_value |= {"--out", "--preset", "--figures"}
    while index < len(arguments):
        word = arguments[index]
        if word.startswith("--"):
            name, _, inline = word.partition("=")
            assert name in options, f"{where}: no option {name}"
            value = inline
            if name in takes_value and not inline:
                index += 1
                value = arguments[index]
            if name == "--param":
                param, _, values = value.partition("=")
                probes = [catalogue[p] for p in selected] or list(catalogue.values())
                specs = [s for probe in probes for s in probe["params"] if s["name"] == param]
                assert specs, f"{where}: no selected probe has a parameter '{param}'"
                allowed = {str(v) for spec in specs for v in spec.get("values", [])}
                for one in values.split(","):
                    assert not allowed or one in allowed, f"{where}: {param}={one} not in {allowed}"
            if name == "--preset":
                assert value in _presets(), f"{where}: no preset '{value}'"
        elif SYNOPSIS.search(word):
            pass  # a placeholder of a synopsis (`run ... --dry-run`)
        elif subcommand != "run":
            assert word in _engine_help(subcommand), f"{where}: '{word}' is not in its --help"
        else:
            matched = [  # the engine's rule: a name, a family (`switch`) or a glob
                name
                for name in catalogue
                if fnmatch.fnmatchcase(name, word) or name.split(".")[0] == word
            ]
            assert matched, f"{where}: '{word}' selects no probe"
            selected += matched
        index += 1


def test_no_doc_cites_a_file_outside_the_repository():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for outside in ("../shared", "METHODS.md", "DESIGN.md", "STYLE.md", "METHODS pitfall"):
            assert outside not in text, (
                f"{path.name} cites {outside}, which is not in the repository"
            )


# ---- quoted output: what a doc says a command prints, it prints -------------------------
# A doc that quotes what a command prints puts, on the line before the
# paragraph, which command on which recorded runs printed it:
#   <!-- output: run_a run_b reference=docs/data/reference-run.jsonl |
#        ctxbench compare run_a run_b --fail-above 5 | ctxbench show reference -->
# The runs (fixture files by stem, or LABEL=PATH from the repository root)
# are imported under those labels into a fresh store; each command runs there
# (at 80 columns) and every quoted figure of the paragraph (a code span or a
# "quotation" with a number and a unit) must be in one of their outputs,
# whitespace aside. In the docs that quote the CLI, no quoted figure may stand
# outside such a paragraph: an example nobody checks drifts (issue 40: cli.md
# had `(1.23–3.96)` where the screen said `(1.24–3.96)`).
CHECKED_DOCS = ("README.md", "cli.md", "report.md")
MARKER = re.compile(r"^<!-- output: (.*?) -->\n", re.S | re.M)
FIGURE = re.compile(r"\d(?:×|\s?ns\b|\s?µs\b|%)")
BARE_PERCENT = re.compile(r"^\d+(?:\.\d+)?%$")


def _quoted(text: str) -> list[str]:
    spans = re.findall(r"`([^`]+)`", text) + re.findall(r'"([^"]+)"', text)
    return [s for s in spans if FIGURE.search(s) and not BARE_PERCENT.match(s.strip())]


def _paragraph_after(text: str, start: int) -> str:
    """The paragraph (or list item) that starts at START, to the blank line or
    the next item."""
    lines = text[start:].split("\n")
    kept = [lines[0]]
    for line in lines[1:]:
        item = line.lstrip().startswith(("* ", "- ", "#", "<!--"))
        if not line.strip() or item or re.match(r"\d+\. ", line):
            break
        kept.append(line)
    return "\n".join(kept)


def _checked_blocks() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in MARKER.finditer(text):
            found.append(
                (path.name, " ".join(match.group(1).split()), _paragraph_after(text, match.end()))
            )
    return found


CHECKED = _checked_blocks()


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    "doc, marker, paragraph", CHECKED, ids=[f"{d}:{i}" for i, (d, _, _) in enumerate(CHECKED)]
)
def test_quoted_output_is_what_the_command_prints(doc, marker, paragraph, tmp_path, monkeypatch):
    runs, *commands = [part.strip() for part in marker.split("|")]
    assert commands and all(c.startswith("ctxbench ") for c in commands), f"{doc}: {marker}"
    db = str(tmp_path / "doc.db")
    for run in runs.split():
        label, _, path = run.partition("=")
        file = REPO / path if path else fixture_path(f"{label}.jsonl")
        done = invoke("import", str(file), "--label", label.rsplit("/", 1)[-1], "--db", db)
        assert done.exit_code == 0, done.output
    monkeypatch.setenv("COLUMNS", "80")
    printed = ""
    for command in commands:
        done = invoke(*shlex.split(command)[1:], "--db", db)
        printed += done.output  # stdout and stderr, as a terminal shows them
    quoted = _quoted(paragraph)
    assert quoted, f"{doc}: the paragraph after `{marker}` quotes no figure"
    for span in quoted:
        assert _flat(span) in _flat(printed), f"{doc}: `{span}` is not in what {commands} print"


def test_every_quoted_figure_of_the_cli_docs_is_checked():
    checked = {(doc, _flat(span)) for doc, _, paragraph in CHECKED for span in _quoted(paragraph)}
    for path in DOCS:
        if path.name not in CHECKED_DOCS:
            continue
        text = path.read_text(encoding="utf-8")
        prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
        prose = MARKER.sub("", prose)
        for span in _quoted(prose):
            assert (path.name, _flat(span)) in checked, (
                f"{path.name}: `{span}` quotes a figure no <!-- output: ... --> marker checks"
            )
