/*
 * start.S: where both simulators start the lab kernel, in M-mode at
 * 0x80000000 (Spike's boot ROM jumps here; QEMU's `virt` with -bios none
 * loads the ELF here and starts at its entry).
 *
 * It points mtvec at the full trap handler so that any unexpected trap, even
 * during boot, ends in trap_handle's report and a failing exit status rather
 * than a hang; gives the kernel a stack; zeroes .bss; and calls kernel_main,
 * which never returns (every run ends through the platform's exit device).
 * Only hart 0 runs: both simulators start one hart unless told otherwise.
 */
#include "frame.h"

  .section .text.start, "ax", @progbits
  .globl _start
_start:
  csrw  mie, zero                 /* no interrupt sources enabled */
  la    t0, trap_entry_full
  csrw  mtvec, t0                 /* direct mode: every trap to the full handler */
  la    t0, trap_stack_top
  csrw  mscratch, t0              /* the handler's stack, swapped in on entry */
  la    sp, kernel_stack_top      /* the kernel's own stack */
  la    t0, __bss_start
  la    t1, __bss_end
1:
  bgeu  t0, t1, 2f                /* zero .bss, one word at a time */
  STORE zero, 0(t0)
  addi  t0, t0, REGBYTES
  j     1b
2:
  call  kernel_main
3:
  j     3b                        /* not reached */

/* The stacks: the kernel's, the M-mode and S-mode trap stacks (what mscratch
 * and sscratch point at) and the user program's. Each grows down from its
 * _top label. */
  .section .bss.stacks, "aw", @nobits
  .balign 16
  .space 8192
  .globl kernel_stack_top
kernel_stack_top:
  .space 8192
  .globl trap_stack_top
trap_stack_top:
  .space 8192
  .globl strap_stack_top
strap_stack_top:
  .space 8192
  .globl user_stack_top
user_stack_top:
