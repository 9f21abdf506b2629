/*
 * user.c: the user program, run in U-mode once per handler variant.
 *
 * It first times one getpid ecall on its own (no loop, no warm-up: the
 * one-shot reading), then, for each call, one warm-up loop and then LOOP_SAMPLES loops of
 * LOOP_ROUND_TRIPS ecalls (user/loops.S), plus the same loop without the
 * ecall and the bare counter reads, and leaves the raw counter deltas in
 * lab_results for the kernel to print. The calls, with Linux's RISC-V
 * numbers and arguments:
 *   getpid()                         a7 = 172
 *   write(1, ".", 1)                 a7 = 64, one byte to the console
 *   clock_gettime(CLOCK_MONOTONIC, &ts)  a7 = 113, from the time CSR
 *   an unassigned number             a7 = 500, -ENOSYS: the bare trap
 * Then it exits with ecall 93, except under the empty handler, which runs
 * no calls at all: there it raises the machine timer interrupt instead
 * (see trap.S), the one way back that does not pass through that handler.
 */
#include <stdint.h>

#include "lab.h"

struct timespec {
  long tv_sec;
  long tv_nsec;
};

static uint64_t timespec_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * 1000000000UL + (uint64_t)ts->tv_nsec;
}

void user_main(long variant) {
  static const char byte = '.';
  static struct timespec ts;
  const struct loop_args args[NR_CALLS] = {
      [CALL_GETPID] = {LOOP_ROUND_TRIPS, SYS_getpid, 0, 0, 0},
      [CALL_WRITE] = {LOOP_ROUND_TRIPS, SYS_write, 1, (long)&byte, 1},
      [CALL_CLOCK_GETTIME] = {LOOP_ROUND_TRIPS, SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0},
      [CALL_ENOSYS] = {LOOP_ROUND_TRIPS, SYS_unassigned, 0, 0, 0},
  };
  struct lab_results *r = &lab_results;
  struct loop_counts warm_up;

  /* First, before any warm-up: one getpid as `rdcycle; ecall; rdcycle`. */
  time_single_ecall(&args[CALL_GETPID], &r->single);
  time_timer_pair(&warm_up);
  time_empty_loop(&args[CALL_GETPID], &warm_up);
  for (int s = 0; s < LOOP_SAMPLES; s++) {
    time_timer_pair(&r->timer_pair[s]);
    time_empty_loop(&args[CALL_GETPID], &r->empty_loop[s]);
  }
  for (int c = 0; c < NR_CALLS; c++) {
    time_ecall_loop(&args[c], &warm_up);
    if (c == CALL_CLOCK_GETTIME) r->clock_ns[0] = timespec_ns(&ts);
    for (int s = 0; s < LOOP_SAMPLES; s++)
      r->last_return[c] = time_ecall_loop(&args[c], &r->calls[c][s]);
    if (c == CALL_CLOCK_GETTIME) r->clock_ns[1] = timespec_ns(&ts);
  }
  r->done = 1;

  if (variant == VARIANT_EMPTY) {
    *(volatile uint64_t *)CLINT_MTIMECMP = 0; /* machine timer interrupt now */
    for (;;) {
    }
  }
  register long a0 __asm__("a0") = 0;
  register long a7 __asm__("a7") = SYS_exit;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
  for (;;) {
  }
}
