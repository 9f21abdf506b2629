#include "cli/monitor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace ctx {

void Monitor::end_now(int code, const std::string& why) {
  std::lock_guard guard(output->lock());  // let a record being written finish; write nothing after
  kill_and_reap_children();
  if (scheduler) scheduler->write_unfinished_locked();
  output->end(run_id, static_cast<double>(monotonic_raw_ns() - run_started_ns) / 1e9, true);
  diagnostic(fmt::format("{}; {} records kept, children reaped", why, output->written()));
  _exit(code);
}

void Monitor::loop() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  const timespec tick{0, 100 * 1000 * 1000};
  while (!stop.load()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig > 0) {
      interrupted_flag().store(true);
      end_now(exit_interrupted, fmt::format("interrupted by {}", strsignal(sig)));
    }
    if (parent != 0 && getppid() != parent)
      end_now(exit_interrupted, "the process that started the engine is gone; the run stopped");
    std::string broken;
    {
      // A reader that went away (`| head`, or a killed ctxbench) ends the
      // run now, not when the next record is written minutes later.
      std::unique_lock guard(output->lock(), std::try_to_lock);
      if (guard.owns_lock())
        if (const Sink* sink = output->broken_pipe()) broken = sink->name();
    }
    if (!broken.empty())
      end_now(exit_broken_pipe, fmt::format("error: cannot write to {}: {} (its reader went away); the run stopped",
                                            broken, std::strerror(EPIPE)));
    const std::uint64_t deadline = variant_deadline_ns.load();
    if (deadline != 0 && monotonic_raw_ns() > deadline && !timeout_flag().exchange(true)) {
      diagnostic("a variant overran its time limit; killing its children and stopping it");
      kill_and_reap_children();
    }
  }
}

}  // namespace ctx
