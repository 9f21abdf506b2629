// The perf_event cycle counter, one job: core cycles of the calling thread,
// where the hardware counter exists (it does not in most VMs), counting user
// cycles only where perf_event_paranoid allows no more; when it cannot be
// opened, error() says why. The harness reads it around each kept sample
// (derived.core_cycles_per_op).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ctx {

class CycleCounter {
 public:
  CycleCounter();
  ~CycleCounter();
  CycleCounter(const CycleCounter&) = delete;
  CycleCounter& operator=(const CycleCounter&) = delete;
  // The count so far; none when the counter is not open or the read failed.
  std::optional<std::uint64_t> read_value() const;
  const std::string& error() const { return error_; }
  bool user_only() const { return user_only_; }

 private:
  int fd_ = -1;
  bool user_only_ = false;
  std::string error_;
};

}  // namespace ctx
