// Chooses the one small per-arch header; probes include this, never an arch file.
#pragma once
#if defined(__x86_64__)
#include "os/arch/timer_x86_64.hpp"
#elif defined(__aarch64__)
#include "os/arch/timer_aarch64.hpp"
#elif defined(__riscv) && __riscv_xlen == 64
#include "os/arch/timer_riscv64.hpp"
#else
#include "os/arch/timer_portable.hpp"
#endif
