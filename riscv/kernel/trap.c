/*
 * trap.c: the C half of the trap handler, and the system calls it runs.
 *
 * trap_handle is what the full, minimal, smode and fpu entries in trap.S
 * call with the frame they saved. For an ecall from U-mode it dispatches on
 * a7 through a table, the way Linux does (every unassigned slot holds
 * sys_ni_syscall, so an unknown number costs the same lookup as a real one),
 * runs the call with a0..a5 from the frame and writes the result into the
 * frame's a0. The calls are small but real: getpid reads the current task,
 * write copies bytes from the user's buffer to the UART, clock_gettime turns
 * the time CSR (the CLINT's mtime, 10 MHz) into a timespec in user memory.
 * The difference between these and sys_ni_syscall is the lab's "call logic".
 */
#include <stdint.h>

#include "frame.h"
#include "kernel.h"
#include "lab.h"

typedef long (*syscall_fn)(long, long, long, long, long, long);

struct task {
  long pid;
};
static struct task init_task = {.pid = LAB_PID};
/* The running task. Not static, so the compiler must load it on every call,
 * as a kernel reads its per-CPU `current`. */
struct task *current_task = &init_task;

struct timespec {
  long tv_sec;
  long tv_nsec;
};

static long sys_ni_syscall(long a0, long a1, long a2, long a3, long a4, long a5) {
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  return -ENOSYS;
}

static long sys_getpid(long a0, long a1, long a2, long a3, long a4, long a5) {
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  return current_task->pid;
}

static long sys_write(long fd, long buf, long count, long a3, long a4, long a5) {
  (void)a3, (void)a4, (void)a5;
  if (fd != 1 && fd != 2) return -EBADF;
  const char *bytes = (const char *)buf; /* no MMU: user pointers are physical */
  for (long i = 0; i < count; i++) console_putc(bytes[i]);
  return count;
}

static long sys_clock_gettime(long clock, long ts, long a2, long a3, long a4, long a5) {
  (void)a2, (void)a3, (void)a4, (void)a5;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return -EINVAL;
  uint64_t ticks = read_time();
  struct timespec *out = (struct timespec *)ts;
  out->tv_sec = (long)(ticks / TIMEBASE_HZ);
  out->tv_nsec = (long)(ticks % TIMEBASE_HZ * (1000000000UL / TIMEBASE_HZ));
  return 0;
}

static long sys_exit(long code, long a1, long a2, long a3, long a4, long a5) {
  (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
  lab_exit_code = code;
  if (lab_handler_mode == TRAP_MODE_S) {
    /* S-mode cannot reach the M-mode kernel's context: ask M-mode, with an
     * ecall from S, which trap_handle below turns into resume_kernel. */
    register long a7 __asm__("a7") = SYS_exit;
    __asm__ volatile("ecall" : : "r"(a7) : "memory");
  }
  resume_kernel();
}

/* Fill every slot with sys_ni_syscall, then name the real ones (the same
 * GNU range-initializer idiom as Linux's sys_call_table). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const syscall_fn syscall_table[NR_SYSCALLS] = {
    [0 ... NR_SYSCALLS - 1] = sys_ni_syscall,
    [SYS_write] = sys_write,
    [SYS_exit] = sys_exit,
    [SYS_clock_gettime] = sys_clock_gettime,
    [SYS_getpid] = sys_getpid,
};
#pragma GCC diagnostic pop

/* Anything but an ecall from U-mode: the S-mode handler's way home, or a
 * bug, reported with the trap's CSRs and ended with a failing exit status. */
static void trap_unexpected(struct trap_frame *frame, uintptr_t cause, uintptr_t mode) {
  if (mode == TRAP_MODE_M && cause == CAUSE_ECALL_S && frame->x[REG_A7] == SYS_exit)
    resume_kernel();
  uintptr_t epc, tval;
  if (mode == TRAP_MODE_M) {
    __asm__ volatile("csrr %0, mepc" : "=r"(epc));
    __asm__ volatile("csrr %0, mtval" : "=r"(tval));
  } else {
    __asm__ volatile("csrr %0, sepc" : "=r"(epc));
    __asm__ volatile("csrr %0, stval" : "=r"(tval));
  }
  console_puts("\nctxlab panic mode=");
  console_puts(mode == TRAP_MODE_M ? "M" : "S");
  console_puts(" cause=");
  console_put_hex(cause);
  console_puts(" epc=");
  console_put_hex(epc);
  console_puts(" tval=");
  console_put_hex(tval);
  console_puts("\n");
  platform_exit(3);
}

void trap_handle(struct trap_frame *frame, uintptr_t cause, uintptr_t mode) {
  if (cause != CAUSE_ECALL_U) {
    trap_unexpected(frame, cause, mode);
    return;
  }
  uintptr_t number = frame->x[REG_A7];
  if (number >= NR_SYSCALLS) {
    frame->x[REG_A0] = (uintptr_t)-ENOSYS;
    return;
  }
  frame->x[REG_A0] = (uintptr_t)syscall_table[number](
      (long)frame->x[REG_A0], (long)frame->x[REG_A1], (long)frame->x[REG_A2],
      (long)frame->x[REG_A3], (long)frame->x[REG_A4], (long)frame->x[REG_A5]);
}
