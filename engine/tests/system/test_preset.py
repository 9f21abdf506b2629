"""A preset is ordinary probe variants run by the harness: its records are
those of the same probes run by name with the same parameters, field by field
(figures aside), and in table mode each row is printed once."""

import json

import pytest

from conftest import parse_records, results, run_engine

pytestmark = pytest.mark.measures

PRESET = "fibers-vs-threads"
# Fewer laps than the preset's 1,000,000 keep the test short; the same
# override goes to both runs, so the parameters still match.
LAPS = ["--param", "laps=10000"]
# The coroutine and the two-thread futex hand-off calibrate their own samples:
# --quick keeps them short (the same option goes to both runs).
QUICK = ["--quick"]
ROUND_ROBIN = ("uswitch.boost_fiber", "switch.threads_round_robin")
# The rounds' seed is drawn per run and recorded in each record's schedule;
# both runs take the same one, so their schedules match too.
SEED = ["--seed", "7"]

# What a measurement decides (figures, times, where the scheduler put an
# unpinned task) and may differ between two runs of the same variant.
FIGURES = {
    "samples",
    "summary",
    "corrected",
    "duration_s",
    "started_at",
    "run_id",
    "verdict",
    "interference",  # the host reference's times, and whether the host slowed it
    "set_aside",  # the samples the host reference or the kernel's counters set aside
    "counters",  # what the kernel said about the samples
}
# Notes about the host reference follow from those times, not from the variant.
HOST_NOTES = ("host interference", "a re-measurement after host interference")


def engine_run(engine, *args):
    return run_engine(engine, "run", *args).stdout


def preset_variants(engine):
    text = engine_run(engine, "--preset", PRESET, *LAPS, "--dry-run")
    return [json.loads(line) for line in text.splitlines()]


def by_name_args(variants):
    """The same variants as probe names and --param choices."""
    args = [v["probe"] for v in variants]
    choices = {}
    for v in variants:
        for key, value in v["params"].items():
            choices.setdefault(key, [])
            if str(value) not in choices[key]:
                choices[key].append(str(value))
    for key, values in choices.items():
        args += ["--param", f"{key}={','.join(values)}"]
    return args


def expected_as_compared(check, host_slowed):
    """What a check expected, as two runs of one variant must agree on it.
    The placement check expects the CPUs the engine chose, and a same-CPU
    variant runs on the CPU with least other work at that moment: the
    tasks' count and how many CPUs they share are the variant's, which CPU
    is the load's."""
    if host_slowed and "warm-up included" in check.get("detail", ""):
        return None
    if check["name"] == "placement" and isinstance(check["expected"], list):
        cpus = check["expected"]
        return json.dumps({"tasks": len(cpus), "distinct_cpus": len(set(map(str, cpus)))})
    return json.dumps(check["expected"])


def comparable(record, host_slowed=False):
    """The record without its figures; checks and derived keep their names and
    what was expected, the timer its source, the placement what was asked.
    A check counted over the workload's whole life (its detail says warm-up
    included: the partners' switches, the fibers' turns), or one whose
    expected count is every hand-off scaled to the kept samples (the
    partners' over the kept samples: the warm-up's share moves with the ops
    set aside), depends on every sample set aside and taken again: with
    host_slowed (either record set one aside) its expected count is not
    compared."""
    out = {k: v for k, v in record.items() if k not in FIGURES}
    out["checks"] = [(c["name"], expected_as_compared(c, host_slowed)) for c in record["checks"]]
    out["derived"] = sorted(record["derived"])
    if "clean" in record:  # how many samples came clean, and when, is the load's
        out["clean"] = (record["clean"]["needed"], record["clean"]["budget_s"])
    out["notes"] = [n for n in record.get("notes", []) if not n.startswith(HOST_NOTES)]
    out["timer"] = (record["timer"]["source"], record["timer"]["corrected"])
    out["placement"] = (record["placement"]["requested"], len(record["placement"]["cpus"]))
    if record["baseline"] is not None:
        out["baseline"] = record["baseline"]["name"]
    if "schedule" in record:  # each round's figures are figures
        out["schedule"] = {k: v for k, v in record["schedule"].items() if k != "round_figures"}
    return out


