"""What test_spool's full-disk test runs inside a mount namespace of its own
(`unshare --mount --propagation private`): small tmpfs mounts it fills, a
real `ctxbench run syscall --quick`, and a JSON report on stdout.

    python full_disk.py WORKDIR ENGINE

fallback: the store alone on a full tmpfs; the run must keep its records in
the user's state directory and name the import command that stores them.
refused: the store, the state and data directories and $TMPDIR all on a
full tmpfs; the run must stop before the engine measures.
Nothing it mounts outlives the namespace.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).with_name("fixtures") / "run_b.jsonl"


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)


def fill(where: Path) -> Path:
    """Writes until the file system has not a byte left."""
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError:
                continue
    return filler


def ctxbench(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    return {
        "returncode": done.returncode,
        "error": errors[-1] if errors else "",
        "stderr": done.stderr[-3000:],
    }


def engine_wrapper(base: Path, engine: str) -> tuple[Path, Path]:
    """An engine that notes each start (outside the full disks), then runs the real one."""
    calls = base / "engine-calls"
    wrapper = base / "ctxbench-engine"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\nexec "{engine}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, calls


def environment(engine: Path, places: Path) -> dict[str, str]:
    """ctxbench's environment: ENGINE, and its fallback places for a spool
    (state and data directories, $TMPDIR) under PLACES."""
    for name in ("state", "data", "tmp"):
        (places / name).mkdir(exist_ok=True)
    return dict(
        os.environ,
        CTXBENCH_ENGINE=str(engine),
        XDG_STATE_HOME=str(places / "state"),
        XDG_DATA_HOME=str(places / "data"),
        TMPDIR=str(places / "tmp"),
    )


def measured(calls: Path) -> bool:
    return calls.exists() and any("--progress" in line for line in calls.read_text().splitlines())


def stored(env: dict[str, str], db: Path) -> dict[str, Any]:
    from ctxbench.store.db import Store

    with Store.open(db, create=False) as store:
        run = store.load("latest")
    return {"results": len(run.results), "complete": run.info.complete}


def fallback(base: Path, engine: str) -> dict[str, Any]:
    disk = base / "disk"
    mount_tmpfs(disk, "2m")
    wrapper, calls = engine_wrapper(base, engine)
    env = environment(wrapper, base)
    db = disk / "store.db"
    imported = ctxbench(env, "import", str(FIXTURE), "--db", str(db))
    assert imported["returncode"] == 0, imported
    filler = fill(disk)
    run = ctxbench(env, "run", "syscall", "--quick", "--db", str(db))
    plan = subprocess.run(
        [engine, "run", "syscall", "--quick", "--dry-run"],
        capture_output=True,
        text=True,
        check=True,
    )
    report: dict[str, Any] = {
        "run": run,
        "variants": len(plan.stdout.splitlines()),
        "measured": measured(calls),
        "spools_beside_store": [p.name for p in disk.glob(".ctxbench-unstored-*")],
    }
    command = re.search(r"`(ctxbench import [^`]*)`", run["error"])
    filler.unlink()  # room again: the printed command must now store the run
    if command is not None:
        words = shlex.split(command.group(1))
        report["import"] = ctxbench(env, *words[1:])
        latest = stored(env, db)
        report["stored_results"] = latest["results"]
        report["stored_complete"] = latest["complete"]
    return report


def refused(base: Path, engine: str) -> dict[str, Any]:
    disk = base / "everything"
    mount_tmpfs(disk, "2m")
    wrapper, calls = engine_wrapper(base / "refused-engine", engine)
    env = environment(wrapper, disk)
    db = disk / "store.db"
    imported = ctxbench(env, "import", str(FIXTURE), "--db", str(db))
    assert imported["returncode"] == 0, imported
    fill(disk)
    run = ctxbench(env, "run", "syscall", "--quick", "--db", str(db))
    return {"run": run, "measured": measured(calls)}


def main(base: Path, engine: str) -> int:
    (base / "refused-engine").mkdir()
    report = {"fallback": fallback(base, engine), "refused": refused(base, engine)}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
