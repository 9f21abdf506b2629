#include "os/idle.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace ctx {

std::string idle_device() {
  const char* override_path = std::getenv("CTXBENCH_CPU_DMA_LATENCY");
  return override_path && *override_path ? override_path : "/dev/cpu_dma_latency";
}

bool idle_hold_permitted() { return access(idle_device().c_str(), W_OK) == 0; }

std::optional<IdleHold> IdleHold::acquire(std::string* why, bool* denied) {
  const std::string path = idle_device();
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    *denied = error == EACCES || error == EPERM;
    *why = fmt::format("cannot open {} to hold CPUs out of deep idle: {}{}", path, std::strerror(error),
                       error == EACCES || error == EPERM ? " (it needs root; run as root to measure idle=held)" : "");
    return std::nullopt;
  }
  const std::int32_t zero_us = 0;
  if (write(fd, &zero_us, sizeof zero_us) != static_cast<ssize_t>(sizeof zero_us)) {
    *denied = false;
    *why = fmt::format("cannot write a 0 us latency request to {}: {}", path, std::strerror(errno));
    close(fd);
    return std::nullopt;
  }
  return IdleHold(fd);
}

IdleHold::IdleHold(IdleHold&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

IdleHold& IdleHold::operator=(IdleHold&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

IdleHold::~IdleHold() {
  if (fd_ >= 0) close(fd_);  // the kernel drops the request with the descriptor
}

std::optional<long> IdleHold::effective_us() const {
  std::int32_t value = 0;
  if (pread(fd_, &value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) return std::nullopt;
  return value;
}

std::string cpuidle_driver() {
  std::ifstream in("/sys/devices/system/cpu/cpuidle/current_driver");
  std::string driver;
  std::getline(in, driver);
  return driver;
}

ParamSpec idle_param() {
  ParamSpec spec{"idle",
                 {"free", "held"},
                 {"free"},
                 "free: CPUs idle as the system lets them; held: the harness asks the kernel for 0 us wake-up "
                 "latency through /dev/cpu_dma_latency for the variant's duration (idle states deeper than polling "
                 "are then avoided, where a cpuidle driver honours it), and releases it when the variant ends. "
                 "Needs write access to /dev/cpu_dma_latency (root); otherwise unsupported"};
  spec.also_runs = [](const std::string& value, const Params& earlier) {
    const auto cpus = earlier.find("cpus");
    return value == "held" && cpus != earlier.end() && cpus->second == "cross" && idle_hold_permitted();
  };
  spec.also_runs_help = "held beside cpus=cross, where /dev/cpu_dma_latency can be opened for writing";
  return spec;
}

}  // namespace ctx
