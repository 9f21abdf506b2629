/*
 * exit_spike.c: how a run ends on Spike. Spike's front end (HTIF) watches
 * the `tohost` word; writing (code << 1) | 1 there stops the simulation with
 * exit status `code`, so the simulator's own status says pass or fail.
 * Spike finds tohost/fromhost by symbol name in the ELF.
 */
#include <stdint.h>

#include "kernel.h"

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

const char platform_name[] = "spike";

void platform_exit(int code) {
  tohost = ((uint64_t)code << 1) | 1;
  for (;;) {
  }
}
