/* Test helpers for switch_riscv64_lp64d.S; the contract is in sentinels.h.
 * void ctxbench_uswitch_test_sentinels(switch_fn [a0], save [a1], resume [a2],
 *                                      in [a3], out [a4])
 * Local frame: +0 ra, +8 s0..s11, +104 fs0..fs11, +200 caller's fcsr, +208 out. */
#include "sentinels.h"

#if !defined(__riscv) || __riscv_xlen != 64 || !defined(__ELF__)
#error "sentinels_riscv64.S is for riscv64 ELF targets only"
#endif

        .text
        .globl  ctxbench_uswitch_test_sentinels
        .type   ctxbench_uswitch_test_sentinels, @function
        .p2align 2
ctxbench_uswitch_test_sentinels:
        addi    sp, sp, -224                    /* the caller's callee-saved registers */
        sd      ra, 0(sp)
        sd      s0, 8(sp)
        sd      s1, 16(sp)
        sd      s2, 24(sp)
        sd      s3, 32(sp)
        sd      s4, 40(sp)
        sd      s5, 48(sp)
        sd      s6, 56(sp)
        sd      s7, 64(sp)
        sd      s8, 72(sp)
        sd      s9, 80(sp)
        sd      s10, 88(sp)
        sd      s11, 96(sp)
        fsd     fs0, 104(sp)
        fsd     fs1, 112(sp)
        fsd     fs2, 120(sp)
        fsd     fs3, 128(sp)
        fsd     fs4, 136(sp)
        fsd     fs5, 144(sp)
        fsd     fs6, 152(sp)
        fsd     fs7, 160(sp)
        fsd     fs8, 168(sp)
        fsd     fs9, 176(sp)
        fsd     fs10, 184(sp)
        fsd     fs11, 192(sp)
        frcsr   t0                              /* the caller's fcsr */
        sd      t0, 200(sp)
        sd      a4, 208(sp)                     /* keep `out` across the switch */
        mv      t2, a0                          /* switch_fn */
        mv      a0, a1                          /* its save */
        mv      a1, a2                          /* its resume */
        li      a2, 0                           /* its value: 0 */

        ld      t0, SENT_BYTES(SENT_CTL)(a3)    /* sentinel fcsr */
        fscsr   t0
        fld     f0, SENT_BYTES(SENT_VEC + 0)(a3)        /* sentinel f0-f31 */
        fld     f1, SENT_BYTES(SENT_VEC + 1)(a3)
        fld     f2, SENT_BYTES(SENT_VEC + 2)(a3)
        fld     f3, SENT_BYTES(SENT_VEC + 3)(a3)
        fld     f4, SENT_BYTES(SENT_VEC + 4)(a3)
        fld     f5, SENT_BYTES(SENT_VEC + 5)(a3)
        fld     f6, SENT_BYTES(SENT_VEC + 6)(a3)
        fld     f7, SENT_BYTES(SENT_VEC + 7)(a3)
        fld     f8, SENT_BYTES(SENT_VEC + 8)(a3)
        fld     f9, SENT_BYTES(SENT_VEC + 9)(a3)
        fld     f10, SENT_BYTES(SENT_VEC + 10)(a3)
        fld     f11, SENT_BYTES(SENT_VEC + 11)(a3)
        fld     f12, SENT_BYTES(SENT_VEC + 12)(a3)
        fld     f13, SENT_BYTES(SENT_VEC + 13)(a3)
        fld     f14, SENT_BYTES(SENT_VEC + 14)(a3)
        fld     f15, SENT_BYTES(SENT_VEC + 15)(a3)
        fld     f16, SENT_BYTES(SENT_VEC + 16)(a3)
        fld     f17, SENT_BYTES(SENT_VEC + 17)(a3)
        fld     f18, SENT_BYTES(SENT_VEC + 18)(a3)
        fld     f19, SENT_BYTES(SENT_VEC + 19)(a3)
        fld     f20, SENT_BYTES(SENT_VEC + 20)(a3)
        fld     f21, SENT_BYTES(SENT_VEC + 21)(a3)
        fld     f22, SENT_BYTES(SENT_VEC + 22)(a3)
        fld     f23, SENT_BYTES(SENT_VEC + 23)(a3)
        fld     f24, SENT_BYTES(SENT_VEC + 24)(a3)
        fld     f25, SENT_BYTES(SENT_VEC + 25)(a3)
        fld     f26, SENT_BYTES(SENT_VEC + 26)(a3)
        fld     f27, SENT_BYTES(SENT_VEC + 27)(a3)
        fld     f28, SENT_BYTES(SENT_VEC + 28)(a3)
        fld     f29, SENT_BYTES(SENT_VEC + 29)(a3)
        fld     f30, SENT_BYTES(SENT_VEC + 30)(a3)
        fld     f31, SENT_BYTES(SENT_VEC + 31)(a3)
        ld      s0, SENT_BYTES(SENT_GPR + 0)(a3)       /* sentinel s0-s11 */
        ld      s1, SENT_BYTES(SENT_GPR + 1)(a3)
        ld      s2, SENT_BYTES(SENT_GPR + 2)(a3)
        ld      s3, SENT_BYTES(SENT_GPR + 3)(a3)
        ld      s4, SENT_BYTES(SENT_GPR + 4)(a3)
        ld      s5, SENT_BYTES(SENT_GPR + 5)(a3)
        ld      s6, SENT_BYTES(SENT_GPR + 6)(a3)
        ld      s7, SENT_BYTES(SENT_GPR + 7)(a3)
        ld      s8, SENT_BYTES(SENT_GPR + 8)(a3)
        ld      s9, SENT_BYTES(SENT_GPR + 9)(a3)
        ld      s10, SENT_BYTES(SENT_GPR + 10)(a3)
        ld      s11, SENT_BYTES(SENT_GPR + 11)(a3)
        sd      sp, SENT_BYTES(SENT_SP_BEFORE)(a4)

        jalr    t2                              /* switch away; another context runs */

        ld      a4, 208(sp)                     /* out */
        sd      sp, SENT_BYTES(SENT_SP_AFTER)(a4)
        sd      s0, SENT_BYTES(SENT_GPR + 0)(a4)
        sd      s1, SENT_BYTES(SENT_GPR + 1)(a4)
        sd      s2, SENT_BYTES(SENT_GPR + 2)(a4)
        sd      s3, SENT_BYTES(SENT_GPR + 3)(a4)
        sd      s4, SENT_BYTES(SENT_GPR + 4)(a4)
        sd      s5, SENT_BYTES(SENT_GPR + 5)(a4)
        sd      s6, SENT_BYTES(SENT_GPR + 6)(a4)
        sd      s7, SENT_BYTES(SENT_GPR + 7)(a4)
        sd      s8, SENT_BYTES(SENT_GPR + 8)(a4)
        sd      s9, SENT_BYTES(SENT_GPR + 9)(a4)
        sd      s10, SENT_BYTES(SENT_GPR + 10)(a4)
        sd      s11, SENT_BYTES(SENT_GPR + 11)(a4)
        fsd     f0, SENT_BYTES(SENT_VEC + 0)(a4)
        fsd     f1, SENT_BYTES(SENT_VEC + 1)(a4)
        fsd     f2, SENT_BYTES(SENT_VEC + 2)(a4)
        fsd     f3, SENT_BYTES(SENT_VEC + 3)(a4)
        fsd     f4, SENT_BYTES(SENT_VEC + 4)(a4)
        fsd     f5, SENT_BYTES(SENT_VEC + 5)(a4)
        fsd     f6, SENT_BYTES(SENT_VEC + 6)(a4)
        fsd     f7, SENT_BYTES(SENT_VEC + 7)(a4)
        fsd     f8, SENT_BYTES(SENT_VEC + 8)(a4)
        fsd     f9, SENT_BYTES(SENT_VEC + 9)(a4)
        fsd     f10, SENT_BYTES(SENT_VEC + 10)(a4)
        fsd     f11, SENT_BYTES(SENT_VEC + 11)(a4)
        fsd     f12, SENT_BYTES(SENT_VEC + 12)(a4)
        fsd     f13, SENT_BYTES(SENT_VEC + 13)(a4)
        fsd     f14, SENT_BYTES(SENT_VEC + 14)(a4)
        fsd     f15, SENT_BYTES(SENT_VEC + 15)(a4)
        fsd     f16, SENT_BYTES(SENT_VEC + 16)(a4)
        fsd     f17, SENT_BYTES(SENT_VEC + 17)(a4)
        fsd     f18, SENT_BYTES(SENT_VEC + 18)(a4)
        fsd     f19, SENT_BYTES(SENT_VEC + 19)(a4)
        fsd     f20, SENT_BYTES(SENT_VEC + 20)(a4)
        fsd     f21, SENT_BYTES(SENT_VEC + 21)(a4)
        fsd     f22, SENT_BYTES(SENT_VEC + 22)(a4)
        fsd     f23, SENT_BYTES(SENT_VEC + 23)(a4)
        fsd     f24, SENT_BYTES(SENT_VEC + 24)(a4)
        fsd     f25, SENT_BYTES(SENT_VEC + 25)(a4)
        fsd     f26, SENT_BYTES(SENT_VEC + 26)(a4)
        fsd     f27, SENT_BYTES(SENT_VEC + 27)(a4)
        fsd     f28, SENT_BYTES(SENT_VEC + 28)(a4)
        fsd     f29, SENT_BYTES(SENT_VEC + 29)(a4)
        fsd     f30, SENT_BYTES(SENT_VEC + 30)(a4)
        fsd     f31, SENT_BYTES(SENT_VEC + 31)(a4)
        frcsr   t0
        sd      t0, SENT_BYTES(SENT_CTL)(a4)

        ld      t0, 200(sp)                     /* give the caller its own state back */
        fscsr   t0
        fld     fs0, 104(sp)
        fld     fs1, 112(sp)
        fld     fs2, 120(sp)
        fld     fs3, 128(sp)
        fld     fs4, 136(sp)
        fld     fs5, 144(sp)
        fld     fs6, 152(sp)
        fld     fs7, 160(sp)
        fld     fs8, 168(sp)
        fld     fs9, 176(sp)
        fld     fs10, 184(sp)
        fld     fs11, 192(sp)
        ld      s0, 8(sp)
        ld      s1, 16(sp)
        ld      s2, 24(sp)
        ld      s3, 32(sp)
        ld      s4, 40(sp)
        ld      s5, 48(sp)
        ld      s6, 56(sp)
        ld      s7, 64(sp)
        ld      s8, 72(sp)
        ld      s9, 80(sp)
        ld      s10, 88(sp)
        ld      s11, 96(sp)
        ld      ra, 0(sp)
        addi    sp, sp, 224
        ret
        .size   ctxbench_uswitch_test_sentinels, .-ctxbench_uswitch_test_sentinels

