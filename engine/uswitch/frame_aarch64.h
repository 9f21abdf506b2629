/* Frame of switch_aarch64_aapcs64.S (Arm AAPCS64, ELF). See frame.h.
 *
 * AAPCS64 (Procedure Call Standard for the Arm 64-bit Architecture), 6.1.1:
 * x19-x28 are callee-saved, x29 is the frame pointer, x30 the link register;
 * 6.1.2: v8-v15 are callee-saved, but only their low 64 bits (d8-d15). SP
 * must be 16-byte aligned whenever it is used to access memory (and Linux
 * makes that a fault). FPCR/FPSR are not part of the callee-saved set, so the
 * abi variant leaves them alone; the full variant swaps them.
 *
 * abi variant, at the saved stack pointer (16-byte aligned):
 *
 *   offset  saved     why
 *   +0      x19       callee-saved (a new context: its entry function)
 *   +8      x20       callee-saved (a new context: its entry's argument)
 *   +16     x21       callee-saved
 *   +24     x22       callee-saved
 *   +32     x23       callee-saved
 *   +40     x24       callee-saved
 *   +48     x25       callee-saved
 *   +56     x26       callee-saved
 *   +64     x27       callee-saved
 *   +72     x28       callee-saved
 *   +80     x29 (fp)  callee-saved (a new context: 0, ends frame chains)
 *   +88     x30 (lr)  where the context resumes (a new context: the trampoline)
 *   +96     d8        callee-saved (low half of v8)
 *   +104    d9        ..
 *   +112    d10
 *   +120    d11
 *   +128    d12
 *   +136    d13
 *   +144    d14
 *   +152    d15
 *   +160    the context's own stack
 *
 * full variant: the same general-register frame (its d8-d15 slots unused: the
 * q registers hold them whole), then below it, at the saved stack pointer:
 *
 *   +0      FPCR      +8 FPSR
 *   +16     q0, q1, ... q31 (16 bytes each)
 *   +528    the general-register frame */
#ifndef CTXBENCH_USWITCH_FRAME_AARCH64_H
#define CTXBENCH_USWITCH_FRAME_AARCH64_H

#define USWITCH_FRAME_X19 0
#define USWITCH_FRAME_X21 16
#define USWITCH_FRAME_X23 32
#define USWITCH_FRAME_X25 48
#define USWITCH_FRAME_X27 64
#define USWITCH_FRAME_X29 80
#define USWITCH_FRAME_X30 88
#define USWITCH_FRAME_D8 96
#define USWITCH_FRAME_D10 112
#define USWITCH_FRAME_D12 128
#define USWITCH_FRAME_D14 144
#define USWITCH_FRAME_BYTES 160
#define USWITCH_STACK_ALIGN 16

#define USWITCH_FULL_FPCR 0
#define USWITCH_FULL_FPSR 8
#define USWITCH_FULL_Q0 16
#define USWITCH_FULL_BYTES 528
#define USWITCH_FULL_ALIGN 16

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace ctxbench::uswitch {

struct Frame {
  uint64_t x19, x20, x21, x22, x23, x24, x25, x26, x27, x28;
  uint64_t x29;
  void* x30;
  uint64_t d8, d9, d10, d11, d12, d13, d14, d15;
};
static_assert(offsetof(Frame, x19) == USWITCH_FRAME_X19);
static_assert(offsetof(Frame, x21) == USWITCH_FRAME_X21);
static_assert(offsetof(Frame, x23) == USWITCH_FRAME_X23);
static_assert(offsetof(Frame, x25) == USWITCH_FRAME_X25);
static_assert(offsetof(Frame, x27) == USWITCH_FRAME_X27);
static_assert(offsetof(Frame, x29) == USWITCH_FRAME_X29);
static_assert(offsetof(Frame, x30) == USWITCH_FRAME_X30);
static_assert(offsetof(Frame, d8) == USWITCH_FRAME_D8);
static_assert(offsetof(Frame, d10) == USWITCH_FRAME_D10);
static_assert(offsetof(Frame, d12) == USWITCH_FRAME_D12);
static_assert(offsetof(Frame, d14) == USWITCH_FRAME_D14);
static_assert(sizeof(Frame) == USWITCH_FRAME_BYTES);
static_assert(USWITCH_FRAME_BYTES % USWITCH_STACK_ALIGN == 0);

struct FullFrame {
  uint64_t fpcr, fpsr;
  unsigned char q[32][16];
};
static_assert(offsetof(FullFrame, fpcr) == USWITCH_FULL_FPCR);
static_assert(offsetof(FullFrame, fpsr) == USWITCH_FULL_FPSR);
static_assert(offsetof(FullFrame, q) == USWITCH_FULL_Q0);
static_assert(sizeof(FullFrame) == USWITCH_FULL_BYTES);
static_assert(USWITCH_FULL_BYTES % USWITCH_STACK_ALIGN == 0);

inline Frame initial_frame(void (*trampoline)(), void (*entry)(void*), void* arg) {
  Frame f{};
  f.x19 = reinterpret_cast<uint64_t>(entry);
  f.x20 = reinterpret_cast<uint64_t>(arg);
  f.x29 = 0;
  f.x30 = reinterpret_cast<void*>(trampoline);
  return f;
}

inline uint64_t full_reserve_bytes() { return USWITCH_FULL_BYTES; }
inline size_t full_state_bytes() { return sizeof(FullFrame); }
inline const char* full_state_what() { return "q0-q31, FPCR and FPSR (SVE state, if any, is not saved)"; }

// A new context starts with zeroed vector registers and its creator's FPCR
// and FPSR, as a new thread inherits its creator's.
inline void init_full_frame(unsigned char* full, Frame*) {
  FullFrame f{};
  __asm__ volatile("mrs %0, fpcr" : "=r"(f.fpcr));
  __asm__ volatile("mrs %0, fpsr" : "=r"(f.fpsr));
  memcpy(full, &f, sizeof f);
}

inline const char* abi_name() { return "aarch64 AAPCS64 (ELF)"; }

}  // namespace ctxbench::uswitch
#endif /* __ASSEMBLER__ */

#endif /* CTXBENCH_USWITCH_FRAME_AARCH64_H */
