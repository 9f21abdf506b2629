// Small reusable workloads for probes whose operation is one call.
#pragma once
#include <memory>
#include <utility>

#include "registry.hpp"

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

}  // namespace ctx