/* void ctxbench_uswitch_test_entry_probe(void* arg [a0]): records sp as found
 * at entry, then tail-calls ctxbench_uswitch_test_entry(arg). */
        .globl  ctxbench_uswitch_test_entry_probe
        .type   ctxbench_uswitch_test_entry_probe, @function
        .p2align 2
ctxbench_uswitch_test_entry_probe:
        la      t0, ctxbench_uswitch_test_entry_sp
        sd      sp, 0(t0)
        tail    ctxbench_uswitch_test_entry
        .size   ctxbench_uswitch_test_entry_probe, .-ctxbench_uswitch_test_entry_probe

/* void* ctxbench_uswitch_test_broken_switch(save, resume, value): a real
 * switch, then s5 (SENT_BROKEN_GPR) corrupted, as a switch that forgot it would. */
        .globl  ctxbench_uswitch_test_broken_switch
        .type   ctxbench_uswitch_test_broken_switch, @function
        .p2align 2
ctxbench_uswitch_test_broken_switch:
        addi    sp, sp, -16
        sd      ra, 8(sp)
        call    ctxbench_uswitch
        ld      ra, 8(sp)
        addi    sp, sp, 16
        xori    s5, s5, 1                       /* the corruption */
        ret
        .size   ctxbench_uswitch_test_broken_switch, .-ctxbench_uswitch_test_broken_switch

        .section .note.GNU-stack,"",@progbits
