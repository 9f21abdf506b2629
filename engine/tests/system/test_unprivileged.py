"""Unprivileged: the quick suite as nobody. Every probe is ok, or unsupported
with a reason, or suspect for a measurement reason (e.g. too few switches on
a cross-CPU yield) - never failed, and never a permission problem hidden as a
figure. The engine changes no system setting, so this also runs as root."""

import os
import pwd

from conftest import as_other_user, parse_records, results, run_engine

PRIVILEGE_REASONS = {"permission_denied"}


def as_nobody(engine, *args):
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"]
    return run_engine(
        engine, "run", "--json", *args, prefix=setpriv, status=None, timeout=600, cwd="/"
    )


@as_other_user
def test_quick_suite_as_nobody(reachable_engine):
    proc = as_nobody(reachable_engine, "--quick")
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
        held = as_nobody(
            reachable_engine, "--quick", "switch.pipe", "--cpus", "cross", "--hold-idle"
        )
        assert held.returncode == 0, held.stderr
        for r in results(parse_records(held.stdout)):
            assert r["params"]["idle"] == "held"
            assert r["verdict"]["status"] == "unsupported"
            assert r["verdict"]["reasons"][0]["code"] == "permission_denied"
            assert "root" in r["verdict"]["reasons"][0]["detail"]
