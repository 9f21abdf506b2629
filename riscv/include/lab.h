/*
 * lab.h: what the kernel and the user program of the trap lab agree on:
 * system call numbers, handler variants, the results the user program leaves
 * for the kernel to print, and the machine's addresses.
 *
 * Both simulators model the same devices at the same addresses (Spike's
 * default platform and QEMU's `virt` machine): RAM at 0x80000000, a CLINT at
 * 0x2000000 whose mtime ticks at 10 MHz, and an ns16550 UART at 0x10000000.
 * Only the way a run ends differs (HTIF tohost on Spike, the SiFive test
 * finisher on QEMU), so that is the one file built per platform.
 */
#ifndef CTXLAB_LAB_H
#define CTXLAB_LAB_H

/* System call numbers: the real Linux RISC-V ones (asm-generic unistd.h).
 * 172 is getpid; 170 is settimeofday. */
#define SYS_write 64
#define SYS_exit 93
#define SYS_clock_gettime 113
#define SYS_getpid 172
/* Below NR_SYSCALLS but unassigned here, so it goes through the same table
 * lookup as a real call and lands in sys_ni_syscall (-ENOSYS), as an unknown
 * number does in Linux. It is the lab's bare trap: dispatch with no work. */
#define SYS_unassigned 500
#define NR_SYSCALLS 512

#define ENOSYS 38
#define EBADF 9
#define EINVAL 22
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1

/* The pid our one task has. */
#define LAB_PID 1

/* Handler variants, in the order the kernel runs them. */
#define VARIANT_FULL 0    /* save/restore all 31 GPRs, dispatch, mret */
#define VARIANT_MINIMAL 1 /* save/restore only the caller-saved GPRs */
#define VARIANT_EMPTY 2   /* no save, no dispatch: mepc += 4; mret */
#define VARIANT_SMODE 3   /* VARIANT_FULL's handler in S-mode (medeleg), sret */
#define VARIANT_FPU 4     /* VARIANT_FULL plus 32 FP registers and fcsr */
#define NR_VARIANTS 5

/* Which privilege level a handler runs in (argument to trap_handle). */
#define TRAP_MODE_S 1
#define TRAP_MODE_M 3

/* What the user program times, in the order it prints. */
#define CALL_GETPID 0
#define CALL_WRITE 1
#define CALL_CLOCK_GETTIME 2
#define CALL_ENOSYS 3 /* a7 = SYS_unassigned */
#define NR_CALLS 4

#define LOOP_ROUND_TRIPS 100 /* ecalls per timed loop */
#define LOOP_SAMPLES 7       /* timed loops per call, after one warm-up loop */

/* Machine. */
#define UART_BASE 0x10000000UL
#define CLINT_BASE 0x2000000UL
#define CLINT_MTIMECMP (CLINT_BASE + 0x4000)
#define TIMEBASE_HZ 10000000UL

/* CSR bits. */
#define MSTATUS_SIE (1UL << 1)
#define MSTATUS_MIE (1UL << 3)
#define MSTATUS_SPIE (1UL << 5)
#define MSTATUS_MPIE (1UL << 7)
#define MSTATUS_SPP (1UL << 8)
#define MSTATUS_MPP (3UL << 11)
#define MSTATUS_FS (3UL << 13)
#define MSTATUS_FS_INITIAL (1UL << 13)
#define MIE_MTIE (1UL << 7)
#define COUNTEREN_CY_TM_IR 7UL /* cycle, time, instret */
#define PMP_R 0x01
#define PMP_W 0x02
#define PMP_X 0x04
#define PMP_NAPOT 0x18

#define CAUSE_ECALL_U 8
#define CAUSE_ECALL_S 9
#define CAUSE_ECALL_M 11
#define CAUSE_INTERRUPT (1UL << (__riscv_xlen - 1))
#define IRQ_M_TIMER 7

#ifndef __ASSEMBLER__
#include <stdint.h>

/* Counter deltas of one timed loop. */
struct loop_counts {
  uint64_t cycles;  /* rdcycle after minus before */
  uint64_t instret; /* rdinstret after minus before */
};

/* What the user program leaves for the kernel, per variant. */
struct lab_results {
  struct loop_counts timer_pair[LOOP_SAMPLES];       /* the reads alone */
  struct loop_counts empty_loop[LOOP_SAMPLES];       /* loop, no ecall */
  struct loop_counts calls[NR_CALLS][LOOP_SAMPLES];  /* loop with ecall */
  struct loop_counts single;  /* one getpid ecall, first thing, no loop */
  long last_return[NR_CALLS]; /* a0 after the last ecall of each call */
  uint64_t clock_ns[2];       /* clock_gettime before and after, in ns */
  int done;
};

extern struct lab_results lab_results;

/* user/loops.S */
struct loop_args {
  long round_trips; /* ecalls in the loop */
  long number;      /* a7 */
  long arg0, arg1, arg2;
};
long time_ecall_loop(const struct loop_args *args, struct loop_counts *out);
long time_empty_loop(const struct loop_args *args, struct loop_counts *out);
void time_timer_pair(struct loop_counts *out);
long time_single_ecall(const struct loop_args *args, struct loop_counts *out);

/* user/user.c */
void user_main(long variant) __attribute__((noreturn));
#endif

#endif
