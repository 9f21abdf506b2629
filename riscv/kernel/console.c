/*
 * console.c: output through the ns16550 UART at 0x10000000, which Spike and
 * QEMU's `virt` both model (reg-shift 0). The write system call's "device
 * work" is console_putc: wait for the transmit holding register to be empty,
 * store the byte. Number printing is here because the kernel has no libc.
 */
#include <stdint.h>

#include "kernel.h"
#include "lab.h"

#define UART_THR 0      /* transmit holding register */
#define UART_LSR 5      /* line status register */
#define UART_LSR_THRE 0x20

static volatile uint8_t *const uart = (volatile uint8_t *)UART_BASE;

void console_putc(char c) {
  while ((uart[UART_LSR] & UART_LSR_THRE) == 0) {
  }
  uart[UART_THR] = (uint8_t)c;
}

void console_puts(const char *s) {
  while (*s) console_putc(*s++);
}

void console_put_u64(uint64_t value) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) console_putc(digits[--n]);
}

void console_put_i64(int64_t value) {
  if (value < 0) {
    console_putc('-');
    console_put_u64((uint64_t)0 - (uint64_t)value);
  } else {
    console_put_u64((uint64_t)value);
  }
}

void console_put_hex(uint64_t value) {
  console_puts("0x");
  for (int shift = 60; shift >= 0; shift -= 4)
    console_putc("0123456789abcdef"[(value >> shift) & 0xf]);
}
