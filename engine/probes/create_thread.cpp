// create.pthread, create.pthread_detached, create.std_thread,
// create.pthread_scope_system, create.pthread_scope_process: what it costs to
// make a thread. The thread's body does nothing, so one op is the creation
// (stack from glibc's cache, clone, the new thread's start-up) plus the
// hand-back the variant names: a join (the thread has exited and been
// reaped), or, for a detached thread, the moment the new thread has run and
// set a flag its creator waits on. libMicro pthread_create, osbench
// create_threads and Bendersky's threadoverhead measure the same.
//
// Contention scope: POSIX lets a thread compete for the CPU against every
// thread in the system (PTHREAD_SCOPE_SYSTEM, "bound") or only within its
// process (PTHREAD_SCOPE_PROCESS, "unbound", an M:N library's user-level
// thread). Linux's NPTL is 1:1 and refuses process scope with ENOTSUP; the
// probe asks at run time and reports `unsupported` with that answer rather
// than time a system-scope thread under the other name.
#include <errno.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

void* return_at_once(void*) { return nullptr; }

// Default stack glibc gives a new thread (RLIMIT_STACK or 8 MiB), in KiB.
void add_default_stack(Result& r) {
  pthread_attr_t attr;
  std::size_t bytes = 0;
  if (pthread_getattr_default_np(&attr) != 0) return;
  if (pthread_attr_getstacksize(&attr, &bytes) == 0) r.derived["default_stack_kib"] = static_cast<double>(bytes) / 1024;
  pthread_attr_destroy(&attr);
}

std::string scope_name(int scope) {
  return scope == PTHREAD_SCOPE_PROCESS ? "PTHREAD_SCOPE_PROCESS" : "PTHREAD_SCOPE_SYSTEM";
}

// Whether this OS accepts `scope` in a thread attribute.
Support scope_accepted(int scope) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  const int error = pthread_attr_setscope(&attr, scope);
  pthread_attr_destroy(&attr);
  if (error == 0) return Support::yes();
  return Support::no(
      Reason::not_supported_here,
      fmt::format("pthread_attr_setscope({}) returned {} ({}){}", scope_name(scope),
                  error == ENOTSUP ? "ENOTSUP" : std::to_string(error), std::strerror(error),
                  scope == PTHREAD_SCOPE_PROCESS ? ": this OS's threads are all system-scope (Linux NPTL "
                                                   "is 1:1: the kernel schedules every "
                                                   "thread against all others), so an unbound thread "
                                                   "cannot be made"
                                                 : ""));
}

// pthread_create + pthread_join, with a contention scope when one is given.
class CreateJoin final : public Workload {
 public:
  explicit CreateJoin(std::optional<int> scope) {
    if (!scope) return;
    pthread_attr_init(&attr_);
    has_attr_ = true;
    if (const int error = pthread_attr_setscope(&attr_, *scope); error != 0) {
      errno = error;
      throw_errno("pthread_attr_setscope(" + scope_name(*scope) + ")");
    }
  }
  ~CreateJoin() override {
    if (has_attr_) pthread_attr_destroy(&attr_);
  }
  CreateJoin(const CreateJoin&) = delete;
  CreateJoin& operator=(const CreateJoin&) = delete;

  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      pthread_t thread;
      if (const int error = pthread_create(&thread, has_attr_ ? &attr_ : nullptr, return_at_once, nullptr);
          error != 0) {
        errno = error;
        throw_errno("pthread_create");
      }
      pthread_join(thread, nullptr);
    }
  }
  void annotate(Result& r) override { add_default_stack(r); }

 private:
  pthread_attr_t attr_{};
  bool has_attr_ = false;
};

// ---- detached --------------------------------------------------------------
// The flag and the count of detached threads still running are never freed,
// so a thread that outlives its workload touches nothing that is gone.
std::atomic<std::uint32_t> started_flag{0};
std::atomic<int> detached_running{0};
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

void* signal_started(void*) {
  started_flag.store(1, std::memory_order_release);
  futex(started_flag, FUTEX_WAKE_PRIVATE, 1);
  detached_running.fetch_sub(1, std::memory_order_acq_rel);
  return nullptr;
}

