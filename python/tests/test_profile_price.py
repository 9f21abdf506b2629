"""Pricing a profile (analysis/profile_price.py) on a recorded engine profile
with figures given by hand: each event priced once, the parts adding up to
the estimate, the interval from the figures' intervals, the primitive read
from the calls; and `ctxbench profile --from` end to end on an empty store."""

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import a_result, import_runs, invoke
from ctxbench.analysis.profile_price import (
    NO_FIGURE_ALONE,
    NOT_COUNTED,
    USER_LEVEL,
    Figure,
    NotPriced,
    Wanted,
    counterfactuals,
    find_figures,
    price,
    primitive_of,
    wanted_for,
)
from ctxbench.records.profile import SyscallCount, profile_of, read_profile

FIXTURES = Path(__file__).parent / "fixtures"


def figure(w: Wanted, median: float, low: float, high: float) -> Figure:
    return Figure(w.probe, dict(w.params), median, low, high, "run-1", "ok")


@pytest.fixture
def pingpong():
    return read_profile(FIXTURES / "profile_pingpong.json")


def lookup_from(table):
    return lambda wanted: {w: table[w] for w in wanted if w in table}


def test_futex_carries_the_hand_offs_where_its_calls_can():
    record = read_profile(FIXTURES / "profile_pingpong.json")
    calls = (*record.syscalls_by_call, SyscallCount(nr=202, name="futex", count=10**6))
    assert primitive_of(dataclasses.replace(record, syscalls_by_call=calls))[0] == "futex"


def test_the_primitive_is_read_from_the_calls(pingpong):
    primitive, per = primitive_of(pingpong)
    assert primitive == "pipe" and per["pipe"] > 0 and per["futex"] < per["pipe"]
    assert wanted_for(pingpong)["hand_off"] == Wanted.of(
        "switch.pipe", between="threads", cpus="same", idle="free", policy="normal"
    )


def test_each_event_is_priced_once_and_the_parts_add_up(pingpong):
    w = wanted_for(pingpong)
    table = {
        w["hand_off"]: figure(w["hand_off"], 1000, 900, 1200),
        w["syscall"]: figure(w["syscall"], 100, 90, 110),
        w["minor_fault"]: figure(w["minor_fault"], 500, 450, 600),
        w["thread"]: figure(w["thread"], 20000, 15000, 30000),
        w["cross_wait"]: figure(w["cross_wait"], 30000, 25000, 40000),
    }
    p = price(pingpong, lookup_from(table))
    counts = pingpong.counts
    parts = {part.kind: part for part in p.parts}
    assert parts["hand_off"].count == counts.wakeups
    # A hand-off's wake and wait calls are in its switch figure, not priced again.
    assert parts["syscall"].count == counts.syscalls - 2 * counts.wakeups
    expected = (
        counts.wakeups * 1000
        + (counts.syscalls - 2 * counts.wakeups) * 100
        + counts.minor_faults * 500
        + counts.threads_created * 20000
    ) / 1e9
    assert p.estimate_s == pytest.approx(expected)
    assert sum(part.cpu_s or 0 for part in p.parts) == pytest.approx(p.estimate_s)
    low, high = p.interval_s
    assert low < p.estimate_s < high
    cpu = pingpong.cpu_user_s + pingpong.cpu_system_s
    assert p.share == pytest.approx(p.estimate_s / cpu)
    assert not p.missing
    assert NotPriced("preemption", counts.involuntary_switches, NO_FIGURE_ALONE) in p.not_priced


def test_what_is_not_counted_is_not_priced_and_says_so():
    unprivileged = read_profile(FIXTURES / "profile_unprivileged.json")
    p = price(unprivileged, lookup_from({}))
    assert [(n.kind, n.count, n.why) for n in p.not_priced if n.why == NOT_COUNTED] == [
        ("syscalls", 0, NOT_COUNTED),
        ("wakeups", 0, NOT_COUNTED),
    ]


def test_missing_figures_are_named(pingpong):
    p = price(pingpong, lookup_from({}))
    assert {w.probe for w in p.missing} >= {"switch.pipe", "syscall.getppid", "trap.pagefault"}
    assert p.estimate_s == 0


def test_counterfactuals_name_their_figures(pingpong):
    w = wanted_for(pingpong)
    fiber = Wanted.of("uswitch.boost_fiber")
    table = {
        w["hand_off"]: figure(w["hand_off"], 1000, 900, 1200),
        fiber: figure(fiber, 50, 40, 60),
    }
    p = price(pingpong, lookup_from(table))
    (c,) = counterfactuals(p, lookup_from(table))
    assert c.change == USER_LEVEL
    assert c.saved_s == pytest.approx(pingpong.counts.wakeups * 950 / 1e9)
    assert [f.probe for f in c.figures] == ["switch.pipe", "uswitch.boost_fiber"]


