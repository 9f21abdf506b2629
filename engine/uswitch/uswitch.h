/* ctxbench's own user-level context switch: the C interface.
 *
 * A context is a stack plus, while it is suspended, the registers a function
 * call must preserve, saved on that stack. It is named by one pointer: its
 * saved stack pointer. ctxbench_uswitch() is an ordinary function call as far
 * as its caller can tell: it returns (later, when another context switches
 * back) with every callee-saved register intact. That is why it saves only
 * the callee-saved set of the ABI (frame.h names it per architecture): the
 * compiler has already spilled everything else around the call. The _full
 * variant saves the whole floating-point/vector state as well, which is what
 * a kernel thread switch must do and a user-level switch need not.
 *
 * Implementations: switch_x86_64_sysv.S, switch_aarch64_aapcs64.S,
 * switch_riscv64_lp64d.S (one per arch and ABI; CMake picks one, see
 * uswitch.cmake), and uswitch.cpp (context creation). */
#ifndef CTXBENCH_USWITCH_H
#define CTXBENCH_USWITCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Saves the running context on its own stack, stores its stack pointer in
 * *save, and resumes the context whose saved stack pointer is `resume`,
 * where the ctxbench_uswitch call that suspended it returns `value` (a
 * context that has never run starts in its entry function instead). Returns
 * when some context resumes this one, with the value that context passed.
 * *save may be read only after the call has switched away. */
void* ctxbench_uswitch(void** save, void* resume, void* value);

/* The same, also saving and restoring the full floating-point/vector state
 * (x86_64: XSAVE/XRSTOR of every component enabled in XCR0; aarch64: q0-q31,
 * FPCR, FPSR; riscv64: f0-f31, fcsr). A context made with
 * ctxbench_uswitch_make_full is only ever resumed by ctxbench_uswitch_full,
 * and one made with ctxbench_uswitch_make only by ctxbench_uswitch: the two
 * frames differ. */
void* ctxbench_uswitch_full(void** save, void* resume, void* value);

typedef void (*ctxbench_uswitch_entry)(void* arg);

/* Prepares a context on the stack [stack, stack + size) and returns its saved
 * stack pointer. The first switch to it calls entry(arg) on that stack, with
 * the stack aligned as the ABI requires at a function's entry. Where the
 * switch swaps FP control state (x86_64 always; elsewhere the full variant),
 * the new context starts with its creator's, as a new thread inherits its
 * creator's; the full variant's other FP/vector registers start zeroed.
 * entry must never return (its last act is a switch away); if it does, the
 * process aborts. */
void* ctxbench_uswitch_make(void* stack, size_t size, ctxbench_uswitch_entry entry, void* arg);
void* ctxbench_uswitch_make_full(void* stack, size_t size, ctxbench_uswitch_entry entry, void* arg);

/* Bytes of floating-point/vector state the full variant saves per switch;
 * 0 when it cannot run here (x86_64 without OS-enabled XSAVE). */
size_t ctxbench_uswitch_full_state_bytes(void);

/* What the full variant saves here, in words (e.g. "XSAVE of XCR0=0xe7"). */
const char* ctxbench_uswitch_full_state_what(void);

/* The architecture and ABI the switch was written for ("x86_64 System V"). */
const char* ctxbench_uswitch_abi(void);

#ifdef __cplusplus
}
#endif

#endif /* CTXBENCH_USWITCH_H */
