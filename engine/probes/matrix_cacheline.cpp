// matrix.cacheline: how long one cache line takes to travel from one CPU to
// another, for every pair of allowed CPUs. Two threads pinned to the pair
// bounce one 64-byte line, alone in a 128-byte block so that the adjacent-line
// prefetcher drags nothing else along: the row CPU's thread stores an odd
// count and spins until it loads the next (even) one; the column CPU's thread
// spins until it loads the odd count and stores the next. Every store has to
// take the line out of the other CPU's cache, so one op, a one-way hand-off
// (half a round trip), is one line transfer plus the load that sees it.
// The method is core-to-core-latency's ping-pong with a plain release store
// and acquire loads instead of its compare-and-swap (bench 1): a failed CAS
// also takes the line exclusive, which adds contention the store/load pair
// does not have. Both threads spin, so no switch is expected; the checks are
// where the threads ran. The diagonal is not measured (two spinning threads on
// one CPU hand off only when the scheduler preempts one of them).
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "os/arch/cycle_timer.hpp"
#include "os/tasks.hpp"
#include "os/timer.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// The bounced line, alone in its 128-byte pair of lines.
struct alignas(128) Line {
  std::atomic<std::uint64_t> value{0};
};
static_assert(sizeof(Line) == 128 && std::atomic<std::uint64_t>::is_always_lock_free);

constexpr std::uint64_t stop_value = ~std::uint64_t{0};
constexpr double give_up_ns = 10e9;  // no hand-off for this long: the other thread is gone

// Spins until the line holds `want` (or the stop value); returns what it saw.
// Every million spins it checks for Ctrl-C and for a partner that stopped
// answering, so a fault cannot hang the engine; the clock is read only then.
std::uint64_t wait_for(const std::atomic<std::uint64_t>& line, std::uint64_t want, const char* waiting_for) {
  std::uint64_t since = 0;
  for (std::uint64_t spins = 1;; ++spins) {
    const std::uint64_t seen = line.load(std::memory_order_acquire);
    if (seen == want || seen == stop_value) return seen;
    arch::cpu_relax();
    if ((spins & 0xFFFFF) != 0) continue;
    if (interrupted_flag().load()) throw ProbeError(Reason::interrupted, "interrupted");
    const std::uint64_t now = monotonic_raw_ns();
    if (since == 0)
      since = now;
    else if (static_cast<double>(now - since) > give_up_ns)
      throw ProbeError(Reason::child_failed, fmt::format("no {} for {:.0f} s", waiting_for, give_up_ns / 1e9));
  }
}

// The column CPU's side: answer every odd count with the next one.
std::uint64_t answer(Line& line) {
  std::uint64_t served = 0;
  for (std::uint64_t want = 1;; want += 2) {
    if (wait_for(line.value, want, "hand-off from the row CPU's thread") == stop_value) return served;
    line.value.store(want + 1, std::memory_order_release);
    ++served;
  }
}

class LineBounce final : public Workload {
 public:
  explicit LineBounce(Context& ctx) : line_(std::make_unique<Line>()) {
    partner_.emplace(ctx, 1, Between::threads, [line = line_.get()] { return answer(*line); });
    run(1);  // a start barrier: the partner is up, pinned and answering before anything is timed
  }
  ~LineBounce() override { stop(); }

  void run(std::uint64_t iterations) override {
    auto& value = line_->value;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      value.store(count_ + 1, std::memory_order_release);  // the column CPU's turn
      count_ += 2;
      wait_for(value, count_, "answer from the column CPU's thread");
    }
  }

  std::vector<TaskReport> finish() override {
    stop();
    return {partner_->join()};
  }

 private:
  // The partner waits for count_ + 1 after its last answer; the stop value
  // ends its loop instead.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    line_->value.store(stop_value, std::memory_order_release);
  }

  std::unique_ptr<Line> line_;
  std::uint64_t count_ = 0;  // the last even count received
  bool stopped_ = false;
  std::optional<Partner> partner_;  // after line_: joined before the line is freed
};

const Registrar registrar({
    .name = "matrix.cacheline",
    .op = "one cache-line hand-off between two CPUs: half a round trip of a store on one CPU seen by a spinning load "
          "on the other",
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two one-way hand-offs
    .params = {max_pairs_param()},
    .make = [](Context& ctx) -> std::unique_ptr<Workload> { return std::make_unique<LineBounce>(ctx); },
    .tasks = [](const Params&) { return 2; },
    .method = "core-to-core-latency's per-pair ping-pong of one cache line between two pinned threads, with a "
              "release store and acquire loads (not its CAS); one 64-byte line alone in a 128-byte block; one op "
              "= half a round trip; no baseline (the line transfer is the figure); every ordered pair of allowed "
              "CPUs, stratified sampling past max_pairs",
    .matrix = PairMatrixSpec{.diagonal = false,
                             .rows = "CPU of the thread that stores first (task 0)",
                             .columns = "CPU of the thread that answers (task 1)",
                             .diagonal_why_not = "two spinning threads on one CPU hand off only when the "
                                                 "scheduler preempts one of them, which is not a cache-line "
                                                 "transfer"},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
