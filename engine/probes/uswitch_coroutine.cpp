// uswitch.coroutine: C++20 stackless coroutines handing control to each other
// by symmetric transfer (await_suspend returns the other's handle, which the
// compiler resumes as a tail call). Two coroutines pass the ball back and
// forth; one op is one transfer: suspend one coroutine, resume the other.
// Nothing is saved but what the compiler kept live across the co_await in
// the coroutine's heap frame: no stack swap, no register file, no kernel.
// The batch starts with one resume from the harness and ends with one return
// to it (noop_coroutine), amortized over the batch.
#include <algorithm>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <limits>

#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

// The compiler makes a symmetric transfer a tail call only when it optimises
// and no sanitizer instruments the frames: at -O0 or under AddressSanitizer
// every transfer nests a frame and a batch overflows the stack. There a batch
// is played in chunks that each return to run(); such builds check behaviour,
// their figures are never used.
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
inline constexpr std::uint64_t transfers_per_resume = 1000;
#else
inline constexpr std::uint64_t transfers_per_resume = std::numeric_limits<std::uint64_t>::max();
#endif

struct Court {
  std::uint64_t transfers_left = 0;
  std::coroutine_handle<> player[2];
  std::coroutine_handle<> holder;  // who has the ball when a batch ends
};

// Awaited by a player to pass the ball to the other one.
struct PassTo {
  Court& court;
  int to;
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> self) const noexcept {
    if (court.transfers_left == 0) {  // the batch is done: back to whoever resumed us
      court.holder = self;
      return std::noop_coroutine();
    }
    --court.transfers_left;
    return court.player[to];  // symmetric transfer: resumed as a tail call
  }
  void await_resume() const noexcept {}
};

struct Player {
  struct promise_type {
    Player get_return_object() { return Player{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

Player play(Court& court, int me) {
  for (;;) co_await PassTo{court, 1 - me};
}

class CoroutinePingPong final : public uswitch::UserSwitchWorkload {
 public:
  CoroutinePingPong() {
    for (int p = 0; p < 2; ++p) court_.player[p] = play(court_, p).handle;
    court_.holder = court_.player[0];
  }
  ~CoroutinePingPong() override {
    for (auto h : court_.player) h.destroy();  // both are suspended at a co_await
  }
  void run(std::uint64_t iterations) override {
    std::uint64_t left = 2 * iterations;  // one iteration is a round trip = two transfers
    while (left > 0) {
      const std::uint64_t chunk = std::min(left, transfers_per_resume);
      court_.transfers_left = chunk;
      court_.holder.resume();
      left -= chunk;
    }
  }

 private:
  Court court_;
};

const Registrar registrar({
    .name = "uswitch.coroutine",
    .op = "one C++20 symmetric transfer: one coroutine suspends and resumes the other (half a round trip)",
    .roles = {{"ladder:coroutine", 0}, {"answer:coroutine", 0}, {"uswitch:compiled", 0}},
    .unit = Unit::ns,
    .ops_per_iteration = constant(2),  // one iteration is a round trip = two transfers
    .make = [](Context&) { return std::make_unique<CoroutinePingPong>(); },
    .expects = expects_no_switches,
    .method = "C++20 (P0913 symmetric transfer) ping-pong, batched and timer-corrected",
    .where_time_goes = "the suspending coroutine stores its resume point in its frame, await_suspend returns the "
                       "other handle and the compiler tail-calls its resume function: an indirect call, no stack "
                       "switch, no saved registers beyond what the compiler keeps in the frame, no kernel (checked).",
    .from_summary = round_trip_figures,
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
