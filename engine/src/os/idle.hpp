// Holding CPUs out of deep idle states for one variant. A cross-CPU wake-up
// that lands on an idle CPU pays for that CPU's way out of idle (on a VM, a
// halted vCPU is woken through the hypervisor). The kernel's PM QoS interface
// lets a process ask for a CPU wake-up latency bound: open /dev/cpu_dma_latency,
// write a 32-bit value in microseconds, and keep the file open; the request
// lasts exactly as long as the descriptor, so it is released when the holder
// closes it or dies (cyclictest's set_latency_target() does the same). A
// request of 0 keeps cpuidle governors at the polling state. Where no cpuidle
// driver is active the idle loop halts without consulting PM QoS, and the
// record says so.
#pragma once
#include <optional>
#include <string>

#include "model/registry.hpp"

namespace ctx {

// idle = free | held: whether the harness holds every CPU out of deep idle
// states (a /dev/cpu_dma_latency request of 0 us) for the variant's duration.
// held runs by default beside cpus=cross, where holding is permitted. Must be
// listed after cpus.
ParamSpec idle_param();

// The PM QoS device; CTXBENCH_CPU_DMA_LATENCY overrides it (tests point it
// at a path that cannot be opened to check the `unsupported` path as root).
std::string idle_device();

// Whether this process may write the device (checked without opening it, so
// no request is made).
bool idle_hold_permitted();

class IdleHold {
 public:
  // Opens the device and writes 0; nullopt, `why` and `denied` (no
  // permission, as opposed to no such device) when that fails.
  static std::optional<IdleHold> acquire(std::string* why, bool* denied);
  ~IdleHold();
  IdleHold(IdleHold&& other) noexcept;
  IdleHold& operator=(IdleHold&& other) noexcept;
  IdleHold(const IdleHold&) = delete;
  IdleHold& operator=(const IdleHold&) = delete;

  // The kernel's effective latency bound while the request is held, read
  // back from the device (us), or nullopt when it cannot be read.
  std::optional<long> effective_us() const;

 private:
  explicit IdleHold(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The active cpuidle driver ("none" when there is none), "" when unknown.
std::string cpuidle_driver();

}  // namespace ctx
