"""Acceptance checks on real measurements: switch.pipe really switches, and
syscall.getpid really enters the kernel on every call."""

import json
import os
import re
import shutil

import pytest

from conftest import parse_records, progress, results, run_engine, run_records

pytestmark = pytest.mark.measures


def test_switch_pipe_between_processes_on_one_cpu_switches(engine):
    # By default cpus=same runs under both policies: normal (what applications
    # and perf bench get) first, batch beside it.
    records = results(
        run_records(engine, "switch.pipe", "--between", "processes", "--cpus", "same", "--quick")
    )
    by_policy = {r["params"]["policy"]: r for r in records}
    assert sorted(by_policy) == ["batch", "normal"] and len(records) == 2
    for policy, r in by_policy.items():
        # On a loaded machine the self-pipe baseline can come out above the
        # switch itself, or other work splits the samples into modes; the
        # verdict then says so (interference: the kernel saw other work take
        # the CPU), which is right. The switch counts must hold.
        codes = {x["code"] for x in r["verdict"]["reasons"]}
        allowed = {"nonpositive_after_baseline", "unstable", "interference"}
        assert r["verdict"]["status"] == "ok" or codes <= allowed, (
            policy,
            r["verdict"],
        )
        checks = {c["name"]: c for c in r["checks"]}
        # On one CPU the partner runs only while the measuring task is off
        # it, so under either policy and whatever else runs there each task
        # leaves the CPU once per round trip at least: asleep in read, or
        # preempted (by the task it woke under normal; under batch by a tick
        # while another task wants the CPU, after which its read finds the
        # token without sleeping). Both kinds are counted, in the kept samples.
        measuring = checks["voluntary+involuntary_switches.measuring_task"]
        assert measuring["observed"] >= measuring["expected"], (policy, measuring)
        # A partner over its whole life: its first read may find the start
        # barrier's token already there (once per round where rounds are on).
        partners = checks["voluntary+involuntary_switches.partners"]
        starts = r.get("schedule", {}).get("rounds", 1)
        assert partners["observed"] >= partners["expected"] - starts, (policy, partners)
        assert r["baseline"]["name"] and r["baseline"]["value"] > 0
        # Reported per switch (the op) and per round trip (two switches), with
        # the kinds of switch per round trip and the system calls per op.
        assert "switch" in r["op"]
        assert r["derived"]["per_round_trip_ns"] == pytest.approx(2 * r["summary"]["median"])
        d = r["derived"]
        total = d["voluntary_switches_per_round_trip"] + d["involuntary_switches_per_round_trip"]
        assert total >= 2 - 1e-9, (policy, d)  # two tasks leave the CPU once each per round trip
        assert d["syscalls_per_op"] == 2  # one write and one read per switch
        # Both tasks stayed on the one CPU they were pinned to.
        cpus = r["placement"]["cpus"]
        assert len(cpus) == 2 and cpus[0] == cpus[1]
        assert r["placement"]["observed_start"] == cpus
        assert r["placement"]["observed_end"] == cpus


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace not installed (Debian package strace)"
)
def test_getpid_enters_the_kernel_on_every_call(engine, tmp_path):
    counts = tmp_path / "strace.txt"
    records = run_records(
        engine,
        "syscall.getpid",
        "--samples",
        "3",
        "--min-time",
        "0.001",
        # One attempt: a variant measured again after host interference
        # (strace slows the reference too) makes its first attempt's
        # calls as well, and the record counts the kept attempt's.
        "--retries",
        "0",
        prefix=["strace", "-f", "-c", "-e", "trace=getpid", "-o", str(counts)],
    )
    (r,) = results(records)
    match = re.search(
        r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?getpid\s*$", counts.read_text(), re.M
    )
    assert match, counts.read_text()
    seen_by_kernel = int(match.group(1))
    performed = int(r["derived"]["ops_executed"])
    assert performed >= r["ops_per_sample"] * r["summary"]["n"]
    # Every op is one getpid in the kernel; the engine itself adds a handful (run id, forks).
    assert performed <= seen_by_kernel <= performed + 10


