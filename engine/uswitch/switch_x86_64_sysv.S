/* switch_x86_64_sysv.S: ctxbench's user-level context switch for x86_64,
 * System V AMD64 psABI, ELF.
 *
 * C prototypes (uswitch.h):
 *   void* ctxbench_uswitch(void** save, void* resume, void* value);
 *   void* ctxbench_uswitch_full(void** save, void* resume, void* value);
 * and ctxbench_uswitch_trampoline, where a new context starts (never called).
 *
 * ABI reference: System V Application Binary Interface, AMD64 Architecture
 * Processor Supplement (psABI 1.0), 3.2.1 "Registers": rbx, rbp, r12-r15 and
 * rsp belong to the caller and must be preserved; so must the control bits of
 * MXCSR and the x87 control word. Everything else (rax, rcx, rdx, rsi, rdi,
 * r8-r11, the flags, all xmm/ymm/zmm and x87 registers, MXCSR's status bits)
 * may be clobbered by a call. 3.2.2: at a function's entry, rsp + 8 is a
 * multiple of 16.
 *
 * Frame layout (offsets in frame_x86_64.h, which also pins them against a C
 * struct with static_assert):
 *
 *   abi variant, at the saved rsp        full variant, at the saved rsp (64-aligned)
 *   +0   MXCSR  +4 x87 control word      +0   address of the general-register frame
 *   +8   r15                             +64  XSAVE area (XCR0 components)
 *   +16  r14                             ...  then the general-register frame as on
 *   +24  r13                                  the left (MXCSR/x87 slots unused)
 *   +32  r12
 *   +40  rbx
 *   +48  rbp
 *   +56  return address (pushed by the call)
 *
 * Why jmp and not ret: ret is predicted from the return stack buffer, whose
 * top is this side's own call site, so every switch would mispredict. An
 * indirect jmp is predicted by the branch target buffer, which learns the
 * pattern. Neither ret nor this jmp works with CET shadow stacks or IBT;
 * this object carries no .note.gnu.property, so the loader does not turn
 * them on for a program that links it. The CFI describes each function up
 * to the stack swap; past it, a debugger sees the resumed context. */
#include "frame.h"

#if !defined(__x86_64__) || !defined(__ELF__)
#error "switch_x86_64_sysv.S is for x86_64 System V ELF targets only"
#endif

        .text

/* void* ctxbench_uswitch(void** save [rdi], void* resume [rsi], void* value [rdx]) */
        .globl  ctxbench_uswitch
        .type   ctxbench_uswitch, @function
        .p2align 4
ctxbench_uswitch:
        .cfi_startproc
        subq    $USWITCH_FRAME_RET, %rsp                /* room for the frame below the return address */
        .cfi_adjust_cfa_offset USWITCH_FRAME_RET
        movq    %r15, USWITCH_FRAME_R15(%rsp)           /* save r15 */
        movq    %r14, USWITCH_FRAME_R14(%rsp)           /* save r14 */
        movq    %r13, USWITCH_FRAME_R13(%rsp)           /* save r13 */
        movq    %r12, USWITCH_FRAME_R12(%rsp)           /* save r12 */
        movq    %rbx, USWITCH_FRAME_RBX(%rsp)           /* save rbx */
        movq    %rbp, USWITCH_FRAME_RBP(%rsp)           /* save rbp */
        stmxcsr USWITCH_FRAME_MXCSR(%rsp)               /* save MXCSR (its control bits are callee-saved) */
        fnstcw  USWITCH_FRAME_FCW(%rsp)                 /* save the x87 control word */

        movq    %rsp, (%rdi)                            /* *save = this context's stack pointer */
        movq    %rsi, %rsp                              /* switch stacks: now on the resumed context's */

        ldmxcsr USWITCH_FRAME_MXCSR(%rsp)               /* restore MXCSR */
        fldcw   USWITCH_FRAME_FCW(%rsp)                 /* restore the x87 control word */
        movq    USWITCH_FRAME_RBP(%rsp), %rbp           /* restore rbp */
        movq    USWITCH_FRAME_RBX(%rsp), %rbx           /* restore rbx */
        movq    USWITCH_FRAME_R12(%rsp), %r12           /* restore r12 */
        movq    USWITCH_FRAME_R13(%rsp), %r13           /* restore r13 */
        movq    USWITCH_FRAME_R14(%rsp), %r14           /* restore r14 */
        movq    USWITCH_FRAME_R15(%rsp), %r15           /* restore r15 */
        movq    USWITCH_FRAME_RET(%rsp), %rcx           /* where the resumed context goes on */
        addq    $USWITCH_FRAME_BYTES, %rsp              /* pop the frame and the return address */
        movq    %rdx, %rax                              /* its ctxbench_uswitch returns `value` */
        jmp     *%rcx                                   /* resume it (see "Why jmp" above) */
        .cfi_endproc
        .size   ctxbench_uswitch, .-ctxbench_uswitch

