/* Frame of switch_riscv64_lp64d.S (RISC-V psABI, LP64D, ELF). See frame.h.
 *
 * RISC-V ELF psABI, "Integer Register Convention" and "Floating-point Register
 * Convention": s0-s11 and sp are callee-saved (s0 is also the frame pointer),
 * ra is the return address; with the D extension under LP64D, fs0-fs11 are
 * callee-saved (all 64 bits). fcsr has thread storage duration (it is the C
 * floating-point environment of the thread), so the abi variant leaves it
 * alone; the full variant swaps it. sp is 16-byte aligned at every call.
 *
 * abi variant, at the saved stack pointer (16-byte aligned):
 *
 *   offset  saved     why
 *   +0      ra        where the context resumes (a new context: the trampoline)
 *   +8      s0 (fp)   callee-saved (a new context: 0, ends frame chains)
 *   +16     s1        callee-saved (a new context: its entry function)
 *   +24     s2        callee-saved (a new context: its entry's argument)
 *   +32     s3        callee-saved
 *   ...     s4-s10    callee-saved, 8 bytes apart
 *   +96     s11       callee-saved
 *   +104    fs0       callee-saved
 *   ...     fs1-fs10  callee-saved, 8 bytes apart
 *   +192    fs11      callee-saved
 *   +200    unused (keeps the frame a multiple of 16)
 *   +208    the context's own stack
 *
 * full variant: the same general-register frame (its fs slots unused: f0-f31
 * are saved whole), then below it, at the saved stack pointer:
 *
 *   +0      fcsr      +8 unused
 *   +16     f0, f1, ... f31 (8 bytes each)
 *   +272    the general-register frame
 *
 * The vector extension's state (if the hart has V) is not saved. */
#ifndef CTXBENCH_USWITCH_FRAME_RISCV64_H
#define CTXBENCH_USWITCH_FRAME_RISCV64_H

#define USWITCH_FRAME_RA 0
#define USWITCH_FRAME_S0 8
#define USWITCH_FRAME_FS0 104
#define USWITCH_FRAME_BYTES 208
#define USWITCH_STACK_ALIGN 16
#define USWITCH_REGBYTES 8

#define USWITCH_FULL_FCSR 0
#define USWITCH_FULL_F0 16
#define USWITCH_FULL_BYTES 272
#define USWITCH_FULL_ALIGN 16

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace ctxbench::uswitch {

struct Frame {
  void* ra;
  uint64_t s[12];  // s[n] is register sn
  uint64_t fs[12];
  uint64_t unused;
};
static_assert(offsetof(Frame, ra) == USWITCH_FRAME_RA);
static_assert(offsetof(Frame, s) == USWITCH_FRAME_S0);
static_assert(offsetof(Frame, s[11]) == USWITCH_FRAME_S0 + 11 * USWITCH_REGBYTES);
static_assert(offsetof(Frame, fs) == USWITCH_FRAME_FS0);
static_assert(offsetof(Frame, fs[11]) == USWITCH_FRAME_FS0 + 11 * USWITCH_REGBYTES);
static_assert(sizeof(Frame) == USWITCH_FRAME_BYTES);
static_assert(USWITCH_FRAME_BYTES % USWITCH_STACK_ALIGN == 0);

struct FullFrame {
  uint64_t fcsr;
  uint64_t unused;
  uint64_t f[32];
};
static_assert(offsetof(FullFrame, fcsr) == USWITCH_FULL_FCSR);
static_assert(offsetof(FullFrame, f) == USWITCH_FULL_F0);
static_assert(sizeof(FullFrame) == USWITCH_FULL_BYTES);
static_assert(USWITCH_FULL_BYTES % USWITCH_STACK_ALIGN == 0);

inline Frame initial_frame(void (*trampoline)(), void (*entry)(void*), void* arg) {
  Frame f{};
  f.ra = reinterpret_cast<void*>(trampoline);
  f.s[0] = 0;
  f.s[1] = reinterpret_cast<uint64_t>(entry);
  f.s[2] = reinterpret_cast<uint64_t>(arg);
  return f;
}

inline uint64_t full_reserve_bytes() { return USWITCH_FULL_BYTES; }
inline size_t full_state_bytes() { return 32 * 8 + 8; }  // f0-f31 and fcsr
inline const char* full_state_what() { return "f0-f31 and fcsr (vector state, if any, is not saved)"; }

// A new context starts with zeroed FP registers and its creator's fcsr, as a
// new thread inherits its creator's.
inline void init_full_frame(unsigned char* full, Frame*) {
  FullFrame f{};
  __asm__ volatile("frcsr %0" : "=r"(f.fcsr));
  memcpy(full, &f, sizeof f);
}

inline const char* abi_name() { return "riscv64 LP64D (ELF)"; }

}  // namespace ctxbench::uswitch
#endif /* __ASSEMBLER__ */

#endif /* CTXBENCH_USWITCH_FRAME_RISCV64_H */
