/*
 * kernel.h: what the lab kernel's files share. Nothing here is timed.
 */
#ifndef CTXLAB_KERNEL_H
#define CTXLAB_KERNEL_H

#include <stdint.h>

#include "frame.h"

/* console.c: the ns16550 UART both simulators put at 0x10000000. */
void console_putc(char c);
void console_puts(const char *s);
void console_put_u64(uint64_t value);
void console_put_i64(int64_t value);
void console_put_hex(uint64_t value);

/* exit_spike.c / exit_qemu.c: end the simulation with this status. */
void platform_exit(int code) __attribute__((noreturn));
extern const char platform_name[];

/* context.S */
void enter_user(void (*entry)(long), long arg, void *user_sp);
void resume_kernel(void) __attribute__((noreturn));

/* trap.c */
void trap_handle(struct trap_frame *frame, uintptr_t cause, uintptr_t mode);

/* main.c: which mode runs trap_handle for user ecalls in this variant,
 * and the code the user program passed to exit. */
extern volatile long lab_handler_mode;
extern volatile long lab_exit_code;

static inline uint64_t read_time(void) {
  uint64_t t;
  __asm__ volatile("rdtime %0" : "=r"(t));
  return t;
}

#endif
