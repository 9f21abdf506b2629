/* Frame of switch_x86_64_sysv.S (System V AMD64 psABI, ELF). See frame.h.
 *
 * abi variant, at the saved stack pointer (16-byte aligned + 8):
 *
 *   offset  saved                         why
 *   +0      MXCSR (32 bits)               its control bits are callee-saved (psABI 3.2.1)
 *   +4      x87 control word (16 bits)    callee-saved (psABI 3.2.1); +6..+7 unused
 *   +8      r15                           callee-saved
 *   +16     r14                           callee-saved
 *   +24     r13                           callee-saved (a new context: its entry's argument)
 *   +32     r12                           callee-saved (a new context: its entry function)
 *   +40     rbx                           callee-saved
 *   +48     rbp                           callee-saved (a new context: 0, ends frame chains)
 *   +56     return address                pushed by the call; where the context resumes
 *   +64     the context's own stack
 *
 * full variant: the same general-register frame (its MXCSR/x87 slots unused,
 * XSAVE holds both), then below it, at the saved stack pointer (64-aligned):
 *
 *   +0      address of the general-register frame
 *   +8..63  unused
 *   +64     XSAVE area (standard form) of the components enabled in XCR0
 *           that this process may use; its size (from CPUID leaf 0DH) is
 *           known only at run time; its header (XSTATE_BV, XCOMP_BV) 512
 *           bytes in. */
#ifndef CTXBENCH_USWITCH_FRAME_X86_64_H
#define CTXBENCH_USWITCH_FRAME_X86_64_H

#define USWITCH_FRAME_MXCSR 0
#define USWITCH_FRAME_FCW 4
#define USWITCH_FRAME_R15 8
#define USWITCH_FRAME_R14 16
#define USWITCH_FRAME_R13 24
#define USWITCH_FRAME_R12 32
#define USWITCH_FRAME_RBX 40
#define USWITCH_FRAME_RBP 48
#define USWITCH_FRAME_RET 56
#define USWITCH_FRAME_BYTES 64
#define USWITCH_STACK_ALIGN 16

#define USWITCH_FULL_GPR_FRAME 0
#define USWITCH_FULL_AREA 64
#define USWITCH_FULL_ALIGN 64
/* The XSAVE header, 512 bytes into the area (Intel SDM vol. 1, 13.4.2). */
#define USWITCH_FULL_XSTATE_BV (USWITCH_FULL_AREA + 512)
#define USWITCH_FULL_XCOMP_BV (USWITCH_FULL_AREA + 520)

#ifndef __ASSEMBLER__
#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

/* Bytes the full variant subtracts below the general-register frame (header +
 * XSAVE area, before aligning down to 64); 0 when XSAVE is not usable. Read by
 * the assembly; defined (and computed once, at start-up) in uswitch.cpp. */
extern "C" __attribute__((visibility("hidden"))) uint64_t ctxbench_uswitch_full_reserve;
/* The XSAVE/XRSTOR requested-feature bitmap (EDX:EAX) of the full variant:
 * XCR0's components that this process may use (see xsave_info()). */
extern "C" __attribute__((visibility("hidden"))) uint64_t ctxbench_uswitch_xsave_mask;

