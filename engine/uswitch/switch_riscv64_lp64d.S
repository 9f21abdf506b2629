/* switch_riscv64_lp64d.S: ctxbench's user-level context switch for riscv64,
 * LP64D psABI (RV64 with the D extension), ELF.
 *
 * C prototypes (uswitch.h):
 *   void* ctxbench_uswitch(void** save, void* resume, void* value);
 *   void* ctxbench_uswitch_full(void** save, void* resume, void* value);
 * and ctxbench_uswitch_trampoline, where a new context starts (never called).
 *
 * ABI reference: RISC-V ELF psABI specification, "Integer Register
 * Convention": sp and s0-s11 are preserved across calls (s0 doubles as the
 * frame pointer); ra, t0-t6, a0-a7 are not. "Floating-point Register
 * Convention" (LP64D, FLEN = 64): fs0-fs11 are preserved across calls;
 * ft0-ft11, fa0-fa7 are not; fcsr has thread storage duration (it is the
 * thread's C floating-point environment), so a call may not rely on a
 * switch to swap it. "Procedure Calling Convention": sp is 16-byte aligned.
 *
 * Frame layout (offsets in frame_riscv64.h, pinned against a C struct with
 * static_assert; register n of a group sits in slot n):
 *
 *   abi variant, at the saved sp            full variant, at the saved sp
 *   +0    ra (where to resume)              +0    fcsr   +8 unused
 *   +8    s0  ... +96  s11                  +16   f0 ... f31 (8 bytes each)
 *   +104  fs0 ... +192 fs11                 +272  the general-register frame as on
 *   +200  unused                                  the left (fs slots unused)
 *
 * Why jr t1 and not ret: ret (jalr x0, 0(ra)) is a hint to pop the
 * return-address stack, whose top is this side's own call site, so every
 * switch would mispredict; a jalr through t1 (x6) carries no such hint. */
#include "frame.h"

#if !defined(__riscv) || __riscv_xlen != 64 || !defined(__riscv_float_abi_double) || !defined(__ELF__)
#error "switch_riscv64_lp64d.S is for riscv64 LP64D ELF targets only"
#endif

#define REG(n) ((n) * USWITCH_REGBYTES)

        .text

/* void* ctxbench_uswitch(void** save [a0], void* resume [a1], void* value [a2]) */
        .globl  ctxbench_uswitch
        .type   ctxbench_uswitch, @function
        .p2align 2
