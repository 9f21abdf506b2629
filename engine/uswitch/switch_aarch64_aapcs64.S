/* switch_aarch64_aapcs64.S: ctxbench's user-level context switch for aarch64,
 * AAPCS64, ELF.
 *
 * C prototypes (uswitch.h):
 *   void* ctxbench_uswitch(void** save, void* resume, void* value);
 *   void* ctxbench_uswitch_full(void** save, void* resume, void* value);
 * and ctxbench_uswitch_trampoline, where a new context starts (never called).
 *
 * ABI reference: Procedure Call Standard for the Arm 64-bit Architecture
 * (AAPCS64), 6.1.1 "General-purpose registers": x19-x28 are callee-saved,
 * x29 is the frame pointer (callee-saved), x30 the link register; x0-x18 may
 * be clobbered. 6.1.2 "SIMD and floating-point registers": v8-v15 must be
 * preserved, but only their low 64 bits (d8-d15); the rest may be clobbered.
 * 6.4.5.1: SP is 16-byte aligned at every public interface.
 *
 * Frame layout (offsets in frame_aarch64.h, pinned against a C struct with
 * static_assert):
 *
 *   abi variant, at the saved sp            full variant, at the saved sp
 *   +0   x19   +8 x20                       +0   FPCR   +8 FPSR
 *   +16  x21   +24 x22                      +16  q0 ... q31 (16 bytes each)
 *   +32  x23   +40 x24                      +528 the general-register frame as on
 *   +48  x25   +56 x26                           the left (d8-d15 slots unused)
 *   +64  x27   +72 x28
 *   +80  x29   +88 x30 (where to resume)
 *   +96  d8 ... +152 d15
 *
 * Why br and not ret: ret pops the return-address predictor, whose top is
 * this side's own call site, so every switch would mispredict; br x30 is
 * predicted as an ordinary indirect branch. No BTI landing pads: this object
 * carries no .note.gnu.property, so a program that links it does not run
 * with BTI enforced. */
#include "frame.h"

#if !defined(__aarch64__) || !defined(__ELF__)
#error "switch_aarch64_aapcs64.S is for aarch64 AAPCS64 ELF targets only"
#endif

        .text

/* void* ctxbench_uswitch(void** save [x0], void* resume [x1], void* value [x2]) */
        .globl  ctxbench_uswitch
        .type   ctxbench_uswitch, %function
        .p2align 4
