// The futex channel of switch.futex and matrix.wakeup: one 32-bit word per
// direction, each on its own cache line. The sender stores the token and
// calls FUTEX_WAKE; the receiver takes the word with an atomic exchange and,
// finding it empty, sleeps in FUTEX_WAIT. Private futexes between threads
// (FUTEX_PRIVATE_FLAG, as pthreads use); shared ones between processes (the
// words live in memory mapped before the fork, keyed by page).
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>

#include "pingpong.hpp"

namespace ctx::pingpong {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex word must be a plain lock-free 32-bit atomic");

struct FutexWords {
  struct alignas(64) Door {  // one cache line per direction
    std::atomic<std::uint32_t> word{0};
  } door[2];
};

class FutexChannel : public SharedStateChannel<FutexWords> {
 public:
  explicit FutexChannel(Between between) : private_flag_(between == Between::threads ? FUTEX_PRIVATE_FLAG : 0) {}

  void post(Door door, Arrival what) {
    auto& word = state_->door[door_index(door)].word;
    word.store(static_cast<std::uint32_t>(what), std::memory_order_release);
    futex(word, FUTEX_WAKE, 1);
  }
  Arrival wait(Door door) {
    auto& word = state_->door[door_index(door)].word;
    for (;;) {
      const std::uint32_t value = word.exchange(0, std::memory_order_acq_rel);
      if (value != 0) return static_cast<Arrival>(value);
      // Sleeps only while the word is still 0; EAGAIN means it changed first.
      if (futex(word, FUTEX_WAIT, 0) != 0 && errno != EAGAIN && errno != EINTR) throw_errno("futex(FUTEX_WAIT)");
    }
  }

 private:
  long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) const {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op | private_flag_, value, nullptr, nullptr, 0);
  }

  int private_flag_;
};

}  // namespace ctx::pingpong
