// What the two-task switch probes have in common: a token ping-ponged between
// the measuring task and one partner (a thread or a forked process) through
// two one-way "doors" of some primitive (pipe, socketpair, eventfd, futex,
// semaphore, condition variable). One round trip is two switches, so one op is
// half a round trip, and the record also gives the round trip. The baseline
// is the same primitive handed to oneself (post on a door, then wait on it) in
// one task: the primitive's own cost per switch, with no switch.
//
// A Channel provides, for door 0 (to the partner) and door 1 (back):
//   void post(Door, Arrival)  hand a token (or stop / dead) through the door;
//   Arrival wait(Door)        block until something arrives;
//   main_only_fds(), partner_only_fds(), forget_fds()  the descriptors only
//                             one side uses, closed in the other after fork;
//   partner_death_is_eof      true when the measuring side sees EOF if the
//                             partner dies (pipes, sockets).
// Where death is not EOF (eventfd, futex, semaphore, condvar between
// processes), a DeathWatch thread sleeps in waitid(WNOWAIT) on the child and,
// if it dies, posts `dead` to the measuring side's door. The waits themselves
// stay untimed, so nothing (no hrtimer) is added to the measured operation.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure/workloads.hpp"
#include "os/idle.hpp"
#include "os/tasks.hpp"

namespace ctx::pingpong {

enum class Door : int { to_partner = 0, to_main = 1 };
// What comes through a door. The order matters: a later value overrides an
// earlier one that has not been taken yet (a stop beats a pending token).
enum class Arrival : std::uint8_t { none = 0, token = 1, stop = 2, dead = 3 };

inline int door_index(Door door) { return static_cast<int>(door); }

// Sleeps in waitid(WNOWAIT) until the child exits, without reaping it (the
// Partner reaps), and calls `on_death` unless disarmed first. The child must
// be gone (exited, or killed by the Partner) before the destructor runs.
class DeathWatch {
 public:
  DeathWatch(pid_t pid, std::function<void()> on_death)
      : thread_([this, pid, on_death = std::move(on_death)] {
          siginfo_t info{};
          while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
          }
          if (armed_.load()) on_death();
        }) {}
  ~DeathWatch() {
    disarm();
    thread_.join();
  }
  DeathWatch(const DeathWatch&) = delete;
  DeathWatch& operator=(const DeathWatch&) = delete;
  void disarm() { armed_.store(false); }

 private:
  std::atomic<bool> armed_{true};
  std::thread thread_;
};

// Adds figures to a finished record (per round trip, rates, minima).
using Annotator = std::function<void(Result&)>;

// The partner's loop: wait for the token, send it back, until told to stop.
// A failure sends `dead` back first, so a partner thread that throws cannot
// leave the measuring thread waiting for ever.
template <class Channel>
std::uint64_t serve(Channel& channel) {
  std::uint64_t served = 0;
  try {
    while (channel.wait(Door::to_partner) == Arrival::token) {
      channel.post(Door::to_main, Arrival::token);
      ++served;
    }
  } catch (...) {
    try {
      channel.post(Door::to_main, Arrival::dead);
    } catch (...) {
    }
    throw;
  }
  return served;
}

template <class Channel>
class PingPong final : public Workload {
 public:
  PingPong(Context& ctx, Between between, std::unique_ptr<Channel> channel,
           Annotator annotate = annotate_switch_kinds_per_round_trip)
      : between_(between), channel_(std::move(channel)), annotate_(std::move(annotate)) {
    Channel* channel_ptr = channel_.get();
    partner_.emplace(
        ctx, 1, between, [channel_ptr] { return serve(*channel_ptr); }, channel_->main_only_fds(),
        channel_->partner_only_fds());
    if (between == Between::processes) {
      channel_->forget_fds(channel_->partner_only_fds());  // closed in the parent by Partner
      if (!Channel::partner_death_is_eof)
        watch_.emplace(partner_->pid(), [channel_ptr] {
          try {
            channel_ptr->post(Door::to_main, Arrival::dead);
          } catch (...) {
          }
        });
    }
    // A start barrier: one round trip before the harness times anything, so
    // the first calibration batch does not include the partner's start-up.
    try {
      run(1);
    } catch (...) {
      release();
      throw;
    }
  }
  ~PingPong() override { release(); }

