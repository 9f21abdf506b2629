// create.coroutine: what it costs to make a C++20 coroutine and be done with
// it: call a coroutine function (which allocates its frame with operator new
// and suspends at its start), resume it (its body does nothing, so it runs to
// its final suspend point) and destroy it (operator delete). One op is that
// whole life. No stack, no scheduler, no kernel involvement (checked).
#include <coroutine>
#include <cstdint>
#include <exception>

#include "uswitch_common.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

struct Task {
  struct promise_type {
    Task get_return_object() { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

// Out of line, so that the compiler cannot see through the coroutine and
// elide its frame allocation (which the probe means to measure).
[[gnu::noinline]] Task empty_coroutine(std::uint64_t* ran) {
  ++*ran;
  co_return;
}

class CreateCoroutine final : public uswitch::UserSwitchWorkload {
 public:
  void run(std::uint64_t iterations) override {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      Task task = empty_coroutine(&ran_);  // allocate the frame; suspended at its start
      task.handle.resume();                // run to the final suspend point
      task.handle.destroy();               // free the frame
    }
  }
  void annotate(Result& r) override { r.derived["coroutines_run"] = static_cast<double>(ran_); }

 private:
  std::uint64_t ran_ = 0;
};

const Registrar registrar({
    .name = "create.coroutine",
    .op = "create a C++20 coroutine (its frame allocated with operator new), resume it to its end and destroy it",
    .unit = Unit::ns,
    .make = [](Context&) { return std::make_unique<CreateCoroutine>(); },
    .expects = expects_no_switches,
    .method = "the stackless counterpart of create.fiber and create.boost_context",
    .where_time_goes = "operator new/delete of the coroutine frame (tens of bytes, from malloc's fast bins) and two "
                       "indirect calls",
    .derived = {{"coroutines_run", Aggregation::sum}},  // every round's coroutines
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
