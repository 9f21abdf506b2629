"""Topology through the real binary: the env record's CPU places, the smt / llc /
remote placements (measured where the machine has such a pair, `unsupported`
with the reason where it has not, decided from the env record of the same
run), a substitute sysfs tree, and the matrix probes' records."""

import os

import pytest

from conftest import results, run_records


def cpu_list(text):
    cpus = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return cpus


def test_placements_follow_the_topology_in_the_env_record(engine):
    records = run_records(
        engine, "--quick", "switch.futex", "--between", "threads", "--cpus", "smt,llc,remote"
    )
    env = records[0]
    places = {p["cpu"]: p for p in env["cpu"]["topology"]}
    allowed = env["cpu"]["allowed"]
    assert set(allowed) <= set(places)
    by_cpus = {r["params"]["cpus"]: r for r in results(records)}

    smt = by_cpus["smt"]
    if any(len(cpu_list(places[c]["smt_siblings"])) > 1 for c in allowed):
        a, b = smt["placement"]["cpus"]
        assert b in cpu_list(places[a]["smt_siblings"]) and a != b
    else:
        assert env["cpu"]["smt"]["siblings_present"] is False
        assert smt["verdict"]["status"] == "unsupported"
        (reason,) = smt["verdict"]["reasons"]
        assert reason["code"] == "placement_unavailable"
        assert "are SMT siblings" in reason["detail"]

    llcs = {places[c]["llc"] for c in allowed}
    remote = by_cpus["remote"]
    if len(llcs) == 1 and len({places[c]["node"] for c in allowed}) == 1:
        assert remote["verdict"]["status"] == "unsupported"
        assert "no remote CPU here" in remote["verdict"]["reasons"][0]["detail"]
    else:
        a, b = remote["placement"]["cpus"]
        assert places[a]["llc"] != places[b]["llc"] or places[a]["node"] != places[b]["node"]

    llc = by_cpus["llc"]
    if llc["verdict"]["status"] in ("ok", "suspect"):
        a, b = llc["placement"]["cpus"]
        assert places[a]["core"] != places[b]["core"]
        assert b in cpu_list(places[a]["llc_shared_with"])
        assert any("sharing the last-level cache" in note for note in llc["notes"])
    else:
        assert llc["verdict"]["reasons"][0]["code"] == "placement_unavailable"


def write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_a_substitute_sysfs_tree_is_read_and_named(engine, tmp_path):
    """CPUs 0 and 1 described as the two threads of one core."""
    root = tmp_path / "sys"
    cpu = "devices/system/cpu/"
    write(root, cpu + "online", "0-1")
    write(root, cpu + "smt/control", "on")
    write(root, cpu + "smt/active", "1")
    for n in (0, 1):
        write(root, f"{cpu}cpu{n}/topology/core_id", "0")
        write(root, f"{cpu}cpu{n}/topology/physical_package_id", "0")
        write(root, f"{cpu}cpu{n}/topology/thread_siblings_list", "0-1")
        write(root, f"{cpu}cpu{n}/cache/index3/level", "3")
        write(root, f"{cpu}cpu{n}/cache/index3/type", "Unified")
        write(root, f"{cpu}cpu{n}/cache/index3/shared_cpu_list", "0-1")
        write(root, f"{cpu}cpu{n}/cache/index3/id", "7")
    allowed = run_records(engine, "--samples", "1", "syscall.getpid", timeout=60)[0]["cpu"][
        "allowed"
    ]
    if allowed[:2] != [0, 1]:
        pytest.skip("needs CPUs 0 and 1 allowed")
    records = run_records(
        engine,
        "--quick",
        "switch.futex",
        "--between",
        "threads",
        "--cpus",
        "smt",
        env=dict(os.environ, CTXBENCH_SYSFS_ROOT=str(root)),
    )
    env = records[0]
    assert env["cpu"]["topology_root"] == str(root)
    assert any("CTXBENCH_SYSFS_ROOT" in note for note in env["notes"])
    assert env["cpu"]["smt"] == {"control": "on", "active": True, "siblings_present": True}
    assert [p["llc"] for p in env["cpu"]["topology"]] == [7, 7]
    (smt,) = results(records)
    assert smt["placement"]["cpus"] == [0, 1]
    assert smt["verdict"]["status"] in ("ok", "suspect"), smt["verdict"]


def test_matrix_records_cover_every_pair(engine):
    records = run_records(engine, "--quick", "matrix.*")
    allowed = records[0]["cpu"]["allowed"]
    n = len(allowed)
    by_probe = {r["probe"]: r for r in results(records)}
    if n < 2:
        for r in by_probe.values():
            assert r["verdict"]["status"] == "unsupported"
        return
    cacheline, wakeup = by_probe["matrix.cacheline"], by_probe["matrix.wakeup"]
    for r, cells in ((cacheline, n * (n - 1)), (wakeup, n * n)):
        assert r["verdict"]["status"] in ("ok", "suspect"), r["verdict"]
        m = r["matrix"]
        assert sorted(m["cpus"]) == sorted(allowed)
        assert r["placement"]["requested"] == "matrix"
        if cells <= 256:
            assert len(m["cells"]) == cells and m["selection"]["sampled"] is False
        assert sum(c["n"] for c in m["cells"]) == len(r["samples"])
        assert sum(k["measured"] for k in m["classes"]) == len(m["cells"])
    assert all("switches" in c for c in wakeup["matrix"]["cells"])
    assert not any("switches" in c for c in cacheline["matrix"]["cells"])
