/* Test helpers for switch_aarch64_aapcs64.S; the contract is in sentinels.h.
 * void ctxbench_uswitch_test_sentinels(switch_fn [x0], save [x1], resume [x2],
 *                                      in [x3], out [x4])
 * Local frame: +0 x19..x28, +80 x29/x30, +96 d8..d15, +160 caller's FPCR, +168 out. */
#include "sentinels.h"

#if !defined(__aarch64__) || !defined(__ELF__)
#error "sentinels_aarch64.S is for aarch64 ELF targets only"
#endif

        .text
        .globl  ctxbench_uswitch_test_sentinels
        .type   ctxbench_uswitch_test_sentinels, %function
        .p2align 4
ctxbench_uswitch_test_sentinels:
        sub     sp, sp, #176                    /* the caller's callee-saved registers */
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8, d9, [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mrs     x9, fpcr                        /* the caller's FPCR */
        stp     x9, x4, [sp, #160]              /* ... and `out`, kept across the switch */
        mov     x16, x0                         /* switch_fn */
        mov     x0, x1                          /* its save */
        mov     x1, x2                          /* its resume */
        mov     x2, #0                          /* its value: 0 */

        ldr     x9, [x3, #SENT_BYTES(SENT_CTL)] /* sentinel FPCR */
        msr     fpcr, x9
        ldp     q0, q1, [x3, #SENT_BYTES(SENT_VEC) + 0*32]   /* sentinel q0-q31 */
        ldp     q2, q3, [x3, #SENT_BYTES(SENT_VEC) + 1*32]
        ldp     q4, q5, [x3, #SENT_BYTES(SENT_VEC) + 2*32]
        ldp     q6, q7, [x3, #SENT_BYTES(SENT_VEC) + 3*32]
        ldp     q8, q9, [x3, #SENT_BYTES(SENT_VEC) + 4*32]
        ldp     q10, q11, [x3, #SENT_BYTES(SENT_VEC) + 5*32]
        ldp     q12, q13, [x3, #SENT_BYTES(SENT_VEC) + 6*32]
        ldp     q14, q15, [x3, #SENT_BYTES(SENT_VEC) + 7*32]
        ldp     q16, q17, [x3, #SENT_BYTES(SENT_VEC) + 8*32]
        ldp     q18, q19, [x3, #SENT_BYTES(SENT_VEC) + 9*32]
        ldp     q20, q21, [x3, #SENT_BYTES(SENT_VEC) + 10*32]
        ldp     q22, q23, [x3, #SENT_BYTES(SENT_VEC) + 11*32]
        ldp     q24, q25, [x3, #SENT_BYTES(SENT_VEC) + 12*32]
        ldp     q26, q27, [x3, #SENT_BYTES(SENT_VEC) + 13*32]
        ldp     q28, q29, [x3, #SENT_BYTES(SENT_VEC) + 14*32]
        ldp     q30, q31, [x3, #SENT_BYTES(SENT_VEC) + 15*32]
        ldp     x19, x20, [x3, #SENT_BYTES(SENT_GPR + 0)]    /* sentinel x19-x29 */
        ldp     x21, x22, [x3, #SENT_BYTES(SENT_GPR + 2)]
        ldp     x23, x24, [x3, #SENT_BYTES(SENT_GPR + 4)]
        ldp     x25, x26, [x3, #SENT_BYTES(SENT_GPR + 6)]
        ldp     x27, x28, [x3, #SENT_BYTES(SENT_GPR + 8)]
        ldr     x29, [x3, #SENT_BYTES(SENT_GPR + 10)]
        mov     x9, sp
        str     x9, [x4, #SENT_BYTES(SENT_SP_BEFORE)]

        blr     x16                             /* switch away; another context runs */

        ldr     x4, [sp, #168]                  /* out */
        mov     x9, sp
        str     x9, [x4, #SENT_BYTES(SENT_SP_AFTER)]
        stp     x19, x20, [x4, #SENT_BYTES(SENT_GPR + 0)]
        stp     x21, x22, [x4, #SENT_BYTES(SENT_GPR + 2)]
        stp     x23, x24, [x4, #SENT_BYTES(SENT_GPR + 4)]
        stp     x25, x26, [x4, #SENT_BYTES(SENT_GPR + 6)]
        stp     x27, x28, [x4, #SENT_BYTES(SENT_GPR + 8)]
        str     x29, [x4, #SENT_BYTES(SENT_GPR + 10)]
        stp     q0, q1, [x4, #SENT_BYTES(SENT_VEC) + 0*32]
        stp     q2, q3, [x4, #SENT_BYTES(SENT_VEC) + 1*32]
        stp     q4, q5, [x4, #SENT_BYTES(SENT_VEC) + 2*32]
        stp     q6, q7, [x4, #SENT_BYTES(SENT_VEC) + 3*32]
        stp     q8, q9, [x4, #SENT_BYTES(SENT_VEC) + 4*32]
        stp     q10, q11, [x4, #SENT_BYTES(SENT_VEC) + 5*32]
        stp     q12, q13, [x4, #SENT_BYTES(SENT_VEC) + 6*32]
        stp     q14, q15, [x4, #SENT_BYTES(SENT_VEC) + 7*32]
        stp     q16, q17, [x4, #SENT_BYTES(SENT_VEC) + 8*32]
        stp     q18, q19, [x4, #SENT_BYTES(SENT_VEC) + 9*32]
        stp     q20, q21, [x4, #SENT_BYTES(SENT_VEC) + 10*32]
        stp     q22, q23, [x4, #SENT_BYTES(SENT_VEC) + 11*32]
        stp     q24, q25, [x4, #SENT_BYTES(SENT_VEC) + 12*32]
        stp     q26, q27, [x4, #SENT_BYTES(SENT_VEC) + 13*32]
        stp     q28, q29, [x4, #SENT_BYTES(SENT_VEC) + 14*32]
        stp     q30, q31, [x4, #SENT_BYTES(SENT_VEC) + 15*32]
        mrs     x9, fpcr
        str     x9, [x4, #SENT_BYTES(SENT_CTL)]

        ldr     x9, [sp, #160]                  /* give the caller its own state back */
        msr     fpcr, x9
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        add     sp, sp, #176
        ret
        .size   ctxbench_uswitch_test_sentinels, .-ctxbench_uswitch_test_sentinels

/* void ctxbench_uswitch_test_entry_probe(void* arg [x0]): records sp as found
 * at entry, then tail-calls ctxbench_uswitch_test_entry(arg). */
        .globl  ctxbench_uswitch_test_entry_probe
        .type   ctxbench_uswitch_test_entry_probe, %function
        .p2align 4
ctxbench_uswitch_test_entry_probe:
        adrp    x9, ctxbench_uswitch_test_entry_sp
        mov     x10, sp
        str     x10, [x9, #:lo12:ctxbench_uswitch_test_entry_sp]
        b       ctxbench_uswitch_test_entry
        .size   ctxbench_uswitch_test_entry_probe, .-ctxbench_uswitch_test_entry_probe

/* void* ctxbench_uswitch_test_broken_switch(save, resume, value): a real
 * switch, then x21 (SENT_BROKEN_GPR) corrupted, as a switch that forgot it would. */
        .globl  ctxbench_uswitch_test_broken_switch
        .type   ctxbench_uswitch_test_broken_switch, %function
        .p2align 4
ctxbench_uswitch_test_broken_switch:
        stp     x29, x30, [sp, #-16]!
        bl      ctxbench_uswitch
        ldp     x29, x30, [sp], #16
        eor     x21, x21, #1                    /* the corruption */
        ret
        .size   ctxbench_uswitch_test_broken_switch, .-ctxbench_uswitch_test_broken_switch

        .section .note.GNU-stack,"",%progbits
