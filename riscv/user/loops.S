/*
 * loops.S: the timed loops the user program runs in U-mode.
 *
 *   long time_ecall_loop(const struct loop_args *args, struct loop_counts *out);
 *   long time_empty_loop(const struct loop_args *args, struct loop_counts *out);
 *   void time_timer_pair(struct loop_counts *out);
 *   long time_single_ecall(const struct loop_args *args, struct loop_counts *out);
 *
 * One operation is one ecall round trip: U-mode -> trap handler -> back to
 * the instruction after the ecall. time_ecall_loop runs args->round_trips
 * of them between two reads of rdcycle and rdinstret and stores the deltas.
 * time_empty_loop is the same loop, instruction for instruction, without the
 * ecall: the baseline the runner subtracts, so what remains is the round
 * trip alone. time_timer_pair is the counter reads with nothing between
 * them: the timer's own cost, subtracted from every loop before dividing.
 * Written in assembly so the loops are exactly alike; the arguments live in
 * callee-saved registers because the ecall returns its result in a0.
 *
 * time_single_ecall is the experiment as students first write it: one
 * ecall between two counter reads, no loop, no warm-up; the runner shows it
 * beside the loop to show what a one-shot reading includes.
 *
 * The reads come in the order cycle, instret ... instret, cycle, so both
 * deltas span the same instructions. Returns a0 after the last ecall.
 */
#include "frame.h"

/* struct loop_args offsets */
#define ARGS_ROUND_TRIPS 0
#define ARGS_NUMBER 8
#define ARGS_ARG0 16
#define ARGS_ARG1 24
#define ARGS_ARG2 32
/* struct loop_counts offsets */
#define COUNTS_CYCLES 0
#define COUNTS_INSTRET 8

/* Read the counters again (instret, then cycle), subtract the readings
 * taken at the start, and store both deltas in the loop_counts at \out. */
.macro STOP_COUNTERS cycles_start, instret_start, out
  rdinstret t1
  rdcycle   t0
  sub   t0, t0, \cycles_start
  sub   t1, t1, \instret_start
  sd    t0, COUNTS_CYCLES(\out)
  sd    t1, COUNTS_INSTRET(\out)
.endm

.macro TIMED_LOOP with_ecall
  addi  sp, sp, -80
  sd    s1, 0(sp)                 /* save s1 */
  sd    s2, 8(sp)                 /* save s2 */
  sd    s3, 16(sp)                /* save s3 */
  sd    s4, 24(sp)                /* save s4 */
  sd    s5, 32(sp)                /* save s5 */
  sd    s6, 40(sp)                /* save s6 */
  sd    s7, 48(sp)                /* save s7 */
  sd    s8, 56(sp)                /* save s8 */
  ld    s5, ARGS_ROUND_TRIPS(a0)  /* loop counter */
  ld    s4, ARGS_NUMBER(a0)       /* system call number, for a7 */
  ld    s1, ARGS_ARG0(a0)         /* arguments, for a0..a2 */
  ld    s2, ARGS_ARG1(a0)
  ld    s3, ARGS_ARG2(a0)
  mv    s6, a1                    /* where the deltas go */
  rdcycle   s7
  rdinstret s8
1:
  mv    a0, s1
  mv    a1, s2
  mv    a2, s3
  mv    a7, s4
.if \with_ecall
  ecall
.endif
  addi  s5, s5, -1
  bnez  s5, 1b
  STOP_COUNTERS s7, s8, s6
  ld    s1, 0(sp)                 /* restore s1 */
  ld    s2, 8(sp)                 /* restore s2 */
  ld    s3, 16(sp)                /* restore s3 */
  ld    s4, 24(sp)                /* restore s4 */
  ld    s5, 32(sp)                /* restore s5 */
  ld    s6, 40(sp)                /* restore s6 */
  ld    s7, 48(sp)                /* restore s7 */
  ld    s8, 56(sp)                /* restore s8 */
  addi  sp, sp, 80
  ret
.endm

  .text
  .globl time_ecall_loop
  .type time_ecall_loop, @function
time_ecall_loop:
  TIMED_LOOP 1
  .size time_ecall_loop, . - time_ecall_loop

  .globl time_empty_loop
  .type time_empty_loop, @function
time_empty_loop:
  TIMED_LOOP 0
  .size time_empty_loop, . - time_empty_loop

  .globl time_timer_pair
  .type time_timer_pair, @function
time_timer_pair:
  rdcycle   a1
  rdinstret a2
  STOP_COUNTERS a1, a2, a0
  ret
  .size time_timer_pair, . - time_timer_pair

  .globl time_single_ecall
  .type time_single_ecall, @function
time_single_ecall:
  addi  sp, sp, -32
  sd    s1, 0(sp)                 /* save s1 */
  sd    s2, 8(sp)                 /* save s2 */
  sd    s3, 16(sp)                /* save s3 */
  mv    s1, a1                    /* where the deltas go */
  ld    a7, ARGS_NUMBER(a0)
  ld    a1, ARGS_ARG1(a0)
  ld    a2, ARGS_ARG2(a0)
  ld    a0, ARGS_ARG0(a0)
  rdcycle   s2
  rdinstret s3
  ecall
  STOP_COUNTERS s2, s3, s1
  ld    s1, 0(sp)                 /* restore s1 */
  ld    s2, 8(sp)                 /* restore s2 */
  ld    s3, 16(sp)                /* restore s3 */
  addi  sp, sp, 32
  ret
  .size time_single_ecall, . - time_single_ecall
