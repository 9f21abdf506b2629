// switch.condvar: one context switch driven by a pthread mutex and two
// condition variables, one per direction, as in eliben's
// thread-switch-condvar and rt-tests' ptsematest. To send: lock, mark the
// door, pthread_cond_signal, unlock; to receive: lock, pthread_cond_wait
// until the door is marked, take it, unlock. Between processes the mutex and
// condvars live in shared memory mapped before the fork, with
// PTHREAD_PROCESS_SHARED, and the mutex is robust (a partner killed while it
// holds the mutex gives EOWNERDEAD, not a hang). One op is half a round trip.
// The mutex can add switches: a woken waiter that runs before its waker has
// unlocked blocks on the mutex and switches back; the harness then reports
// too_many_switches and a per-observed-switch figure.
// Baseline: lock + signal with no waiter + unlock, then lock + check + unlock,
// in one thread: the primitive's cost per switch with no switch.
#include <pthread.h>

#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

struct CondvarState {
  pthread_mutex_t mutex;
  pthread_cond_t cond[2];
  std::uint8_t pending[2] = {0, 0};  // an Arrival per door, guarded by the mutex
};

class CondvarChannel : public SharedStateChannel<CondvarState> {
 public:
  explicit CondvarChannel(Between between) : shared_(between == Between::processes) {
    const int pshared = shared_ ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
    pthread_mutexattr_t mutex_attr;
    pthread_mutexattr_init(&mutex_attr);
    pthread_mutexattr_setpshared(&mutex_attr, pshared);
    if (shared_) pthread_mutexattr_setrobust(&mutex_attr, PTHREAD_MUTEX_ROBUST);
    const int mutex_error = pthread_mutex_init(&state_->mutex, &mutex_attr);
    pthread_mutexattr_destroy(&mutex_attr);
    if (mutex_error != 0) fail(mutex_error, "pthread_mutex_init");
    pthread_condattr_t cond_attr;
    pthread_condattr_init(&cond_attr);
    pthread_condattr_setpshared(&cond_attr, pshared);
    for (auto& cond : state_->cond)
      if (const int error = pthread_cond_init(&cond, &cond_attr); error != 0) fail(error, "pthread_cond_init");
    pthread_condattr_destroy(&cond_attr);
  }
  ~CondvarChannel() {
    // glibc's pthread_cond_destroy waits for every waiter to leave, and a
    // killed partner process never will; shared ones are simply unmapped.
    if (shared_) return;
    for (auto& cond : state_->cond) pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&state_->mutex);
  }

  void post(Door door, Arrival what) {
    const int d = door_index(door);
    const bool owner_died = lock();
    state_->pending[d] = std::max(state_->pending[d], static_cast<std::uint8_t>(what));
    if (owner_died) state_->pending[0] = state_->pending[1] = static_cast<std::uint8_t>(Arrival::dead);
    pthread_cond_signal(&state_->cond[d]);
    pthread_mutex_unlock(&state_->mutex);
  }
  Arrival wait(Door door) {
    const int d = door_index(door);
    bool owner_died = lock();
    while (state_->pending[d] == 0 && !owner_died) {
      const int error = pthread_cond_wait(&state_->cond[d], &state_->mutex);
      if (error == EOWNERDEAD) {
        pthread_mutex_consistent(&state_->mutex);
        owner_died = true;
      } else if (error != 0) {
        pthread_mutex_unlock(&state_->mutex);
        fail(error, "pthread_cond_wait");
      }
    }
    const auto arrived = owner_died ? Arrival::dead : static_cast<Arrival>(state_->pending[d]);
    state_->pending[d] = 0;
    pthread_mutex_unlock(&state_->mutex);
    return arrived;
  }

 private:
  // Locks the mutex; true when its previous owner died holding it (the
  // partner process was killed), after making it consistent again.
  bool lock() {
    const int error = pthread_mutex_lock(&state_->mutex);
    if (error == EOWNERDEAD) {
      pthread_mutex_consistent(&state_->mutex);
      return true;
    }
    if (error != 0) fail(error, "pthread_mutex_lock");
    return false;
  }
  [[noreturn]] static void fail(int error, const char* what) {
    errno = error;
    throw_errno(what);
  }

  bool shared_;
};

const Registrar registrar(switch_descriptor<CondvarChannel>(
    {
        .name = "switch.condvar",
        .op = "one context switch: half a round trip of a wakeup over a pthread mutex and two condition variables",
        .roles = {{"answer:condvar", 0}},
        .baseline = "mutex lock + pthread_cond_signal with no waiter + unlock, then lock + check + unlock, in one "
                    "thread (the primitive's cost per switch, no switch)",
        .wait = "pthread_cond_wait",
        .method = "eliben thread-switch-condvar and rt-tests ptsematest; PTHREAD_PROCESS_SHARED (and a robust "
                  "mutex) in shared memory between processes",
        .sleeps_after_preemption = true,
    },
    [](Between between) { return std::make_unique<CondvarChannel>(between); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
