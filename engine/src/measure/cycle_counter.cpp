#include "measure/cycle_counter.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "report/wording.hpp"

namespace ctx {

CycleCounter::CycleCounter() {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_HARDWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.exclude_hv = 1;
  fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd_ < 0) {
    const int first_error = errno;
    attr.exclude_kernel = 1;  // unprivileged users may count user cycles only
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
    if (fd_ < 0)
      error_ = cycle_counter_unavailable(first_error);
    else
      user_only_ = true;
  }
}

CycleCounter::~CycleCounter() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::uint64_t> CycleCounter::read_value() const {
  std::uint64_t value = 0;
  if (fd_ < 0 || ::read(fd_, &value, sizeof value) != sizeof value) return std::nullopt;
  return value;
}

}  // namespace ctx
