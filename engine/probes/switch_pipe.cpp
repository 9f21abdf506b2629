// switch.pipe: the cost of one context switch, driven by a one-byte token
// ping-ponged over two pipes between two tasks (threads or processes), as in
// lmbench lat_ctx with two procs, perf bench sched pipe and eliben's
// thread-switch-pipe. One round trip is two switches, so one op is half a
// round trip; the record also gives the round trip. The baseline is a write
// and a read of one byte on a self-pipe in one thread: the pipe's own cost
// per switch, subtracted to leave the switch (plus wakeup) itself. If the
// partner dies, its pipe ends close and the measuring side reads EOF.
#include <sys/syscall.h>

#include "pingpong.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

const Registrar registrar(switch_descriptor<FdChannel>(
    {
        .name = "switch.pipe",
        .op = "one context switch: half a round trip of a 1-byte token over two pipes",
        .roles = {{"ladder:switch", 0}, {"answer:pipe", 0}, {"explain:headline", 0}, {"profile:switch:pipe", 0}},
        .baseline = "write + read of 1 byte on a self-pipe in one thread (the pipe's cost per switch, no switch)",
        .wait = "read",
        .method = "lmbench lat_ctx (2 procs, 0 KiB) and eliben thread-switch-pipe; baseline as lmbench's overhead pass",
        .syscalls_per_switch = 2,  // one write (post) and one read (wait) per switch
        .syscalls = {{"read", SYS_read}, {"write", SYS_write}},
    },
    [](Between) { return FdChannel::pipes(1); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
