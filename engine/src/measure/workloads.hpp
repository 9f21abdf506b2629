// Small reusable workloads for probes whose operation is one call, and the
// per-round-trip figures of the probes whose op is half a round trip.
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "model/registry.hpp"

namespace ctx {

// Calls `op` once per iteration. The compiler cannot drop the call because
// every op used with it is a system call or an opaque function.
template <class Op>
class LoopWorkload final : public Workload {
 public:
  explicit LoopWorkload(Op op) : op_(std::move(op)) {}
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) op_();
  }

 private:
  Op op_;
};

template <class Op>
std::unique_ptr<Workload> loop_of(Op op) {
  return std::make_unique<LoopWorkload<Op>>(std::move(op));
}

// Kernel-counted switches of both tasks per round trip, by kind (the harness
// gives them per op): under policy=normal on one CPU about one sleep and one
// preemption, under batch two sleeps.
inline void annotate_switch_kinds_per_round_trip(Result& r) {
  for (const char* kind : {"voluntary", "involuntary"}) {
    const auto per_op = r.derived.find(std::string(kind) + "_switches_per_op");
    if (per_op != r.derived.end() && per_op->is_number())
      r.derived[std::string(kind) + "_switches_per_round_trip"] = per_op->get<double>() * 2;  // two ops per trip
  }
}

// ProbeDescriptor::from_summary of a probe whose op is half a round trip.
inline void round_trip_figures(Result& r) {
  if (r.summary) r.derived["per_round_trip_ns"] = r.summary->median * 2;  // one round trip = two switches
}

}  // namespace ctx
