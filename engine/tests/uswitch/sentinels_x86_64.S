/* Test helpers for switch_x86_64_sysv.S; the contract is in sentinels.h.
 * void ctxbench_uswitch_test_sentinels(switch_fn [rdi], save [rsi], resume [rdx],
 *                                      in [rcx], out [r8])
 * Local frame (after the six pushes): +0 caller's MXCSR, +4 caller's x87 CW,
 * +8 out, +16 scratch MXCSR, +20 scratch x87 CW; 40 bytes keep rsp aligned
 * for the call. */
#include "sentinels.h"

#if !defined(__x86_64__) || !defined(__ELF__)
#error "sentinels_x86_64.S is for x86_64 System V ELF targets only"
#endif

        .text
        .globl  ctxbench_uswitch_test_sentinels
        .type   ctxbench_uswitch_test_sentinels, @function
        .p2align 4
ctxbench_uswitch_test_sentinels:
        pushq   %rbp                            /* the caller's callee-saved registers */
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $40, %rsp                       /* locals; rsp is now 16-aligned */
        stmxcsr 0(%rsp)                         /* the caller's MXCSR */
        fnstcw  4(%rsp)                         /* the caller's x87 control word */
        movq    %r8, 8(%rsp)                    /* keep `out` across the switch */
        movq    %rdi, %rax                      /* switch_fn */
        movq    %rsi, %rdi                      /* its save */
        movq    %rdx, %rsi                      /* its resume */
        xorl    %edx, %edx                      /* its value: 0 */

        movl    SENT_BYTES(SENT_CTL)(%rcx), %r9d        /* sentinel MXCSR */
        movl    %r9d, 16(%rsp)
        ldmxcsr 16(%rsp)
        movzwl  SENT_BYTES(SENT_CTL)+4(%rcx), %r9d      /* sentinel x87 control word */
        movw    %r9w, 20(%rsp)
        fldcw   20(%rsp)
        movdqu  SENT_BYTES(SENT_VEC+0)(%rcx), %xmm0     /* sentinel xmm0-xmm15 */
        movdqu  SENT_BYTES(SENT_VEC+2)(%rcx), %xmm1
        movdqu  SENT_BYTES(SENT_VEC+4)(%rcx), %xmm2
        movdqu  SENT_BYTES(SENT_VEC+6)(%rcx), %xmm3
        movdqu  SENT_BYTES(SENT_VEC+8)(%rcx), %xmm4
        movdqu  SENT_BYTES(SENT_VEC+10)(%rcx), %xmm5
        movdqu  SENT_BYTES(SENT_VEC+12)(%rcx), %xmm6
        movdqu  SENT_BYTES(SENT_VEC+14)(%rcx), %xmm7
        movdqu  SENT_BYTES(SENT_VEC+16)(%rcx), %xmm8
        movdqu  SENT_BYTES(SENT_VEC+18)(%rcx), %xmm9
        movdqu  SENT_BYTES(SENT_VEC+20)(%rcx), %xmm10
        movdqu  SENT_BYTES(SENT_VEC+22)(%rcx), %xmm11
        movdqu  SENT_BYTES(SENT_VEC+24)(%rcx), %xmm12
        movdqu  SENT_BYTES(SENT_VEC+26)(%rcx), %xmm13
        movdqu  SENT_BYTES(SENT_VEC+28)(%rcx), %xmm14
        movdqu  SENT_BYTES(SENT_VEC+30)(%rcx), %xmm15
        movq    SENT_BYTES(SENT_GPR+0)(%rcx), %rbx      /* sentinel callee-saved registers */
        movq    SENT_BYTES(SENT_GPR+1)(%rcx), %rbp
        movq    SENT_BYTES(SENT_GPR+2)(%rcx), %r12
        movq    SENT_BYTES(SENT_GPR+3)(%rcx), %r13
        movq    SENT_BYTES(SENT_GPR+4)(%rcx), %r14
        movq    SENT_BYTES(SENT_GPR+5)(%rcx), %r15
        movq    %rsp, SENT_BYTES(SENT_SP_BEFORE)(%r8)

        callq   *%rax                           /* switch away; another context runs */

        movq    8(%rsp), %r8                    /* out */
        movq    %rsp, SENT_BYTES(SENT_SP_AFTER)(%r8)
        movq    %rbx, SENT_BYTES(SENT_GPR+0)(%r8)
        movq    %rbp, SENT_BYTES(SENT_GPR+1)(%r8)
        movq    %r12, SENT_BYTES(SENT_GPR+2)(%r8)
        movq    %r13, SENT_BYTES(SENT_GPR+3)(%r8)
        movq    %r14, SENT_BYTES(SENT_GPR+4)(%r8)
        movq    %r15, SENT_BYTES(SENT_GPR+5)(%r8)
        movdqu  %xmm0, SENT_BYTES(SENT_VEC+0)(%r8)
        movdqu  %xmm1, SENT_BYTES(SENT_VEC+2)(%r8)
        movdqu  %xmm2, SENT_BYTES(SENT_VEC+4)(%r8)
        movdqu  %xmm3, SENT_BYTES(SENT_VEC+6)(%r8)
        movdqu  %xmm4, SENT_BYTES(SENT_VEC+8)(%r8)
        movdqu  %xmm5, SENT_BYTES(SENT_VEC+10)(%r8)
        movdqu  %xmm6, SENT_BYTES(SENT_VEC+12)(%r8)
        movdqu  %xmm7, SENT_BYTES(SENT_VEC+14)(%r8)
        movdqu  %xmm8, SENT_BYTES(SENT_VEC+16)(%r8)
        movdqu  %xmm9, SENT_BYTES(SENT_VEC+18)(%r8)
        movdqu  %xmm10, SENT_BYTES(SENT_VEC+20)(%r8)
        movdqu  %xmm11, SENT_BYTES(SENT_VEC+22)(%r8)
        movdqu  %xmm12, SENT_BYTES(SENT_VEC+24)(%r8)
        movdqu  %xmm13, SENT_BYTES(SENT_VEC+26)(%r8)
        movdqu  %xmm14, SENT_BYTES(SENT_VEC+28)(%r8)
        movdqu  %xmm15, SENT_BYTES(SENT_VEC+30)(%r8)
        stmxcsr 16(%rsp)                        /* MXCSR and x87 CW as found */
        fnstcw  20(%rsp)
        movl    16(%rsp), %eax
        movzwl  20(%rsp), %ecx
        shlq    $32, %rcx
        orq     %rcx, %rax
        movq    %rax, SENT_BYTES(SENT_CTL)(%r8)

        ldmxcsr 0(%rsp)                         /* give the caller its own state back */
        fldcw   4(%rsp)
        addq    $40, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   ctxbench_uswitch_test_sentinels, .-ctxbench_uswitch_test_sentinels