ctxbench_uswitch:
        .cfi_startproc
        sub     sp, sp, #USWITCH_FRAME_BYTES            /* room for the frame */
        .cfi_adjust_cfa_offset USWITCH_FRAME_BYTES
        stp     x19, x20, [sp, #USWITCH_FRAME_X19]      /* save x19, x20 */
        stp     x21, x22, [sp, #USWITCH_FRAME_X21]      /* save x21, x22 */
        stp     x23, x24, [sp, #USWITCH_FRAME_X23]      /* save x23, x24 */
        stp     x25, x26, [sp, #USWITCH_FRAME_X25]      /* save x25, x26 */
        stp     x27, x28, [sp, #USWITCH_FRAME_X27]      /* save x27, x28 */
        stp     x29, x30, [sp, #USWITCH_FRAME_X29]      /* save fp and the return address */
        stp     d8, d9, [sp, #USWITCH_FRAME_D8]         /* save d8, d9 */
        stp     d10, d11, [sp, #USWITCH_FRAME_D10]      /* save d10, d11 */
        stp     d12, d13, [sp, #USWITCH_FRAME_D12]      /* save d12, d13 */
        stp     d14, d15, [sp, #USWITCH_FRAME_D14]      /* save d14, d15 */

        mov     x9, sp                                  /* (sp cannot be stored directly) */
        str     x9, [x0]                                /* *save = this context's stack pointer */
        mov     sp, x1                                  /* switch stacks: now on the resumed context's */

        ldp     d8, d9, [sp, #USWITCH_FRAME_D8]         /* restore d8, d9 */
        ldp     d10, d11, [sp, #USWITCH_FRAME_D10]      /* restore d10, d11 */
        ldp     d12, d13, [sp, #USWITCH_FRAME_D12]      /* restore d12, d13 */
        ldp     d14, d15, [sp, #USWITCH_FRAME_D14]      /* restore d14, d15 */
        ldp     x19, x20, [sp, #USWITCH_FRAME_X19]      /* restore x19, x20 */
        ldp     x21, x22, [sp, #USWITCH_FRAME_X21]      /* restore x21, x22 */
        ldp     x23, x24, [sp, #USWITCH_FRAME_X23]      /* restore x23, x24 */
        ldp     x25, x26, [sp, #USWITCH_FRAME_X25]      /* restore x25, x26 */
        ldp     x27, x28, [sp, #USWITCH_FRAME_X27]      /* restore x27, x28 */
        ldp     x29, x30, [sp, #USWITCH_FRAME_X29]      /* restore fp and where to resume */
        add     sp, sp, #USWITCH_FRAME_BYTES            /* pop the frame */
        mov     x0, x2                                  /* its ctxbench_uswitch returns `value` */
        br      x30                                     /* resume it (see "Why br" above) */
        .cfi_endproc
        .size   ctxbench_uswitch, .-ctxbench_uswitch

/* void* ctxbench_uswitch_full(void** save [x0], void* resume [x1], void* value [x2])
 * The general registers as above, then all 32 q registers whole (which
 * include d8-d15), FPCR and FPSR. d8-d15 are not loaded from the general
 * frame: a load of d8 would zero the upper half of v8 just restored. */
        .globl  ctxbench_uswitch_full
        .type   ctxbench_uswitch_full, %function
        .p2align 4
ctxbench_uswitch_full:
        .cfi_startproc
        sub     sp, sp, #USWITCH_FRAME_BYTES            /* room for the general-register frame */
        .cfi_adjust_cfa_offset USWITCH_FRAME_BYTES
        stp     x19, x20, [sp, #USWITCH_FRAME_X19]      /* save x19, x20 */
        stp     x21, x22, [sp, #USWITCH_FRAME_X21]      /* save x21, x22 */
        stp     x23, x24, [sp, #USWITCH_FRAME_X23]      /* save x23, x24 */
        stp     x25, x26, [sp, #USWITCH_FRAME_X25]      /* save x25, x26 */
        stp     x27, x28, [sp, #USWITCH_FRAME_X27]      /* save x27, x28 */
        stp     x29, x30, [sp, #USWITCH_FRAME_X29]      /* save fp and the return address */
        sub     sp, sp, #USWITCH_FULL_BYTES             /* room for the FP/SIMD frame */
        .cfi_adjust_cfa_offset USWITCH_FULL_BYTES
        mrs     x9, fpcr                                /* FPCR: rounding mode, FZ, DN, trap enables */
        mrs     x10, fpsr                               /* FPSR: cumulative exception flags */
        stp     x9, x10, [sp, #USWITCH_FULL_FPCR]       /* save FPCR, FPSR */
        stp     q0, q1, [sp, #USWITCH_FULL_Q0 + 0*32]   /* save q0, q1 */
        stp     q2, q3, [sp, #USWITCH_FULL_Q0 + 1*32]   /* save q2, q3 */
        stp     q4, q5, [sp, #USWITCH_FULL_Q0 + 2*32]   /* save q4, q5 */
        stp     q6, q7, [sp, #USWITCH_FULL_Q0 + 3*32]   /* save q6, q7 */
        stp     q8, q9, [sp, #USWITCH_FULL_Q0 + 4*32]   /* save q8, q9 */
        stp     q10, q11, [sp, #USWITCH_FULL_Q0 + 5*32] /* save q10, q11 */
        stp     q12, q13, [sp, #USWITCH_FULL_Q0 + 6*32] /* save q12, q13 */
        stp     q14, q15, [sp, #USWITCH_FULL_Q0 + 7*32] /* save q14, q15 */
        stp     q16, q17, [sp, #USWITCH_FULL_Q0 + 8*32] /* save q16, q17 */
        stp     q18, q19, [sp, #USWITCH_FULL_Q0 + 9*32] /* save q18, q19 */
        stp     q20, q21, [sp, #USWITCH_FULL_Q0 + 10*32] /* save q20, q21 */
        stp     q22, q23, [sp, #USWITCH_FULL_Q0 + 11*32] /* save q22, q23 */
        stp     q24, q25, [sp, #USWITCH_FULL_Q0 + 12*32] /* save q24, q25 */
        stp     q26, q27, [sp, #USWITCH_FULL_Q0 + 13*32] /* save q26, q27 */
        stp     q28, q29, [sp, #USWITCH_FULL_Q0 + 14*32] /* save q28, q29 */
        stp     q30, q31, [sp, #USWITCH_FULL_Q0 + 15*32] /* save q30, q31 */

        mov     x9, sp                                  /* (sp cannot be stored directly) */
        str     x9, [x0]                                /* *save = this context's stack pointer */
        mov     sp, x1                                  /* switch stacks: now on the resumed context's */

        ldp     q0, q1, [sp, #USWITCH_FULL_Q0 + 0*32]   /* restore q0, q1 */
        ldp     q2, q3, [sp, #USWITCH_FULL_Q0 + 1*32]   /* restore q2, q3 */
        ldp     q4, q5, [sp, #USWITCH_FULL_Q0 + 2*32]   /* restore q4, q5 */
        ldp     q6, q7, [sp, #USWITCH_FULL_Q0 + 3*32]   /* restore q6, q7 */
        ldp     q8, q9, [sp, #USWITCH_FULL_Q0 + 4*32]   /* restore q8, q9 */
        ldp     q10, q11, [sp, #USWITCH_FULL_Q0 + 5*32] /* restore q10, q11 */
        ldp     q12, q13, [sp, #USWITCH_FULL_Q0 + 6*32] /* restore q12, q13 */
        ldp     q14, q15, [sp, #USWITCH_FULL_Q0 + 7*32] /* restore q14, q15 */
        ldp     q16, q17, [sp, #USWITCH_FULL_Q0 + 8*32] /* restore q16, q17 */
        ldp     q18, q19, [sp, #USWITCH_FULL_Q0 + 9*32] /* restore q18, q19 */
        ldp     q20, q21, [sp, #USWITCH_FULL_Q0 + 10*32] /* restore q20, q21 */
        ldp     q22, q23, [sp, #USWITCH_FULL_Q0 + 11*32] /* restore q22, q23 */
        ldp     q24, q25, [sp, #USWITCH_FULL_Q0 + 12*32] /* restore q24, q25 */
        ldp     q26, q27, [sp, #USWITCH_FULL_Q0 + 13*32] /* restore q26, q27 */
        ldp     q28, q29, [sp, #USWITCH_FULL_Q0 + 14*32] /* restore q28, q29 */
        ldp     q30, q31, [sp, #USWITCH_FULL_Q0 + 15*32] /* restore q30, q31 */
        ldp     x9, x10, [sp, #USWITCH_FULL_FPCR]       /* FPCR, FPSR */
        msr     fpcr, x9                                /* restore FPCR */
        msr     fpsr, x10                               /* restore FPSR */
        add     sp, sp, #USWITCH_FULL_BYTES             /* pop the FP/SIMD frame */
        ldp     x19, x20, [sp, #USWITCH_FRAME_X19]      /* restore x19, x20 */
        ldp     x21, x22, [sp, #USWITCH_FRAME_X21]      /* restore x21, x22 */
        ldp     x23, x24, [sp, #USWITCH_FRAME_X23]      /* restore x23, x24 */
        ldp     x25, x26, [sp, #USWITCH_FRAME_X25]      /* restore x25, x26 */
        ldp     x27, x28, [sp, #USWITCH_FRAME_X27]      /* restore x27, x28 */
        ldp     x29, x30, [sp, #USWITCH_FRAME_X29]      /* restore fp and where to resume */
        add     sp, sp, #USWITCH_FRAME_BYTES            /* pop the general-register frame */
        mov     x0, x2                                  /* its ctxbench_uswitch_full returns `value` */
        br      x30                                     /* resume it */
        .cfi_endproc
        .size   ctxbench_uswitch_full, .-ctxbench_uswitch_full

/* Where a new context starts: the first switch to it branches here with
 * x19 = entry, x20 = arg, x29 = 0 and sp 16-byte aligned. entry must not
 * return; if it does, the process aborts. */
        .globl  ctxbench_uswitch_trampoline
        .type   ctxbench_uswitch_trampoline, %function
        .p2align 4
ctxbench_uswitch_trampoline:
        .cfi_startproc
        .cfi_undefined x30                              /* the outermost frame: unwinders stop here */
        mov     x0, x20                                 /* first argument: arg */
        blr     x19                                     /* entry(arg) */
        bl      ctxbench_uswitch_entry_returned         /* entry returned: report and abort */
        brk     #0                                      /* not reached */
        .cfi_endproc
        .size   ctxbench_uswitch_trampoline, .-ctxbench_uswitch_trampoline

        .section .note.GNU-stack,"",%progbits           /* the stack need not be executable */
