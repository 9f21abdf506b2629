// switch.ring: lmbench's lat_ctx. N processes form a ring of pipes; each one
// reads the token, sums its own working set of S KiB, and writes the token
// on to the next. One op is one hop: one context switch plus one pass over
// S KiB. The baseline is lmbench's overhead pass: one process writes the
// token to its own pipe, reads it back and sums S KiB, with hot caches; it is
// subtracted, so what remains is the switch plus whatever the switch costs
// the caches. That is by definition: with N x S beyond the caches, the
// figure includes refilling them (lmbench's man page says as much).
// The measuring task is one of the N, so it switches once per lap (1/N per
// op) and every other process once per hand-off.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

constexpr char token_byte = 't';
constexpr char quit_byte = 'q';

// A task's private array, touched in full on every hop (lmbench's bread).
class WorkingSet {
 public:
  explicit WorkingSet(long kib) : words_(static_cast<std::size_t>(kib) * 1024 / sizeof(long), 1) {}
  void touch() {
    long sum = 0;
    for (long word : words_) sum += word;
    sink_ = sum;  // volatile: the sum is really computed on every hop
  }

 private:
  std::vector<long> words_;
  volatile long sink_ = 0;
};

class Ring final : public Workload {
 public:
  explicit Ring(Context& ctx) : work_(ctx.param_int("size_kib")) {
    const long procs = ctx.param_int("procs");
    const long kib = ctx.param_int("size_kib");
    // Pipe i carries the token from task i to task i + 1 (mod N); task 0 is this one.
    pipes_.ends.resize(static_cast<std::size_t>(procs), {-1, -1});
    for (auto& p : pipes_.ends)
      if (pipe2(p.data(), O_CLOEXEC) != 0) throw_errno("pipe2 for the ring");
    for (long task = 1; task < procs; ++task) {
      int& in = pipes_.ends[static_cast<std::size_t>(task - 1)][0];
      int& out = pipes_.ends[static_cast<std::size_t>(task)][1];
      // Each fd is used by exactly one task: the child closes all the others
      // (so EOF follows a death round the ring), the parent closes these two.
      std::vector<int> others;
      for (const auto& p : pipes_.ends)
        for (int fd : p)
          if (fd >= 0 && fd != in && fd != out) others.push_back(fd);
      partners_.push_back(std::make_unique<Partner>(
          ctx, static_cast<int>(task), Between::processes,
          [in = in, out = out, kib] {
            WorkingSet work(kib);  // allocated and touched in the child: its own pages
            std::uint64_t served = 0;
            char token = 0;
            for (;;) {
              read_exact(in, &token, 1, "ring task reading the token");
              if (token == quit_byte) break;
              work.touch();
              write_exact(out, &token, 1, "ring task passing the token on");
              ++served;
            }
            write_exact(out, &token, 1, "ring task passing the stop on");
            return served;
          },
          others, std::vector<int>{in, out}));
      in = out = -1;
    }
    out_ = pipes_.ends.front()[1];
    in_ = pipes_.ends.back()[0];
    run(1);  // a start barrier: every process is up before anything is timed
  }
  void run(std::uint64_t iterations) override {
    char token = token_byte;
    try {
      for (std::uint64_t lap = 0; lap < iterations; ++lap) {
        work_.touch();
        write_exact(out_, &token, 1, "sending the token round the ring");
        read_exact(in_, &token, 1, "waiting for the token to come round");
      }
    } catch (const ProbeError& e) {
      if (e.code != Reason::child_failed) throw;
      ring_broken(e.what());
    }
  }

  std::vector<TaskReport> finish() override {
    std::vector<TaskReport> reports;
    char token = quit_byte;
    try {
      write_exact(out_, &token, 1, "sending the stop round the ring");
      read_exact(in_, &token, 1, "waiting for the stop to come round");
    } catch (const ProbeError& e) {
      if (e.code != Reason::child_failed) throw;
      ring_broken(e.what());
    }
    for (auto& partner : partners_) reports.push_back(partner->join());
    return reports;
  }

  void annotate(Result& r) override {
    const auto procs = static_cast<double>(partners_.size() + 1);
    r.derived["ring_working_set_kib"] = procs * r.numeric_params["size_kib"];
    r.notes.push_back(
        "the baseline is measured with hot caches (lmbench's overhead pass); when the ring's working set exceeds "
        "the caches, the figure includes refilling them");
  }

