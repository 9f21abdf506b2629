"""`ctxbench explain`: decompositions built only from the run's own figures.

Synthetic records with known parts check every rule; recorded runs check that
the parts of every explained figure add up to its median."""

from __future__ import annotations

import json
import re
from pathlib import Path

import markupsafe
import pytest

from conftest import fixture_path, invoke, real_run, summary_figures
from ctxbench.analysis.explain.explanation import REST, REST_INSIDE, explain
from ctxbench.records.reading import read_run_file
from ctxbench.views.explain.explanation import (
    missing_words,
    narrow,
    not_explained_words,
    note_words,
    render_text,
    source_words,
)

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "data" / "reference-run.jsonl"


def result(probe, median, params=None, baseline=None, status="ok", family=None, **derived):
    return {
        "kind": "result",
        "probe": probe,
        "family": family or probe.split(".")[0],
        "unit": "ns",
        "params": params or {},
        # a tight interval (1%): the two figures of a part are measured apart
        "summary": summary_figures(median, median * 0.99, median * 1.01),
        "baseline": {"name": "the same calls in one task", "summary": {"median": baseline}}
        if baseline is not None
        else None,
        "derived": derived,
        "verdict": {"status": status, "reasons": []},
    }


def pipe(median, between="threads", cpus="same", idle="free", **derived):
    params = {"between": between, "cpus": cpus, "policy": "normal", "idle": idle}
    derived.setdefault("syscalls_per_op", 2.0)
    return result("switch.pipe", median, params, baseline=400.0, **derived)


IDLE = "waking an idle CPU"


def said(explanation):
    """What EXPLANATION leaves not explained, in the words explain prints."""
    return [not_explained_words(n) for n in explanation.not_explained]


def parts(explanation):
    return {p.name: p.ns for p in explanation.parts}


def test_same_cpu_threads_kernel_entry_primitive_and_rest():
    run = [
        result("syscall.enosys", 100.0),
        pipe(
            1000.0, voluntary_switches_per_round_trip=1.0, involuntary_switches_per_round_trip=1.0
        ),
    ]
    (e,) = explain(run).explanations
    assert parts(e) == {
        "kernel entry/exit": 200.0,
        "primitive's own work": 200.0,
        REST: 600.0,
    }
    assert e.total_ns == pytest.approx(e.median_ns)
    assert e.switches_per_round_trip == {"voluntary": 1.0, "involuntary": 1.0}
    assert any(m.code == REST_INSIDE for m in e.not_separated)


def test_processes_add_the_address_space_switch_from_the_thread_twin():
    run = [result("syscall.enosys", 100.0), pipe(1000.0), pipe(1300.0, between="processes")]
    by_between = {e.params["between"]: e for e in explain(run).explanations}
    p = parts(by_between["processes"])
    assert p["address-space switch"] == pytest.approx(300.0)  # (1300-400) - (1000-400)
    assert p[REST] == pytest.approx(600.0)
    assert by_between["processes"].total_ns == pytest.approx(1300.0)
    assert "address-space switch" not in parts(by_between["threads"])


def test_cross_cpu_idle_share_from_the_held_twin_and_its_absence_said():
    run = [
        result("syscall.enosys", 100.0),
        pipe(10000.0, cpus="cross"),
        pipe(3000.0, cpus="cross", idle="held", cpuidle_driver="haltpoll"),
    ]
    free = next(e for e in explain(run).explanations if e.params["idle"] == "free")
    p = parts(free)
    assert p["waking an idle CPU"] == pytest.approx(7000.0)
    assert p[REST] == pytest.approx(10000.0 - 200 - 200 - 7000)
    assert free.total_ns == pytest.approx(10000.0)
    # Without the held twin the idle share is not guessed: it is named as missing.
    alone = explain(run[:2]).explanations[0]
    assert "waking an idle CPU" not in parts(alone)
    assert any("idle=held was not measured" in missing_words(m) for m in alone.not_separated)


def test_cross_cpu_processes_take_the_address_space_from_the_held_pair():
    run = [
        result("syscall.enosys", 100.0),
        pipe(12000.0, between="processes", cpus="cross"),
        pipe(4000.0, between="processes", cpus="cross", idle="held"),
        pipe(10000.0, cpus="cross"),
        pipe(3000.0, cpus="cross", idle="held"),
    ]
    explained = explain(run).explanations
    free = next(e for e in explained if e.params == run[1]["params"])
    p = parts(free)
    assert p["waking an idle CPU"] == pytest.approx(8000.0)
    assert p["address-space switch"] == pytest.approx(1000.0)  # (4000-400) - (3000-400)
    assert p[REST] == pytest.approx(2600.0)  # the threads' held figure, corrected
    assert free.total_ns == pytest.approx(12000.0)


