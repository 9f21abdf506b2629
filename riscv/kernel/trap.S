/*
 * trap.S: the five trap entries whose differences the lab measures.
 *
 * A user program times loops of `ecall`s (user/loops.S). Each entry below
 * handles the same ecall in a different way, and the difference between two
 * variants' cost per round trip is the cost of what one does and the other
 * does not:
 *
 *   trap_entry_full     save all 31 GPRs into the frame (register n in slot
 *                       n, frame.h), read mcause, call trap_handle (which
 *                       dispatches on a7 and runs the call), mepc += 4,
 *                       restore, mret. The proxy-kernel way (riscv-pk).
 *   trap_entry_minimal  the same, saving only the registers a C call may
 *                       clobber (ra, t0-t6, a0-a7) plus slot 2 (the user's
 *                       sp); gp, tp and s0-s11 survive the C code by the
 *                       calling convention. The code between the saves is
 *                       identical to trap_entry_full, so full - minimal is
 *                       exactly the 28 loads and stores this one skips.
 *   trap_vector_empty   no save, no dispatch: mepc += 4 and mret, the least a
 *                       handler can do and still return past the ecall. Its
 *                       cost is the hardware's trap entry and exit.
 *   trap_entry_smode    trap_entry_full, instruction for instruction, in
 *                       S-mode: the ecall is delegated through medeleg and
 *                       the handler returns with sret.
 *   trap_entry_fpu      trap_entry_full plus the 32 FP registers and fcsr:
 *                       what a kernel without lazy FPU saving pays per trap.
 *
 * The entries are straight-line code apart from the call, so the lab's tests
 * count their loads and stores in the disassembly and compare those counts
 * with the measured differences. Compressed instructions are off in this
 * file so the vector table's slots sit where the privileged spec puts them.
 *
 * Entry/exit protocol (all but the empty one): swap sp with xscratch, which
 * holds the top of this mode's trap stack, so the handler never runs on the
 * user's stack; on the way out swap back, which also re-arms xscratch.
 */
#include "frame.h"
#include "lab.h"

  .option norvc

/* ---- register lists -------------------------------------------------- */

/* The registers a C function may clobber (RISC-V psABI caller-saved). */
.macro SAVE_CALLER_SAVED
  STORE x1,  FRAME_X(1)(sp)       /* ra */
  STORE x5,  FRAME_X(5)(sp)       /* t0 */
  STORE x6,  FRAME_X(6)(sp)       /* t1 */
  STORE x7,  FRAME_X(7)(sp)       /* t2 */
  STORE x10, FRAME_X(10)(sp)      /* a0 */
  STORE x11, FRAME_X(11)(sp)      /* a1 */
  STORE x12, FRAME_X(12)(sp)      /* a2 */
  STORE x13, FRAME_X(13)(sp)      /* a3 */
  STORE x14, FRAME_X(14)(sp)      /* a4 */
  STORE x15, FRAME_X(15)(sp)      /* a5 */
  STORE x16, FRAME_X(16)(sp)      /* a6 */
  STORE x17, FRAME_X(17)(sp)      /* a7: the system call number */
  STORE x28, FRAME_X(28)(sp)      /* t3 */
  STORE x29, FRAME_X(29)(sp)      /* t4 */
  STORE x30, FRAME_X(30)(sp)      /* t5 */
  STORE x31, FRAME_X(31)(sp)      /* t6 */
.endm

.macro RESTORE_CALLER_SAVED
  LOAD  x1,  FRAME_X(1)(sp)       /* ra */
  LOAD  x5,  FRAME_X(5)(sp)       /* t0 */
  LOAD  x6,  FRAME_X(6)(sp)       /* t1 */
  LOAD  x7,  FRAME_X(7)(sp)       /* t2 */
  LOAD  x10, FRAME_X(10)(sp)      /* a0: the call's return value */
  LOAD  x11, FRAME_X(11)(sp)      /* a1 */
  LOAD  x12, FRAME_X(12)(sp)      /* a2 */
  LOAD  x13, FRAME_X(13)(sp)      /* a3 */
  LOAD  x14, FRAME_X(14)(sp)      /* a4 */
  LOAD  x15, FRAME_X(15)(sp)      /* a5 */
  LOAD  x16, FRAME_X(16)(sp)      /* a6 */
  LOAD  x17, FRAME_X(17)(sp)      /* a7 */
  LOAD  x28, FRAME_X(28)(sp)      /* t3 */
  LOAD  x29, FRAME_X(29)(sp)      /* t4 */
  LOAD  x30, FRAME_X(30)(sp)      /* t5 */
  LOAD  x31, FRAME_X(31)(sp)      /* t6 */
