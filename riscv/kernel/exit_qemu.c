/*
 * exit_qemu.c: how a run ends on QEMU's `virt` machine. Its SiFive test
 * finisher at 0x100000 ends the emulator: 0x5555 exits with status 0,
 * (code << 16) | 0x3333 with status `code`, so QEMU's own status says pass
 * or fail.
 */
#include <stdint.h>

#include "kernel.h"

#define TEST_FINISHER ((volatile uint32_t *)0x100000UL)
#define FINISHER_PASS 0x5555
#define FINISHER_FAIL 0x3333

const char platform_name[] = "qemu";

void platform_exit(int code) {
  *TEST_FINISHER = code == 0 ? FINISHER_PASS : ((uint32_t)code << 16) | FINISHER_FAIL;
  for (;;) {
  }
}
