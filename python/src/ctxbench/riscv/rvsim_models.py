"""The rvsim core models the lab runs on, and the child process that runs one.

rvsim (PyPI) is a cycle-level RISC-V system simulator; its cycles are a
model's cycles, never silicon's. The lab's Spike image runs on it unchanged
(HTIF exit, CLINT, 16550 UART at Spike's addresses). Each model runs in its
own process (``python rvsim_models.py MODEL ELF``, standard library and
rvsim only) so that the
models run in parallel and the simulated console, which rvsim writes to the
process's stdout, is captured like Spike's and QEMU's.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# name -> (what it is, in words)
MODELS = {
    "inorder": "rvsim in-order core (Config(backend=InOrder()), otherwise the defaults)",
    "p550": "rvsim p550(): SiFive P550-like, 3-wide out-of-order",
    "basic": "rvsim basic(): 4-wide out-of-order, small caches (the defaults)",
}


def config(model: str) -> Any:
    from rvsim import Backend, Config, presets

    if model == "inorder":
        return Config(backend=Backend.InOrder())
    if model == "p550":
        return presets.p550()
    if model == "basic":
        return presets.basic()
    raise ValueError(f"unknown rvsim model {model!r} (use one of {', '.join(MODELS)})")


def describe(model: str) -> dict[str, Any]:
    """The key parameters of a model, for its records: backend, width, the
    trap latency the model charges, and the L1 caches."""
    settings = config(model).to_dict()
    pipeline, cache = settings["pipeline"], settings["cache"]

    def l1(name: str) -> dict[str, Any]:
        level = cache[name]
        if not level["enabled"]:
            return {"size_bytes": 0}
        return {
            "size_bytes": level["size_bytes"],
            "ways": level["ways"],
            "latency": level["latency"],
        }

    return {
        "model": model,
        "backend": pipeline["backend"],
        "width": pipeline["width"],
        "trap_latency": pipeline.get("trap_latency"),
        "rob_size": pipeline.get("rob_size") if pipeline["backend"] != "InOrder" else None,
        "branch_predictor": pipeline.get("branch_predictor"),
        "l1i": l1("l1_i"),
        "l1d": l1("l1_d"),
    }


def main(argv: list[str]) -> int:
    """Run ELF on MODEL; the lab's console goes to stdout; the exit status is
    the lab kernel's. The last stderr line is the run's totals as JSON."""
    import rvsim

    model, elf = argv
    result = rvsim.Environment(binary=elf, config=config(model)).run(quiet=False)
    sys.stdout.flush()
    totals = {"cycles": result.stats.get("cycles"), "exit_code": result.exit_code}
    print(json.dumps(totals), file=sys.stderr)
    return 0 if result.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
