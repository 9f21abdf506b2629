/*
 * main.c: the lab kernel's M-mode main. It makes U-mode possible (a PMP
 * entry over all memory, user access to the cycle/time/instret counters),
 * then for each handler variant installs that variant's trap entry, runs the
 * user program (user/user.c) in U-mode until it exits, and prints the
 * counter deltas the program left in lab_results, one line per timed loop:
 *
 *   ctxlab sample variant=full call=getpid index=0 n=100 cycles=... instret=...
 *
 * call=timer is the counter reads alone, call=loop the loop with no ecall,
 * the others a loop of n ecalls; one `ctxlab single ... n=1` line per variant
 * is the lone getpid timed before any loop. The runner
 * (python/src/ctxbench/riscv/)
 * turns these into per-round-trip figures; nothing here divides or subtracts,
 * so the lines are the raw measurement.
 */
#include <stdint.h>

#include "kernel.h"
#include "lab.h"

/* start.S */
extern char trap_stack_top[], strap_stack_top[], user_stack_top[];

struct lab_results lab_results;
volatile long lab_handler_mode = TRAP_MODE_M;
volatile long lab_exit_code;

extern char trap_entry_full[], trap_entry_minimal[], trap_entry_smode[];
extern char trap_entry_fpu[], trap_vector_empty[];

static const char *const variant_names[NR_VARIANTS] = {"full", "minimal", "empty", "smode",
                                                       "fpu"};
static const char *const call_names[NR_CALLS] = {"getpid", "write", "clock_gettime", "enosys"};

#define csr_write(csr, value) __asm__ volatile("csrw " #csr ", %0" : : "r"(value))
#define csr_set(csr, bits) __asm__ volatile("csrs " #csr ", %0" : : "r"(bits))

static void set_mtimecmp(uint64_t value) { *(volatile uint64_t *)CLINT_MTIMECMP = value; }

static void machine_setup(void) {
  csr_write(pmpaddr0, ~0UL);                   /* NAPOT, all ones: all memory */
  csr_write(pmpcfg0, PMP_NAPOT | PMP_R | PMP_W | PMP_X);
  csr_write(mcounteren, COUNTEREN_CY_TM_IR);   /* S and U may read the counters */
  csr_write(scounteren, COUNTEREN_CY_TM_IR);   /* U may, when S-mode exists */
  csr_write(satp, 0UL);                        /* no translation in S/U */
  csr_set(mstatus, MSTATUS_FS_INITIAL);        /* FPU usable (the fpu variant saves it) */
  set_mtimecmp(~0UL);
}

/* Install one variant's handler. Every variant keeps trap_entry_full's
 * registers valid as the fallback for traps it does not handle itself. */
static void install_variant(int variant) {
  csr_write(mscratch, trap_stack_top);
  csr_write(mtvec, trap_entry_full);
  csr_write(medeleg, 0UL);
  csr_write(mie, 0UL);
  lab_handler_mode = TRAP_MODE_M;
  switch (variant) {
  case VARIANT_FULL:
    break;
  case VARIANT_MINIMAL:
    csr_write(mtvec, trap_entry_minimal);
    break;
  case VARIANT_EMPTY:
    csr_write(mtvec, (uintptr_t)trap_vector_empty | 1); /* vectored */
    csr_write(mie, MIE_MTIE); /* the user's "done" signal, see trap.S */
    break;
  case VARIANT_SMODE:
    csr_write(stvec, trap_entry_smode);
    csr_write(sscratch, strap_stack_top);
    csr_write(medeleg, 1UL << CAUSE_ECALL_U); /* U-mode ecalls go to S-mode */
    lab_handler_mode = TRAP_MODE_S;
    break;
  case VARIANT_FPU:
    csr_write(mtvec, trap_entry_fpu);
    break;
  }
}

static void print_counts(int variant, const char *call, int index, long n,
                         const struct loop_counts *counts) {
  console_puts(index < 0 ? "ctxlab single variant=" : "ctxlab sample variant=");
  console_puts(variant_names[variant]);
  console_puts(" call=");
  console_puts(call);
  if (index >= 0) {
    console_puts(" index=");
    console_put_u64((uint64_t)index);
  }
  console_puts(" n=");
  console_put_u64((uint64_t)n);
  console_puts(" cycles=");
  console_put_u64(counts->cycles);
  console_puts(" instret=");
  console_put_u64(counts->instret);
  console_puts("\n");
}

static void print_results(int variant) {
  const struct lab_results *r = &lab_results;
  console_puts("\n");
  print_counts(variant, "getpid", -1, 1, &r->single);
  for (int s = 0; s < LOOP_SAMPLES; s++) {
    print_counts(variant, "timer", s, 0, &r->timer_pair[s]);
    print_counts(variant, "loop", s, LOOP_ROUND_TRIPS, &r->empty_loop[s]);
  }
  for (int c = 0; c < NR_CALLS; c++) {
    for (int s = 0; s < LOOP_SAMPLES; s++)
      print_counts(variant, call_names[c], s, LOOP_ROUND_TRIPS, &r->calls[c][s]);
    console_puts("ctxlab return variant=");
    console_puts(variant_names[variant]);
    console_puts(" call=");
    console_puts(call_names[c]);
    console_puts(" value=");
    console_put_i64(r->last_return[c]);
    console_puts("\n");
  }
  console_puts("ctxlab clock variant=");
  console_puts(variant_names[variant]);
  console_puts(" first_ns=");
  console_put_u64(r->clock_ns[0]);
  console_puts(" last_ns=");
  console_put_u64(r->clock_ns[1]);
  console_puts(" done=");
  console_put_u64((uint64_t)r->done);
  console_puts(" exit=");
  console_put_i64(lab_exit_code);
  console_puts("\n");
}

void kernel_main(void) {
  machine_setup();
  console_puts("ctxlab begin platform=");
  console_puts(platform_name);
  console_puts(" round_trips=");
  console_put_u64(LOOP_ROUND_TRIPS);
  console_puts(" samples=");
  console_put_u64(LOOP_SAMPLES);
  console_puts(" timebase_hz=");
  console_put_u64(TIMEBASE_HZ);
  console_puts("\n");
  int failures = 0;
  for (int v = 0; v < NR_VARIANTS; v++) {
    lab_results = (struct lab_results){0};
    lab_exit_code = -1;
    install_variant(v);
    enter_user(user_main, v, user_stack_top);
    install_variant(VARIANT_FULL); /* back to the default, timer off */
    print_results(v);
    if (!lab_results.done) failures++;
  }
  console_puts("ctxlab end failures=");
  console_put_u64((uint64_t)failures);
  console_puts("\n");
  platform_exit(failures == 0 ? 0 : 1);
}
