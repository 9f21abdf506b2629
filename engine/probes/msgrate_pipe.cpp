// msgrate.pipe: round trips per second between two threads over two pipes,
// with the message size as a knob, as in eliben's thread-pipe-msgpersec and
// perf bench sched pipe's ops/sec. One op is one round trip: a payload-sized
// message to the partner thread and one of the same size back. The harness
// times ns per round trip and reports the rate (msgs/s). Messages larger
// than the pipe's buffer (64 KiB by default) need several wakeups each way.
// No baseline: the rate is the figure, copies and wakeups included.
#include "os/idle.hpp"
#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

void rate_figures(Result& r) {
  if (!r.summary) return;
  const double payload = r.numeric_params["payload"];
  r.derived["bytes_per_s_each_way"] = r.summary->median * payload;
}

const Registrar registrar({
    .name = "msgrate.pipe",
    .op = "one round trip: a payload-sized message to a partner thread over a pipe and one back over another",
    .roles = {{"answer:message_rate", 0}},
    .unit = Unit::msgs_per_s,
    .ops_per_iteration = constant(1),  // one iteration is one round trip
    .params =
        {
            {"payload",
             {"1", "64", "512", "4096", "16384", "65536", "262144", "1048576"},
             {"1", "64", "4096", "65536"},
             "bytes in each message",
             true,
             true},
            cpus_param(),
            policy_param(),
            idle_param(),
        },
    .make =
        [](Context& ctx) {
          const auto payload = static_cast<std::size_t>(ctx.param_int("payload"));
          return std::make_unique<PingPong<FdChannel>>(ctx, Between::threads, FdChannel::pipes(payload), Annotator{});
        },
    .tasks = [](const Params&) { return 2; },
    .method = "eliben thread-pipe-msgpersec and perf bench sched pipe -T (ops/sec), with the payload as a knob",
    .from_summary = rate_figures,
    .derived = {{"bytes_per_s_each_way", Aggregation::recompute}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
