"""``run_lab``: build or find the lab images, run them on every target, return records.

It finds the lab images (built from a checkout's riscv/, or the ones the
wheel carries), runs them on every requested target in parallel, and returns
the records. Never prints: progress goes to a callback.

Something missing (a simulator, the images and the means to build them) is
not a measurement: ``LabUnavailable`` names it and how to get it, and no
record is made. A target that runs but fails gets ``failed`` records; the
others keep their figures.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.errors import CtxbenchError
from ctxbench.records.building import run_end_record, timestamp
from ctxbench.riscv import rvsim_models, simulators, tools
from ctxbench.riscv.catalog import CALLS, VARIANTS
from ctxbench.riscv.decompose import COUNTERS, Split, decompose
from ctxbench.riscv.parse import SimOutput, handler_shape, parse_output
from ctxbench.riscv.records import env_record, result_base, result_record
from ctxbench.riscv.simulators import LabError, Target


class LabUnavailable(CtxbenchError):
    """The lab cannot run here: a tool or the images are missing (exit 1)."""


@dataclass
class TargetRun:
    """What one target gave, for the report."""

    target: Target
    output: SimOutput | None = None
    shape: dict[str, dict[str, int]] | None = None
    parts: dict[str, dict[str, Split]] | None = None  # counter -> call -> its split
    problem: str | None = None
    seconds: float = 0.0


@dataclass
class LabRun:
    records: list[dict[str, Any]]
    runs: list[TargetRun] = field(default_factory=list)


def _images(
    build_dir: Path | None, build_first: bool, say: Callable[[str], None]
) -> tuple[Path, str | None]:
    """Where the lab images are: (dir with <platform>/lab.{elf,dis}, cc version)."""
    sources = tools.lab_sources()
    if build_first and sources is not None and (sources / "Makefile").is_file():
        build_tools = tools.find_build_tools()
        missing = tools.first_missing(build_tools)
        if missing is None:
            out_dir = (build_dir or sources.resolve().parent / "build" / "riscv").resolve()
            say(f"building the lab into {out_dir}")
            try:
                simulators.build(sources, out_dir, build_tools["make"], build_tools["cc"])  # type: ignore[arg-type]
            except LabError as error:
                raise LabUnavailable(str(error)) from None
            return out_dir, tools.version([str(build_tools["cc"]), "--version"])
        if tools.packaged_images() is None:
            raise LabUnavailable(f"cannot build the lab from {sources}: {missing.message()}")
    if build_dir is not None and not build_first:
        return build_dir.resolve(), None
    packaged = tools.packaged_images()
    if packaged is not None:
        return packaged, None
    raise LabUnavailable(
        "the lab images are not in this install: build the wheel where "
        "riscv64-unknown-elf-gcc is installed (apt-get install gcc-riscv64-unknown-elf), "
        "or set CTXBENCH_RISCV_LAB to a checkout's riscv/ directory"
    )


def _measure(
    target: Target, sim_tools: dict[str, Path], images: Path, children: simulators.Children
) -> TargetRun:
    elf = images / target.image / "lab.elf"
    dis = images / target.image / "lab.dis"
    started = time.monotonic()
    run = TargetRun(target)
    try:
        if not elf.is_file() or not dis.is_file():
            raise LabError(f"{elf} or {dis} is missing: build the lab first (make riscv)")
        run.output = parse_output(simulators.run(target, sim_tools, elf, children))
        run.shape = handler_shape(dis.read_text())
        run.parts = {c: decompose(run.output, run.shape, c) for c in COUNTERS}
    except (LabError, KeyError, ValueError, ZeroDivisionError) as error:
        run.problem = str(error) or type(error).__name__
    run.seconds = time.monotonic() - started
    return run


def run_lab(
    sims: Sequence[str] = simulators.SIMULATORS,
    build_dir: Path | str | None = None,
    *,
    build_first: bool = True,
    progress: Callable[[str], None] | None = None,
) -> LabRun:
    """Build (or find) the lab images, run them on each target of `sims`
    (spike, qemu, rvsim: every rvsim model), return the records: one env, one
    result per (target, variant, call), one run_end."""
    say = progress or (lambda message: None)
    started = time.monotonic()
    targets = simulators.targets_of(tuple(dict.fromkeys(sims)))
    sim_tools = {sim: tools.find_simulator(sim) for sim in {t.sim for t in targets}}
    missing = [m.message() for t in sim_tools.values() if (m := tools.first_missing(t))]
    if missing:
        raise LabUnavailable("; ".join(dict.fromkeys(missing)))
    images, cc_version = _images(
        Path(build_dir) if build_dir is not None else None, build_first, say
    )
    versions = {"cc": cc_version or ""}
    for sim, found in sim_tools.items():
        if sim == "rvsim":
            versions[sim] = "rvsim " + tools.version(
                [sys.executable, "-c", "import rvsim; print(rvsim.version())"]
            )
        else:
            tool = found[sim]
            versions[sim] = tools.version(
                [str(tool), "--version"] if sim == "qemu" else [str(tool), "--help"]
            )
    models = {t.model: rvsim_models.describe(t.model) for t in targets if t.model is not None}

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_id = f"riscv-{stamp}-{uuid.uuid4().hex[:8]}"
    started_at = timestamp()
    workers = max(1, min(len(targets), len(os.sched_getaffinity(0))))
    say(f"running on {', '.join(t.name for t in targets)} ({workers} at a time)")
    # The out-of-order models take twice the in-order one's time, Spike and
    # QEMU about a second: longest first, so the short ones fill the gaps.
    order = sorted(targets, key=lambda t: (not t.counts_cycles, t.model == "inorder"))
    children = simulators.Children()
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = {
            t.name: pool.submit(_measure, t, sim_tools[t.sim], images, children) for t in order
        }
        for future in as_completed(futures.values()):
            run = future.result()
            say(f"{run.target.name} finished in {run.seconds:.1f} s")
        runs = [futures[t.name].result() for t in targets]
    except BaseException:  # interrupted: no simulator outlives the lab
        pool.shutdown(wait=False, cancel_futures=True)
        children.kill_all()
        raise
    pool.shutdown()

    records: list[dict[str, Any]] = [env_record(run_id, targets, versions, images, models)]
    for run in runs:
        for variant in VARIANTS:
            for call in CALLS:
                if run.problem is not None:
                    record = result_base(run_id, run.target, variant, call)
                    record.update(_failed(run.problem))
                else:
                    record = result_record(
                        run_id,
                        run.target,
                        variant,
                        call,
                        run.output,  # type: ignore[arg-type]
                        run.parts,  # type: ignore[arg-type]
                        models.get(run.target.model) if run.target.model else None,
                        started_at,
                        run.shape,
                    )
                records.append(record)
    records.append(run_end_record(run_id, records, time.monotonic() - started))
    return LabRun(records, runs)


def _failed(problem: str) -> dict[str, Any]:
    return {
        "samples": [],
        "summary": None,
        "baseline": None,
        "corrected": None,
        "derived": {},
        "checks": [],
        "verdict": {"status": "failed", "reasons": [{"code": "child_failed", "detail": problem}]},
    }
