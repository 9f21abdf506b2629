// What a record says of interference, the types and rules the harness's
// judges share with the record (record.hpp): why a sample was set aside, how
// the variant's tasks share their CPUs, one sample's kernel counters and the
// limits they are judged by (kernel_counters.hpp reads and judges them), and
// one attempt's host reference and when it counts as slowed
// (host_reference.hpp times it).
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace ctx {

// Why a sample was set aside; the record's closed set (schema: set_aside_reason).
enum class SetAsideReason {
  host_reference,  // the host reference timed before it ran slowed (host_reference.hpp)
  cpu_taken,       // another task, or the host, held the variant's CPU for part of it
  preempted,       // a task of the variant was switched out involuntarily
  steal,           // the hypervisor reported time stolen from a CPU of the variant
};
const char* set_aside_reason_name(SetAsideReason reason);
inline constexpr int set_aside_reason_count = 4;

// How the variant's tasks share its CPUs (the rule in kernel_counters.hpp).
enum class Sharing { one_cpu, own_cpus, unknown };
const char* sharing_name(Sharing sharing);

// One sample's counters: the snapshot after less the one before.
struct SampleCounters {
  double wall_ns = 0;
  double exec_ns = 0;       // every task's CPU time, summed
  double run_delay_ns = 0;  // every task's run-queue wait, summed
  long involuntary = 0;
  double steal_ns = 0;
  // The partners' (every task but the first) switches in: each is one switch
  // out of it, a sleep or a preemption, give or take the one at an edge.
  long partner_runs = 0;
  long counted = 0;  // samples whose counters were read (1 for one sample; summed)
  SampleCounters& operator+=(const SampleCounters& other);
};

// The share of a sample's wall time its tasks did not run on their one CPU,
// over which the sample is set aside (Sharing::one_cpu). A quiet CPU gives
// under 1% (the tick and the switches' own accounting gaps; docs/accuracy.md).
inline constexpr double other_share_limit = 0.03;

// The share of a sample's wall time its tasks, each on a CPU of its own, may
// wait on their run queues before it is set aside (Sharing::own_cpus). On
// this project's 2-vCPU KVM guest a quiet cross-CPU variant's tasks waited
// 0.1-2% of the time (a few variants up to 20%, from single samples), beside
// stress-ng --cpu 1 35-99% (docs/notes/2026-11-26-interference.md).
inline constexpr double own_cpus_wait_limit = 0.10;

// Share of a variant's kept samples that may carry interference (the rule
// would have set them aside, but the re-takes ran out) before the variant
// counts as slowed and its verdict is suspect (`interference`): past it, the
// median may be one of them.
inline constexpr double kept_interfered_limit = 0.2;

// A median reference time this many times the best counts as slowed.
inline constexpr double slowed_ratio = 1.20;

// One measurement of a variant: its median, and how the reference ran.
struct InterferenceAttempt {
  double median = 0;               // the probe's median over this attempt's samples
  double reference_median_ns = 0;  // median time of the reference over its samples
  double slowed_share = 0;         // share of samples whose reference ran over slowed_ratio x best
  std::size_t samples = 0;
  std::vector<double> reference_ns;        // the reference's times, one per sample (not in the record)
  std::size_t set_aside = 0;               // samples taken while the reference ran slowed, and taken again
  std::optional<double> set_aside_median;  // their median, in the record's unit
  double interfered_share = 0;             // kept samples the kernel's counters show interfered with, over kept
  // The clean budget ran out before the samples asked for were clean, and the
  // ones filled in could move the median out of its interval (clean_enough;
  // not in the record).
  bool short_of_clean = false;
};

// True when the attempt's median reference time is over slowed_ratio x best,
// when the clean budget ran out before its samples were clean enough (the
// host was busy for most of the attempt, whatever the best says), or
// when over kept_interfered_limit of its kept samples still carry what the
// kernel's counters call interference (kernel_counters.hpp).
bool slowed(const InterferenceAttempt& attempt, double best_ns);

}  // namespace ctx
