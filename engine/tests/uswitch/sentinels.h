/* The register snapshot the uswitch correctness tests exchange with their
 * assembly helpers (sentinels_<arch>.S): an array of 64-bit slots, shared by
 * the assembly (these offsets) and checks.cpp.
 *
 * ctxbench_uswitch_test_sentinels(switch_fn, save, resume, in, out) saves its
 * caller's registers, loads every slot of `in` into its register, calls
 * switch_fn(save, resume, 0), and when that returns stores the registers into
 * `out` (and its stack pointer before and after the call), then restores its
 * caller's registers and returns. Another context doing the same with other
 * values in between is what the switch must not let leak through. */
#ifndef CTXBENCH_USWITCH_SENTINELS_H
#define CTXBENCH_USWITCH_SENTINELS_H

#define SENT_GPR 0        /* callee-saved general registers, in the order below */
#define SENT_CTL 12       /* FP control: x86 MXCSR | x87 CW << 32; aarch64 FPCR; riscv64 fcsr */
#define SENT_SP_BEFORE 13 /* out only: sp just before the switch was called */
#define SENT_SP_AFTER 14  /* out only: sp just after it returned */
#define SENT_VEC 16       /* every FP/vector register (see below) */
#define SENT_SLOTS 80
#define SENT_BYTES(slot) ((slot)*8)

#if defined(__x86_64__)
/* GPR: rbx rbp r12 r13 r14 r15; VEC: xmm0-xmm15, two slots each (low, high). */
#define SENT_GPR_COUNT 6
#define SENT_VEC_COUNT 32
#define SENT_CTL_ABI_PRESERVED 1 /* psABI: MXCSR control bits and the x87 CW are callee-saved */
#define SENT_BROKEN_GPR 2        /* r12: the register ctxbench_uswitch_test_broken_switch corrupts */
#elif defined(__aarch64__)
/* GPR: x19-x29; VEC: q0-q31, two slots each (low = dN, high). */
#define SENT_GPR_COUNT 11
#define SENT_VEC_COUNT 64
#define SENT_CTL_ABI_PRESERVED 0 /* FPCR is not in AAPCS64's callee-saved set */
#define SENT_BROKEN_GPR 2        /* x21 */
#elif defined(__riscv)
/* GPR: s0-s11; VEC: f0-f31, one slot each. */
#define SENT_GPR_COUNT 12
#define SENT_VEC_COUNT 32
#define SENT_CTL_ABI_PRESERVED 0 /* fcsr has thread storage duration */
#define SENT_BROKEN_GPR 5        /* s5 */
#endif

#ifndef __ASSEMBLER__
#include <cstdint>

namespace ctxbench::uswitch_test {

// The FP/vector slots the ABI makes callee-saved (what the abi variant must
// preserve); the full variant must preserve them all.
inline bool vec_slot_abi_preserved(int slot) {
#if defined(__x86_64__)
  (void)slot;
  return false;  // every xmm register is caller-saved
#elif defined(__aarch64__)
  return slot % 2 == 0 && slot / 2 >= 8 && slot / 2 <= 15;  // d8-d15: low halves of v8-v15
#elif defined(__riscv)
  return slot == 8 || slot == 9 || (slot >= 18 && slot <= 27);  // fs0-fs1 = f8-f9, fs2-fs11 = f18-f27
#else
  (void)slot;
  return false;
#endif
}

// Two FP control values, each unlike the defaults and unlike the other:
// directed rounding modes (and flush-to-zero on aarch64), no traps enabled.
inline std::uint64_t control_sentinel(int which) {
#if defined(__x86_64__)
  // MXCSR: all exceptions masked, RC = toward zero (0x7F80) / down (0x3F80);
  // x87 CW: all masked, 64-bit precision, RC = toward zero (0x0F7F) / down (0x077F).
  return which == 0 ? (0x0F7Full << 32 | 0x7F80) : (0x077Full << 32 | 0x3F80);
#elif defined(__aarch64__)
  // FPCR: RMode = toward +inf (bits 23:22 = 01) / toward zero with FZ (11, bit 24).
  return which == 0 ? 0x00400000ull : 0x01C00000ull;
#elif defined(__riscv)
  // fcsr: frm = RTZ with NX set (0x21) / frm = RDN with OF set (0x44).
  return which == 0 ? 0x21ull : 0x44ull;
#else
  (void)which;
  return 0;
#endif
}

}  // namespace ctxbench::uswitch_test

extern "C" {
typedef void* (*ctxbench_uswitch_fn)(void** save, void* resume, void* value);
void ctxbench_uswitch_test_sentinels(ctxbench_uswitch_fn switch_fn, void** save, void* resume, const std::uint64_t* in,
                                     std::uint64_t* out);
// ctxbench_uswitch, then one bit of callee-saved register SENT_BROKEN_GPR
// flipped: a deliberately broken switch the sentinel test must catch.
void* ctxbench_uswitch_test_broken_switch(void** save, void* resume, void* value);
// An entry function that records its stack pointer at entry in
// ctxbench_uswitch_test_entry_sp, then tail-calls ctxbench_uswitch_test_entry(arg).
void ctxbench_uswitch_test_entry_probe(void* arg);
extern std::uintptr_t ctxbench_uswitch_test_entry_sp;
void ctxbench_uswitch_test_entry(void* arg);
}
#endif /* __ASSEMBLER__ */

#endif /* CTXBENCH_USWITCH_SENTINELS_H */
