"""The catalogue of what the trap lab measures: handler variants and calls.

What the trap lab measures: the handler variants and the calls (they
mirror riscv/include/lab.h and riscv/user/user.c), and their words."""

from __future__ import annotations

VARIANTS = ("full", "minimal", "empty", "smode", "fpu")
CALLS = ("getpid", "write", "clock_gettime", "enosys")

# What a0 holds on return from each call when a handler runs it, and when
# the empty handler runs nothing (a0 unchanged).
EXPECTED_RETURN = {"getpid": 1, "write": 1, "clock_gettime": 0, "enosys": -38}
ARG0 = {"getpid": 0, "write": 1, "clock_gettime": 1, "enosys": 0}

CALL_WORDS = {
    "getpid": "getpid() (a7 = 172)",
    "write": "write(1, buf, 1): one byte to the UART console (a7 = 64)",
    "clock_gettime": "clock_gettime(CLOCK_MONOTONIC, &ts) from the time CSR (a7 = 113)",
    "enosys": "an unassigned number (a7 = 500): table lookup, sys_ni_syscall, -ENOSYS",
}
VARIANT_WORDS = {
    "full": "M-mode handler saving and restoring all 31 GPRs",
    "minimal": "M-mode handler saving only the caller-saved GPRs",
    "empty": "M-mode handler that only steps mepc past the ecall (no save, no call)",
    "smode": "the full handler in S-mode (ecall delegated by medeleg, sret)",
    "fpu": "the full handler plus the 32 FP registers and fcsr",
}
# The trap-entry symbols in riscv/kernel/trap.S, per variant.
ENTRY_SYMBOLS = {
    "full": "trap_entry_full",
    "minimal": "trap_entry_minimal",
    "empty": "trap_vector_empty",
    "smode": "trap_entry_smode",
    "fpu": "trap_entry_fpu",
}
