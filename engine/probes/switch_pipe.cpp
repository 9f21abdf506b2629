// switch.pipe: the cost of one context switch, driven by a one-byte token
// ping-ponged over two pipes between two tasks (threads or processes), as in
// lmbench lat_ctx with two procs, perf bench sched pipe and eliben's
// thread-switch-pipe. One round trip is two switches, so one op is half a
// round trip; the record also gives the round trip. The baseline is a write
// and a read of one byte on a self-pipe in one thread: the pipe's own cost
// per switch, subtracted to leave the switch (plus wakeup) itself.
#include <fcntl.h>
#include <unistd.h>

#include <optional>

#include "tasks.hpp"

namespace {
using namespace ctx;

struct PipePair {
  int a[2] = {-1, -1};  // measuring task -> partner
  int b[2] = {-1, -1};  // partner -> measuring task
  PipePair() {
    if (pipe2(a, O_CLOEXEC) != 0 || pipe2(b, O_CLOEXEC) != 0) throw_errno("pipe2");
  }
  ~PipePair() {
    for (int fd : {a[0], a[1], b[0], b[1]})
      if (fd >= 0) close(fd);
  }
};

class PipePingPong final : public Workload {
 public:
  explicit PipePingPong(Context& ctx) {
    const Between between = parse_between(ctx.param("between"));
    const int a_read = pipes_.a[0], b_write = pipes_.b[1];
    partner_.emplace(
        ctx, 1, between,
        [a_read, b_write] {
          std::uint64_t served = 0;
          char token = 0;
          for (;;) {
            read_exact(a_read, &token, 1, "partner reading the token");
            if (token == 'q') return served;
            write_exact(b_write, &token, 1, "partner returning the token");
            ++served;
          }
        },
        std::vector<int>{pipes_.a[1], pipes_.b[0]}, std::vector<int>{pipes_.a[0], pipes_.b[1]});
    if (between == Between::processes) pipes_.a[0] = pipes_.b[1] = -1;  // closed in the parent by Partner
  }
  ~PipePingPong() override {
    // Closing our write end wakes a partner thread blocked in read with EOF.
    if (pipes_.a[1] >= 0) close(pipes_.a[1]);
    pipes_.a[1] = -1;
  }
  void run(std::uint64_t iterations) override {
    char token = 'x';
    for (std::uint64_t i = 0; i < iterations; ++i) {
      write_exact(pipes_.a[1], &token, 1, "sending the token");
      read_exact(pipes_.b[0], &token, 1, "waiting for the token");
    }
  }
  std::vector<TaskReport> finish() override {
    const char quit = 'q';
    write_exact(pipes_.a[1], &quit, 1, "telling the partner to stop");
    return {partner_->join()};
  }
  void annotate(Result& r) override {
    if (r.summary) r.derived["per_round_trip_ns"] = r.summary->median * 2;  // one round trip = two switches
  }

 private:
  std::optional<Partner> partner_;  // declared first: destroyed after the pipes close
  PipePair pipes_;
};

class SelfPipe final : public Workload {
 public:
  void run(std::uint64_t iterations) override {
    char token = 'x';
    for (std::uint64_t i = 0; i < iterations; ++i) {
      write_exact(pipes_.a[1], &token, 1, "self-pipe write");
      read_exact(pipes_.a[0], &token, 1, "self-pipe read");
    }
  }

 private:
  PipePair pipes_;
};

const Registrar registrar({
    .name = "switch.pipe",
    .op = "one context switch: half a round trip of a 1-byte token over two pipes",
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two switches
    .params = {between_param(), cpus_param(), policy_param()},
    .baseline = "write + read of 1 byte on a self-pipe in one thread (the pipe's cost per switch, no switch)",
    .make = [](Context& ctx) { return std::make_unique<PipePingPong>(ctx); },
    .make_baseline = [](Context&) { return std::make_unique<SelfPipe>(); },
    .expects = [](const Params& p) { return std::optional<Expectation>(switch_expectation(p, "read")); },
    .tasks = [](const Params&) { return 2; },
    .method = "lmbench lat_ctx (2 procs, 0 KiB) and eliben thread-switch-pipe; baseline as lmbench's overhead pass",
});

}  // namespace
