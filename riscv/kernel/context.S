/*
 * context.S: how the kernel hands the hart to the user program and gets it
 * back, for one handler variant at a time.
 *
 *   void enter_user(void (*entry)(long), long arg, void *user_sp);
 *   void resume_kernel(void) __attribute__((noreturn));
 *
 * enter_user saves the kernel's callee-saved state (ra, sp, s0-s11) in
 * kernel_context and drops to U-mode at entry(arg) with mret. When the user
 * program is finished, whichever handler sees its exit calls resume_kernel
 * (from M-mode, in trap context), which reloads that state and returns from
 * enter_user as if it had been an ordinary call. The trap frame it abandons
 * lies on the trap stack, which the next variant starts afresh. No timing
 * happens here.
 *
 * kernel_context layout: slot 0 ra, slot 1 sp, slots 2..13 s0..s11.
 */
#include "frame.h"
#include "lab.h"

  .section .bss
  .balign 16
kernel_context:
  .space 14 * REGBYTES

  .text
  .globl enter_user
  .type enter_user, @function
enter_user:
  la    t0, kernel_context
  STORE ra,  0 * REGBYTES(t0)     /* save ra */
  STORE sp,  1 * REGBYTES(t0)     /* save sp */
  STORE s0,  2 * REGBYTES(t0)     /* save s0 */
  STORE s1,  3 * REGBYTES(t0)     /* save s1 */
  STORE s2,  4 * REGBYTES(t0)     /* save s2 */
  STORE s3,  5 * REGBYTES(t0)     /* save s3 */
  STORE s4,  6 * REGBYTES(t0)     /* save s4 */
  STORE s5,  7 * REGBYTES(t0)     /* save s5 */
  STORE s6,  8 * REGBYTES(t0)     /* save s6 */
  STORE s7,  9 * REGBYTES(t0)     /* save s7 */
  STORE s8, 10 * REGBYTES(t0)     /* save s8 */
  STORE s9, 11 * REGBYTES(t0)     /* save s9 */
  STORE s10, 12 * REGBYTES(t0)    /* save s10 */
  STORE s11, 13 * REGBYTES(t0)    /* save s11 */
  csrw  mepc, a0                  /* mret goes to entry ... */
  li    t1, MSTATUS_MPP
  csrc  mstatus, t1               /* ... in U-mode (MPP = 0) */
  mv    a0, a1                    /* entry's argument */
  mv    sp, a2                    /* the user's stack */
  mret
  .size enter_user, . - enter_user

  .globl resume_kernel
  .type resume_kernel, @function
resume_kernel:
  la    t0, kernel_context
  LOAD  ra,  0 * REGBYTES(t0)     /* restore ra */
  LOAD  sp,  1 * REGBYTES(t0)     /* restore sp */
  LOAD  s0,  2 * REGBYTES(t0)     /* restore s0 */
  LOAD  s1,  3 * REGBYTES(t0)     /* restore s1 */
  LOAD  s2,  4 * REGBYTES(t0)     /* restore s2 */
  LOAD  s3,  5 * REGBYTES(t0)     /* restore s3 */
  LOAD  s4,  6 * REGBYTES(t0)     /* restore s4 */
  LOAD  s5,  7 * REGBYTES(t0)     /* restore s5 */
  LOAD  s6,  8 * REGBYTES(t0)     /* restore s6 */
  LOAD  s7,  9 * REGBYTES(t0)     /* restore s7 */
  LOAD  s8, 10 * REGBYTES(t0)     /* restore s8 */
  LOAD  s9, 11 * REGBYTES(t0)     /* restore s9 */
  LOAD  s10, 12 * REGBYTES(t0)    /* restore s10 */
  LOAD  s11, 13 * REGBYTES(t0)    /* restore s11 */
  ret                             /* back into kernel_main, after enter_user */
  .size resume_kernel, . - resume_kernel
