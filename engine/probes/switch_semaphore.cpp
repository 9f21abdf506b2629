// switch.semaphore: one context switch driven by two POSIX semaphores
// (sem_post / sem_wait), one per direction, as in libMicro's and rt-tests'
// semaphore ping-pongs. Between processes the semaphores live in shared
// memory mapped before the fork, initialised with pshared = 1. One op is half
// a round trip. Baseline: sem_post + sem_wait on one semaphore in one thread
// (its cost per switch, with no sleep and no switch). A stop or a partner's
// death is a flag set before the post; a DeathWatch sets it if the partner
// process dies, so the measuring side is never left waiting.
#include <semaphore.h>

#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

struct SemaphoreDoors {
  struct alignas(64) Door {  // one cache line per direction
    sem_t semaphore;
    std::atomic<std::uint8_t> flag{0};  // stop or dead, set before the post
  } door[2];
};

class SemaphoreChannel : public SharedStateChannel<SemaphoreDoors> {
 public:
  explicit SemaphoreChannel(Between between) {
    for (auto& door : state_->door)
      if (sem_init(&door.semaphore, between == Between::processes ? 1 : 0, 0) != 0) throw_errno("sem_init");
  }
  ~SemaphoreChannel() {
    for (auto& door : state_->door) sem_destroy(&door.semaphore);
  }

  void post(Door door, Arrival what) {
    auto& d = state_->door[door_index(door)];
    if (what != Arrival::token) d.flag.store(static_cast<std::uint8_t>(what), std::memory_order_release);
    if (sem_post(&d.semaphore) != 0) throw_errno("sem_post");
  }
  Arrival wait(Door door) {
    auto& d = state_->door[door_index(door)];
    while (sem_wait(&d.semaphore) != 0)
      if (errno != EINTR) throw_errno("sem_wait");
    const std::uint8_t flag = d.flag.load(std::memory_order_acquire);
    return flag != 0 ? static_cast<Arrival>(flag) : Arrival::token;
  }
};

const Registrar registrar(switch_descriptor<SemaphoreChannel>(
    {
        .name = "switch.semaphore",
        .op = "one context switch: half a round trip of a wakeup over two POSIX semaphores (sem_post / sem_wait)",
        .baseline = "sem_post + sem_wait on one semaphore in one thread (the semaphore's cost per switch, no switch)",
        .wait = "sem_wait",
        .method = "libMicro and rt-tests (ptsematest) semaphore ping-pong; sem_init pshared=1 in shared memory "
                  "between processes",
    },
    [](Between between) { return std::make_unique<SemaphoreChannel>(between); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