.endm

/* The rest: what the C code preserves anyway, saved so that the frame is a
 * complete picture of the user's registers (as a kernel needs for signals,
 * ptrace or a context switch). */
.macro SAVE_CALLEE_SAVED
  STORE x3,  FRAME_X(3)(sp)       /* gp */
  STORE x4,  FRAME_X(4)(sp)       /* tp */
  STORE x8,  FRAME_X(8)(sp)       /* s0 */
  STORE x9,  FRAME_X(9)(sp)       /* s1 */
  STORE x18, FRAME_X(18)(sp)      /* s2 */
  STORE x19, FRAME_X(19)(sp)      /* s3 */
  STORE x20, FRAME_X(20)(sp)      /* s4 */
  STORE x21, FRAME_X(21)(sp)      /* s5 */
  STORE x22, FRAME_X(22)(sp)      /* s6 */
  STORE x23, FRAME_X(23)(sp)      /* s7 */
  STORE x24, FRAME_X(24)(sp)      /* s8 */
  STORE x25, FRAME_X(25)(sp)      /* s9 */
  STORE x26, FRAME_X(26)(sp)      /* s10 */
  STORE x27, FRAME_X(27)(sp)      /* s11 */
.endm

.macro RESTORE_CALLEE_SAVED
  LOAD  x3,  FRAME_X(3)(sp)       /* gp */
  LOAD  x4,  FRAME_X(4)(sp)       /* tp */
  LOAD  x8,  FRAME_X(8)(sp)       /* s0 */
  LOAD  x9,  FRAME_X(9)(sp)       /* s1 */
  LOAD  x18, FRAME_X(18)(sp)      /* s2 */
  LOAD  x19, FRAME_X(19)(sp)      /* s3 */
  LOAD  x20, FRAME_X(20)(sp)      /* s4 */
  LOAD  x21, FRAME_X(21)(sp)      /* s5 */
  LOAD  x22, FRAME_X(22)(sp)      /* s6 */
  LOAD  x23, FRAME_X(23)(sp)      /* s7 */
  LOAD  x24, FRAME_X(24)(sp)      /* s8 */
  LOAD  x25, FRAME_X(25)(sp)      /* s9 */
  LOAD  x26, FRAME_X(26)(sp)      /* s10 */
  LOAD  x27, FRAME_X(27)(sp)      /* s11 */
.endm

/* Slot 2: the user's sp, parked in xscratch by the entry swap. Uses t0,
 * so it comes after t0 is saved. (sp itself is restored by the exit swap.) */
.macro SAVE_USER_SP scratch
  csrr  t0, \scratch              /* the user's sp ... */
  STORE t0, FRAME_X(2)(sp)        /* ... into slot 2 */
.endm