def test_the_newest_run_with_a_figure_wins_and_ok_before_suspect():
    w = Wanted.of("syscall.getppid")

    def result(status, median, seccomp=None):
        params = {"seccomp": seccomp} if seccomp else {}
        figures = dict.fromkeys(("min", "median", "mean", "p90", "p99", "max"), median)
        ci = {"low": median - 1, "high": median + 1}
        summary = {"n": 10, "stddev": 0.0, **figures, "median_ci": ci}
        verdict = {"status": status, "reasons": []}
        return a_result("syscall.getppid", params, summary=summary, verdict=verdict)

    runs = [
        ("new", [result("suspect", 90), result("ok", 80), result("ok", 300, "profile")]),
        ("old", [result("ok", 70)]),
    ]
    found = find_figures([w], runs)
    assert found[w].median_ns == 80 and found[w].run_id == "new"


def test_cli_prices_a_recorded_profile_and_says_what_to_run(tmp_path):
    recorded = str(FIXTURES / "profile_pingpong.json")
    db = str(tmp_path / "s.db")
    result = invoke("profile", "--from", recorded, "--db", db)
    assert result.exit_code == 0, result.output
    assert "context switches" in result.stdout
    assert "ctxbench run --quick" in result.stdout and "switch.pipe" in result.stdout
    data = json.loads(invoke("profile", "--json", "--from", recorded, "--db", db).stdout)
    assert data["kind"] == "priced_profile"
    assert data["price"]["missing"] and data["profile"]["kind"] == "profile"


def test_cli_refuses_a_command_with_from():
    result = invoke("profile", "--from", str(FIXTURES / "profile_pingpong.json"), "--", "true")
    assert result.exit_code == 2


def test_profiles_are_stored_listed_shown_and_compared(tmp_path):
    from ctxbench.store.db import Store

    db = str(tmp_path / "s.db")
    a = read_profile(FIXTURES / "profile_pingpong.json")
    b = read_profile(FIXTURES / "profile_getppid.json")
    with Store.open(db) as store:
        assert store.add_profile(a) == a.run_id
        store.add_profile(b)
        assert [row[0] for row in store.profiles()] == sorted([a.run_id, b.run_id])
        assert store.load_profile(a.run_id[:20]) == a
    listed = json.loads(invoke("profile", "--list", "--json", "--db", db).stdout)
    assert {row["id"] for row in listed} == {a.run_id, b.run_id}
    shown = invoke("profile", "--show", a.run_id, "--db", db)
    assert shown.exit_code == 0 and "context switches" in shown.stdout
    compared = json.loads(
        invoke("profile", "--compare", a.run_id, b.run_id, "--json", "--db", db).stdout
    )
    rows = {row["name"]: (row["a"], row["b"]) for row in compared["rows"]}
    assert rows["syscalls"] == (a.counts.syscalls, b.counts.syscalls)
    missing = invoke("profile", "--show", "nosuchprofile", "--db", db)
    assert missing.exit_code == 2 and "no stored profile" in missing.output


def test_in_place_latencies_sit_beside_the_figures_that_price_them():
    from ctxbench.views import profile as view

    record = read_profile(FIXTURES / "profile_traced.json")
    wanted = wanted_for(record)
    table = {w: figure(w, 5000.0, 4000.0, 6000.0) for w in wanted.values()}
    p = price(record, lookup_from(table))
    traced = record.wakeup_latency
    text = view.counts_text(record) + view.price_text(p, [], traced)
    assert "Its wake-ups in place (--trace)" in text
    cross = traced.cross_cpu
    line = next(x for x in text.splitlines() if "in place, its cross-CPU wake-ups" in x)
    assert f"of {cross.n:,}" in line
    assert f"({cross.median_us * 1e3 / 5000.0:.2f}x)" in line
    assert "the difference:" in text
    # Untraced: nothing of the kind, and the counts say what --trace would add.
    plain = read_profile(FIXTURES / "profile_getppid.json")
    p = price(plain, lookup_from(table))
    text = view.counts_text(plain) + view.price_text(p, [], plain.wakeup_latency)
    assert "in place" not in text


def test_compare_puts_the_in_place_medians_side_by_side():
    from ctxbench.analysis.profile_price import compare_counts

    a = read_profile(FIXTURES / "profile_pingpong.json")
    b = read_profile(FIXTURES / "profile_traced.json")
    rows = {name: (x, y) for name, x, y in compare_counts(a, b)}
    expected = round(b.wakeup_latency.cross_cpu.median_us * 1e3)
    assert rows["wakeup_cross_cpu_median_ns"] == (None, expected)


