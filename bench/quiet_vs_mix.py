"""Quiet against loaded medians: is a quiet median pulled up by the vCPU halting?

Alternates plain `ctxbench run` runs with runs during which a second process
holds /dev/cpu_dma_latency at 0 (the guest polls instead of halting; the hold
ends with that process), ROUNDS times quiet or under bench/load_mix.py, into
one store; `table STORE` prints each row's median of the runs' medians (and of
their p10s) by condition. Root (the hold). Never used by tests.

Usage: python3 bench/quiet_vs_mix.py quiet|mix STORE ROUNDS
       python3 bench/quiet_vs_mix.py table STORE
"""

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))
from ctxbench.stats import low_quantile  # noqa: E402
from ctxbench.store.db import Store  # noqa: E402

SEL = [
    "syscall.getppid",
    "syscall.getpid",
    "switch.pipe",
    "switch.futex",
    "uswitch",
    "--cpus",
    "same",
    "--quick",
]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}/python/src")


def run(db, label):
    subprocess.run(
        [f"{ROOT}/.venv/bin/python", "-m", "ctxbench", "run", *SEL, "--db", db, "--label", label],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def held():
    # a process holding /dev/cpu_dma_latency at 0 for as long as it lives
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, struct, time\n"
            "fd = os.open('/dev/cpu_dma_latency', os.O_RDWR)\n"
            "os.write(fd, struct.pack('i', 0))\n"
            "time.sleep(3600)\n",
        ]
    )


def mix():
    return subprocess.Popen(
        [f"{ROOT}/.venv/bin/python", f"{ROOT}/bench/load_mix.py"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main(db, rounds, loaded):
    load = mix() if loaded else None
    if load:
        time.sleep(5)
    try:
        for k in range(rounds):
            for mode in ("plain", "held"):
                h = held() if mode == "held" else None
                try:
                    time.sleep(0.5)
                    run(db, f"{'mix' if loaded else 'quiet'}-{mode}-{k}")
                finally:
                    if h:
                        h.kill()
                        h.wait()
                print(
                    f"{mode} {k} done {time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    finally:
        if load:
            load.terminate()
            load.wait()


def table(db):
    rows = {}
    with Store.open(db) as s:
        for info in s.runs():
            cond = "-".join(info.label.split("-")[:2])
            for r in s.load(info.run_id).records.results:
                if not r.get("summary"):
                    continue
                key = (
                    r["probe"],
                    json.dumps(
                        {k: v for k, v in r["params"].items() if k != "cpus"}, sort_keys=True
                    ),
                )
                samples = sorted(r["samples"]) if isinstance(r.get("samples"), list) else None
                p10 = low_quantile(samples) if samples else None
                rows.setdefault(key, {}).setdefault(cond, []).append(
                    (r["summary"]["median"], p10, r["verdict"]["status"])
                )
    conds = ["quiet-plain", "quiet-held", "mix-plain", "mix-held"]
    print("probe | " + " | ".join(f"{c} median (p10)" for c in conds))
    for key, by in sorted(rows.items()):
        cells = []
        for c in conds:
            v = by.get(c, [])
            if not v:
                cells.append("-")
                continue
            med = statistics.median(x[0] for x in v)
            p = [x[1] for x in v if x[1] is not None]
            cells.append(
                f"{med:.1f} ({statistics.median(p):.1f}) ok {sum(x[2] == 'ok' for x in v)}/{len(v)}"
                if p
                else f"{med:.1f}"
            )
        print(f"{key[0]} {key[1]} | " + " | ".join(cells))


if __name__ == "__main__":
    if sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        main(sys.argv[2], int(sys.argv[3]), sys.argv[1] == "mix")