def test_preset_expands_to_registered_probes(engine):
    variants = preset_variants(engine)
    assert [v["probe"] for v in variants] == [
        "uswitch.coroutine",
        "uswitch.boost_fiber",
        "switch.futex",
        "switch.threads_round_robin",
    ]
    for v in variants:
        if v["probe"] in ROUND_ROBIN:
            workers = v["params"].get("fibers", v["params"].get("threads"))
            assert workers == 4 and v["params"]["laps"] == 10000
    futex = next(v for v in variants if v["probe"] == "switch.futex")
    assert futex["params"]["between"] == "threads" and futex["params"]["cpus"] == "same"


def test_preset_records_match_the_same_probes_run_by_name(engine):
    variants = preset_variants(engine)

    # A variant re-measured after host interference is written after the
    # rest, so the records are matched by variant, not by position.
    def key(record):
        return record["probe"], json.dumps(record["params"], sort_keys=True)

    preset = results(
        parse_records(engine_run(engine, "--json", "--preset", PRESET, *LAPS, *SEED, *QUICK))
    )
    by_name = results(
        parse_records(engine_run(engine, "--json", *by_name_args(variants), *SEED, *QUICK))
    )
    preset, by_name = sorted(preset, key=key), sorted(by_name, key=key)
    assert [key(r) for r in preset] == [key(r) for r in by_name]
    for a, b in zip(preset, by_name, strict=True):
        # notes and set_aside: present where the host slowed a sample; the
        # notes are compared below.
        assert set(a) - {"notes", "set_aside"} == set(b) - {"notes", "set_aside"}, a["probe"]
        # The measuring task's switch counts expected are over the samples
        # that make the figure (not the set-aside ones), so they match
        # whatever the host did; whole-life counts only where it set none aside.
        slowed = bool(a.get("set_aside") or b.get("set_aside"))
        mine, theirs = comparable(a, slowed), comparable(b, slowed)
        if a["probe"] not in ROUND_ROBIN:
            # The coroutine and the futex hand-off calibrate their own samples:
            # the sample size, the switch counts expected over it and the
            # samples' shape are decided by the measurement, so only the
            # checks' names are compared.
            for record in (mine, theirs):
                record.pop("ops_per_sample", None)
                record.pop("stability", None)
                record["checks"] = [name for name, _ in record["checks"]]
        assert mine == theirs, a["probe"]
        # round_figures: each run's own medians, compared with the samples above.
        a_schedule = {k: v for k, v in a["schedule"].items() if k != "round_figures"}
        b_schedule = {k: v for k, v in b["schedule"].items() if k != "round_figures"}
        assert a_schedule == b_schedule and a_schedule["seed"] == 7
        if a["probe"] not in ROUND_ROBIN:
            continue
        assert a_schedule == {"interleave": "rounds", "rounds": 1, "seed": 7}
        if a["verdict"]["status"] != "unsupported":
            assert a["ops_per_sample"] == 40000  # 10,000 laps of 4 workers: fixed by laps
            assert len(a["samples"]) == 1 and a["timer"]["corrected"]


def test_preset_rows_are_printed_once_in_table_mode(engine):
    table = engine_run(engine, "--preset", PRESET, *LAPS, *QUICK)
    for probe in ("uswitch.coroutine", "switch.futex", *ROUND_ROBIN):
        rows = [line for line in table.splitlines() if line.startswith(probe + " ")]
        assert len(rows) == 1, table
    # The comparison view names them, once, after the rows; its header states
    # the laps this run made (the --param's, not the preset's 1,000,000).
    assert table.count(f"# {PRESET}:") == 1, table
    (header,) = [line for line in table.splitlines() if line.startswith(f"# {PRESET}:")]
    assert "10000 laps each" in header and "1,000,000" not in header, header
