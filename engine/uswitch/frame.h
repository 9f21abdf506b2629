/* The saved frame of ctxbench's own context switch, for the architecture being
 * built: one small header per arch and ABI, shared by its assembly file (the
 * offsets, as macros) and by uswitch.cpp (a struct whose field offsets are
 * pinned to those macros by static_assert, and the initial frame of a new
 * context). Every arch header defines the same names:
 *
 *   USWITCH_FRAME_BYTES   size of the frame the abi variant leaves on the stack
 *   USWITCH_FRAME_<REG>   offset of each saved register in it
 *   USWITCH_STACK_ALIGN   stack alignment the ABI requires
 *   USWITCH_FULL_...      the extra frame of the full (all FP/vector) variant
 *
 * and, for C++: struct ctxbench::uswitch::Frame, initial_frame(),
 * full_reserve_bytes(), init_full_frame(), full_state_bytes(), full_state_what(),
 * abi_name(). */
#ifndef CTXBENCH_USWITCH_FRAME_H
#define CTXBENCH_USWITCH_FRAME_H

#if defined(__x86_64__) && defined(__ELF__)
#include "frame_x86_64.h"
#elif defined(__aarch64__) && defined(__ELF__)
#include "frame_aarch64.h"
#elif defined(__riscv) && __riscv_xlen == 64 && defined(__riscv_float_abi_double) && defined(__ELF__)
#include "frame_riscv64.h"
#else
#error "ctxbench uswitch: no context switch for this target (x86_64 SysV, aarch64 AAPCS64 and riscv64 LP64D ELF only)"
#endif

#endif /* CTXBENCH_USWITCH_FRAME_H */
