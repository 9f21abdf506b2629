// aarch64 timer: the generic timer's virtual count, cntvct_el0, readable at
// EL0 on Linux. The isb keeps the read from being hoisted above the batch.
// Its frequency is published in cntfrq_el0 (often 24-100 MHz, so a batch
// must last microseconds for the count to resolve it).
#pragma once
#include <cstdint>

namespace ctx::arch {

inline constexpr const char* cycle_timer_name = "cntvct_el0";

inline std::uint64_t read_cycle_timer() {
  std::uint64_t value;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(value)::"memory");
  return value;
}

inline bool cycle_timer_usable(const char**) { return true; }

inline double cycle_timer_hz() {
  std::uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return static_cast<double>(hz);
}

// One step of a spin-wait: the yield hint.
inline void cpu_relax() { asm volatile("yield" ::: "memory"); }

}  // namespace ctx::arch
