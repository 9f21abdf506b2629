"""The RISC-V trap lab: the cost of one ``ecall`` round trip, U-mode -> trap
handler -> back, under five handlers that differ in one thing each (see
riscv/kernel/trap.S), measured on simulators and split into entry/exit,
save/restore, dispatch and the call's own logic.

One module per job:

* ``catalog``    what the lab measures: handler variants, calls, their words
* ``tools``      finding the simulators, the cross toolchain, the lab images
* ``simulators`` the simulators and core models, and running one
* ``parse``      the lab kernel's ``ctxlab ...`` lines and the disassembly
* ``decompose``  from counts to per-round-trip figures and the parts, in words
* ``records``    ctxbench records (shared summary statistics and run_end)
* ``lab``        ``run_lab``: build, run every simulator, return the records
* ``report``     the text table and the answer in words

The one entry point is ``ctxbench riscv`` (cli.py), which stores the run.
"""

from ctxbench.riscv.lab import LabRun, LabUnavailable, run_lab
from ctxbench.riscv.report import format_report
from ctxbench.riscv.simulators import SIMULATORS
from ctxbench.riscv.tools import Missing

__all__ = ["SIMULATORS", "LabRun", "LabUnavailable", "Missing", "format_report", "run_lab"]
