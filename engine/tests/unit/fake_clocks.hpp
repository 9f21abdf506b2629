// Clocks for the harness's unit tests: the timer a fake clock describes, and
// the host reference's clock, on which every second read ends a timing whose
// length a script gives by the timing's index (the reference's calibration
// and best come first: reference_established_timings).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "measure/host_reference.hpp"
#include "model/registry.hpp"
#include "os/timer.hpp"

namespace ctx::testing {

// A timer whose reads cost 10 ns and resolve 1 ns.
inline TimerInfo fake_timer() {
  TimerInfo timer;
  timer.source = "fake";
  timer.overhead_ns = 10;
  timer.resolution_ns = 1;
  return timer;
}

class ScriptedTimings final : public Clock {
 public:
  explicit ScriptedTimings(std::function<std::uint64_t(std::size_t)> script) : script_(std::move(script)) {}
  std::uint64_t now() override {
    now_ += (reads_++ % 2 == 1) ? script_(timings_++) : 1;
    return now_;
  }
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks); }
  std::string name() const override { return "scripted"; }
  std::size_t timings() const { return timings_; }

 private:
  std::function<std::uint64_t(std::size_t)> script_;
  std::uint64_t now_ = 0;
  std::size_t reads_ = 0, timings_ = 0;
};

// A clock that advances 10 ns per read, plus what a workload spends.
class StepClock final : public Clock {
 public:
  std::uint64_t now() override { return now_ += 10; }
  double ticks_to_ns(std::uint64_t ticks) const override { return static_cast<double>(ticks); }
  std::string name() const override { return "step"; }
  void spend(std::uint64_t ns) { now_ += ns; }

 private:
  std::uint64_t now_ = 0;
};

// A workload whose iterations cost `cost` ns on a StepClock.
class CostWork final : public Workload {
 public:
  CostWork(StepClock& clock, std::uint64_t cost) : clock_(clock), cost_(cost) {}
  void run(std::uint64_t iterations) override { clock_.spend(iterations * cost_); }

 private:
  StepClock& clock_;
  std::uint64_t cost_;
};

// The constructor's timings: one calibration run (already at the target),
// 51 to warm up, and two at each spread point (no pause between them here).
inline constexpr std::size_t reference_established_timings = 52 + 2 * HostReference::spread_timings;

}  // namespace ctx::testing