def test_a_slowed_record_the_parts_use_is_named():
    def interference(slowed, ratio):
        attempts = [{"median": 1.0, "reference_ratio": ratio, "slowed_share": 1.0, "samples": 30}]
        return {"slowed": slowed, "kept": 0, "attempts": attempts}

    threads = pipe(1000.0)
    threads["interference"] = interference(True, 1.31)
    processes = pipe(1300.0, between="processes")
    processes["interference"] = interference(False, 1.01)
    by_between = {
        e.params["between"]: e
        for e in explain([result("syscall.enosys", 100.0), threads, processes]).explanations
    }
    # The processes figure's address-space part uses the slowed thread twin.
    (note,) = [note_words(n) for n in by_between["processes"].notes]
    assert note.startswith("host interference")
    assert "between=threads" in note and "1.31x" in note
    assert by_between["threads"].notes
    processes["interference"] = interference(False, 1.01)
    threads["interference"] = interference(False, 1.02)
    for e in explain([result("syscall.enosys", 100.0), threads, processes]).explanations:
        assert not e.notes


def test_ring_cache_refill_from_the_fitted_slope():
    def ring(size, median):
        params = {"procs": 2.0, "size_kib": float(size), "cpus": "same", "policy": "normal"}
        return result("switch.ring", median, params, baseline=400.0 + size, syscalls_per_op=2.0)

    # corrected: 800 at 0 KiB, 1120 at 16 KiB, 1440 at 32 KiB -> 20 ns/KiB exactly.
    run = [result("syscall.enosys", 100.0), ring(0, 1200.0), ring(16, 1536.0), ring(32, 1872.0)]
    by_size = {e.params["size_kib"]: e for e in explain(run).explanations}
    p = parts(by_size[16.0])
    assert p["cache refill of the working set"] == pytest.approx(320.0)
    assert p["primitive's own work"] == pytest.approx(416.0 - 200.0)
    assert by_size[16.0].total_ns == pytest.approx(1536.0)
    assert "cache refill of the working set" not in parts(by_size[0.0])


def test_timing_dependent_syscalls_are_not_priced():
    futex = result(
        "switch.futex", 900.0, {"between": "threads", "cpus": "same"}, baseline=100.0
    )  # no syscalls_per_op: FUTEX_WAIT may be skipped
    (e,) = explain([result("syscall.enosys", 100.0), futex]).explanations
    assert "kernel entry/exit" not in parts(e)
    assert parts(e)["primitive's own work, its system calls included"] == 100.0
    assert any("depends on timing" in missing_words(m) for m in e.not_separated)
    assert e.total_ns == pytest.approx(900.0)


def test_unmeasured_figures_are_listed_not_explained():
    failed = pipe(1000.0)
    failed["verdict"] = {"status": "unsupported", "reasons": []}
    failed["summary"] = None
    explained = explain([failed])
    assert explained.explanations == []
    assert explained.unexplained and explained.unexplained[0].status == "unsupported"
    assert "unsupported, no figure" in render_text(explained)


def test_fork_slope_and_minimal_parent():
    run = [
        result("create.fork", 100_000.0, {"parent_mib": 0.0}),
        result("create.fork", 164_000.0, {"parent_mib": 64.0}),
        result("create.fork", 612_000.0, {"parent_mib": 512.0}),
        result("create.fork_minimal_parent", 50_000.0),
    ]
    fork = explain(run).fork
    assert fork.points == [(0.0, 100_000.0), (64.0, 164_000.0), (512.0, 612_000.0)]
    assert fork.slope_ns_per_mib == pytest.approx(1000.0)
    assert fork.intercept_ns == pytest.approx(100_000.0)
    assert fork.minimal_parent_ns == 50_000.0
    assert "per MiB" in render_text(explain(run))


@pytest.mark.parametrize(
    "records",
    [
        *(real_run(name).results for name in ("run_a.jsonl", "run_b.jsonl", "ring.jsonl")),
        read_run_file(REFERENCE).results,
    ],
    ids=["run_a", "run_b", "ring", "reference"],
)
def test_recorded_runs_every_switch_figure_sums_to_its_median(records):
    explained = explain(records)
    switch = [
        r
        for r in records
        if r["family"] in ("switch", "uswitch")  # every switch, user-level ones included
        and r["unit"] == "ns"
        and r["verdict"]["status"] in ("ok", "suspect")
    ]
    assert len(explained.explanations) == len(switch)
    for e in explained.explanations:
        if e.probe.startswith("uswitch."):  # split along its chain: the parts add up
            assert e.total_ns == pytest.approx(e.median_ns, rel=1e-9), (e.probe, e.params)
            continue
        assert all(0 <= p.ns <= e.median_ns for p in e.parts), (e.probe, e.params)
        if e.parts[-1].name == REST:
            assert e.total_ns == pytest.approx(e.median_ns, rel=1e-9), (e.probe, e.params)
        else:  # the parts that stand exceed the median: said, no remainder
            assert e.total_ns > e.median_ns
            assert any(w.startswith("the parts above add up to") for w in said(e))


