"""bench/load_mix.py leaves nothing behind: no process of its group, no temporary
directory, however it is stopped (the block's end, an exception, SIGTERM or
SIGINT to the CLI, SIGKILL of the process that started it). Not timing."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "load_mix.py"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="the load mix needs gcc")


def _module():
    spec = importlib.util.spec_from_file_location("load_mix", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


load_mix = _module()


def wait_until(condition, timeout_s: float = 20.0) -> bool:
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def assert_nothing_left(pgid: int, directory: str) -> None:
    assert wait_until(lambda: not load_mix.group_members(pgid), 10), load_mix.group_members(pgid)
    assert wait_until(lambda: not os.path.exists(directory), 10), directory


def running_mix(pgid: int) -> bool:
    # The supervisor and its six workers: three compilers, two interpreters, one writer.
    return len(load_mix.group_members(pgid)) >= 7


def test_stop_leaves_no_process_and_no_file() -> None:
    mix = load_mix.LoadMix().start(settle_s=0.2)
    pgid, directory = mix.pgid, mix.directory
    try:
        assert wait_until(lambda: running_mix(pgid))
        assert os.path.isdir(directory)
    finally:
        mix.stop()
    assert_nothing_left(pgid, directory)
    mix.stop()  # a second stop does nothing


def test_exception_in_the_block_stops_the_mix() -> None:
    seen = {}
    with pytest.raises(ZeroDivisionError), load_mix.load_mix() as mix:
        seen.update(pgid=mix.pgid, directory=mix.directory)
        assert wait_until(lambda: running_mix(mix.pgid))
        1 / 0  # noqa: B018
    assert_nothing_left(seen["pgid"], seen["directory"])


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_cli() -> tuple[subprocess.Popen[str], int, str]:
    # Started as a shell starts a background job, SIGINT ignored (inherited
    # across exec): Ctrl-C must stop it all the same.
    cli = subprocess.Popen(
        [sys.executable, str(SCRIPT)], stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_ignore_sigint,
    )  # fmt: skip
    line = cli.stderr.readline()
    found = re.search(r"process group (\d+), files in (\S+)", line)
    assert found, line
    pgid, directory = int(found.group(1)), found.group(2)
    assert wait_until(lambda: running_mix(pgid))
    return cli, pgid, directory


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_cli_stops_the_mix(signum: int) -> None:
    cli, pgid, directory = start_cli()
    cli.send_signal(signum)
    cli.wait(timeout=30)
    cli.stderr.close()
    assert_nothing_left(pgid, directory)


def test_sigkill_of_the_starter_stops_the_mix() -> None:
    # SIGKILL runs no handler: the supervisor sees its parent gone.
    cli, pgid, directory = start_cli()
    cli.kill()
    cli.wait(timeout=30)
    cli.stderr.close()
    assert_nothing_left(pgid, directory)