/* void* ctxbench_uswitch_full(void** save [rdi], void* resume [rsi], void* value [rdx])
 * The general registers as above; MXCSR, the x87 control word and every
 * other piece of FP/vector state go through XSAVE64/XRSTOR64 of every XCR0
 * component this process may use (ctxbench_uswitch_xsave_mask). Plain XSAVE,
 * not XSAVEOPT/XSAVEC/XSAVES: no init or modified optimization, the worst
 * case a switch that cannot know what was used must pay. */
        .globl  ctxbench_uswitch_full
        .type   ctxbench_uswitch_full, @function
        .p2align 4
ctxbench_uswitch_full:
        .cfi_startproc
        subq    $USWITCH_FRAME_RET, %rsp                /* room for the frame below the return address */
        .cfi_adjust_cfa_offset USWITCH_FRAME_RET
        movq    %r15, USWITCH_FRAME_R15(%rsp)           /* save r15 */
        movq    %r14, USWITCH_FRAME_R14(%rsp)           /* save r14 */
        movq    %r13, USWITCH_FRAME_R13(%rsp)           /* save r13 */
        movq    %r12, USWITCH_FRAME_R12(%rsp)           /* save r12 */
        movq    %rbx, USWITCH_FRAME_RBX(%rsp)           /* save rbx */
        movq    %rbp, USWITCH_FRAME_RBP(%rsp)           /* save rbp */
        movq    %rsp, %r8                               /* r8 = the general-register frame */
        movq    %rdx, %r9                               /* keep `value`: EDX:EAX is XSAVE's mask */
        subq    ctxbench_uswitch_full_reserve(%rip), %rsp  /* room for the header and the XSAVE area */
        andq    $-USWITCH_FULL_ALIGN, %rsp              /* XSAVE needs a 64-byte aligned area */
        movq    %r8, USWITCH_FULL_GPR_FRAME(%rsp)       /* header: where the general registers are */
        movq    $0, USWITCH_FULL_XSTATE_BV(%rsp)        /* header: XSAVE leaves XSTATE_BV bits outside */
        movq    $0, USWITCH_FULL_XCOMP_BV(%rsp)         /*   XCR0 and the next 16 bytes as it finds them, */
        movq    $0, USWITCH_FULL_XCOMP_BV+8(%rsp)       /*   and XRSTOR faults unless they are zero */
        movl    ctxbench_uswitch_xsave_mask(%rip), %eax    /* requested components, low half */
        movl    ctxbench_uswitch_xsave_mask+4(%rip), %edx  /* ... and high half */
        xsave64 USWITCH_FULL_AREA(%rsp)                 /* save x87, MXCSR, SSE, AVX, AVX-512, ... */

        movq    %rsp, (%rdi)                            /* *save = this context's stack pointer */
        movq    %rsi, %rsp                              /* switch stacks: now on the resumed context's */

        xrstor64 USWITCH_FULL_AREA(%rsp)                /* restore the same components (EDX:EAX unchanged) */
        movq    USWITCH_FULL_GPR_FRAME(%rsp), %rsp      /* up to the general-register frame */
        movq    USWITCH_FRAME_RBP(%rsp), %rbp           /* restore rbp */
        movq    USWITCH_FRAME_RBX(%rsp), %rbx           /* restore rbx */
        movq    USWITCH_FRAME_R12(%rsp), %r12           /* restore r12 */
        movq    USWITCH_FRAME_R13(%rsp), %r13           /* restore r13 */
        movq    USWITCH_FRAME_R14(%rsp), %r14           /* restore r14 */
        movq    USWITCH_FRAME_R15(%rsp), %r15           /* restore r15 */
        movq    USWITCH_FRAME_RET(%rsp), %rcx           /* where the resumed context goes on */
        addq    $USWITCH_FRAME_BYTES, %rsp              /* pop the frame and the return address */
        movq    %r9, %rax                               /* its ctxbench_uswitch_full returns `value` */
        jmp     *%rcx                                   /* resume it */
        .cfi_endproc
        .size   ctxbench_uswitch_full, .-ctxbench_uswitch_full

/* Where a new context starts: the first switch to it "returns" here with
 * r12 = entry, r13 = arg (initial_frame() put them in the frame) and rsp
 * 16-byte aligned, so the call below enters `entry` with rsp + 8 aligned as
 * 3.2.2 requires. entry must not return; if it does, the process aborts. */
        .globl  ctxbench_uswitch_trampoline
        .type   ctxbench_uswitch_trampoline, @function
        .p2align 4
ctxbench_uswitch_trampoline:
        .cfi_startproc
        .cfi_undefined rip                              /* the outermost frame: unwinders stop here */
        movq    %r13, %rdi                              /* first argument: arg */
        callq   *%r12                                   /* entry(arg) */
        callq   ctxbench_uswitch_entry_returned@PLT     /* entry returned: report and abort */
        ud2                                             /* not reached */
        .cfi_endproc
        .size   ctxbench_uswitch_trampoline, .-ctxbench_uswitch_trampoline

        .section .note.GNU-stack,"",@progbits           /* the stack need not be executable */
