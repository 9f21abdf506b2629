// An LD_PRELOAD shim that makes system calls slower by a small fixed amount,
// for bench/ab.py: a known small slowdown of the system-call rows.
//
// The engine's system-call probes call glibc's syscall() (`syscall(SYS_getppid)`,
// `syscall(SYS_read, ...)`...). This syscall() is found first: it spins
// CTXBENCH_AB_SPINS empty loop iterations (default 0), then makes the real
// call through the next syscall() (RTLD_NEXT). Even with no spin, the extra
// call and the argument copying cost each system call a few nanoseconds.
// The vDSO's clock reads never call syscall(): they are untouched.
//
// Build: gcc -O2 -shared -fPIC -o ab_delay.so ab_delay.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

static long spins;
static long (*next_syscall)(long, ...);

__attribute__((constructor)) static void start(void) {
  const char* text = getenv("CTXBENCH_AB_SPINS");
  spins = text ? strtol(text, NULL, 10) : 0;
  next_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
}

long syscall(long number, ...) {
  // x86-64 and aarch64 pass the six arguments in registers: reading six
  // longs is how libc's own syscall() forwards them.
  va_list args;
  va_start(args, number);
  long a = va_arg(args, long), b = va_arg(args, long), c = va_arg(args, long);
  long d = va_arg(args, long), e = va_arg(args, long), f = va_arg(args, long);
  va_end(args);
  for (long i = 0; i < spins; ++i) __asm__ volatile("" ::: "memory");  // one spin
  return next_syscall(number, a, b, c, d, e, f);
}
