"""Formatting of figures, and golden output of the terminal tables.

The golden files are the `show` and `compare` output for the recorded runs;
after an intended change of the tables, regenerate them with
CTXBENCH_UPDATE_GOLDEN=1 pytest python/tests/test_fmt.py and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import fixture_path, real_run
from ctxbench import fmt
from ctxbench.cli import cli

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    "amount, unit, expected",
    [
        (81.55276, "ns", "81.55 ns"),
        (1075.3, "ns", "1.075 µs"),
        (54101.0, "ns", "54.10 µs"),
        (2_077_000.0, "ns", "2.077 ms"),
        (3.2e9, "ns", "3.200 s"),
        (0.4, "ns", "0.4000 ns"),
        (113.0, "instructions", "113 instr"),
        (1234.0, "cycles", "1,234 cycles"),
        (212.5, "cycles", "212.5 cycles"),
        (1.5e6, "msgs/s", "1.500 M/s"),
        (None, "ns", "—"),
    ],
)
def test_value(amount, unit, expected):
    assert fmt.value(amount, unit) == expected


def test_interval_names_the_unit_once():
    assert fmt.interval(1190.0, 1240.0, "ns") == "1.190–1.240 µs"
    assert fmt.interval(980.0, 1020.0, "ns") == "980.0 ns–1.020 µs"
    assert fmt.interval(None, 1.0, "ns") == "—"


def test_ratio_and_verdict():
    assert fmt.ratio(0.343, 0.48, 0.889) == "0.480× [0.343, 0.889]"
    unsupported = next(r for r in real_run().results if r["verdict"]["status"] == "unsupported")
    assert fmt.verdict(unsupported) == "unsupported: not_supported_here"
    assert "ENOTSUP" in fmt.verdict_detail(unsupported)
    assert fmt.corrected(unsupported) == "—" and fmt.baseline(unsupported) == "—"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("CTXBENCH_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


@pytest.mark.parametrize("columns", ["200", "80"])
def test_show_matches_golden(tmp_path, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    db = str(tmp_path / "golden.db")
    runner = CliRunner()
    assert (
        runner.invoke(cli, ["import", str(fixture_path("run_a.jsonl")), "--db", db]).exit_code == 0
    )
    shown = runner.invoke(cli, ["show", "latest", "--db", db])
    assert shown.exit_code == 0
    _golden(f"show_run_a_{columns}.txt", shown.stdout)


def test_compare_matches_golden(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    db = str(tmp_path / "golden.db")
    runner = CliRunner()
    for name, label in (("run_a.jsonl", "A"), ("run_b.jsonl", "B")):
        args = ["import", str(fixture_path(name)), "--label", label, "--db", db]
        assert runner.invoke(cli, args).exit_code == 0
    a, b = real_run("run_a.jsonl").run_id, real_run("run_b.jsonl").run_id
    compared = runner.invoke(cli, ["compare", a, b, "--db", db])
    assert compared.exit_code == 0
    _golden("compare_a_b_200.txt", compared.stdout)