class CreateDetached final : public Workload {
 public:
  CreateDetached() {
    pthread_attr_init(&attr_);
    pthread_attr_setdetachstate(&attr_, PTHREAD_CREATE_DETACHED);
  }
  ~CreateDetached() override {
    // Let the last threads finish, so they do not run into the next probe.
    for (int waited = 0; detached_running.load() > 0 && waited < 5000; ++waited) usleep(1000);
    pthread_attr_destroy(&attr_);
  }
  CreateDetached(const CreateDetached&) = delete;
  CreateDetached& operator=(const CreateDetached&) = delete;

  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      started_flag.store(0, std::memory_order_relaxed);
      detached_running.fetch_add(1, std::memory_order_relaxed);
      pthread_t thread;
      if (const int error = pthread_create(&thread, &attr_, signal_started, nullptr); error != 0) {
        detached_running.fetch_sub(1);
        errno = error;
        throw_errno("pthread_create (detached)");
      }
      // Sleeps unless the thread has already set the flag; a wake meant for an
      // earlier op only makes this look again.
      while (started_flag.load(std::memory_order_acquire) == 0) futex(started_flag, FUTEX_WAIT_PRIVATE, 0);
    }
  }
  void annotate(Result& r) override { add_default_stack(r); }

 private:
  pthread_attr_t attr_{};
};

// ---- std::thread -----------------------------------------------------------
class StdThreadJoin final : public Workload {
 public:
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      std::thread thread([] {});
      thread.join();
    }
  }
};

const Registrar pthread_probe({
    .name = "create.pthread",
    .op = "one pthread_create (default attributes) of a thread that returns at "
          "once, and its pthread_join",
    .roles = {{"ladder:thread_create", 0}, {"answer:thread", 0}, {"profile:thread", 0}},
    .make = [](Context&) { return std::make_unique<CreateJoin>(std::nullopt); },
    .method = "libMicro pthread_create, osbench create_threads, eliben "
              "threadoverhead",
});

const Registrar pthread_detached_probe({
    .name = "create.pthread_detached",
    .op = "one pthread_create of a detached thread, until that thread has run "
          "and set a flag its creator waits "
          "on (futex); the thread's exit is not waited for",
    .make = [](Context&) { return std::make_unique<CreateDetached>(); },
    .method = "Boost.Fiber's performance/thread skynet_detach idea, reduced to "
              "one thread: creation until the new "
              "thread runs",
});

const Registrar std_thread_probe({
    .name = "create.std_thread",
    .op = "one std::thread constructed with an empty lambda, and its join",
    .roles = {{"answer:thread", 1}},
    .make = [](Context&) { return std::make_unique<StdThreadJoin>(); },
    .method = "Boost.Fiber performance/thread (std::thread variant), osbench "
              "create_threads",
});

const Registrar scope_system_probe({
    .name = "create.pthread_scope_system",
    .op = "one pthread_create with PTHREAD_SCOPE_SYSTEM (a bound thread) that "
          "returns at once, and its join",
    .make = [](Context&) { return std::make_unique<CreateJoin>(PTHREAD_SCOPE_SYSTEM); },
    .supported = [](const Params&) { return scope_accepted(PTHREAD_SCOPE_SYSTEM); },
    .method = "POSIX pthread_attr_setscope; libMicro pthread_create with the "
              "attribute set",
});

const Registrar scope_process_probe({
    .name = "create.pthread_scope_process",
    .op = "one pthread_create with PTHREAD_SCOPE_PROCESS (an unbound, M:N "
          "thread) that returns at once, and its "
          "join",
    .make = [](Context&) { return std::make_unique<CreateJoin>(PTHREAD_SCOPE_PROCESS); },
    .supported = [](const Params&) { return scope_accepted(PTHREAD_SCOPE_PROCESS); },
    .method = "POSIX pthread_attr_setscope; asked at run time, never assumed "
              "(stress-ng unimplemented_reason style)",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
