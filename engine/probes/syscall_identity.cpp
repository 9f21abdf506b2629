// syscall.getppid, syscall.getsid, syscall.getuid: the cost of a system call
// that does almost nothing in the kernel (reads one field of the task), so
// what is timed is the kernel entry, the dispatch and the exit, mitigations
// included. lmbench's "null call" is getppid; perf bench syscall uses getppid
// too, since getpid was cached by some libcs. Each is made through
// syscall(2), so no libc wrapper can answer from a cache. One op is one call.
#include <sys/syscall.h>
#include <unistd.h>

#include "measure/workloads.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

const Registrar getppid_probe({
    .name = "syscall.getppid",
    .op = "one getppid system call through syscall(SYS_getppid)",
    .roles = {{"ladder:syscall", 1}, {"answer:syscall", 1}, {"seccomp:per_call", 0}, {"profile:syscall", 0}},
    .params = {seccomp_param()},
    .make = [](Context&) { return loop_of([] { syscall(SYS_getppid); }); },
    .method = "lmbench lat_syscall 'null' (getppid) and perf bench syscall basic; batched and timer-corrected",
    .syscalls = {{"getppid", SYS_getppid}},
});

const Registrar getsid_probe({
    .name = "syscall.getsid",
    .op = "one getsid(0) system call through syscall(SYS_getsid, 0): the caller's session id",
    .roles = {{"seccomp:per_call", 3}},
    .params = {seccomp_param()},
    .make = [](Context&) { return loop_of([] { syscall(SYS_getsid, 0); }); },
    .method = "a null system call in the manner of lmbench lat_syscall; batched and timer-corrected",
    .syscalls = {{"getsid", SYS_getsid}},
});

const Registrar getuid_probe({
    .name = "syscall.getuid",
    .op = "one getuid system call through syscall(SYS_getuid)",
    .roles = {{"seccomp:per_call", 2}},
    .params = {seccomp_param()},
    .make = [](Context&) { return loop_of([] { syscall(SYS_getuid); }); },
    .method = "UnixBench syscall.c's mix (getuid is one of its four calls), taken alone; batched and timer-corrected",
    .syscalls = {{"getuid", SYS_getuid}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
