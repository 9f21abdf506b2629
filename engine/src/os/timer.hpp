// The harness's clocks. A Clock reads raw ticks and converts tick differences
// to nanoseconds; the harness owns one for a whole run. The best clock is the
// architecture's cycle timer when it is usable (x86: invariant TSC), its rate
// calibrated against CLOCK_MONOTONIC_RAW; otherwise clock_gettime itself.
// characterize() measures what a read costs and the smallest step it shows,
// which the harness subtracts from, and compares with, every sample.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace ctx {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::uint64_t now() = 0;
  virtual double ticks_to_ns(std::uint64_t ticks) const = 0;
  virtual std::string name() const = 0;
  // True when ticks are TSC-like reference ticks worth reporting per op.
  virtual bool counts_ticks() const { return false; }
};

struct TimerInfo {
  std::string source;
  double overhead_ns = 0;    // cost of one read, as seen between two reads
  double resolution_ns = 0;  // smallest non-zero step between two reads
  double ns_per_tick = 1;
  std::string note;  // why a fallback was chosen, if one was
};

// clock_gettime(CLOCK_MONOTONIC_RAW): never stepped or slewed by NTP.
class MonotonicRawClock final : public Clock {
 public:
  std::uint64_t now() override;
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks); }
  std::string name() const override { return "clock_gettime(CLOCK_MONOTONIC_RAW)"; }
};

class CycleClock final : public Clock {
 public:
  explicit CycleClock(double ns_per_tick) : ns_per_tick_(ns_per_tick) {}
  std::uint64_t now() override;
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks) * ns_per_tick_; }
  std::string name() const override;
  bool counts_ticks() const override { return true; }
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  double ns_per_tick_;
};

// Ticks per nanosecond of `read` against CLOCK_MONOTONIC_RAW over `seconds`.
double calibrate_ns_per_tick(std::uint64_t (*read)(), double seconds);

// Picks the best clock; `note` says why the cycle timer was refused, if it was.
std::unique_ptr<Clock> make_best_clock(double calibrate_seconds, std::string* note);

// Overhead (median of consecutive-read differences) and resolution (smallest
// non-zero difference) over `reads` back-to-back reads.
TimerInfo characterize(Clock& clock, int reads = 20000);

// True if the architecture's cycle timer can be read here without trapping.
bool cycle_timer_readable();

std::uint64_t monotonic_raw_ns();

// One timed batch: the clock's readings around it (ticks) and the operations
// it made. The traced pass times on CLOCK_MONOTONIC_RAW, the clock of the
// kernel's event timestamps, so its batches place the events in time.
struct TimedBatch {
  std::uint64_t start = 0, end = 0;
  double ops = 0;
};

}  // namespace ctx