DEFAULT_QUICK = "default_quick.jsonl"
SHARE = re.compile(r"^\s+\S+ (?:ns|µs|ms)\s+(-?\d+)%  ")


@pytest.mark.parametrize(
    "records",
    [real_run(DEFAULT_QUICK).results, read_run_file(REFERENCE).results],
    ids=["fresh-default-run", "reference"],
)
def test_no_printed_share_is_negative_or_above_100(records):
    text = render_text(explain(records))
    shares = [int(m.group(1)) for line in text.splitlines() if (m := SHARE.match(line))]
    assert len(shares) > 100
    assert all(0 <= share <= 100 for share in shares), sorted(shares)[:3] + sorted(shares)[-3:]
    assert " us " not in text and "1 system calls" not in text


def test_an_impossible_subtraction_is_said_in_words():
    # idle=held measured slower than idle=free; processes faster than threads;
    # a yield across CPUs whose baseline exceeds the figure (it did not switch).
    run = [
        result("syscall.enosys", 100.0),
        pipe(10000.0, cpus="cross"),
        pipe(11000.0, cpus="cross", idle="held"),
        pipe(1000.0),
        pipe(900.0, between="processes"),
        result(
            "switch.yield",
            220.0,
            {"between": "threads", "cpus": "cross"},
            baseline=430.0,
            syscalls_per_op=1.0,
        ),
    ]
    run[-1]["verdict"] = {
        "status": "suspect",
        "reasons": [{"code": "too_few_switches", "detail": "14 observed vs 100000 expected"}],
    }
    by_probe = {(e.probe, e.params.get("between"), e.params["cpus"], e.params.get("idle")): e
                for e in explain(run).explanations}  # fmt: skip
    cross = by_probe[("switch.pipe", "threads", "cross", "free")]
    assert IDLE not in parts(cross)
    assert said(cross) == [
        "waking an idle CPU: idle=held (11.00 µs) measured higher than idle=free (10.00 µs): "
        "holding the CPUs out of deep idle saved nothing measurable here"
    ]
    assert cross.total_ns == pytest.approx(10000.0)  # the rest takes what stands
    processes = by_probe[("switch.pipe", "processes", "same", "free")]
    assert (
        "between=threads (600.0 ns, corrected) measured higher than between=processes "
        in (said(processes)[0])
    )
    yielded = by_probe[("switch.yield", "threads", "cross", None)]
    (words,) = said(yielded)
    assert words.startswith("primitive's own work: 330.0 ns") and "too few switches" in words
    assert "1 system call x" in render_text(explain(run))


def test_narrow_to_a_glob_and_headline_first():
    records = real_run(DEFAULT_QUICK).results
    explained = explain(records)
    shown, more = narrow(explained)
    assert [(e.params["between"], e.params["cpus"]) for e in shown] == [
        ("threads", "same"),
        ("threads", "cross"),
        ("processes", "same"),
    ]
    assert all(e.probe == "switch.pipe" and e.params["policy"] == "normal" for e in shown)
    assert more == len(explained.explanations) - 3
    pipes, more = narrow(explained, ["switch.pipe"])
    assert more == 0 and {e.probe for e in pipes} == {"switch.pipe"}
    assert len(pipes) == sum(1 for r in records if r["probe"] == "switch.pipe")
    assert pipes[:3] == shown  # the headline first
    family, _ = narrow(explained, ["switch"], {"cpus": "cross", "idle": "held"})
    assert family and all(e.params["cpus"] == "cross" for e in family)
    text = render_text(explained, *narrow(explained))
    assert f"{len(explained.explanations) - 3} more switch figures in this run" in text
    assert "switch.futex" not in text.split("more switch figures")[0]


