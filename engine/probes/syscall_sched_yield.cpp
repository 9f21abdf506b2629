// syscall.sched_yield: one sched_yield with, ideally, nothing else runnable on
// the caller's CPU, so the scheduler is entered, finds no one better and
// returns: the cost of a trip through the scheduler without a switch. The
// engine does not (and cannot, unprivileged) keep other tasks off that CPU,
// so every yield that did hand the CPU to another task is counted: a yield
// keeps its task runnable, so such a switch counts as involuntary, and
// derived.involuntary_switches_per_op says how far the figure is from the
// no-switch case. One op is one call, made through syscall(2).
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// "procs_running" of /proc/stat: tasks runnable machine-wide, this one included.
long procs_running() {
  std::ifstream stat("/proc/stat");
  std::string key;
  long value = -1;
  while (stat >> key) {
    if (key == "procs_running") {
      stat >> value;
      break;
    }
    stat.ignore(1 << 20, '\n');
  }
  return value;
}

class Yield final : public Workload {
 public:
  Yield() : procs_running_(procs_running()) {}
  void prepare(std::uint64_t) override { before_ = thread_switches(); }
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) syscall(SYS_sched_yield);
  }
  void after(std::uint64_t iterations) override {
    const SwitchCount now = thread_switches();
    voluntary_ += now.voluntary - before_.voluntary;
    involuntary_ += now.involuntary - before_.involuntary;
    calls_ += iterations;
  }
  void annotate(Result& r) override {
    if (calls_ == 0) return;
    // Over every batch: calibration, warm-up and samples.
    r.derived["involuntary_switches_per_op"] = static_cast<double>(involuntary_) / static_cast<double>(calls_);
    r.derived["voluntary_switches_per_op"] = static_cast<double>(voluntary_) / static_cast<double>(calls_);
    r.derived["procs_running_at_start"] = procs_running_;
    if (involuntary_ > 0)
      r.notes.push_back(fmt::format(
          "{} involuntary switches over {} yields: another task was runnable, and those ops include a switch to it",
          involuntary_, calls_));
  }

 private:
  long procs_running_;
  SwitchCount before_{};
  long voluntary_ = 0;
  long involuntary_ = 0;
  std::uint64_t calls_ = 0;
};

const Registrar registrar({
    .name = "syscall.sched_yield",
    .op = "one sched_yield through syscall(SYS_sched_yield), unpinned; nothing else runnable on its CPU is hoped "
          "for, not enforced (yields that switched are counted in derived)",
    .make = [](Context&) { return std::make_unique<Yield>(); },
    .method = "tsuna/contextswitch timesyscall.c style raw call; switch counts from getrusage(RUSAGE_THREAD)",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
