// See timer.hpp. Calibration pairs the cycle timer with CLOCK_MONOTONIC_RAW at
// both ends of a busy interval and divides; the reads at each end are taken
// back to back so the pairing error is one read's cost over the interval.
#include "os/timer.hpp"

#include <fmt/format.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "os/arch/cycle_timer.hpp"

namespace ctx {

std::uint64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t MonotonicRawClock::now() { return monotonic_raw_ns(); }

std::uint64_t CycleClock::now() { return arch::read_cycle_timer(); }

std::string CycleClock::name() const { return arch::cycle_timer_name; }

double calibrate_ns_per_tick(std::uint64_t (*read)(), double seconds) {
  const std::uint64_t ns0 = monotonic_raw_ns();
  const std::uint64_t t0 = read();
  const auto span = static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t ns1 = ns0;
  while (ns1 - ns0 < span) ns1 = monotonic_raw_ns();
  const std::uint64_t t1 = read();
  if (t1 <= t0) return 0.0;
  return static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0);
}

namespace {
sigjmp_buf probe_jump;
void on_sigill(int) { siglongjmp(probe_jump, 1); }
}  // namespace

bool cycle_timer_readable() {
  struct sigaction guard {
  }, old_ill{}, old_segv{};
  guard.sa_handler = on_sigill;
  sigemptyset(&guard.sa_mask);
  sigaction(SIGILL, &guard, &old_ill);
  sigaction(SIGSEGV, &guard, &old_segv);
  bool ok = false;
  if (sigsetjmp(probe_jump, 1) == 0) {
    volatile std::uint64_t a = arch::read_cycle_timer();
    volatile std::uint64_t b = arch::read_cycle_timer();
    ok = b >= a;
  }
  sigaction(SIGILL, &old_ill, nullptr);
  sigaction(SIGSEGV, &old_segv, nullptr);
  return ok;
}

std::unique_ptr<Clock> make_best_clock(double calibrate_seconds, std::string* note) {
  const char* why = nullptr;
  if (!arch::cycle_timer_usable(&why)) {
    *note = fmt::format("{}; using clock_gettime", why);
    return std::make_unique<MonotonicRawClock>();
  }
  if (!cycle_timer_readable()) {
    *note = fmt::format("{} traps here; using clock_gettime", arch::cycle_timer_name);
    return std::make_unique<MonotonicRawClock>();
  }
  double ns_per_tick = 0;
  if (const double hz = arch::cycle_timer_hz(); hz > 0) {
    ns_per_tick = 1e9 / hz;
  } else {
    ns_per_tick = calibrate_ns_per_tick(arch::read_cycle_timer, calibrate_seconds);
  }
  if (!(ns_per_tick > 0)) {
    *note = fmt::format("{} did not advance during calibration; using clock_gettime", arch::cycle_timer_name);
    return std::make_unique<MonotonicRawClock>();
  }
  return std::make_unique<CycleClock>(ns_per_tick);
}

TimerInfo characterize(Clock& clock, int reads) {
  std::vector<std::uint64_t> ticks(static_cast<std::size_t>(reads));
  for (auto& t : ticks) t = clock.now();  // warm the code path and the vector
  for (auto& t : ticks) t = clock.now();
  std::vector<double> deltas;
  deltas.reserve(ticks.size());
  double smallest = 0;
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    if (ticks[i] < ticks[i - 1]) continue;  // a counter that stepped back is ignored
    const double ns = clock.ticks_to_ns(ticks[i] - ticks[i - 1]);
    deltas.push_back(ns);
    if (ns > 0 && (smallest == 0 || ns < smallest)) smallest = ns;
  }
  TimerInfo info;
  info.source = clock.name();
  info.ns_per_tick = clock.ticks_to_ns(1000000) / 1e6;
  if (!deltas.empty()) {
    auto mid = deltas.begin() + static_cast<std::ptrdiff_t>(deltas.size() / 2);
    std::nth_element(deltas.begin(), mid, deltas.end());
    info.overhead_ns = *mid;
  }
  info.resolution_ns = smallest;
  return info;
}

}  // namespace ctx
