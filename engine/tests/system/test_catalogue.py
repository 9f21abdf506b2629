"""The whole catalogue runs with --quick: every record validates, no probe is
silently missing, and each probe's checks are computed (smoke tests assert on
checks and record shape, never on speed)."""

from conftest import results, run_engine


def test_every_record_validates_and_the_run_is_framed(quick_run):
    assert quick_run[0]["kind"] == "env"
    assert quick_run[-1]["kind"] == "run_end"
    assert not quick_run[-1]["interrupted"]
    assert len({r["run_id"] for r in quick_run}) == 1
    counts = quick_run[-1]["counts"]
    statuses = [r["verdict"]["status"] for r in results(quick_run)]
    for status in ("ok", "suspect", "unsupported", "failed"):
        assert counts[status] == statuses.count(status)


def test_no_probe_is_silently_missing(quick_run, catalogue):
    ran = {r["probe"] for r in results(quick_run)}
    listed = {p["name"] for p in catalogue}
    assert listed == ran


def test_nothing_failed_and_unsupported_says_why(quick_run):
    for r in results(quick_run):
        status = r["verdict"]["status"]
        assert status != "failed", (r["probe"], r["params"], r["verdict"])
        if status == "unsupported":
            assert r["verdict"]["reasons"][0]["detail"]
            assert r["summary"] is None


def test_measured_records_are_consistent(quick_run):
    for r in results(quick_run):
        if r["verdict"]["status"] not in ("ok", "suspect"):
            continue
        s = r["summary"]
        assert s["n"] == len(r["samples"])
        assert s["min"] <= s["median"] <= s["max"]
        assert min(r["samples"]) == s["min"] and max(r["samples"]) == s["max"]
        assert r["ops_per_sample"] >= 1
        assert r["timer"]["corrected"] is True
        if r["baseline"] is not None:
            assert abs(
                r["corrected"]["median"] - (s["median"] - r["baseline"]["value"])
            ) < 1e-6 * max(1, s["median"])
            assert r["corrected"]["nonpositive"] == (r["corrected"]["median"] <= 0)
            assert r["corrected"]["min"] <= r["corrected"]["median"] <= r["corrected"]["p99"]


def test_switch_probes_carry_switch_checks_and_placement(quick_run, catalogue):
    expecting = {
        p["name"] for p in catalogue if p["expects"] and p["expects"]["measuring_task_per_op"] > 0
    }
    for r in results(quick_run):
        if r["probe"] not in expecting or r["verdict"]["status"] not in ("ok", "suspect"):
            continue
        names = [c["name"] for c in r["checks"]]
        assert any("switches.measuring_task" in n for n in names), (r["probe"], names)
        assert "placement" in names
        for c in r["checks"]:
            if "switches" in c["name"]:
                assert c["ratio"] == c["observed"] / c["expected"]
                assert c["ok"] == (0.9 <= c["ratio"] <= 1.1 * c.get("most", 1))
        failed_checks = [c for c in r["checks"] if not c["ok"]]
        if failed_checks:
            assert r["verdict"]["status"] == "suspect", (r["probe"], failed_checks)
        if r["verdict"]["status"] == "ok":
            assert not failed_checks


def test_user_level_switches_expect_no_kernel_switch(quick_run, catalogue):
    # The harness's expectation of none: every batch counted, under 1 per 100 ops.
    expecting_none = {
        p["name"] for p in catalogue if p["expects"] and p["expects"]["measuring_task_per_op"] == 0
    }
    assert {"uswitch.asm", "uswitch.ucontext", "create.coroutine"} <= expecting_none
    for r in results(quick_run):
        if r["probe"] not in expecting_none or r["verdict"]["status"] not in ("ok", "suspect"):
            continue
        [check] = [c for c in r["checks"] if c["name"] == "kernel_not_involved"]
        assert check["ok"] == (check["observed"] < 0.01), (r["probe"], check)
        assert not any("switches.measuring_task" in c["name"] for c in r["checks"])
        if not check["ok"]:
            assert r["verdict"]["status"] == "suspect", (r["probe"], check)


def test_list_describes_every_probe(catalogue):
    for p in catalogue:
        assert p["op"] and p["unit"] in ("ns", "cycles", "instructions", "msgs/s")
        assert p["supported"] or p["reason"], p["name"]


def test_version_and_help(engine):
    out = run_engine(engine, "--version").stdout
    assert out.startswith("ctxbench-engine ")
    out = run_engine(engine, "run", "--help").stdout
    assert "--samples" in out and "--cpus" in out
