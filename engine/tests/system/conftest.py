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


def run_engine(engine, *args, prefix=(), status=0, timeout=300, **popen):
    """Runs `ctxbench-engine ARGS` to its end (behind `prefix`, a wrapper such
    as setpriv or strace, when given) and returns the finished process, its
    output as text. An exit other than `status` fails the test with the
    engine's stderr; status=None accepts any."""
    proc = subprocess.run(
        [*prefix, str(engine), *args], capture_output=True, text=True, timeout=timeout, **popen
    )
    if status is not None:
        assert proc.returncode == status, proc.stderr
    return proc


def run_records(engine, *args, **kwargs):
    """`ctxbench-engine run --json ARGS`, exit 0: its records, each validated."""
    return parse_records(run_engine(engine, "run", "--json", *args, **kwargs).stdout)


def progress(stderr):
    """The `@progress {json}` lines of the engine's stderr, parsed."""
    return [
        json.loads(line.split(" ", 1)[1])
        for line in stderr.splitlines()
        if line.startswith("@progress ")
    ]


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
    return run_records(engine, "--quick", timeout=600)


@pytest.fixture(scope="session")
def catalogue(engine):
    return json.loads(run_engine(engine, "list", "--json").stdout)


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