def test_every_variant_records_the_host_reference(engine):
    # Whatever the host did, the record is the kept attempt's: its median is
    # the kept attempt's, and no more attempts ran than --retries allows.
    for retries in ("0", "1"):
        records = run_records(engine, "syscall.getppid", "--quick", "--retries", retries)
        assert results(records)[0]["variant_index"] == 1
        env = next(r for r in records if r["kind"] == "env")
        assert env["options"]["retries"] == int(retries)
        (r,) = results(records)
        inter = r["interference"]
        assert inter["retries"] == int(retries)
        assert 1 <= len(inter["attempts"]) <= int(retries) + 1
        kept = inter["attempts"][inter["kept"]]
        assert kept["median"] == pytest.approx(r["summary"]["median"])
        assert kept["samples"] == len(r["samples"])
        # Re-takes are bounded by the clean budget, not by a count: the record
        # says what was taken, kept and set aside, and they add up.
        clean = r.get("clean")
        if clean is not None:
            assert clean["taken"] == clean["kept"] + clean["set_aside"]
            assert clean["kept"] == len(r["samples"])
        for attempt in inter["attempts"]:
            assert attempt["set_aside"] >= 0
            if retries == "0":  # nothing is taken again
                assert attempt["set_aside"] == 0
            assert ("set_aside_median" in attempt) == (attempt["set_aside"] > 0)
        assert inter["best_ns"] > 0 and "getppid system calls" in inter["reference"]
        # Slowed: the reference ran slowed, the kernel saw too many kept
        # samples interfered with, or the clean budget ran out before the
        # samples asked for were clean (the rule since the clean samples; "as
        # many set aside as kept", the older one, failed a fresh-clone run).
        short_of_clean = clean is not None and clean["clean"] < clean["needed"]
        counted = r["counters"]["kept"]
        interfered = (
            counted["interfered"] > r["counters"]["kept_interfered_limit"] * counted["samples"]
        )
        assert inter["slowed"] == (
            kept["reference_ratio"] > inter["slowed_ratio"] or short_of_clean or interfered
        )
        # Never a slowed variant called ok.
        codes = [reason["code"] for reason in r["verdict"]["reasons"]]
        assert ("interference" in codes) == inter["slowed"]
        # Whether the variant was measured again is the host's load to decide;
        # the notes say so exactly when it was, with the attempts and the one
        # kept (a quiet host still checks that no note claims it).
        attempts = len(inter["attempts"])
        again = f"so it was measured {attempts} times and attempt {inter['kept'] + 1} is kept"
        said = [n for n in r.get("notes", []) if " times and attempt " in n]
        assert [again in n for n in said] == ([True] if attempts > 1 else []), r.get("notes")
        assert r["host_reference"] == "on" and env["options"]["host_reference"] == "on"
        # Set-aside samples are kept as values beside the figure, with the
        # summary they would make with the kept ones.
        if kept["set_aside"] > 0:
            aside = r["set_aside"]
            assert len(aside["samples"]) == kept["set_aside"]
            assert aside["summary_with_them"]["n"] == len(r["samples"]) + kept["set_aside"]
            assert any("samples set aside as host interference" in n for n in r["notes"])
        else:
            assert "set_aside" not in r
        assert r["derived"]["ops_in_figure"] == r["ops_per_sample"] * len(r["samples"])
        # The two loops timed before every sample (the plain one and the call
        # loop) are recorded, whatever the reference did.
        assert r["derived"]["cpu_loop_ns"] > 0 and r["derived"]["cpu_calls_ns"] > 0
        if retries == "0":  # recorded, and nothing taken again
            assert len(inter["attempts"]) == 1 and inter["attempts"][0]["set_aside"] == 0


def test_host_reference_off_takes_no_reference_and_sets_nothing_aside(engine):
    records = run_records(
        engine,
        "syscall.getppid",
        "switch.pipe",
        "--cpus",
        "same",
        "--quick",
        "--host-reference",
        "off",
    )
    env = next(r for r in records if r["kind"] == "env")
    assert env["options"]["host_reference"] == "off"
    for r in results(records):
        assert r["host_reference"] == "off"
        assert "interference" not in r
        # The kernel's counters still judge; the reference never does.
        assert "host_reference" not in (r.get("set_aside") or {}).get("reasons", [])
        assert r["counters"]["set_aside"]["host_reference"] == 0


