// Shielding (`run --shield weight`), an option the user takes explicitly,
// never on by default: the engine's process (every thread, and every task it
// starts afterwards) goes into a cgroup of its own with the highest CPU weight
// (cgroup v1: cpu.shares 262144; v2: cpu.weight 10000), so the scheduler
// gives the measuring tasks their CPU before other work of ordinary weight.
// Where the user may not (no root, no delegated cgroup, no cpu controller),
// the run goes on unshielded and the env record says why.
//
// Released on every way out: the destructor moves the process back and
// removes the cgroup; and a watcher process, forked before the engine moves
// (so it stays outside the cgroup), in a session of its own, waits for the
// engine's end on a pipe and removes the cgroup once it is empty, so an exit
// by signal (Ctrl-C, SIGTERM, even SIGKILL) leaves nothing behind.
#pragma once
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

namespace ctx {

class Shield {
 public:
  // `kind`: "weight" (the only one offered; see docs/accuracy.md), or empty
  // for none. Never throws.
  explicit Shield(const std::string& kind);
  ~Shield();
  Shield(const Shield&) = delete;
  Shield& operator=(const Shield&) = delete;
  // Moves the process back to the cgroup it came from and removes its own.
  void release();
  // The env record's `shield`; null where none was asked for.
  nlohmann::json record() const;

 private:
  std::string requested_;
  bool applied_ = false;
  std::string how_;        // what was done, in words
  std::string why_not_;    // why it was not, where it was asked for
  std::string dir_;        // the cgroup made for the run
  std::string came_from_;  // the cgroup the process was in (its cgroup.procs)
  pid_t watcher_ = -1;
  int watch_fd_ = -1;  // the pipe's write end: closed, the watcher removes the cgroup
};

}  // namespace ctx