def test_show_compare_and_report_take_a_stored_profiles_id(tmp_path):
    from ctxbench.store.db import Store

    db = str(tmp_path / "s.db")
    a = read_profile(FIXTURES / "profile_pingpong.json")
    b = read_profile(FIXTURES / "profile_traced.json")
    with Store.open(db) as store:
        store.add_profile(a)
        store.add_profile(b)
    shown = invoke("show", b.run_id[:22], "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "Its wake-ups in place (--trace)" in shown.stdout
    assert shown.stdout == invoke("profile", "--show", b.run_id, "--db", db).stdout
    compared = invoke("compare", a.run_id, b.run_id, "--json", "--db", db)
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.stdout)["kind"] == "profile_comparison"
    mixed = invoke("compare", a.run_id, "latest", "--db", db)
    assert mixed.exit_code == 2 and "is a stored profile, not a run" in mixed.output
    assert len(mixed.output.strip().splitlines()) == 1
    gated = invoke("compare", a.run_id, b.run_id, "--fail-above", "10", "--db", db)
    assert gated.exit_code == 2 and "count by count" in gated.output
    page = tmp_path / "p.html"
    made = invoke("report", a.run_id, b.run_id, "-o", str(page), "--db", db)
    assert made.exit_code == 0, made.output
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and b.run_id in text and "context switches" in text
    # A prefix of several runs' ids is the run commands' (ambiguous), even
    # where it names one profile only.
    run_ids = import_runs(db, "run_a.jsonl", "run_b.jsonl")
    prefix = run_ids[0][:13]  # 20261122T0637, both runs' (made a second apart)
    assert all(r.startswith(prefix) for r in run_ids)
    c = profile_of(dict(a.raw, run_id=prefix + "99Z-0000beef"))
    with Store.open(db) as store:
        store.add_profile(c)
    assert invoke("show", prefix + "99", "--db", db).exit_code == 0  # that profile alone
    ambiguous = invoke("show", prefix, "--db", db)
    assert ambiguous.exit_code == 2 and "Profile of" not in ambiguous.output
    onto_store = invoke("report", a.run_id, "-o", db, "--db", db)
    assert onto_store.exit_code == 2
    with Store.open(db) as store:
        assert len(store.profiles()) == 3


@pytest.mark.measures
def test_measure_fills_the_missing_figures_then_prices(tmp_path):
    """--measure end to end: a profile on an empty store names what is
    missing, measures it (ctxbench run --quick) into the store, and prices
    the system calls with the figure it measured."""
    from ctxbench.acquire.runner import find_engine
    from ctxbench.store.db import Store

    known = find_engine().parent / "ctxbench-profile-known"
    db = str(tmp_path / "s.db")
    result = invoke(
        "profile", "--measure", "--json", "--db", db, "--", str(known), "getppid", "500"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    syscalls = next(p for p in data["price"]["parts"] if p["kind"] == "syscall")
    assert syscalls["figure"] is not None, data["price"]
    with Store.open(db) as store:
        runs = store.runs()
        assert len(runs) == 1 and len(store.profiles()) == 1
        measured = store.load(runs[0].run_id)
    assert syscalls["figure"]["run_id"] == measured.run_id
    assert {w["probe"] for w in data["price"]["missing"]}.isdisjoint(
        r.probe for r in measured.results
    )


def test_the_json_words_the_codes_and_keeps_the_record_as_written():
    """The price and counterfactuals are numbers and codes; profile --json's
    document words them (views/profile.py) and carries the record verbatim."""
    from ctxbench.views import profile as view

    record = read_profile(FIXTURES / "profile_traced.json")
    wanted = wanted_for(record)
    fiber = Wanted.of("uswitch.boost_fiber")
    filtered = Wanted.of("syscall.getppid", seccomp="profile")
    table = {w: figure(w, 5000.0, 4000.0, 6000.0) for w in wanted.values()}
    table[wanted["hand_off"]] = figure(wanted["hand_off"], 1500.0, 1400.0, 1600.0)
    table[fiber] = figure(fiber, 40.0, 35.0, 45.0)
    table[filtered] = figure(filtered, 9000.0, 8000.0, 10000.0)
    p = price(record, lookup_from(table))
    changes = counterfactuals(p, lookup_from(table))
    data = view.profile_dict(record, p, changes)
    assert data["profile"] == json.loads((FIXTURES / "profile_traced.json").read_text())
    assert [c["name"] for c in data["counterfactuals"]] == [
        "the hand-offs as user-level switches",
        "the cross-CPU wake-ups made same-CPU (pinning)",
        "the system calls under a container-like seccomp filter",
    ]
    assert all(c["leaves_out"] for c in data["counterfactuals"])
    assert data["price"]["not_priced"] == [
        {"kind": "preemption", "count": 92, "why": "no figure measures a preemption alone"}
    ]
    assert data["price"]["not_included"].startswith("what caches and TLBs lose")
