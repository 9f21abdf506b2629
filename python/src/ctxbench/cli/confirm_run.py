"""``compare --confirm``: measure the rows a gate called slower again, here and now.

The run that measures them again is a ``ctxbench run`` as a user would type
it: the slower rows' probes, their placements, task kinds and other
parameters (the variants they select include those rows; others they
select too are measured and not judged), B's options (quick or not,
samples, time per sample, retries, rounds, host reference, shield), stored
in the same store with a label naming B. A third run (rows that were not
slower again: two of three decide them) is taken the same way. Its output goes to stderr, so that
``compare --json`` keeps stdout for its data. It runs with this machine's
engine, so only a run measured on this machine can be confirmed here.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from ctxbench.errors import BadInput, EngineError
from ctxbench.records.result import ParamValue
from ctxbench.records.runs import StoredRun

# Parameters that have an option of their own in `ctxbench run`.
OWN_OPTIONS = {"cpus": "--cpus", "between": "--between"}


def run_words(first: StoredRun, variants: list[tuple[str, Mapping[str, ParamValue]]]) -> list[str]:
    """The `ctxbench run` arguments that measure VARIANTS again with the
    options FIRST was run with (no store, no label)."""
    probes = sorted({probe for probe, _ in variants})
    values: dict[str, set[str]] = {}
    for _, params in variants:
        for name, value in params.items():
            values.setdefault(name, set()).add(str(value))
    words = list(probes)
    for name in sorted(values):
        joined = ",".join(sorted(values[name]))
        words += (
            [OWN_OPTIONS[name], joined] if name in OWN_OPTIONS else ["--param", f"{name}={joined}"]
        )
    options = first.env.options
    if options.get("quick"):
        words.append("--quick")
    for key, option in (
        ("samples", "--samples"),
        ("min_time_s", "--min-time"),
        ("retries", "--retries"),
        ("interleave", "--interleave"),
        ("rounds", "--rounds"),
        ("host_reference", "--host-reference"),
    ):
        if options.get(key) is not None:
            words += [option, str(options[key])]
    shield = first.env.shield
    if shield is not None and shield.get("requested"):
        words += ["--shield", str(shield["requested"])]
    return words


def check_here(first: StoredRun) -> None:
    """--confirm measures with this machine's engine: B must be this machine's."""
    host = first.env.hostname
    if host != platform.node():
        raise BadInput(
            f"--confirm measures here, and B ({first.run_id}) was measured on "
            f"{host or 'an unknown host'}, not on {platform.node()}: "
            "run compare --confirm there, or measure B's rows again there and give that run "
            "with --confirm-with RUN"
        )


def _stderr_fd() -> int:
    """The descriptor of this process's stderr (2 where sys.stderr has none,
    as under a test runner's capture)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


def measure_again(
    first: StoredRun,
    variants: list[tuple[str, Mapping[str, ParamValue]]],
    db: str | None,
    third: bool = False,
) -> str:
    """Measure VARIANTS again as FIRST measured them; store the run; its id.
    THIRD: the run that measures a third time the rows not repeated and
    those slower twice (``analysis.compare.gate.third_variants``)."""
    check_here(first)
    words = run_words(first, variants)
    with tempfile.TemporaryDirectory(prefix="ctxbench-confirm-") as directory:
        out = os.path.join(directory, "again.jsonl")
        command = [sys.executable, "-m", "ctxbench", "run", *words, "--json", out]
        label = f"{'third' if third else 'again'}: {first.run_id}"
        command += ["--label", label] + (["--db", db] if db else [])
        what = "row(s) a third time" if third else "slower row(s) again"
        print(f"measuring {len(variants)} {what}: ctxbench {' '.join(words)}", file=sys.stderr)
        status = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=_stderr_fd(), check=False)
        if status.returncode != 0:
            raise EngineError(
                f"measuring the {'rows a third time' if third else 'slower rows again'} failed "
                f"(ctxbench run exited {status.returncode}); "
                "the gate stands as first judged: failed"
            )
        try:
            with open(out, encoding="utf-8") as lines:
                return str(json.loads(lines.readline())["run_id"])
        except (OSError, ValueError, KeyError) as error:
            raise EngineError(
                f"the run that measured the rows again wrote no run id ({error})"
            ) from None
