// The names and rules of interference.hpp.
#include "model/interference.hpp"

namespace ctx {

const char* set_aside_reason_name(SetAsideReason reason) {
  switch (reason) {
    case SetAsideReason::host_reference: return "host_reference";
    case SetAsideReason::cpu_taken: return "cpu_taken";
    case SetAsideReason::preempted: return "preempted";
    case SetAsideReason::steal: return "steal";
  }
  return "host_reference";
}

const char* sharing_name(Sharing sharing) {
  switch (sharing) {
    case Sharing::one_cpu: return "one_cpu";
    case Sharing::own_cpus: return "own_cpus";
    case Sharing::unknown: return "unknown";
  }
  return "unknown";
}

SampleCounters& SampleCounters::operator+=(const SampleCounters& other) {
  wall_ns += other.wall_ns;
  exec_ns += other.exec_ns;
  run_delay_ns += other.run_delay_ns;
  involuntary += other.involuntary;
  steal_ns += other.steal_ns;
  partner_runs += other.partner_runs;
  counted += other.counted;
  return *this;
}

bool slowed(const InterferenceAttempt& attempt, double best_ns) {
  return attempt.short_of_clean || attempt.interfered_share > kept_interfered_limit ||
         (best_ns > 0 && attempt.reference_median_ns > slowed_ratio * best_ns);
}

}  // namespace ctx