def test_each_sample_is_judged_by_the_kernels_counters_and_the_record_says_why(engine):
    # What the kernel said about the samples, and the reason of each one set
    # aside: checked for consistency, never for what load would change.
    records = run_records(
        engine,
        "syscall.getppid",
        "switch.pipe",
        "--between",
        "threads",
        "--cpus",
        "same,cross",
        "--quick",
    )
    sharing = {}
    for r in results(records):
        if r["verdict"]["status"] not in ("ok", "suspect"):
            continue
        counters = r["counters"]
        sharing[(r["probe"], r["params"].get("cpus"))] = counters["sharing"]
        kept = counters["kept"]
        assert kept["samples"] == len(r["samples"])
        assert 0 <= kept["interfered"] <= kept["samples"]
        assert kept["wall_ns"] > 0 and counters["read_ns"] > 0
        assert 0 < counters["own_cpus_wait_limit"] <= 1  # optional in the schema (older v1 lack it)
        aside = r.get("set_aside") or {"samples": [], "reasons": []}
        assert len(aside["reasons"]) == len(aside["samples"])
        assert sum(counters["set_aside"].values()) == len(aside["samples"])
        for reason, count in counters["set_aside"].items():
            assert aside["reasons"].count(reason) == count
        codes = [reason["code"] for reason in r["verdict"]["reasons"]]
        if kept["interfered"] > counters["kept_interfered_limit"] * kept["samples"]:
            assert "interference" in codes
        if counters["sharing"] == "one_cpu":
            assert 0 <= kept["other_share"] <= 1
            assert "involuntary" not in kept
        if counters["sharing"] == "own_cpus":
            assert "involuntary" in kept and kept["wait_share"] >= 0
    # One task, or two on one CPU: the CPU time judges; each on its own CPU:
    # the switches and steal.
    assert sharing[("syscall.getppid", None)] == "one_cpu"
    assert sharing[("switch.pipe", "same")] == "one_cpu"
    several = len(os.sched_getaffinity(0)) > 1
    if several:
        assert sharing[("switch.pipe", "cross")] == "own_cpus"
    same = next(
        r for r in results(records) if r["probe"] == "switch.pipe" and r["params"]["cpus"] == "same"
    )
    # A same-CPU variant goes where the other work is least, and says so; a
    # single allowed CPU is taken as it is.
    assert ("least other work" if several else "the only CPU") in same["placement"]["why"]
    assert same["counters"]["cpus"] == same["placement"]["cpus"][:1]
    assert same["counters"]["tasks"] == 2


def test_each_result_names_its_place_in_the_selection(engine):
    # Re-measured variants are written after the others, so the order of the
    # lines may change; the indices are the selection's, each once.
    args = ["syscall.getppid", "syscall.getpid", "syscall.enosys", "--quick"]
    dry = run_engine(engine, "run", *args, "--dry-run")
    planned = [json.loads(line)["probe"] for line in dry.stdout.splitlines() if line.strip()]
    written = results(run_records(engine, *args))
    assert sorted(r["variant_index"] for r in written) == list(range(1, len(planned) + 1))
    assert [r["probe"] for r in sorted(written, key=lambda r: r["variant_index"])] == planned


def test_interleaved_rounds_spread_each_variant_over_the_run(engine):
    args = ["syscall.getppid", "syscall.enosys", "--quick", "--samples", "6"]
    schedule = ["--interleave", "rounds", "--rounds", "3", "--seed", "7"]
    proc = run_engine(engine, "run", "--json", "--progress", *args, *schedule)
    records = parse_records(proc.stdout)
    env = next(r for r in records if r["kind"] == "env")
    assert (env["options"]["interleave"], env["options"]["rounds"], env["options"]["seed"]) == (
        "rounds",
        3,
        7,
    )
    announced = progress(proc.stderr)
    # Every variant once per round, round after round, each line saying which.
    rounds = [p["round"] for p in announced if "attempt" not in p]
    assert rounds == [1, 1, 2, 2, 3, 3]
    assert all(p["rounds"] == 3 for p in announced)
    for round_ in (1, 2, 3):
        assert sorted(p["index"] for p in announced if p["round"] == round_) == [1, 2]
    for r in results(records):
        figures = r["schedule"].pop("round_figures")
        assert r["schedule"] == {"interleave": "rounds", "rounds": 3, "seed": 7}
        assert len(r["samples"]) == 6 and r["summary"]["n"] == 6  # 2 + 2 + 2, pooled
        # Each round's own figure, indexed by the run's round.
        assert [f["round"] for f in figures] == [0, 1, 2]
        assert sum(f["n"] for f in figures) == 6
        assert sum(f["set_aside"] for f in figures) == len(
            r.get("set_aside", {}).get("samples", [])
        )
        assert all(r["summary"]["min"] <= f["median"] <= r["summary"]["max"] for f in figures)
    # Not interleaved: the record says so.
    (r,) = results(run_records(engine, "syscall.getppid", "--quick", "--interleave", "off"))
    assert r["schedule"] == {"interleave": "off"}
