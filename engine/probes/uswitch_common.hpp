// Shared by the uswitch probes (and switch.threads_round_robin, create.fiber,
// create.boost_context and create.coroutine): a context stack with a guard
// page, the workload base that keeps the FP flags of a user-level switch
// steady, a futex baton for kernel threads taking turns, and the `laps`
// parameter of the two round-robin probes.
#pragma once
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cfenv>
#include <cstdint>
#include <memory>
#include <vector>

#include "measure/workloads.hpp"
#include "os/tasks.hpp"

namespace ctx::uswitch {

// The reason every Boost probe gives where the engine was built without Boost
// (cross builds, or -DCTXBENCH_WITH_BOOST=OFF).
inline Support boost_support() {
#if CTXBENCH_HAVE_BOOST_CONTEXT && CTXBENCH_HAVE_BOOST_FIBER
  return Support::yes();
#else
  return Support::no(Reason::built_without, "built without Boost.Context/Boost.Fiber");
#endif
}

// `laps`, a parameter of the round-robin probes (uswitch.boost_fiber,
// switch.threads_round_robin), for experiments that fix the workload, such as
// the fibers-vs-threads preset: so many timed laps in all (one lap is one
// switch by every worker), in samples of 10,000 laps, instead of calibrated
// batches and --samples samples. Unset by default.
inline constexpr std::uint64_t laps_per_sample = 10000;

inline ParamSpec laps_param() {
  ParamSpec spec{"laps",
                 {"10000", "100000", "1000000"},
                 {},
                 "timed laps in all (every worker switches once per lap), in samples of 10,000 laps; unset: "
                 "calibrated batches, --samples of them",
                 true};
  spec.optional = true;
  return spec;
}

// For the descriptor's fixed_iterations: 0 (calibrate) without `laps`.
inline std::uint64_t laps_batch(const Params& p) { return p.count("laps") ? laps_per_sample : 0; }

// For the descriptor's samples: the laps in samples, or what --samples asks.
inline int laps_samples(const Params& p, int requested) {
  const auto laps = p.find("laps");
  return laps == p.end() ? requested : static_cast<int>(std::stoull(laps->second) / laps_per_sample);
}

// A stack for a user-level context: mmap'd, prefaulted (the harness must not
// time first-touch page faults), with a PROT_NONE guard page at its low end
// so that an overflow faults instead of corrupting memory.
class GuardedStack {
 public:
  explicit GuardedStack(std::size_t bytes = 64 * 1024) : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    mapped_ = bytes + page_;
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      throw_errno("mmap of a context stack");
    }
    if (mprotect(base_, page_, PROT_NONE) != 0) throw_errno("mprotect of a stack guard page");
  }
  ~GuardedStack() {
    if (base_) munmap(base_, mapped_);
  }
  GuardedStack(const GuardedStack&) = delete;
  GuardedStack& operator=(const GuardedStack&) = delete;
  void* bottom() const { return static_cast<char*>(base_) + page_; }
  void* top() const { return static_cast<char*>(base_) + mapped_; }
  std::size_t size() const { return mapped_ - page_; }

 private:
  std::size_t page_;
  std::size_t mapped_ = 0;
  void* base_ = nullptr;
};

// A workload whose operation is a user-level switch. (That the kernel never
// switches the measuring thread meanwhile is the harness's check: such a
// probe's descriptor says `.expects = expects_no_switches`.)
//
// It clears the measuring thread's FP exception flags when it is built
// (before the derived class makes its contexts, which inherit the FP control
// state) and before every batch (the harness's own arithmetic sets them). On
// x86 a switch reloads MXCSR, flags included, and loading a value different
// from the current one costs far more than reloading the same one; without
// this, the figure would depend on whether the harness happened to raise an
// inexact flag since the contexts were made. uswitch.asm fpcontrol=differs
// measures that case on purpose.
class UserSwitchWorkload : public Workload {
 public:
  UserSwitchWorkload() { std::feclearexcept(FE_ALL_EXCEPT); }
  void prepare(std::uint64_t) override { std::feclearexcept(FE_ALL_EXCEPT); }
};

// Kernel threads taking turns: slot k is thread k's futex word. pass(k) gives
// thread k the baton and wakes it; wait(k) takes it, sleeping in FUTEX_WAIT
// until it arrives. Private futexes (threads of one process), one cache line
// per slot.
class FutexBaton {
 public:
  explicit FutexBaton(int threads) : slots_(static_cast<std::size_t>(threads)) {}
  void pass(int k) {
    auto& word = slots_[static_cast<std::size_t>(k)].word;
    word.store(1, std::memory_order_release);
    futex(word, FUTEX_WAKE_PRIVATE, 1);
  }
  void wait(int k) {
    auto& word = slots_[static_cast<std::size_t>(k)].word;
    while (word.exchange(0, std::memory_order_acq_rel) == 0) {
      // Sleeps only while the word is still 0; EAGAIN means it changed first.
      if (futex(word, FUTEX_WAIT_PRIVATE, 0) != 0 && errno != EAGAIN && errno != EINTR)
        throw_errno("futex(FUTEX_WAIT)");
    }
  }
  int size() const { return static_cast<int>(slots_.size()); }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint32_t> word{0};
  };
  static long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, nullptr, nullptr, 0);
  }
  std::vector<Slot> slots_;
};

}  // namespace ctx::uswitch
