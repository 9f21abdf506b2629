"""The RISC-V trap lab: what one ``ecall`` round trip costs, and where the time goes.

The RISC-V trap lab: the cost of one ``ecall`` round trip, U-mode -> trap
handler -> back, under five handlers that differ in one thing each (see
riscv/kernel/trap.S), measured on simulators and split into entry/exit,
save/restore, dispatch and the call's own logic.

One module per job:

* ``catalog``    what the lab measures: handler variants, calls, their words
* ``tools``      finding the simulators, the cross toolchain, the lab images
* ``simulators`` the simulators and core models, and running one
* ``parse``      the lab kernel's ``ctxlab ...`` lines and the disassembly
* ``decompose``  from counts to per-round-trip figures; the split into parts
* ``records``    ctxbench records (shared summary statistics and run_end)
* ``lab``        ``run_lab``: build, run every simulator, return the records
* ``answer``     from a run's records: the figures, the parts, the answer
* ``report``     the text report of a run's records, answer first

``ctxbench riscv`` runs the lab and stores the run; ``show``, ``explain``
and ``report`` on a stored lab run read it through ``answer``.

The names below are imported when first used (PEP 562), so that a module
that needs only the catalogue (``ctxbench.riscv.catalog``, which runs this
file first) does not load the lab, its simulators and its statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxbench.riscv.answer import is_lab_run, lab_answer, lab_dict, lab_parts
    from ctxbench.riscv.lab import LabRun, LabUnavailable, run_lab
    from ctxbench.riscv.report import format_report
    from ctxbench.riscv.simulators import SIMULATORS
    from ctxbench.riscv.tools import Missing

__all__ = [
    "SIMULATORS",
    "LabRun",
    "LabUnavailable",
    "Missing",
    "format_report",
    "is_lab_run",
    "lab_answer",
    "lab_dict",
    "lab_parts",
    "run_lab",
]


def __getattr__(name: str) -> Any:
    """A public name of the lab, from its module, on first use."""
    if name in ("is_lab_run", "lab_answer", "lab_dict", "lab_parts"):
        from ctxbench.riscv import answer as module
    elif name in ("LabRun", "LabUnavailable", "run_lab"):
        from ctxbench.riscv import lab as module
    elif name == "format_report":
        from ctxbench.riscv import report as module
    elif name == "SIMULATORS":
        from ctxbench.riscv import simulators as module
    elif name == "Missing":
        from ctxbench.riscv import tools as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value  # found in the module from now on
    return value
