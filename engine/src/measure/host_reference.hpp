// The host reference: a fixed run of getppid system calls timed on the
// measuring task's CPU before every timed sample. Its work never changes, so
// when it runs slower than its best in this run, something outside the
// measurement slowed the CPU's kernel path while the probe was measured:
// another tenant on the same physical core (an SMT sibling on the host), a
// lower clock, or the hypervisor taking the vCPU. A system call is the
// reference because the switch figures spend their time in the kernel: an
// integer loop slows on a busy SMT sibling while kernel paths often do not.
// The harness sets aside and re-takes a sample whose reference ran slowed,
// records how much slower it ran during each attempt of a variant and, when
// the attempt was still slowed, measures the variant again later in the run
// (up to --retries times) and keeps the attempt during which the reference
// ran fastest. It never chooses by the probe's own figure. The best is
// established once, when the engine starts, and fixed from then on: a best
// that kept falling would tighten the threshold as the run went on, and the
// first variants would be judged by another rule than the last. It is a
// median, not the fastest: the fastest of many timings is one fast moment's,
// and against it every sample of every variant ran slowed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/interference.hpp"
#include "os/timer.hpp"

namespace ctx {

// Makes `iterations` getppid system calls; returns the sum of their results
// so the calls cannot be removed.
std::uint64_t reference_loop(std::uint64_t iterations);

// The plain loop: the CPU's own speed, which no change to the system touches
// (no memory beyond registers, no system call, the same code in every run of
// one engine build): a fixed chain of cpu_loop_iterations xorshift steps,
// each depending on the one before. Timed on `clock` before every sample
// (outside its timing); the fastest timing over a variant's kept samples is
// its `derived.cpu_loop_ns`, and compare sets a run whose loop ran slowed
// against the machine's earlier runs apart (a host whose other tenants slow
// this vCPU as a whole). Returns ns.
inline constexpr std::uint64_t cpu_loop_iterations = 2048;
double time_cpu_loop(Clock& clock);

// The call loop: call_loop_iterations indirect calls through a table of four
// small functions, each call's target picked by the result of the one
// before. No system call and no memory beyond a few lines, but the branch
// predictors, the return stack and the front end, which the plain loop
// leaves alone: on a vCPU whose host core is shared (a busy sibling thread
// on the host) it runs slower while the plain loop does not, and so do the
// switch paths. Timed beside the plain loop before every sample; the fastest
// timing over a variant's kept samples is its `derived.cpu_calls_ns` (the
// median moved with what each sample's workload left in the predictors).
// Recorded for the reader and for a later rule; compare does not judge by it
// yet (docs/accuracy.md says why). Returns ns.
inline constexpr std::uint64_t call_loop_iterations = 1024;
double time_call_loop(Clock& clock);

class HostReference {
 public:
  // Calibrates the loop to about `target_ns` on `clock` and establishes its
  // best time: after 51 timings in a row (a warm-up), the median of
  // `spread_timings` more spread over `spread_s` seconds (each the second of
  // two in a row). The best does not change after this.
  static constexpr int spread_timings = 20;
  explicit HostReference(Clock& clock, double target_ns = 20000, double spread_s = 1.0);
  // Times one run of the loop (ns); the best stays as established.
  double time_once();
  double best_ns() const { return best_ns_; }
  std::uint64_t iterations() const { return iterations_; }
  std::string describe() const;

 private:
  double time_loop();
  Clock& clock_;
  std::uint64_t iterations_ = 1;
  double best_ns_ = 0;
};

// From the reference times taken before each sample of one attempt.
InterferenceAttempt judge_attempt(const std::vector<double>& reference_ns, double best_ns, double median);

// The attempt to keep: the one whose reference ran fastest (the first on a
// tie), among those the kernel's counters do not call interfered with when any.
std::size_t attempt_to_keep(const std::vector<InterferenceAttempt>& attempts);

}  // namespace ctx