def test_cli_explain_text_and_json(tmp_path):
    db = str(tmp_path / "x.db")
    imported = invoke("import", str(fixture_path("run_a.jsonl")), "--db", db)
    assert imported.exit_code == 0, imported.stderr
    text = invoke("explain", "--db", db)
    assert text.exit_code == 0, text.stderr
    assert "per switch" in text.stdout and REST in text.stdout
    as_json = invoke("explain", "latest", "--json", "--db", db)
    assert as_json.exit_code == 0
    data = json.loads(as_json.stdout)
    assert data["run_id"] == real_run("run_a.jsonl").run_id
    for e in data["explanations"]:
        assert sum(p["ns"] for p in e["parts"]) == pytest.approx(e["median_ns"])
    missing = invoke("explain", "nope", "--db", db)
    assert missing.exit_code != 0 and "Traceback" not in missing.stderr


def test_report_carries_the_same_decomposition(tmp_path):
    db = str(tmp_path / "x.db")
    assert invoke("import", str(fixture_path("run_a.jsonl")), "--db", db).exit_code == 0
    out = tmp_path / "r.html"
    made = invoke("report", "latest", "-o", str(out), "--db", db)
    assert made.exit_code == 0, made.stderr
    html = out.read_text()
    assert 'id="explain"' in html and REST in html
    first = explain(real_run("run_a.jsonl").results).explanations[0]
    assert str(markupsafe.escape(first.parts[0].name)) in html


def test_a_user_level_switch_is_split_along_its_chain_of_figures():
    # Issue 30.5: `explain uswitch` had nothing; each user-level switch now gets its
    # parts from the run's own figures, a step within noise said in words, and the
    # coroutine and the floor say they cannot be split. The reference run's figures.
    by_probe = {
        (e.probe, tuple(sorted(e.params.items()))): e
        for e in explain(read_run_file(REFERENCE).results).explanations
        if e.probe.startswith("uswitch.")
    }
    fiber = by_probe[("uswitch.boost_fiber", (("fibers", 4),))]
    assert [p.name for p in fiber.parts] == [
        "register save/restore (own asm switch)",
        "Boost.Context beyond the own switch",
        "the fiber scheduler's own work",
    ]
    assert fiber.total_ns == pytest.approx(fiber.median_ns)
    full = by_probe[("uswitch.asm", (("fpcontrol", "same"), ("fpstate", "full")))]
    assert parts(full)["FP/vector state (XSAVE/XRSTOR)"] == pytest.approx(94.611 - 3.756, abs=0.01)
    # fcontext's interval overlaps the own switch's: no 'own work' share, said why.
    fcontext = by_probe[("uswitch.boost_context", (("api", "fcontext"),))]
    assert len(fcontext.parts) == 1 and fcontext.total_ns == pytest.approx(fcontext.median_ns)
    (words,) = said(fcontext)
    assert words.startswith("Boost.Context's own work: ") and "intervals overlap" in words
    coroutine = by_probe[("uswitch.coroutine", ())]
    assert coroutine.parts[0].name == "the whole switch, not split"
    assert "compiled into the coroutines' code" in source_words(coroutine.parts[0].source)
    # no line claims 'less every part above' where there is no part above
    for e in by_probe.values():
        assert all("less every part above" not in source_words(p.source) for p in e.parts[:1])
    text = invoke("explain", "--help").output
    assert "explain" in text


def test_a_fiber_run_alone_is_not_its_schedulers_own_work_and_no_params_say_so():
    """Issue 40: with nothing below it measured, the fiber's whole time is not
    'the fiber scheduler's own work' two lines above 'register save/restore ...
    not measured'; a variant with no parameters says so, never '-'."""
    results = read_run_file(REFERENCE).results
    fiber_only = [r for r in results if r["probe"] in ("uswitch.boost_fiber", "uswitch.coroutine")]
    explained = {e.probe: e for e in explain(fiber_only).explanations}
    fiber = explained["uswitch.boost_fiber"]
    assert [p.name for p in fiber.parts] == ["the whole switch, not split"]
    assert fiber.total_ns == pytest.approx(fiber.median_ns)
    assert any("register save/restore" in missing_words(m) for m in fiber.not_separated)
    text = render_text(explain(fiber_only))
    assert "the fiber scheduler's own work" not in text
    assert "uswitch.coroutine (no parameters):" in text
    assert "uswitch.coroutine -" not in text
    # Measured beside the Boost.Context figure but not the own switch: the step
    # joins the one above it.
    with_context = fiber_only + [
        r
        for r in results
        if r["probe"] == "uswitch.boost_context" and r["params"]["api"] == "fiber"
    ]
    fiber = next(e for e in explain(with_context).explanations if e.probe == "uswitch.boost_fiber")
    names = [p.name for p in fiber.parts]
    assert "the fiber scheduler's own work" in names[-1]
    assert names[0] != "register save/restore (own asm switch)"
