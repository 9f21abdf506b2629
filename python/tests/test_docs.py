"""The docs a user reads carry no dated figure; dated measurements are notes.

Reference pages (README.md and docs/*.md) say how things work. A measurement
of one day on one machine goes to docs/notes/YYYY-MM-DD-topic.md, with its
command and machine, and a reference page links to it. The pages generated
from the reference run (docs/probes.md, docs/reproductions.md) name that
run and are left out.
"""

from __future__ import annotations

import re

import pytest

from conftest import REPO

DATED = re.compile(
    r"\b20\d\d-[01]\d-[0-3]\d\b"  # 2026-11-25
    # 17:42 UTC, 15:56–16:08 UTC
    r"|\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?(?:[–-][0-2]?\d:[0-5]\d)? ?UTC\b"
)
NOTE_NAME = r"20\d\d-[01]\d-[0-3]\d-[a-z0-9-]+\.md"
NOTE_LINK = re.compile("notes/" + NOTE_NAME)
GENERATED = {"probes.md", "reproductions.md"}


def dated_lines(text: str) -> list[str]:
    """The lines of TEXT that carry a date or a UTC time (links to notes aside)."""
    return [line for line in text.splitlines() if DATED.search(NOTE_LINK.sub("", line))]


def reference_docs():
    docs = sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in GENERATED)
    return [REPO / "README.md", *docs]


@pytest.mark.parametrize("doc", reference_docs(), ids=lambda p: p.name)
def test_a_reference_page_carries_no_dated_figure(doc):
    dated = dated_lines(doc.read_text(encoding="utf-8"))
    assert not dated, (
        f"{doc.name} has dated figures; move them to docs/notes/YYYY-MM-DD-topic.md "
        "and link there:\n" + "\n".join(dated)
    )


@pytest.mark.parametrize(
    "line, dated",
    [
        ("Command, as root, on 2026-11-25 at 17:42 UTC;", True),
        ("Measured (15:56–16:08 UTC) on the guest", True),
        ("| 17:30–17:41 UTC | processes |", True),
        ("kept as a note: [notes/2026-11-25-tracing.md](notes/2026-11-25-tracing.md).", False),
        ("a switch takes 3.8 ns; 30 samples", False),
    ],
)
def test_dates_and_utc_times_are_found(line, dated):
    assert bool(dated_lines(line)) == dated


def test_notes_are_named_by_their_date():
    notes = sorted((REPO / "docs" / "notes").glob("*"))
    assert notes
    misnamed = [
        p.name for p in notes if not re.fullmatch(r"20\d\d-[01]\d-[0-3]\d-[a-z0-9-]+\.md", p.name)
    ]
    assert not misnamed
