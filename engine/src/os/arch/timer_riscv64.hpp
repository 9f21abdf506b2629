// riscv64 timer: the rdtime pseudo-instruction (CSR time), which Linux lets
// U-mode read. Its rate (the platform's timebase) is not visible from user
// space, so the harness calibrates it against CLOCK_MONOTONIC_RAW. Some
// emulators trap on it; the harness tests it under a SIGILL guard first.
#pragma once
#include <cstdint>

namespace ctx::arch {

inline constexpr const char* cycle_timer_name = "rdtime";

inline std::uint64_t read_cycle_timer() {
  std::uint64_t value;
  asm volatile("fence\n\trdtime %0" : "=r"(value)::"memory");
  return value;
}

inline bool cycle_timer_usable(const char**) { return true; }
inline double cycle_timer_hz() { return 0.0; }

// One step of a spin-wait: Zihintpause's pause, encoded as the FENCE it is
// (pred=w, succ=none), so a core without the extension runs it as a fence.
inline void cpu_relax() { asm volatile(".4byte 0x0100000f" ::: "memory"); }

}  // namespace ctx::arch
