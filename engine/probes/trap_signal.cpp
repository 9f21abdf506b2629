// trap.signal: the round trip of a signal delivered to oneself. The thread
// sends SIGUSR1 to itself with tgkill; the kernel finds it pending on the way
// out of that system call, builds a signal frame on the user stack and enters
// the handler, which counts it and returns through the sigreturn trampoline
// into the kernel, which restores the interrupted context. One op is that
// whole trip: tgkill + delivery + handler + rt_sigreturn. The baseline is
// tgkill with signal 0 (the permission check, nothing sent), so the corrected
// figure is the delivery and return alone. A check compares the handler's
// count with the signals sent: a standard signal does not queue, so a
// delivery that was merged or lost would show there.
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

std::atomic<std::uint64_t> delivered{0};  // lock-free, so safe in a handler
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

void on_signal(int) { delivered.fetch_add(1, std::memory_order_relaxed); }

// Sends `signal` to the calling thread once per iteration; signal 0 sends nothing.
class SelfSignal final : public Workload {
 public:
  explicit SelfSignal(int signal) : signal_(signal), pid_(getpid()), tid_(static_cast<pid_t>(syscall(SYS_gettid))) {
    if (signal_ == 0) return;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal_, &action, &old_action_) != 0) throw_errno("sigaction(SIGUSR1)");
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, signal_);
    pthread_sigmask(SIG_UNBLOCK, &unblock, &old_mask_);
    installed_ = true;
    delivered_at_start_ = delivered.load();
  }
  ~SelfSignal() override {
    if (!installed_) return;
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(signal_, &old_action_, nullptr);
  }
  SelfSignal(const SelfSignal&) = delete;
  SelfSignal& operator=(const SelfSignal&) = delete;

  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i)
      if (syscall(SYS_tgkill, pid_, tid_, signal_) != 0) throw_errno("tgkill to the engine's own thread");
    sent_ += iterations;
  }
  void annotate(Result& r) override {
    if (signal_ == 0) return;
    Check check;
    check.name = "signals_delivered";
    check.expected = sent_;
    const std::uint64_t seen = delivered.load() - delivered_at_start_;
    check.observed = seen;
    check.ratio = sent_ ? std::optional<double>(static_cast<double>(seen) / static_cast<double>(sent_)) : std::nullopt;
    check.ok = seen == sent_;
    check.detail = "handler invocations vs SIGUSR1 sent, over every batch (calibration and warm-up included)";
    if (!check.ok)
      r.verdict.add(
          Status::suspect, Reason::count_mismatch,
          fmt::format("the handler ran {} times for {} signals sent: some ops were not a full delivery", seen, sent_));
    r.checks.push_back(check);
  }

 private:
  int signal_;
  pid_t pid_;
  pid_t tid_;
  bool installed_ = false;
  struct sigaction old_action_ {};
  sigset_t old_mask_{};
  std::uint64_t sent_ = 0;
  std::uint64_t delivered_at_start_ = 0;
};

const Registrar registrar({
    .name = "trap.signal",
    .op = "one signal round trip: tgkill(SIGUSR1) to the calling thread, delivery to a handler that counts it, and "
          "rt_sigreturn back",
    .roles = {{"ladder:signal", 0}, {"profile:signal", 0}},
    .baseline = "tgkill to the calling thread with signal 0 (the system call alone, nothing sent or delivered)",
    .make = [](Context&) { return std::make_unique<SelfSignal>(SIGUSR1); },
    .make_baseline = [](Context&) { return std::make_unique<SelfSignal>(0); },
    .method = "lmbench lat_sig 'catch' (signal to self, handler, return) and rt-tests sigwaittest; baseline as "
              "lmbench's overhead pass",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
