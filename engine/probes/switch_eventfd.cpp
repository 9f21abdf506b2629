// switch.eventfd: one context switch driven by two eventfds, one per
// direction: each side writes 1 to the other's counter and blocks in read()
// on its own. This is the kernel's lightest fd-based wakeup (no buffer, no
// copy beyond 8 bytes), the mechanism of io_uring and epoll-driven runtimes.
// One op is half a round trip. Baseline: write + read of one eventfd in one
// thread (its cost per switch, with no switch). An eventfd has no peer, so
// partner death is not EOF: a DeathWatch posts `dead` to the measuring side.
#include <sys/eventfd.h>

#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

class EventfdChannel : public SharedChannel {  // both sides use both eventfds
 public:
  EventfdChannel() {
    for (int& fd : fds_) {
      fd = eventfd(0, EFD_CLOEXEC);
      if (fd < 0) throw_errno("eventfd");
    }
  }
  ~EventfdChannel() {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }
  EventfdChannel(const EventfdChannel&) = delete;
  EventfdChannel& operator=(const EventfdChannel&) = delete;

  // Values add up in the counter until read, so each Arrival gets its own
  // order of magnitude and the largest one present wins.
  void post(Door door, Arrival what) {
    const std::uint64_t value = what == Arrival::token ? 1 : what == Arrival::stop ? stop_value : dead_value;
    write_exact(fds_[door_index(door)], &value, sizeof value, "eventfd write");
  }
  Arrival wait(Door door) {
    std::uint64_t value = 0;
    read_exact(fds_[door_index(door)], &value, sizeof value, "eventfd read");
    return value >= dead_value ? Arrival::dead : value >= stop_value ? Arrival::stop : Arrival::token;
  }

 private:
  static constexpr std::uint64_t stop_value = 1ull << 20;
  static constexpr std::uint64_t dead_value = 1ull << 40;
  int fds_[2] = {-1, -1};
};

const Registrar registrar(switch_descriptor<EventfdChannel>(
    {
        .name = "switch.eventfd",
        .op = "one context switch: half a round trip of a wakeup over two eventfds",
        .baseline = "write + read of one eventfd in one thread (the eventfd's cost per switch, no switch)",
        .wait = "read of an eventfd",
        .method = "the pipe ping-pong of lmbench lat_ctx with eventfd(2) as the primitive; baseline as lmbench's "
                  "overhead pass",
        .syscalls_per_switch = 2,  // one write (post) and one read (wait) per switch
    },
    [](Between) { return std::make_unique<EventfdChannel>(); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
