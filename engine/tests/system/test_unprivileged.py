"""Unprivileged: the quick suite as nobody. Every probe is ok, or unsupported
with a reason, or suspect for a measurement reason (e.g. too few switches on
a cross-CPU yield) - never failed, and never a permission problem hidden as a
figure. The engine changes no system setting, so this also runs as root."""

import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile

import pytest

from conftest import parse_records, results

PRIVILEGE_REASONS = {"permission_denied"}


def as_nobody(exe_dir, *args):
    return subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
            str(exe_dir / "ctxbench-engine"),
            "run",
            "--json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
    )


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to drop to nobody with setpriv (util-linux)",
)
def test_quick_suite_as_nobody(engine, request):
    # The engine must be reachable by nobody: copy it (and its exec helper)
    # into a directory nobody can traverse (pytest's tmp_path is under a 0700 dir).
    exe_dir = pathlib.Path(tempfile.mkdtemp(prefix="ctxbench-nobody-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(exe_dir, ignore_errors=True))
    for name in ("ctxbench-engine", "ctxbench-exit0", "ctxbench-forkloop"):
        source = os.path.join(os.path.dirname(engine), name)
        if os.path.exists(source):
            shutil.copy2(source, exe_dir / name)
    os.chmod(exe_dir, 0o755)
    proc = as_nobody(exe_dir, "--quick")
    assert proc.returncode == 0, proc.stderr
    records = parse_records(proc.stdout)
    assert records[-1]["kind"] == "run_end"
    assert records[0]["process"]["euid"] == pwd.getpwnam("nobody").pw_uid  # really ran as nobody
    for r in results(records):
        status = r["verdict"]["status"]
        codes = {reason["code"] for reason in r["verdict"]["reasons"]}
        assert status != "failed", (r["probe"], r["params"], r["verdict"])
        if status == "unsupported":
            assert all(reason["detail"] for reason in r["verdict"]["reasons"])
        else:
            assert not codes & PRIVILEGE_REASONS, (r["probe"], r["verdict"])

    # As nobody, idle=held does not run by default (the device is root's);
    # asked for, it is unsupported with the reason, never a figure.
    assert not any(r["params"].get("idle") == "held" for r in results(records))
    if os.path.exists("/dev/cpu_dma_latency") and len(os.sched_getaffinity(0)) >= 2:
        held = as_nobody(exe_dir, "--quick", "switch.pipe", "--cpus", "cross", "--hold-idle")
        assert held.returncode == 0, held.stderr
        for r in results(parse_records(held.stdout)):
            assert r["params"]["idle"] == "held"
            assert r["verdict"]["status"] == "unsupported"
            assert r["verdict"]["reasons"][0]["code"] == "permission_denied"
            assert "root" in r["verdict"]["reasons"][0]["detail"]
