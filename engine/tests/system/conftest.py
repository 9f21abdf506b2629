"""Fixtures for the engine's system tests: they run the real ctxbench-engine
binary (path in CTXBENCH_ENGINE) and check its records against the schema."""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import jsonschema
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SCHEMA = json.loads((REPO / "schema" / "record.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "measures: runs real probes and asserts what load can change (switch counts, set-aside "
        "samples, phases); ctest runs these alone (engine_system_measuring, RUN_SERIAL)",
    )


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


# Tests that run the engine as another user (setpriv needs root).
as_other_user = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to run the engine as another user with setpriv (util-linux)",
)


@pytest.fixture
def reachable_engine(engine):
    """The engine (and its exec helpers) copied where any user can run it:
    pytest's tmp_path is under a 0700 directory."""
    exe_dir = pathlib.Path(tempfile.mkdtemp(prefix="ctxbench-other-user-", dir="/tmp"))
    for name in ("ctxbench-engine", "ctxbench-exit0", "ctxbench-forkloop"):
        source = os.path.join(os.path.dirname(engine), name)
        if os.path.exists(source):
            shutil.copy2(source, exe_dir / name)
    os.chmod(exe_dir, 0o755)
    yield exe_dir / "ctxbench-engine"
    shutil.rmtree(exe_dir, ignore_errors=True)
