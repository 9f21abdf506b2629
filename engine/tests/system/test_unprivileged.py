"""Unprivileged: the quick suite as nobody. Every probe is ok, or unsupported
with a reason, or suspect for a measurement reason (e.g. too few switches on
a cross-CPU yield) - never failed, and never a permission problem hidden as a
figure. The engine changes no system setting, so this also runs as root."""

import pwd
import subprocess

from conftest import as_other_user, parse_records, results

PRIVILEGE_REASONS = {"permission_denied"}


@as_other_user
def test_quick_suite_as_nobody(reachable_engine):
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
            str(reachable_engine),
            "run",
            "--quick",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
    )
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