 private:
  // A process died: close our end so the ones upstream of it see EOF too,
  // then join everyone and report the most telling reason (a signal).
  [[noreturn]] void ring_broken(const std::string& seen) {
    close(out_);
    pipes_.ends.front()[1] = out_ = -1;
    std::string reason;
    for (auto& partner : partners_) {
      try {
        partner->join(2.0);
      } catch (const ProbeError& e) {
        const std::string what = e.what();
        if (reason.empty() || what.find("signal") != std::string::npos) reason = what;
      }
    }
    throw ProbeError(Reason::child_failed, reason.empty() ? seen : reason);
  }

  // The ring's pipes, closed on destruction (also when the constructor
  // throws half-way), after the partners are killed and reaped.
  struct Pipes {
    std::vector<std::array<int, 2>> ends;
    ~Pipes() {
      for (const auto& p : ends)
        for (int fd : p)
          if (fd >= 0) close(fd);
    }
  };

  WorkingSet work_;
  Pipes pipes_;
  std::vector<std::unique_ptr<Partner>> partners_;  // destroyed first: kills and reaps
  int out_ = -1;
  int in_ = -1;
};

// lmbench's overhead pass: the token through one's own pipe, plus the sum.
class RingOverhead final : public Workload {
 public:
  explicit RingOverhead(Context& ctx) : work_(ctx.param_int("size_kib")) {
    if (pipe2(pipe_.data(), O_CLOEXEC) != 0) throw_errno("pipe2");
  }
  ~RingOverhead() override {
    for (int fd : pipe_) close(fd);
  }
  void run(std::uint64_t iterations) override {
    char token = token_byte;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      work_.touch();
      write_exact(pipe_[1], &token, 1, "self-pipe write");
      read_exact(pipe_[0], &token, 1, "self-pipe read");
    }
  }

 private:
  WorkingSet work_;
  std::array<int, 2> pipe_ = {-1, -1};
};

Support ring_supported(const Params& p) {
  const long procs = std::stol(p.at("procs"));
  if (procs < 2) return Support::no(Reason::not_supported_here, "a ring needs at least 2 processes (procs >= 2)");
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  const auto needed = static_cast<rlim_t>(2 * procs + 64);
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < needed)
    return Support::no(Reason::not_supported_here,
                       "a ring of " + std::to_string(procs) + " processes needs about " + std::to_string(needed) +
                           " file descriptors but the limit (ulimit -n) is " + std::to_string(files.rlim_cur));
  return Support::yes();
}

const Registrar registrar({
    .name = "switch.ring",
    .op = "one hop round a ring of N processes: a context switch plus the next process summing its S KiB",
    .roles = {{"explain:ring", 0}},
    .unit = Unit::ns,
    // One iteration is a lap of the ring: N hops.
    .ops_per_iteration = [](const Params& p) { return std::stod(p.at("procs")); },
    .params =
        {
            {"procs",
             {"2", "4", "8", "16", "32", "64", "96"},
             {"2", "4", "8", "16"},
             "processes in the ring (lmbench's grid goes to 96)",
             true,
             true},
            {"size_kib",
             {"0", "4", "8", "16", "32", "64"},
             {"0", "16", "64"},
             "working set each process sums per hop, in KiB (lmbench -s)",
             true,
             true},
            cpus_param({"same"},
                       "same: every ring process on one CPU (the classic setting); cross: they alternate between two "
                       "CPUs, so every hop crosses; any: unpinned"),
            policy_param(),
        },
    .baseline = "lmbench's overhead pass: write + read of the token on a self-pipe and a sum of S KiB, in one "
                "process with hot caches (no switch)",
    .make = [](Context& ctx) { return std::make_unique<Ring>(ctx); },
    .make_baseline = [](Context& ctx) { return std::make_unique<RingOverhead>(ctx); },
    .expects =
        [](const Params& p) {
          Expectation e = switch_expectation(p, "read");
          e.main_per_op = 1 / std::stod(p.at("procs"));  // the measuring task sleeps once per lap
          e.partner_per_handoff = 1;
          e.why = "every process in the ring switches out once per lap (N hops): a sleep in read, or a preemption " +
                  std::string(p.at("policy") == "normal" ? "by the task it woke"
                                                         : "while another task wants the CPU (read then finds the "
                                                           "token waiting)");
          // With three or more, the token is back only after the others' hops.
          if (p.at("policy") == "normal" && std::stol(p.at("procs")) > 2) allow_preemption_then_sleep(e, "read");
          return std::optional<Expectation>(e);
        },
    .supported = ring_supported,
    .tasks = [](const Params& p) { return static_cast<int>(std::stol(p.at("procs"))); },
    .method = "lmbench lat_ctx: ring of pipes, per-hop sum of a private array, overhead pass subtracted",
    .syscalls_per_op = constant(2),  // per hop (one switch): the sender's write and the receiver's read
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
