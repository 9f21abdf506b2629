// `ctxbench-engine profile`: counts what a real program does that costs
// switching time (switches, wake-ups, system calls, faults, creations,
// signals) and writes one `profile` record (schema/profile.schema.json).
//
//   profile [--out FILE] -- CMD [ARGS...]   runs CMD, counting from its exec to
//                                           its exit, children and threads too
//   profile --pid PID --duration S          attaches to a running process for
//                                           S seconds (or until it ends)
//
// The counting is profile_events.hpp's; this file runs or attaches to the
// program, reads what /proc and wait4's rusage add (CPU time, run-queue
// wait, and the switch and fault counts where perf events are refused), and
// builds the record. Prices and words are the Python side's.
#pragma once
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace/profile_events.hpp"

namespace ctx {

struct ProfileOptions {
  std::vector<std::string> command;
  int pid = 0;          // attach (with duration) instead of running a command
  double duration = 0;  // seconds
  std::string out;      // write the record here instead of stdout
  bool trace = false;   // also every CPU's switches: wake-ups by target state, latencies in place
};

// What the kernel's own accounting says of the program (wait4's rusage for a
// command, /proc for an attached process); each absent when unknown.
struct ProfileAccounting {
  std::optional<double> user_s, system_s, run_queue_wait_s;
  std::optional<std::uint64_t> voluntary, involuntary, minor_faults, major_faults;
  std::string source;  // "rusage" | "proc"
};

// Everything a record is built from (pure inputs: the unit tests script them).
struct ProfileInputs {
  nlohmann::json env;
  std::string run_id, started_at, finished_at;
  std::vector<std::string> command;  // empty when attached
  int pid = 0;
  std::optional<double> duration_s;
  std::string ended;  // exited | killed | interrupted | window | target_ended
  std::optional<int> exit_status, signal;
  double wall_s = 0;
  ProfileCounters counters;
  const SampleTally* tally = nullptr;  // nullptr: nothing was sampled
  std::uint64_t lost = 0;
  ProfileAccounting accounting;
  std::vector<std::string> notes;
};

nlohmann::json profile_to_json(const ProfileInputs& inputs);

// The name of system call `number` on this machine's ABI ("nr N" when unknown).
std::string syscall_name(std::int64_t number);

// Runs the command; the process's exit status (0, 1 failed, 2 usage, 3 output).
int profile_command(const ProfileOptions& options);

}  // namespace ctx
