// syscall.getpid: the cost of one getpid system call, made with syscall(2)
// so that no libc can answer from a cache (glibc 2.3.4-2.24 cached getpid;
// UnixBench and perf bench were both misled by it). A test counts the calls
// the kernel saw with strace and compares them with the ops performed.
#include <sys/syscall.h>
#include <unistd.h>

#include "measure/workloads.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

const Registrar registrar({
    .name = "syscall.getpid",
    .op = "one getpid system call through syscall(SYS_getpid), bypassing any libc cache",
    .roles = {{"ladder:syscall", 2}, {"answer:syscall", 2}, {"seccomp:per_call", 1}},
    .unit = Unit::ns,
    .params = {seccomp_param()},
    .make = [](Context&) { return loop_of([] { syscall(SYS_getpid); }); },
    .method = "lmbench lat_syscall 'null' / UnixBench syscall (raw SYS_getpid since 2020); batched and timer-corrected",
    .syscalls = {{"getpid", SYS_getpid}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