  void run(std::uint64_t iterations) override {
    Channel& channel = *channel_;
    try {
      for (std::uint64_t i = 0; i < iterations; ++i) {
        channel.post(Door::to_partner, Arrival::token);
        if (channel.wait(Door::to_main) != Arrival::token)
          throw ProbeError(Reason::child_failed, "the partner stopped answering");
      }
    } catch (const ProbeError& e) {
      if (e.code != Reason::child_failed) throw;
      partner_gone(e.what());  // outside the try: what it throws goes to the harness
    }
  }

  std::vector<TaskReport> finish() override {
    if (watch_) watch_->disarm();
    finished_ = true;
    try {
      channel_->post(Door::to_partner, Arrival::stop);
    } catch (const ProbeError& e) {
      if (e.code != Reason::child_failed) throw;
      partner_gone(e.what());
    }
    return {partner_->join()};
  }

  void annotate(Result& r) override {
    if (annotate_) annotate_(r);
  }

 private:
  // Stops the partner in the right order; the channel (a member) goes last.
  void release() {
    if (watch_) watch_->disarm();
    // A thread cannot be killed: release it before joining. A process
    // partner is killed and reaped by the Partner's destructor.
    if (!finished_ && between_ == Between::threads) {
      try {
        channel_->post(Door::to_partner, Arrival::stop);
      } catch (...) {
      }
    }
    finished_ = true;
    partner_.reset();
    watch_.reset();  // its child is gone now, so its waitid has returned
  }

  // The partner died or failed: its own reason (the signal that killed it,
  // or the error it threw) is better than what this side saw, so join it.
  [[noreturn]] void partner_gone(const std::string& seen) {
    if (watch_) watch_->disarm();
    finished_ = true;
    partner_->join(2.0);  // throws the partner's reason
    throw ProbeError(Reason::child_failed, seen);
  }

  Between between_;
  std::unique_ptr<Channel> channel_;
  std::optional<Partner> partner_;
  std::optional<DeathWatch> watch_;
  Annotator annotate_;
  bool finished_ = false;
};

// The baseline: the same primitive handed to oneself, so nothing switches.
template <class Channel>
class SelfHandoff final : public Workload {
 public:
  explicit SelfHandoff(std::unique_ptr<Channel> channel) : channel_(std::move(channel)) {}
  void run(std::uint64_t iterations) override {
    Channel& channel = *channel_;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      channel.post(Door::to_partner, Arrival::token);
      channel.wait(Door::to_partner);
    }
  }

 private:
  std::unique_ptr<Channel> channel_;
};

// Doors over file descriptors: two pipes, or the two directions of one
// socketpair. A message is `payload` bytes whose first byte is the Arrival.
// If the other side dies, its ends close and a read sees EOF.
class FdChannel {
 public:
  static constexpr bool partner_death_is_eof = true;

  static std::unique_ptr<FdChannel> pipes(std::size_t payload) {
    int a[2], b[2];
    if (pipe2(a, O_CLOEXEC) != 0) throw_errno("pipe2");
    if (pipe2(b, O_CLOEXEC) != 0) {
      close(a[0]);
      close(a[1]);
      throw_errno("pipe2");
    }
    return std::unique_ptr<FdChannel>(new FdChannel({a[1], b[1]}, {a[0], b[0]}, payload));
  }
  static std::unique_ptr<FdChannel> socketpair(std::size_t payload) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw_errno("socketpair(AF_UNIX, SOCK_STREAM)");
    // Door 0: written at sv[0], read at sv[1]; door 1 the other way.
    return std::unique_ptr<FdChannel>(new FdChannel({sv[0], sv[1]}, {sv[1], sv[0]}, payload));
  }
  ~FdChannel() {
    std::vector<int> open = unique({write_[0], write_[1], read_[0], read_[1]});
    for (int fd : open) close(fd);
  }
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  void post(Door door, Arrival what) {
    const int d = door_index(door);
    send_[d][0] = static_cast<char>(what);
    write_exact(write_[d], send_[d].data(), send_[d].size(), "sending the token");
  }
  Arrival wait(Door door) {
    const int d = door_index(door);
    try {
      read_exact(read_[d], received_[d].data(), received_[d].size(), "waiting for the token");
    } catch (const ProbeError&) {
      // A socket whose peer died with data unread gives ECONNRESET, not EOF.
      if (errno == ECONNRESET)
        throw ProbeError(Reason::child_failed,
                         "waiting for the token: connection reset (the partner exited or was killed)");
      throw;
    }
    return static_cast<Arrival>(received_[d][0]);
  }
  std::vector<int> main_only_fds() const { return unique({write_[0], read_[1]}); }
  std::vector<int> partner_only_fds() const { return unique({read_[0], write_[1]}); }
  void forget_fds(const std::vector<int>& fds) {
    for (int* fd : {&write_[0], &write_[1], &read_[0], &read_[1]})
      if (std::find(fds.begin(), fds.end(), *fd) != fds.end()) *fd = -1;
  }

 private:
  FdChannel(std::pair<int, int> writes, std::pair<int, int> reads, std::size_t payload)
      : write_{writes.first, writes.second}, read_{reads.first, reads.second} {
    const std::size_t bytes = std::max<std::size_t>(payload, 1);
    // Separate buffers per door and direction: the two tasks never share one.
    for (int d = 0; d < 2; ++d) {
      send_[d].assign(bytes, 'x');
      received_[d].assign(bytes, 0);
    }
  }
  static std::vector<int> unique(std::vector<int> fds) {
    std::sort(fds.begin(), fds.end());
    fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
    fds.erase(std::remove(fds.begin(), fds.end(), -1), fds.end());
    return fds;
  }

  int write_[2];
  int read_[2];
  std::vector<char> send_[2];
  std::vector<char> received_[2];
};

