// The run's monitor thread: it owns the signals and watches the run. On
// Ctrl-C (SIGINT/SIGTERM/SIGHUP) it kills and reaps every child, writes the
// variants begun and not yet written as they stand, then the closing record
// (interrupted) after the records already written, and exits 130. On a
// variant that overruns its time limit it kills the children and raises the
// timeout flag, which makes the variant fail with `timeout` (at the next
// batch boundary for in-process probes) and the run go on. It also watches
// the outputs: a pipe whose reader went away ends the run at once; and,
// where prctl(PR_SET_PDEATHSIG) was refused, the engine's parent.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "plan/schedule.hpp"
#include "report/output.hpp"

namespace ctx {

inline constexpr int exit_interrupted = 130;
inline constexpr int exit_broken_pipe = 128 + SIGPIPE;

struct Monitor {
  Output* output = nullptr;
  Scheduler* scheduler = nullptr;  // guarded by output->lock(); set while the variants are measured
  std::string run_id;
  std::uint64_t run_started_ns = 0;
  std::atomic<std::uint64_t> variant_deadline_ns{0};
  std::atomic<bool> stop{false};
  // Where the kernel cannot signal the engine when its parent dies (prctl
  // refused): the parent to watch; the run ends as on SIGTERM once it is gone.
  pid_t parent = 0;

  // Ends the run now: waits for a record being written, kills and reaps
  // every child, writes the unfinished variants and run_end (interrupted) to
  // the outputs still working, says why on stderr and exits with `code`.
  // Any thread may call it.
  [[noreturn]] void end_now(int code, const std::string& why);
  // The thread's body: returns when `stop` is set.
  void loop();
};

}  // namespace ctx
