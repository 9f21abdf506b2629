// switch.futex: one context switch driven by raw futexes, the primitive under
// every pthread lock and condvar, as in tsuna/contextswitch timectxsw and
// context_switch2 --test=futex. Each direction has a 32-bit word: the sender
// stores the token and calls FUTEX_WAKE; the receiver takes the word with an
// atomic exchange and, finding it empty, sleeps in FUTEX_WAIT. Between
// threads the futexes are private (FUTEX_PRIVATE_FLAG, as pthreads use);
// between processes the words live in shared memory mapped before the fork
// and the futexes are shared (keyed by page, not by address space).
// One op is half a round trip. Baseline: a FUTEX_WAKE with no waiter plus an
// exchange that finds the word already set: the futex's cost per switch when
// nobody has to sleep. A DeathWatch wakes the measuring side if the partner
// process dies.
#include <sys/syscall.h>

#include "futex_channel.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;
using namespace ctx::pingpong;

const Registrar registrar(switch_descriptor<FutexChannel>(
    {
        .name = "switch.futex",
        .op = "one context switch: half a round trip of a wakeup over two futex words (FUTEX_WAKE / FUTEX_WAIT)",
        .roles = {{"answer:futex", 0}, {"profile:switch:futex", 0}},
        .baseline = "FUTEX_WAKE with no waiter + an atomic exchange that finds the word set, in one thread (the "
                    "futex's cost per switch, no sleep, no switch)",
        .wait = "FUTEX_WAIT",
        .method = "tsuna/contextswitch timectxsw and timetctxsw (without their sched_yield), context_switch2 "
                  "--test=futex; private futexes between threads, shared ones between processes",
        .syscalls = {{"futex", SYS_futex}},
    },
    [](Between between) { return std::make_unique<FutexChannel>(between); }));

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
