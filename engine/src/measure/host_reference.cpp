#include "measure/host_reference.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "model/stats.hpp"
#include "os/kernel_counters.hpp"

namespace ctx {

std::uint64_t reference_loop(std::uint64_t iterations) {
  std::uint64_t sum = 0;
  for (std::uint64_t k = 0; k < iterations; ++k) sum += static_cast<std::uint64_t>(syscall(SYS_getppid));
  return sum;
}

namespace {
volatile std::uint64_t reference_sink;
volatile std::uint64_t cpu_loop_sink = 88172645463325252ull;

std::uint64_t cpu_loop(std::uint64_t iterations, std::uint64_t x) {
  for (std::uint64_t k = 0; k < iterations; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

// The call loop's steps: small functions called through a table, so each
// step is an indirect call and a return whose target depends on the step
// before (the branch predictors, the return stack and the front end, as a
// switch path uses them).
[[gnu::noinline]] std::uint64_t call_step_a(std::uint64_t x) { return x * 0x9e3779b97f4a7c15ull + 1; }
[[gnu::noinline]] std::uint64_t call_step_b(std::uint64_t x) { return x ^ (x >> 29); }
[[gnu::noinline]] std::uint64_t call_step_c(std::uint64_t x) { return x + 0x632be59bd9b4e019ull; }
[[gnu::noinline]] std::uint64_t call_step_d(std::uint64_t x) { return (x << 7) | (x >> 57); }
using CallStep = std::uint64_t (*)(std::uint64_t);
CallStep volatile call_steps[4] = {call_step_a, call_step_b, call_step_c, call_step_d};
volatile std::uint64_t call_loop_sink = 0x2545f4914f6cdd1dull;

std::uint64_t call_loop(std::uint64_t iterations, std::uint64_t x) {
  for (std::uint64_t k = 0; k < iterations; ++k) x = call_steps[(x >> 17) & 3](x);
  return x;
}
}  // namespace

double time_cpu_loop(Clock& clock) {
  const std::uint64_t seed = cpu_loop_sink;
  const std::uint64_t start = clock.now();
  cpu_loop_sink = cpu_loop(cpu_loop_iterations, seed | 1);
  return clock.ticks_to_ns(clock.now() - start);
}

double time_call_loop(Clock& clock) {
  // Twice in a row, the second timed: the first warms the predictors and
  // the lines the sample before may have taken, so what is timed is the
  // core's state, not what the last workload left in it.
  call_loop_sink = call_loop(call_loop_iterations, call_loop_sink | 1);
  const std::uint64_t seed = call_loop_sink;
  const std::uint64_t start = clock.now();
  call_loop_sink = call_loop(call_loop_iterations, seed | 1);
  return clock.ticks_to_ns(clock.now() - start);
}

HostReference::HostReference(Clock& clock, double target_ns, double spread_s) : clock_(clock) {
  for (;;) {
    const std::uint64_t start = clock_.now();
    reference_sink = reference_loop(iterations_);
    const double elapsed = clock_.ticks_to_ns(clock_.now() - start);
    if (elapsed >= target_ns || iterations_ >= (1ull << 32)) break;
    iterations_ *= 2;
  }
  for (int i = 0; i < 51; ++i) time_loop();  // warm-up: caches, branch predictors, the CPU's clock
  // The host's slow spells last up to seconds, and its fast moments too: the
  // fastest of many timings in a row is one moment's, and every variant judged
  // against a best taken in a fast one is slowed (every sample set aside, on
  // every row), against a slow one never. So the best is the median of
  // timings spread over spread_s; after each pause (the CPU sleeps) the loop
  // runs twice and the second, warm, timing counts, as a sample's reference
  // runs on a busy CPU.
  const auto pause = std::chrono::duration<double>(spread_s / spread_timings);
  std::vector<double> spread;
  for (int i = 0; i < spread_timings; ++i) {
    if (spread_s > 0) std::this_thread::sleep_for(pause);
    time_loop();
    spread.push_back(time_loop());
  }
  best_ns_ = summarize(spread).median;
}

double HostReference::time_loop() {
  const std::uint64_t start = clock_.now();
  reference_sink = reference_loop(iterations_);
  return clock_.ticks_to_ns(clock_.now() - start);
}

double HostReference::time_once() { return time_loop(); }

std::string HostReference::describe() const {
  return fmt::format(
      "{} getppid system calls (kernel entry and exit, which every switch also makes), timed on the measuring "
      "task's CPU before each sample; a variant is slowed when the median of those times is over {:.2f}x their "
      "time when the run started (the median of {} timings spread over its first moments)",
      iterations_, slowed_ratio, spread_timings);
}

InterferenceAttempt judge_attempt(const std::vector<double>& reference_ns, double best_ns, double median) {
  InterferenceAttempt attempt;
  attempt.median = median;
  attempt.samples = reference_ns.size();
  attempt.reference_ns = reference_ns;
  if (reference_ns.empty() || best_ns <= 0) return attempt;
  attempt.reference_median_ns = summarize(reference_ns).median;
  const auto over =
      std::count_if(reference_ns.begin(), reference_ns.end(), [&](double t) { return t > slowed_ratio * best_ns; });
  attempt.slowed_share = static_cast<double>(over) / static_cast<double>(reference_ns.size());
  return attempt;
}

std::size_t attempt_to_keep(const std::vector<InterferenceAttempt>& attempts) {
  // An attempt the kernel's counters show interfered with loses to one they do not.
  auto interfered = [](const InterferenceAttempt& a) { return a.interfered_share > kept_interfered_limit; };
  std::size_t keep = 0;
  for (std::size_t i = 1; i < attempts.size(); ++i) {
    if (interfered(attempts[i]) != interfered(attempts[keep])) {
      if (!interfered(attempts[i])) keep = i;
    } else if (attempts[i].reference_median_ns < attempts[keep].reference_median_ns) {
      keep = i;
    }
  }
  return keep;
}

}  // namespace ctx