ctxbench_uswitch:
        .cfi_startproc
        addi    sp, sp, -USWITCH_FRAME_BYTES            /* room for the frame */
        .cfi_adjust_cfa_offset USWITCH_FRAME_BYTES
        sd      ra, USWITCH_FRAME_RA(sp)                /* save the return address */
        sd      s0, USWITCH_FRAME_S0 + REG(0)(sp)       /* save s0 (fp) */
        sd      s1, USWITCH_FRAME_S0 + REG(1)(sp)       /* save s1 */
        sd      s2, USWITCH_FRAME_S0 + REG(2)(sp)       /* save s2 */
        sd      s3, USWITCH_FRAME_S0 + REG(3)(sp)       /* save s3 */
        sd      s4, USWITCH_FRAME_S0 + REG(4)(sp)       /* save s4 */
        sd      s5, USWITCH_FRAME_S0 + REG(5)(sp)       /* save s5 */
        sd      s6, USWITCH_FRAME_S0 + REG(6)(sp)       /* save s6 */
        sd      s7, USWITCH_FRAME_S0 + REG(7)(sp)       /* save s7 */
        sd      s8, USWITCH_FRAME_S0 + REG(8)(sp)       /* save s8 */
        sd      s9, USWITCH_FRAME_S0 + REG(9)(sp)       /* save s9 */
        sd      s10, USWITCH_FRAME_S0 + REG(10)(sp)     /* save s10 */
        sd      s11, USWITCH_FRAME_S0 + REG(11)(sp)     /* save s11 */
        fsd     fs0, USWITCH_FRAME_FS0 + REG(0)(sp)     /* save fs0 */
        fsd     fs1, USWITCH_FRAME_FS0 + REG(1)(sp)     /* save fs1 */
        fsd     fs2, USWITCH_FRAME_FS0 + REG(2)(sp)     /* save fs2 */
        fsd     fs3, USWITCH_FRAME_FS0 + REG(3)(sp)     /* save fs3 */
        fsd     fs4, USWITCH_FRAME_FS0 + REG(4)(sp)     /* save fs4 */
        fsd     fs5, USWITCH_FRAME_FS0 + REG(5)(sp)     /* save fs5 */
        fsd     fs6, USWITCH_FRAME_FS0 + REG(6)(sp)     /* save fs6 */
        fsd     fs7, USWITCH_FRAME_FS0 + REG(7)(sp)     /* save fs7 */
        fsd     fs8, USWITCH_FRAME_FS0 + REG(8)(sp)     /* save fs8 */
        fsd     fs9, USWITCH_FRAME_FS0 + REG(9)(sp)     /* save fs9 */
        fsd     fs10, USWITCH_FRAME_FS0 + REG(10)(sp)   /* save fs10 */
        fsd     fs11, USWITCH_FRAME_FS0 + REG(11)(sp)   /* save fs11 */

        sd      sp, 0(a0)                               /* *save = this context's stack pointer */
        mv      sp, a1                                  /* switch stacks: now on the resumed context's */

        fld     fs0, USWITCH_FRAME_FS0 + REG(0)(sp)     /* restore fs0 */
        fld     fs1, USWITCH_FRAME_FS0 + REG(1)(sp)     /* restore fs1 */
        fld     fs2, USWITCH_FRAME_FS0 + REG(2)(sp)     /* restore fs2 */
        fld     fs3, USWITCH_FRAME_FS0 + REG(3)(sp)     /* restore fs3 */
        fld     fs4, USWITCH_FRAME_FS0 + REG(4)(sp)     /* restore fs4 */
        fld     fs5, USWITCH_FRAME_FS0 + REG(5)(sp)     /* restore fs5 */
        fld     fs6, USWITCH_FRAME_FS0 + REG(6)(sp)     /* restore fs6 */
        fld     fs7, USWITCH_FRAME_FS0 + REG(7)(sp)     /* restore fs7 */
        fld     fs8, USWITCH_FRAME_FS0 + REG(8)(sp)     /* restore fs8 */
        fld     fs9, USWITCH_FRAME_FS0 + REG(9)(sp)     /* restore fs9 */
        fld     fs10, USWITCH_FRAME_FS0 + REG(10)(sp)   /* restore fs10 */
        fld     fs11, USWITCH_FRAME_FS0 + REG(11)(sp)   /* restore fs11 */
        ld      s0, USWITCH_FRAME_S0 + REG(0)(sp)       /* restore s0 (fp) */
        ld      s1, USWITCH_FRAME_S0 + REG(1)(sp)       /* restore s1 */
        ld      s2, USWITCH_FRAME_S0 + REG(2)(sp)       /* restore s2 */
        ld      s3, USWITCH_FRAME_S0 + REG(3)(sp)       /* restore s3 */
        ld      s4, USWITCH_FRAME_S0 + REG(4)(sp)       /* restore s4 */
        ld      s5, USWITCH_FRAME_S0 + REG(5)(sp)       /* restore s5 */
        ld      s6, USWITCH_FRAME_S0 + REG(6)(sp)       /* restore s6 */
        ld      s7, USWITCH_FRAME_S0 + REG(7)(sp)       /* restore s7 */
        ld      s8, USWITCH_FRAME_S0 + REG(8)(sp)       /* restore s8 */
        ld      s9, USWITCH_FRAME_S0 + REG(9)(sp)       /* restore s9 */
        ld      s10, USWITCH_FRAME_S0 + REG(10)(sp)     /* restore s10 */
        ld      s11, USWITCH_FRAME_S0 + REG(11)(sp)     /* restore s11 */
        ld      t1, USWITCH_FRAME_RA(sp)                /* where the resumed context goes on */
        addi    sp, sp, USWITCH_FRAME_BYTES             /* pop the frame */
        mv      a0, a2                                  /* its ctxbench_uswitch returns `value` */
        jr      t1                                      /* resume it (see "Why jr t1" above) */
        .cfi_endproc
        .size   ctxbench_uswitch, .-ctxbench_uswitch