/* void ctxbench_uswitch_test_entry_probe(void* arg [rdi]): records rsp as found
 * at entry, then tail-calls ctxbench_uswitch_test_entry(arg). */
        .globl  ctxbench_uswitch_test_entry_probe
        .type   ctxbench_uswitch_test_entry_probe, @function
        .p2align 4
ctxbench_uswitch_test_entry_probe:
        movq    %rsp, ctxbench_uswitch_test_entry_sp(%rip)
        jmp     ctxbench_uswitch_test_entry@PLT
        .size   ctxbench_uswitch_test_entry_probe, .-ctxbench_uswitch_test_entry_probe

/* void* ctxbench_uswitch_test_broken_switch(save, resume, value): a real
 * switch, then r12 (SENT_BROKEN_GPR) corrupted, as a switch that forgot it would. */
        .globl  ctxbench_uswitch_test_broken_switch
        .type   ctxbench_uswitch_test_broken_switch, @function
        .p2align 4
ctxbench_uswitch_test_broken_switch:
        subq    $8, %rsp                        /* keep the stack aligned for the call */
        callq   ctxbench_uswitch@PLT
        addq    $8, %rsp
        xorq    $1, %r12                        /* the corruption */
        ret
        .size   ctxbench_uswitch_test_broken_switch, .-ctxbench_uswitch_test_broken_switch

        .section .note.GNU-stack,"",@progbits