.macro SAVE_FPU
  fsd   f0,  FRAME_F(0)(sp)       /* ft0 */
  fsd   f1,  FRAME_F(1)(sp)       /* ft1 */
  fsd   f2,  FRAME_F(2)(sp)       /* ft2 */
  fsd   f3,  FRAME_F(3)(sp)       /* ft3 */
  fsd   f4,  FRAME_F(4)(sp)       /* ft4 */
  fsd   f5,  FRAME_F(5)(sp)       /* ft5 */
  fsd   f6,  FRAME_F(6)(sp)       /* ft6 */
  fsd   f7,  FRAME_F(7)(sp)       /* ft7 */
  fsd   f8,  FRAME_F(8)(sp)       /* fs0 */
  fsd   f9,  FRAME_F(9)(sp)       /* fs1 */
  fsd   f10, FRAME_F(10)(sp)      /* fa0 */
  fsd   f11, FRAME_F(11)(sp)      /* fa1 */
  fsd   f12, FRAME_F(12)(sp)      /* fa2 */
  fsd   f13, FRAME_F(13)(sp)      /* fa3 */
  fsd   f14, FRAME_F(14)(sp)      /* fa4 */
  fsd   f15, FRAME_F(15)(sp)      /* fa5 */
  fsd   f16, FRAME_F(16)(sp)      /* fa6 */
  fsd   f17, FRAME_F(17)(sp)      /* fa7 */
  fsd   f18, FRAME_F(18)(sp)      /* fs2 */
  fsd   f19, FRAME_F(19)(sp)      /* fs3 */
  fsd   f20, FRAME_F(20)(sp)      /* fs4 */
  fsd   f21, FRAME_F(21)(sp)      /* fs5 */
  fsd   f22, FRAME_F(22)(sp)      /* fs6 */
  fsd   f23, FRAME_F(23)(sp)      /* fs7 */
  fsd   f24, FRAME_F(24)(sp)      /* fs8 */
  fsd   f25, FRAME_F(25)(sp)      /* fs9 */
  fsd   f26, FRAME_F(26)(sp)      /* fs10 */
  fsd   f27, FRAME_F(27)(sp)      /* fs11 */
  fsd   f28, FRAME_F(28)(sp)      /* ft8 */
  fsd   f29, FRAME_F(29)(sp)      /* ft9 */
  fsd   f30, FRAME_F(30)(sp)      /* ft10 */
  fsd   f31, FRAME_F(31)(sp)      /* ft11 */
  frcsr t0                        /* fcsr (t0 is already saved) ... */
  STORE t0, FRAME_FCSR(sp)        /* ... into its slot */
.endm

.macro RESTORE_FPU
  LOAD  t0, FRAME_FCSR(sp)        /* fcsr (t0 is restored later) ... */
  fscsr t0                        /* ... back into the FPU */
  fld   f0,  FRAME_F(0)(sp)       /* ft0 */
  fld   f1,  FRAME_F(1)(sp)       /* ft1 */
  fld   f2,  FRAME_F(2)(sp)       /* ft2 */
  fld   f3,  FRAME_F(3)(sp)       /* ft3 */
  fld   f4,  FRAME_F(4)(sp)       /* ft4 */
  fld   f5,  FRAME_F(5)(sp)       /* ft5 */
  fld   f6,  FRAME_F(6)(sp)       /* ft6 */
  fld   f7,  FRAME_F(7)(sp)       /* ft7 */
  fld   f8,  FRAME_F(8)(sp)       /* fs0 */
  fld   f9,  FRAME_F(9)(sp)       /* fs1 */
  fld   f10, FRAME_F(10)(sp)      /* fa0 */
  fld   f11, FRAME_F(11)(sp)      /* fa1 */
  fld   f12, FRAME_F(12)(sp)      /* fa2 */
  fld   f13, FRAME_F(13)(sp)      /* fa3 */
  fld   f14, FRAME_F(14)(sp)      /* fa4 */
  fld   f15, FRAME_F(15)(sp)      /* fa5 */
  fld   f16, FRAME_F(16)(sp)      /* fa6 */
  fld   f17, FRAME_F(17)(sp)      /* fa7 */
  fld   f18, FRAME_F(18)(sp)      /* fs2 */
  fld   f19, FRAME_F(19)(sp)      /* fs3 */
  fld   f20, FRAME_F(20)(sp)      /* fs4 */
  fld   f21, FRAME_F(21)(sp)      /* fs5 */
  fld   f22, FRAME_F(22)(sp)      /* fs6 */
  fld   f23, FRAME_F(23)(sp)      /* fs7 */
  fld   f24, FRAME_F(24)(sp)      /* fs8 */
  fld   f25, FRAME_F(25)(sp)      /* fs9 */
  fld   f26, FRAME_F(26)(sp)      /* fs10 */
  fld   f27, FRAME_F(27)(sp)      /* fs11 */
  fld   f28, FRAME_F(28)(sp)      /* ft8 */
  fld   f29, FRAME_F(29)(sp)      /* ft9 */
  fld   f30, FRAME_F(30)(sp)      /* ft10 */
  fld   f31, FRAME_F(31)(sp)      /* ft11 */
.endm

/* The common path around the C handler: everything but the save/restore
 * lists. \x is the mode's CSR prefix (m or s), \mode its TRAP_MODE_*. */
