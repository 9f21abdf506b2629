// x86_64 cycle-counter timer: rdtscp. rdtscp waits until every earlier
// instruction has executed before it reads the TSC, and the lfence after it
// keeps later instructions from starting before the read: a batch is fenced on
// both sides without cpuid's VM exit. TSC ticks are reference ticks at a fixed
// rate (not core cycles); the harness calibrates them against
// CLOCK_MONOTONIC_RAW and uses them only where the TSC is invariant.
#pragma once
#include <cpuid.h>

#include <cstdint>

namespace ctx::arch {

inline constexpr const char* cycle_timer_name = "rdtscp";

inline std::uint64_t read_cycle_timer() {
  unsigned aux = 0;
  std::uint64_t value = __builtin_ia32_rdtscp(&aux);
  __builtin_ia32_lfence();
  return value;
}

// The plain rdtsc with fences on both sides, offered as a probe of its own.
inline std::uint64_t read_tsc_fenced() {
  __builtin_ia32_lfence();
  std::uint64_t value = __builtin_ia32_rdtsc();
  __builtin_ia32_lfence();
  return value;
}

// CPUID.80000007H:EDX[8] says the TSC runs at a constant rate in every
// P-, C- and T-state; without it the TSC cannot time anything.
inline bool cycle_timer_usable(const char** why) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 8))) {
    *why = "TSC is not invariant (CPUID.80000007H:EDX[8] clear)";
    return false;
  }
  return true;
}

// A fixed frequency reported by hardware, 0 when the harness must calibrate.
inline double cycle_timer_hz() { return 0.0; }

// One step of a spin-wait: pause tells the core a spin loop is running (it
// saves power and, on an SMT core, gives the sibling thread the pipeline).
inline void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace ctx::arch
