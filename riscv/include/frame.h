/*
 * frame.h: the trap frame, shared by the assembly entry code (trap.S) and the
 * C handler (trap.c).
 *
 * A trap saves the interrupted program's registers into a frame on the trap
 * stack. Register xN lives in slot N (slot 0, for the hard-wired zero, stays
 * unused), so the C code reads a7 as frame->x[17] and the assembly writes it
 * at FRAME_X(17)(sp): one numbering, no translation table to get wrong (the
 * layout riscv-pk's trapframe_t uses). The floating-point area after the
 * integer slots is written only by the variant that saves FPU state.
 *
 *   offset (bytes)        contents
 *   0                     slot 0, unused (x0 is always zero)
 *   FRAME_X(n), n=1..31   xn; slot 2 holds the user's sp
 *   FRAME_F(n), n=0..31   fn (fpu variant only)
 *   FRAME_FCSR            fcsr (fpu variant only)
 *   FRAME_BYTES           total, a multiple of 16 (the stack alignment)
 */
#ifndef CTXLAB_FRAME_H
#define CTXLAB_FRAME_H

#if __riscv_xlen == 64
#define REGBYTES 8
#define LOAD ld
#define STORE sd
#elif __riscv_xlen == 32
#define REGBYTES 4
#define LOAD lw
#define STORE sw
#else
#error "frame.h: unknown __riscv_xlen"
#endif

/* FP registers are 64-bit (D extension) whatever XLEN is. */
#define FREGBYTES 8

#define FRAME_X(n) ((n) * REGBYTES)
#define FRAME_F(n) (32 * REGBYTES + (n) * FREGBYTES)
#define FRAME_FCSR (32 * REGBYTES + 32 * FREGBYTES)
#define FRAME_BYTES ((FRAME_FCSR + REGBYTES + 15) / 16 * 16)

/* Slot numbers of the registers the C code reads by name. */
#define REG_RA 1
#define REG_SP 2
#define REG_A0 10
#define REG_A1 11
#define REG_A2 12
#define REG_A3 13
#define REG_A4 14
#define REG_A5 15
#define REG_A7 17

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

struct trap_frame {
  uintptr_t x[32];  /* x[n] = register xn at the trap; x[0] unused */
  uint64_t f[32];   /* f[n] = register fn (fpu variant only) */
  uintptr_t fcsr;   /* fpu variant only */
};

/* The assembly uses the macros above; these pin the C layout to them. */
_Static_assert(offsetof(struct trap_frame, x[17]) == FRAME_X(17), "a7 slot");
_Static_assert(offsetof(struct trap_frame, x[31]) == FRAME_X(31), "t6 slot");
_Static_assert(offsetof(struct trap_frame, f[0]) == FRAME_F(0), "f0 slot");
_Static_assert(offsetof(struct trap_frame, f[31]) == FRAME_F(31), "f31 slot");
_Static_assert(offsetof(struct trap_frame, fcsr) == FRAME_FCSR, "fcsr slot");
_Static_assert(sizeof(struct trap_frame) <= FRAME_BYTES, "frame fits");
_Static_assert(FRAME_BYTES % 16 == 0, "stack stays 16-byte aligned");
#endif

#endif