.macro ENTER x
  csrrw sp, \x\()scratch, sp      /* sp = trap stack top; xscratch = user sp */
  addi  sp, sp, -FRAME_BYTES      /* one frame on the trap stack */
.endm

.macro CALL_HANDLER x, mode
  mv    a0, sp                    /* argument 1: the frame */
  csrr  a1, \x\()cause            /* argument 2: why we trapped */
  li    a2, \mode                 /* argument 3: the mode handling it */
  call  trap_handle               /* dispatch on a7 and run the call */
  csrr  t0, \x\()epc              /* return past the ecall: */
  addi  t0, t0, 4                 /*   ecall is 4 bytes (no compressed form) */
  csrw  \x\()epc, t0
.endm

.macro LEAVE x
  addi  sp, sp, FRAME_BYTES       /* pop the frame */
  csrrw sp, \x\()scratch, sp      /* sp = user sp; xscratch = trap stack top */
.endm

/* ---- the entries ------------------------------------------------------ */

  .text
  .balign 4
  .globl trap_entry_full
  .type trap_entry_full, @function
trap_entry_full:
  ENTER m
  SAVE_CALLER_SAVED
  SAVE_CALLEE_SAVED
  SAVE_USER_SP mscratch
  CALL_HANDLER m, TRAP_MODE_M
  RESTORE_CALLEE_SAVED
  RESTORE_CALLER_SAVED
  LEAVE m
  mret
  .size trap_entry_full, . - trap_entry_full

  .balign 4
  .globl trap_entry_minimal
  .type trap_entry_minimal, @function
trap_entry_minimal:
  ENTER m
  SAVE_CALLER_SAVED
  SAVE_USER_SP mscratch
  CALL_HANDLER m, TRAP_MODE_M
  RESTORE_CALLER_SAVED
  LEAVE m
  mret
  .size trap_entry_minimal, . - trap_entry_minimal

  .balign 4
  .globl trap_entry_smode
  .type trap_entry_smode, @function
trap_entry_smode:
  ENTER s
  SAVE_CALLER_SAVED
  SAVE_CALLEE_SAVED
  SAVE_USER_SP sscratch
  CALL_HANDLER s, TRAP_MODE_S
  RESTORE_CALLEE_SAVED
  RESTORE_CALLER_SAVED
  LEAVE s
  sret
  .size trap_entry_smode, . - trap_entry_smode

  .balign 4
  .globl trap_entry_fpu
  .type trap_entry_fpu, @function
trap_entry_fpu:
  ENTER m
  SAVE_CALLER_SAVED
  SAVE_CALLEE_SAVED
  SAVE_FPU
  SAVE_USER_SP mscratch
  CALL_HANDLER m, TRAP_MODE_M
  RESTORE_FPU
  RESTORE_CALLEE_SAVED
  RESTORE_CALLER_SAVED
  LEAVE m
  mret
  .size trap_entry_fpu, . - trap_entry_fpu

/*
 * The empty handler is installed in vectored mode (mtvec = base | 1), which
 * sends synchronous exceptions to the base and interrupt n to base + 4n.
 * That gives the user program a way back to the kernel that does not pass
 * through the handler under test: when it is done it makes the machine timer
 * interrupt pending (mtimecmp = 0), which lands on slot 7. The handler
 * itself is 6 instructions (24 bytes), so it ends before slot 7 at byte 28.
 * mscratch is free in this variant, so it parks t0.
 */
  .balign 256
  .globl trap_vector_empty
  .type trap_vector_empty, @function
trap_vector_empty:
  csrw  mscratch, t0              /* park the user's t0 */
  csrr  t0, mepc                  /* return past the ecall */
  addi  t0, t0, 4
  csrw  mepc, t0
  csrr  t0, mscratch              /* the user's t0 back */
  mret
  .org  trap_vector_empty + 4 * IRQ_M_TIMER
  j     lab_empty_done            /* slot 7: machine timer, "user is done" */
  .size trap_vector_empty, . - trap_vector_empty

  .type lab_empty_done, @function
lab_empty_done:
  li    t0, CLINT_MTIMECMP
  li    t1, -1
  STORE t1, 0(t0)                 /* disarm the timer */
  j     resume_kernel
  .size lab_empty_done, . - lab_empty_done
