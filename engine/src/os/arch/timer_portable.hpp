// Portable fallback: no cycle timer; the harness uses clock_gettime.
#pragma once
#include <cstdint>

namespace ctx::arch {

inline constexpr const char* cycle_timer_name = "none";
inline std::uint64_t read_cycle_timer() { return 0; }
inline bool cycle_timer_usable(const char** why) {
  *why = "no cycle timer for this architecture";
  return false;
}
inline double cycle_timer_hz() { return 0.0; }
// One step of a spin-wait: no hint here, only a compiler barrier.
inline void cpu_relax() { asm volatile("" ::: "memory"); }

}  // namespace ctx::arch
