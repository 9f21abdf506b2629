"""Fixtures for the engine's system tests: they run the real ctxbench-engine
binary (path in CTXBENCH_ENGINE) and check its records against the schema."""

import json
import os
import pathlib
import subprocess

import jsonschema
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SCHEMA = json.loads((REPO / "schema" / "record.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


@pytest.fixture(scope="session")
def engine():
    path = os.environ.get("CTXBENCH_ENGINE", str(REPO / "build" / "engine" / "ctxbench-engine"))
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"engine binary not found at {path}: build it with 'make engine' or set CTXBENCH_ENGINE"
        )
    return path


def parse_records(text):
    """JSON Lines -> list of records, each validated against the schema."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        errors = sorted(VALIDATOR.iter_errors(record), key=lambda e: e.path)
        assert not errors, (
            f"line {number} ({record.get('probe', record.get('kind'))}): {errors[0].message}"
        )
        records.append(record)
    return records


def results(records):
    return [r for r in records if r["kind"] == "result"]


@pytest.fixture(scope="session")
def quick_run(engine, tmp_path_factory):
    """The whole catalogue with --quick, once per session (shared by the smoke tests)."""
    proc = subprocess.run(
        [engine, "run", "--quick", "--json"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return parse_records(proc.stdout)


@pytest.fixture(scope="session")
def catalogue(engine):
    proc = subprocess.run([engine, "list", "--json"], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)
