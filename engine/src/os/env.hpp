// Environment capture, once per run: what the figures depend on (CPU,
// topology, frequency policy, kernel, clocksource, virtualization,
// mitigations, scheduler, libc, compiler, build flags). Only reads files and
// CPUID; never changes a setting.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "os/timer.hpp"

namespace ctx {

nlohmann::json capture_environment(const std::string& run_id, const TimerInfo& timer, const std::string& timer_note);

}  // namespace ctx