/* void* ctxbench_uswitch_full(void** save [a0], void* resume [a1], void* value [a2])
 * The general registers as above, then all of f0-f31 and fcsr. */
        .globl  ctxbench_uswitch_full
        .type   ctxbench_uswitch_full, @function
        .p2align 2
ctxbench_uswitch_full:
        .cfi_startproc
        addi    sp, sp, -USWITCH_FRAME_BYTES            /* room for the general-register frame */
        .cfi_adjust_cfa_offset USWITCH_FRAME_BYTES
        sd      ra, USWITCH_FRAME_RA(sp)                /* save the return address */
        sd      s0, USWITCH_FRAME_S0 + REG(0)(sp)       /* save s0 (fp) */
        sd      s1, USWITCH_FRAME_S0 + REG(1)(sp)       /* save s1 */
        sd      s2, USWITCH_FRAME_S0 + REG(2)(sp)       /* save s2 */
        sd      s3, USWITCH_FRAME_S0 + REG(3)(sp)       /* save s3 */
        sd      s4, USWITCH_FRAME_S0 + REG(4)(sp)       /* save s4 */
        sd      s5, USWITCH_FRAME_S0 + REG(5)(sp)       /* save s5 */
        sd      s6, USWITCH_FRAME_S0 + REG(6)(sp)       /* save s6 */
        sd      s7, USWITCH_FRAME_S0 + REG(7)(sp)       /* save s7 */
        sd      s8, USWITCH_FRAME_S0 + REG(8)(sp)       /* save s8 */
        sd      s9, USWITCH_FRAME_S0 + REG(9)(sp)       /* save s9 */
        sd      s10, USWITCH_FRAME_S0 + REG(10)(sp)     /* save s10 */
        sd      s11, USWITCH_FRAME_S0 + REG(11)(sp)     /* save s11 */
        addi    sp, sp, -USWITCH_FULL_BYTES             /* room for the FP frame */
        .cfi_adjust_cfa_offset USWITCH_FULL_BYTES
        frcsr   t0                                      /* fcsr: rounding mode and exception flags */
        sd      t0, USWITCH_FULL_FCSR(sp)               /* save fcsr */
        fsd     f0, USWITCH_FULL_F0 + REG(0)(sp)        /* save f0 */
        fsd     f1, USWITCH_FULL_F0 + REG(1)(sp)        /* save f1 */
        fsd     f2, USWITCH_FULL_F0 + REG(2)(sp)        /* save f2 */
        fsd     f3, USWITCH_FULL_F0 + REG(3)(sp)        /* save f3 */
        fsd     f4, USWITCH_FULL_F0 + REG(4)(sp)        /* save f4 */
        fsd     f5, USWITCH_FULL_F0 + REG(5)(sp)        /* save f5 */
        fsd     f6, USWITCH_FULL_F0 + REG(6)(sp)        /* save f6 */
        fsd     f7, USWITCH_FULL_F0 + REG(7)(sp)        /* save f7 */
        fsd     f8, USWITCH_FULL_F0 + REG(8)(sp)        /* save f8 */
        fsd     f9, USWITCH_FULL_F0 + REG(9)(sp)        /* save f9 */
        fsd     f10, USWITCH_FULL_F0 + REG(10)(sp)      /* save f10 */
        fsd     f11, USWITCH_FULL_F0 + REG(11)(sp)      /* save f11 */
        fsd     f12, USWITCH_FULL_F0 + REG(12)(sp)      /* save f12 */
        fsd     f13, USWITCH_FULL_F0 + REG(13)(sp)      /* save f13 */
        fsd     f14, USWITCH_FULL_F0 + REG(14)(sp)      /* save f14 */
        fsd     f15, USWITCH_FULL_F0 + REG(15)(sp)      /* save f15 */
        fsd     f16, USWITCH_FULL_F0 + REG(16)(sp)      /* save f16 */
        fsd     f17, USWITCH_FULL_F0 + REG(17)(sp)      /* save f17 */
        fsd     f18, USWITCH_FULL_F0 + REG(18)(sp)      /* save f18 */
        fsd     f19, USWITCH_FULL_F0 + REG(19)(sp)      /* save f19 */
        fsd     f20, USWITCH_FULL_F0 + REG(20)(sp)      /* save f20 */
        fsd     f21, USWITCH_FULL_F0 + REG(21)(sp)      /* save f21 */
        fsd     f22, USWITCH_FULL_F0 + REG(22)(sp)      /* save f22 */
        fsd     f23, USWITCH_FULL_F0 + REG(23)(sp)      /* save f23 */
        fsd     f24, USWITCH_FULL_F0 + REG(24)(sp)      /* save f24 */
        fsd     f25, USWITCH_FULL_F0 + REG(25)(sp)      /* save f25 */
        fsd     f26, USWITCH_FULL_F0 + REG(26)(sp)      /* save f26 */
        fsd     f27, USWITCH_FULL_F0 + REG(27)(sp)      /* save f27 */
        fsd     f28, USWITCH_FULL_F0 + REG(28)(sp)      /* save f28 */
        fsd     f29, USWITCH_FULL_F0 + REG(29)(sp)      /* save f29 */
        fsd     f30, USWITCH_FULL_F0 + REG(30)(sp)      /* save f30 */
        fsd     f31, USWITCH_FULL_F0 + REG(31)(sp)      /* save f31 */

        sd      sp, 0(a0)                               /* *save = this context's stack pointer */
        mv      sp, a1                                  /* switch stacks: now on the resumed context's */

        fld     f0, USWITCH_FULL_F0 + REG(0)(sp)        /* restore f0 */
        fld     f1, USWITCH_FULL_F0 + REG(1)(sp)        /* restore f1 */
        fld     f2, USWITCH_FULL_F0 + REG(2)(sp)        /* restore f2 */
        fld     f3, USWITCH_FULL_F0 + REG(3)(sp)        /* restore f3 */
        fld     f4, USWITCH_FULL_F0 + REG(4)(sp)        /* restore f4 */
        fld     f5, USWITCH_FULL_F0 + REG(5)(sp)        /* restore f5 */
        fld     f6, USWITCH_FULL_F0 + REG(6)(sp)        /* restore f6 */
        fld     f7, USWITCH_FULL_F0 + REG(7)(sp)        /* restore f7 */
        fld     f8, USWITCH_FULL_F0 + REG(8)(sp)        /* restore f8 */
        fld     f9, USWITCH_FULL_F0 + REG(9)(sp)        /* restore f9 */
        fld     f10, USWITCH_FULL_F0 + REG(10)(sp)      /* restore f10 */
        fld     f11, USWITCH_FULL_F0 + REG(11)(sp)      /* restore f11 */
        fld     f12, USWITCH_FULL_F0 + REG(12)(sp)      /* restore f12 */
        fld     f13, USWITCH_FULL_F0 + REG(13)(sp)      /* restore f13 */
        fld     f14, USWITCH_FULL_F0 + REG(14)(sp)      /* restore f14 */
        fld     f15, USWITCH_FULL_F0 + REG(15)(sp)      /* restore f15 */
        fld     f16, USWITCH_FULL_F0 + REG(16)(sp)      /* restore f16 */
        fld     f17, USWITCH_FULL_F0 + REG(17)(sp)      /* restore f17 */
        fld     f18, USWITCH_FULL_F0 + REG(18)(sp)      /* restore f18 */
        fld     f19, USWITCH_FULL_F0 + REG(19)(sp)      /* restore f19 */
        fld     f20, USWITCH_FULL_F0 + REG(20)(sp)      /* restore f20 */
        fld     f21, USWITCH_FULL_F0 + REG(21)(sp)      /* restore f21 */
        fld     f22, USWITCH_FULL_F0 + REG(22)(sp)      /* restore f22 */
        fld     f23, USWITCH_FULL_F0 + REG(23)(sp)      /* restore f23 */
        fld     f24, USWITCH_FULL_F0 + REG(24)(sp)      /* restore f24 */
        fld     f25, USWITCH_FULL_F0 + REG(25)(sp)      /* restore f25 */
        fld     f26, USWITCH_FULL_F0 + REG(26)(sp)      /* restore f26 */
        fld     f27, USWITCH_FULL_F0 + REG(27)(sp)      /* restore f27 */
        fld     f28, USWITCH_FULL_F0 + REG(28)(sp)      /* restore f28 */
        fld     f29, USWITCH_FULL_F0 + REG(29)(sp)      /* restore f29 */
        fld     f30, USWITCH_FULL_F0 + REG(30)(sp)      /* restore f30 */
        fld     f31, USWITCH_FULL_F0 + REG(31)(sp)      /* restore f31 */
        ld      t0, USWITCH_FULL_FCSR(sp)               /* fcsr */
        fscsr   t0                                      /* restore fcsr */
        addi    sp, sp, USWITCH_FULL_BYTES              /* pop the FP frame */
        ld      s0, USWITCH_FRAME_S0 + REG(0)(sp)       /* restore s0 (fp) */
        ld      s1, USWITCH_FRAME_S0 + REG(1)(sp)       /* restore s1 */
        ld      s2, USWITCH_FRAME_S0 + REG(2)(sp)       /* restore s2 */
        ld      s3, USWITCH_FRAME_S0 + REG(3)(sp)       /* restore s3 */
        ld      s4, USWITCH_FRAME_S0 + REG(4)(sp)       /* restore s4 */
        ld      s5, USWITCH_FRAME_S0 + REG(5)(sp)       /* restore s5 */
        ld      s6, USWITCH_FRAME_S0 + REG(6)(sp)       /* restore s6 */
        ld      s7, USWITCH_FRAME_S0 + REG(7)(sp)       /* restore s7 */
        ld      s8, USWITCH_FRAME_S0 + REG(8)(sp)       /* restore s8 */
        ld      s9, USWITCH_FRAME_S0 + REG(9)(sp)       /* restore s9 */
        ld      s10, USWITCH_FRAME_S0 + REG(10)(sp)     /* restore s10 */
        ld      s11, USWITCH_FRAME_S0 + REG(11)(sp)     /* restore s11 */
        ld      t1, USWITCH_FRAME_RA(sp)                /* where the resumed context goes on */
        addi    sp, sp, USWITCH_FRAME_BYTES             /* pop the general-register frame */
        mv      a0, a2                                  /* its ctxbench_uswitch_full returns `value` */
        jr      t1                                      /* resume it */
        .cfi_endproc
        .size   ctxbench_uswitch_full, .-ctxbench_uswitch_full

/* Where a new context starts: the first switch to it jumps here with
 * s1 = entry, s2 = arg, s0 = 0 and sp 16-byte aligned. entry must not
 * return; if it does, the process aborts. */
        .globl  ctxbench_uswitch_trampoline
        .type   ctxbench_uswitch_trampoline, @function
        .p2align 2
ctxbench_uswitch_trampoline:
        .cfi_startproc
        .cfi_undefined ra                               /* the outermost frame: unwinders stop here */
        mv      a0, s2                                  /* first argument: arg */
        jalr    s1                                      /* entry(arg) */
        call    ctxbench_uswitch_entry_returned         /* entry returned: report and abort */
        ebreak                                          /* not reached */
        .cfi_endproc
        .size   ctxbench_uswitch_trampoline, .-ctxbench_uswitch_trampoline

        .section .note.GNU-stack,"",@progbits           /* the stack need not be executable */
