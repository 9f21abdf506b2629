// switch.socketpair: one context switch driven by a 1-byte token over a Unix
// stream socketpair (each side writes to its end and blocks in read() on it),
// as in lmbench lat_unix and libMicro's pipe -x sock. One op is half a round
// trip. Baseline: a write of 1 byte at one end and a read of it at the other,
// in one thread (the socket's cost per switch, no switch). If the partner
// dies, its end closes and the measuring side reads EOF.
#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

const Registrar registrar(switch_descriptor<FdChannel>(
    {
        .name = "switch.socketpair",
        .op = "one context switch: half a round trip of a 1-byte token over an AF_UNIX stream socketpair",
        .roles = {{"profile:switch:socketpair", 0}},
        .baseline = "write of 1 byte at one end of a socketpair + read of it at the other, in one thread (the "
                    "socket's cost per switch, no switch)",
        .wait = "read of a socket",
        .method = "lmbench lat_unix and libMicro pipe -x sock, with the task kinds and placements of switch.pipe",
        .syscalls_per_switch = 2,  // one write (post) and one read (wait) per switch
        .sleeps_after_preemption = true,
    },
    [](Between) { return FdChannel::socketpair(1); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