// The base of a channel without descriptors private to one side (eventfds
// both sides use, or state in memory): nothing to close after the fork, and
// a partner's death is not EOF, so a DeathWatch covers it.
struct SharedChannel {
  static constexpr bool partner_death_is_eof = false;
  std::vector<int> main_only_fds() const { return {}; }
  std::vector<int> partner_only_fds() const { return {}; }
  void forget_fds(const std::vector<int>&) {}
};

// The base of a channel whose State lives in memory shared with a partner
// process (mapped before the fork; also used between threads).
template <class State>
class SharedStateChannel : public SharedChannel {
 protected:
  SharedStateChannel() : memory_(sizeof(State)), state_(new (memory_.data()) State{}) {}
  SharedMemory memory_;
  State* state_;
};

// What a two-task switch probe states about itself; switch_descriptor fills
// in the rest, which is the same for every primitive.
struct SwitchProbe {
  std::string name;
  std::string op;
  std::vector<ProbeRole> roles = {};  // ProbeDescriptor::roles
  std::string baseline;
  std::string wait;  // the call in which each side sleeps, for the expectation
  std::string method;
  // System calls per switch when the primitive always makes them (post and
  // wait each one call); 0 when it depends on timing.
  double syscalls_per_switch = 0;
  // The system calls a switch makes, by name and number; set: the probe has
  // the seccomp axis (registry.hpp seccomp_param).
  std::vector<std::pair<std::string, long>> syscalls = {};
  // Under policy=normal a side the woken task preempted still sleeps in
  // `wait` for the answer (switch_expectation).
  bool sleeps_after_preemption = false;
};

template <class Channel>
using ChannelFactory = std::function<std::unique_ptr<Channel>(Between)>;

template <class Channel>
ProbeDescriptor switch_descriptor(const SwitchProbe& probe, ChannelFactory<Channel> make_channel) {
  std::vector<ParamSpec> params = {between_param(), cpus_param(), policy_param(), idle_param()};
  if (!probe.syscalls.empty()) params.push_back(seccomp_param());
  return {
      .name = probe.name,
      .op = probe.op,
      .roles = probe.roles,
      .unit = Unit::ns,
      .ops_per_iteration = constant(2),  // one iteration is a round trip = two switches
      .params = params,
      .baseline = probe.baseline,
      .make = [make_channel](Context& ctx) -> std::unique_ptr<Workload> {
        const Between between = parse_between(ctx.param("between"));
        return std::make_unique<PingPong<Channel>>(ctx, between, make_channel(between));
      },
      // The baseline uses the same flavour (process-shared or private) as the variant.
      .make_baseline = [make_channel](Context& ctx) -> std::unique_ptr<Workload> {
        return std::make_unique<SelfHandoff<Channel>>(make_channel(parse_between(ctx.param("between"))));
      },
      .expects = [wait = probe.wait, both = probe.sleeps_after_preemption](
                     const Params& p) { return std::optional<Expectation>(switch_expectation(p, wait, both)); },
      .tasks = [](const Params&) { return 2; },
      .method = probe.method,
      .syscalls_per_op =
          probe.syscalls_per_switch > 0 ? constant(probe.syscalls_per_switch) : std::function<double(const Params&)>(),
      .from_summary = round_trip_figures,
      .syscalls = probe.syscalls,
  };
}

}  // namespace ctx::pingpong
