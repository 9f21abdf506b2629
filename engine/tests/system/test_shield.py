"""run --shield weight: the engine's tasks in a cgroup of their own for the run,
recorded in the env record, and the cgroup gone after the run however it ends
(normally, Ctrl-C, SIGKILL). Where the machine does not permit it, the run goes
on unshielded and the env record says why; the cgroup is never left behind."""

from __future__ import annotations

import glob
import json
import signal
import subprocess
import time

import pytest

from conftest import run_engine

pytestmark = pytest.mark.measures  # one at a time: it moves the engine between cgroups


def shield_dirs(pid):
    return glob.glob(f"/sys/fs/cgroup/**/ctxbench-shield-{pid}", recursive=True)


def own_cgroup(pid):
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return f.read()
    except OSError:
        return ""


def wait_gone(pid, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not shield_dirs(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_shielded_run_records_the_shield_and_leaves_no_cgroup(engine):
    proc = subprocess.Popen(
        [engine, "run", "--json", "syscall.getppid", "--quick", "--shield", "weight"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen_inside = False
    while proc.poll() is None:
        seen_inside = seen_inside or f"ctxbench-shield-{proc.pid}" in own_cgroup(proc.pid)
        time.sleep(0.01)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    env = json.loads(out.splitlines()[0])
    shield = env["shield"]
    assert shield["requested"] == "weight"
    if shield["applied"]:
        assert f"ctxbench-shield-{proc.pid}" in shield["how"]
        assert seen_inside  # the engine ran in it
    else:
        assert shield["why_not"]
    assert wait_gone(proc.pid, timeout=0.5)  # removed before the engine exited


def test_without_the_option_there_is_no_shield(engine):
    proc = run_engine(engine, "run", "--json", "syscall.getppid", "--quick", "--samples", "3")
    env = json.loads(proc.stdout.splitlines()[0])
    assert "shield" not in env


def test_an_unknown_shield_is_a_usage_error(engine):
    proc = run_engine(engine, "run", "syscall.getppid", "--shield", "cpuset", status=2)
    assert "--shield: 'cpuset' is not offered; give --shield weight" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_the_cgroup_is_gone_after_a_signal_mid_run(engine, sig):
    proc = subprocess.Popen(
        [engine, "run", "--json", "syscall.getppid", "syscall.enosys", "--shield", "weight"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not shield_dirs(proc.pid):
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        made = bool(shield_dirs(proc.pid))
        if not made:
            pytest.skip("this machine did not permit the shield (the run said why)")
        time.sleep(0.3)  # measuring by now
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_gone(proc.pid), shield_dirs(proc.pid)