namespace ctxbench::uswitch {

struct Frame {
  uint32_t mxcsr;
  uint16_t fcw;
  uint16_t unused;
  uint64_t r15, r14, r13, r12, rbx, rbp;
  void* ret;
};
static_assert(offsetof(Frame, mxcsr) == USWITCH_FRAME_MXCSR);
static_assert(offsetof(Frame, fcw) == USWITCH_FRAME_FCW);
static_assert(offsetof(Frame, r15) == USWITCH_FRAME_R15);
static_assert(offsetof(Frame, r14) == USWITCH_FRAME_R14);
static_assert(offsetof(Frame, r13) == USWITCH_FRAME_R13);
static_assert(offsetof(Frame, r12) == USWITCH_FRAME_R12);
static_assert(offsetof(Frame, rbx) == USWITCH_FRAME_RBX);
static_assert(offsetof(Frame, rbp) == USWITCH_FRAME_RBP);
static_assert(offsetof(Frame, ret) == USWITCH_FRAME_RET);
static_assert(sizeof(Frame) == USWITCH_FRAME_BYTES);
// The call's return address sits just above the frame the switch builds, so
// the stack pointer after the switch's final pop is 16-aligned when the frame
// is: USWITCH_FRAME_BYTES must be a multiple of the stack alignment.
static_assert(USWITCH_FRAME_BYTES % USWITCH_STACK_ALIGN == 0);

// A new context inherits its creator's FP control state, as a new thread
// inherits its creator's (clone copies the FPU state): the whole MXCSR, flags
// included, and the x87 control word. Besides being the least surprising
// start, it keeps a ping-pong's two contexts on the same MXCSR value: LDMXCSR
// of a value different from the current one is far slower than reloading the
// same one (see docs/uswitch.md).
inline uint32_t current_mxcsr() { return __builtin_ia32_stmxcsr(); }
inline uint16_t current_fcw() {
  uint16_t fcw = 0;
  __asm__ volatile("fnstcw %0" : "=m"(fcw));
  return fcw;
}

inline Frame initial_frame(void (*trampoline)(), void (*entry)(void*), void* arg) {
  Frame f{};
  f.mxcsr = current_mxcsr();
  f.fcw = current_fcw();
  f.r12 = reinterpret_cast<uint64_t>(entry);
  f.r13 = reinterpret_cast<uint64_t>(arg);
  f.rbp = 0;
  f.ret = reinterpret_cast<void*>(trampoline);
  return f;
}

struct XsaveInfo {
  uint64_t area_bytes = 0;  // 0: XSAVE not usable
  uint64_t xcr0 = 0;
  uint64_t mask = 0;  // the components the full variant saves
};

// The components the kernel would save for this process: those enabled in
// XCR0 that the process may use. Since Linux 5.16 AMX tile data (XCR0 bits
// 17-18, 8 KiB) needs a per-process permission (arch_prctl
// ARCH_REQ_XCOMP_PERM); until a process asks, the kernel does not switch it
// and XFD traps its use, so a "full" switch must not count it either.
// ARCH_GET_XCOMP_PERM says what is permitted; older kernels lack it and have
// no such components.
inline XsaveInfo xsave_info() {
  XsaveInfo info;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return info;
  constexpr unsigned osxsave = 1u << 27;  // the OS enabled XSAVE (CR4.OSXSAVE)
  if (!(ecx & osxsave)) return info;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  info.xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  info.mask = info.xcr0;
  constexpr long arch_get_xcomp_perm = 0x1022;
  uint64_t permitted = 0;
  if (syscall(SYS_arch_prctl, arch_get_xcomp_perm, &permitted) == 0) info.mask &= permitted;
  // Standard form: the legacy region and header (576 bytes), then each
  // component at the offset CPUID leaf 0DH gives it.
  uint64_t end = 576;
  for (unsigned component = 2; component < 63; ++component) {
    if (!(info.mask >> component & 1)) continue;
    __cpuid_count(0xD, component, eax, ebx, ecx, edx);  // EAX: size, EBX: offset
    if (ebx + eax > end) end = ebx + eax;
  }
  info.area_bytes = (end + 63) & ~uint64_t{63};
  return info;
}

// What the full variant reserves below the general-register frame: header +
// XSAVE area (before aligning down to 64); 0 when XSAVE is not usable.
inline uint64_t compute_full_reserve() {
  const XsaveInfo info = xsave_info();
  return info.area_bytes ? USWITCH_FULL_AREA + info.area_bytes : 0;
}

inline uint64_t full_reserve_bytes() { return ctxbench_uswitch_full_reserve; }

inline size_t full_state_bytes() {
  return ctxbench_uswitch_full_reserve ? ctxbench_uswitch_full_reserve - USWITCH_FULL_AREA : 0;
}

inline const char* full_state_what() {
  static char what[160];
  const XsaveInfo info = xsave_info();
  if (!info.area_bytes) return "XSAVE is not enabled by the OS here (CPUID.1:ECX.OSXSAVE clear)";
  std::snprintf(what, sizeof what,
                "XSAVE64/XRSTOR64 of components %#llx (XCR0=%#llx less what this process may not use), a "
                "%llu-byte area",
                static_cast<unsigned long long>(info.mask), static_cast<unsigned long long>(info.xcr0),
                static_cast<unsigned long long>(info.area_bytes));
  return what;
}

// A new context's full frame: the general-register frame's address, and an
// XSAVE area whose header marks only the x87 component as present
// (XSTATE_BV = 1): the x87 registers empty with the creator's control word,
// every other component (SSE, AVX, ...) in its initial state, zeroed. MXCSR
// is loaded from the area whenever SSE or AVX is requested, so it must be
// valid: the creator's, as in the abi variant.
inline void init_full_frame(unsigned char* full, Frame* gpr) {
  memcpy(full + USWITCH_FULL_GPR_FRAME, &gpr, sizeof gpr);
  unsigned char* area = full + USWITCH_FULL_AREA;
  memset(area, 0, full_state_bytes());
  const uint16_t fcw = current_fcw();
  const uint32_t mxcsr = current_mxcsr();
  const uint64_t x87_present = 1;
  memcpy(area + 0, &fcw, sizeof fcw);                    // legacy region: FCW at byte 0 (FSW, FTW = 0: all empty)
  memcpy(area + 24, &mxcsr, sizeof mxcsr);               // MXCSR at byte 24
  memcpy(area + 512, &x87_present, sizeof x87_present);  // header: XSTATE_BV
}

inline const char* abi_name() { return "x86_64 System V (ELF)"; }

}  // namespace ctxbench::uswitch
#endif /* __ASSEMBLER__ */

#endif /* CTXBENCH_USWITCH_FRAME_X86_64_H */
