// Context creation for ctxbench's own switch: builds a new context's first
// frame, which the assembly then restores like any other. The frame's layout
// is the arch header's (frame.h); the switch itself is in switch_*.S.
#include "uswitch.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "frame.h"

extern "C" {
void ctxbench_uswitch_trampoline();  // switch_*.S: calls entry(arg)
// Called by the trampoline if an entry function returns, which it must not:
// there is no caller to return to.
[[noreturn]] void ctxbench_uswitch_entry_returned();
}

#if defined(__x86_64__)
uint64_t ctxbench_uswitch_full_reserve = ctxbench::uswitch::compute_full_reserve();
uint64_t ctxbench_uswitch_xsave_mask = ctxbench::uswitch::xsave_info().mask;
#endif

namespace {
using ctxbench::uswitch::Frame;

std::uintptr_t align_down(std::uintptr_t value, std::uintptr_t alignment) { return value & ~(alignment - 1); }

Frame* place_frame(void* stack, std::size_t size, ctxbench_uswitch_entry entry, void* arg) {
  const std::uintptr_t top = align_down(reinterpret_cast<std::uintptr_t>(stack) + size, USWITCH_STACK_ALIGN);
  auto* frame = reinterpret_cast<Frame*>(top - sizeof(Frame));
  *frame = ctxbench::uswitch::initial_frame(ctxbench_uswitch_trampoline, entry, arg);
  return frame;
}
}  // namespace

extern "C" {

void ctxbench_uswitch_entry_returned() {
  std::fputs("ctxbench: a uswitch context's entry function returned; it must switch away instead\n", stderr);
  std::abort();
}

void* ctxbench_uswitch_make(void* stack, std::size_t size, ctxbench_uswitch_entry entry, void* arg) {
  return place_frame(stack, size, entry, arg);
}

void* ctxbench_uswitch_make_full(void* stack, std::size_t size, ctxbench_uswitch_entry entry, void* arg) {
  if (ctxbench::uswitch::full_state_bytes() == 0) return nullptr;
  Frame* frame = place_frame(stack, size, entry, arg);
  // The full variant's frame sits below the general-register frame, aligned
  // down exactly as the assembly aligns it.
  const std::uintptr_t full =
      align_down(reinterpret_cast<std::uintptr_t>(frame) - ctxbench::uswitch::full_reserve_bytes(), USWITCH_FULL_ALIGN);
  ctxbench::uswitch::init_full_frame(reinterpret_cast<unsigned char*>(full), frame);
  return reinterpret_cast<void*>(full);
}

std::size_t ctxbench_uswitch_full_state_bytes() { return ctxbench::uswitch::full_state_bytes(); }
const char* ctxbench_uswitch_full_state_what() { return ctxbench::uswitch::full_state_what(); }
const char* ctxbench_uswitch_abi() { return ctxbench::uswitch::abi_name(); }

}  // extern "C"
