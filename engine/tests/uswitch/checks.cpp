// The uswitch correctness checks; see checks.hpp. Contexts run on mmap'd
// stacks with a guard page below, so an overflow faults instead of
// corrupting the heap.
#include "checks.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cfenv>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sentinels.h"
#include "uswitch.h"

extern "C" {
std::uintptr_t ctxbench_uswitch_test_entry_sp = 0;
}

namespace ctxbench::uswitch_test {
namespace {

constexpr std::size_t stack_bytes = 64 * 1024;

class Stack {
 public:
  explicit Stack(std::size_t bytes = stack_bytes) : bytes_(bytes + page()) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) {
      std::perror("mmap of a context stack");
      std::abort();
    }
    mprotect(base_, page(), PROT_NONE);  // guard page at the low end
  }
  ~Stack() { munmap(base_, bytes_); }
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  void* bottom() const { return static_cast<char*>(base_) + page(); }
  std::size_t size() const { return bytes_ - page(); }

 private:
  static std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
  void* base_;
  std::size_t bytes_;
};

ctxbench_uswitch_fn switch_of(Variant v) { return v == Variant::abi ? ctxbench_uswitch : ctxbench_uswitch_full; }

void* make(Variant v, const Stack& stack, ctxbench_uswitch_entry entry, void* arg) {
  return v == Variant::abi ? ctxbench_uswitch_make(stack.bottom(), stack.size(), entry, arg)
                           : ctxbench_uswitch_make_full(stack.bottom(), stack.size(), entry, arg);
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%#" PRIx64, value);
  return text;
}

// Distinct, unmistakable values: context `which`, slot `slot`.
void fill_sentinels(std::uint64_t* in, int which) {
  for (int slot = 0; slot < SENT_SLOTS; ++slot)
    in[slot] = (which == 0 ? 0xA5A5000000000000ull : 0x5A5A000000000000ull) | static_cast<std::uint64_t>(slot) << 16 |
               0x1234u * static_cast<unsigned>(slot + 1);
  in[SENT_CTL] = control_sentinel(which);
}

void compare(const char* who, Variant variant, const std::uint64_t* in, const std::uint64_t* out,
             std::vector<std::string>& problems) {
  auto differs = [&](const std::string& what, std::uint64_t want, std::uint64_t got) {
    if (want != got)
      problems.push_back(std::string(who) + ": " + what + " was " + hex(want) + ", came back " + hex(got));
  };
  for (int r = 0; r < SENT_GPR_COUNT; ++r)
    differs("callee-saved register #" + std::to_string(r), in[SENT_GPR + r], out[SENT_GPR + r]);
  if (SENT_CTL_ABI_PRESERVED || variant == Variant::full) differs("the FP control state", in[SENT_CTL], out[SENT_CTL]);
  for (int v = 0; v < SENT_VEC_COUNT; ++v)
    if (variant == Variant::full || vec_slot_abi_preserved(v))
      differs("FP/vector slot #" + std::to_string(v), in[SENT_VEC + v], out[SENT_VEC + v]);
  differs("the stack pointer", out[SENT_SP_BEFORE], out[SENT_SP_AFTER]);
}

// Fills the stack below the caller with junk, so that the frames a switch
// builds there start from garbage, not from the zeroes of a fresh stack: a
// switch must write every byte it later reads (the XSAVE header taught us).
__attribute__((noinline)) void dirty_stack_below() {
  volatile unsigned char junk[32 * 1024];
  for (auto& byte : junk) byte = 0xA5;
}

struct SentinelPair {
  ctxbench_uswitch_fn fn;
  void* a = nullptr;  // the test's own context
  void* b = nullptr;  // the other one
  std::uint64_t b_in[SENT_SLOTS] = {};
  std::uint64_t b_out[SENT_SLOTS] = {};
};

void sentinel_b(void* arg) {
  auto* pair = static_cast<SentinelPair*>(arg);
  const ctxbench_uswitch_fn fn = pair->fn;
  // Load B's values and switch back to A, which checks its own came back.
  ctxbench_uswitch_test_sentinels(fn, &pair->b, pair->a, pair->b_in, pair->b_out);
  // A resumed us: b_out now holds what we found. Back to A for good.
  fn(&pair->b, pair->a, nullptr);
  std::abort();  // never resumed again
}

struct EntryProbe {
  void* main = nullptr;
  void* self = nullptr;
  Variant variant = Variant::abi;
  void* received = nullptr;
  std::uintptr_t sp_at_entry = 0;
};
EntryProbe* current_probe = nullptr;

}  // namespace

const char* variant_name(Variant variant) { return variant == Variant::abi ? "abi" : "full"; }

namespace {
// A and B each load their sentinels and switch to the other with `fn`; each
// then checks that its own came back.
std::vector<std::string> exchange_sentinels(Variant variant, ctxbench_uswitch_fn fn) {
  std::vector<std::string> problems;
  Stack stack;
  SentinelPair pair;
  pair.fn = fn;
  fill_sentinels(pair.b_in, 1);
  pair.b = make(variant, stack, sentinel_b, &pair);
  if (!pair.b) return {"the full variant cannot run here: " + std::string(ctxbench_uswitch_full_state_what())};
  std::uint64_t a_in[SENT_SLOTS], a_out[SENT_SLOTS] = {};
  fill_sentinels(a_in, 0);
  dirty_stack_below();
  ctxbench_uswitch_test_sentinels(fn, &pair.a, pair.b, a_in, a_out);  // B runs, loads its own values, comes back
  compare("context A", variant, a_in, a_out, problems);
  fn(&pair.a, pair.b, nullptr);  // B's helper now returns and records what it found
  compare("context B", variant, pair.b_in, pair.b_out, problems);
  return problems;
}
}  // namespace

std::vector<std::string> registers_survive(Variant variant) { return exchange_sentinels(variant, switch_of(variant)); }

std::vector<std::string> broken_switch_is_caught() {
  // ctxbench_uswitch_test_broken_switch flips one bit of one callee-saved
  // register after a real switch: both contexts must see exactly that.
  const auto problems = exchange_sentinels(Variant::abi, ctxbench_uswitch_test_broken_switch);
  const std::string expected = "callee-saved register #" + std::to_string(SENT_BROKEN_GPR);
  int caught = 0;
  for (const auto& p : problems) caught += p.find(expected) != std::string::npos ? 1 : 0;
  if (caught == 2 && problems.size() == 2) return {};
  std::vector<std::string> out = {"the sentinels did not catch a switch that corrupts " + expected + " (exactly):"};
  out.insert(out.end(), problems.begin(), problems.end());
  return out;
}

extern "C" void ctxbench_uswitch_test_entry(void* arg) {
  EntryProbe* probe = current_probe;
  probe->sp_at_entry = ctxbench_uswitch_test_entry_sp;
  probe->received = arg;
  void* const reply = switch_of(probe->variant)(&probe->self, probe->main, arg);
  // The test resumes us once more with a value, which we send back.
  switch_of(probe->variant)(&probe->self, probe->main, reply);
  std::abort();
}

std::vector<std::string> stack_aligned_at_entry(Variant variant) {
  std::vector<std::string> problems;
  // Several stack sizes, so that the top is not always conveniently aligned.
  for (std::size_t trim : {0, 1, 4, 8, 12, 15}) {
    Stack stack;
    EntryProbe probe;
    probe.variant = variant;
    current_probe = &probe;
    ctxbench_uswitch_test_entry_sp = 0;
    probe.self = variant == Variant::abi ? ctxbench_uswitch_make(stack.bottom(), stack.size() - trim,
                                                                 ctxbench_uswitch_test_entry_probe, &probe)
                                         : ctxbench_uswitch_make_full(stack.bottom(), stack.size() - trim,
                                                                      ctxbench_uswitch_test_entry_probe, &probe);
    if (!probe.self) return {"the full variant cannot run here"};
    switch_of(variant)(&probe.main, probe.self, nullptr);
    const std::uintptr_t sp = probe.sp_at_entry;
#if defined(__x86_64__)
    const bool aligned = (sp + 8) % 16 == 0;  // psABI 3.2.2: rsp + 8 is a multiple of 16 at entry
    const char* rule = "rsp + 8 a multiple of 16";
#else
    const bool aligned = sp % 16 == 0;  // AAPCS64 / RISC-V psABI: sp 16-byte aligned
    const char* rule = "sp a multiple of 16";
#endif
    if (!aligned)
      problems.push_back("stack trimmed by " + std::to_string(trim) + " bytes: sp at entry was " + hex(sp) + ", not " +
                         rule);
    const auto top = reinterpret_cast<std::uintptr_t>(stack.bottom()) + stack.size() - trim;
    // Entry runs at the top of its stack (at most the return address below it).
    if (sp > top || sp < top - 64)
      problems.push_back("sp at entry " + hex(sp) + " is not at the top of its stack (" + hex(top) + ")");
  }
  current_probe = nullptr;
  return problems;
}

std::vector<std::string> entry_receives_argument(Variant variant) {
  std::vector<std::string> problems;
  Stack stack;
  EntryProbe probe;
  probe.variant = variant;
  current_probe = &probe;
  int token = 42;
  probe.self = make(variant, stack, ctxbench_uswitch_test_entry_probe, &token);
  if (!probe.self) return {"the full variant cannot run here"};
  void* back = switch_of(variant)(&probe.main, probe.self, nullptr);
  if (probe.received != &token)
    problems.push_back("entry received " + hex(reinterpret_cast<std::uintptr_t>(probe.received)) +
                       " instead of its argument");
  if (back != &token) problems.push_back("the value the entry passed back did not arrive");
  int second = 7;
  back = switch_of(variant)(&probe.main, probe.self, &second);
  if (back != &second) problems.push_back("a value passed into a suspended context did not come back");
  current_probe = nullptr;
  return problems;
}

namespace {
struct PingPong {
  ctxbench_uswitch_fn fn;
  void* main = nullptr;
  void* peer = nullptr;
  std::uintptr_t expected = 0;
  long wrong_values = 0;
  long turns = 0;
};

void ping_pong_peer(void* arg) {
  auto* p = static_cast<PingPong*>(arg);
  std::uintptr_t value = 0;
  for (;;) {
    ++p->turns;
    value = reinterpret_cast<std::uintptr_t>(p->fn(&p->peer, p->main, reinterpret_cast<void*>(value + 1)));
    if (value != p->expected) ++p->wrong_values;
  }
}
}  // namespace

std::vector<std::string> many_switches(Variant variant, long switches) {
  std::vector<std::string> problems;
  Stack stack;
  PingPong p{switch_of(variant)};
  p.peer = make(variant, stack, ping_pong_peer, &p);
  if (!p.peer) return {"the full variant cannot run here"};
  const long round_trips = switches / 2;  // one round trip = two switches
  long wrong_replies = 0;
  dirty_stack_below();
  p.fn(&p.main, p.peer, nullptr);  // start the peer; it comes straight back with 1
  for (long i = 1; i <= round_trips; ++i) {
    p.expected = static_cast<std::uintptr_t>(i);
    const auto reply = reinterpret_cast<std::uintptr_t>(p.fn(&p.main, p.peer, reinterpret_cast<void*>(i)));
    if (reply != static_cast<std::uintptr_t>(i) + 1) ++wrong_replies;
  }
  if (p.turns != round_trips + 1)
    problems.push_back("the peer ran " + std::to_string(p.turns) + " times, not " + std::to_string(round_trips + 1));
  if (p.wrong_values) problems.push_back(std::to_string(p.wrong_values) + " values arrived wrong at the peer");
  if (wrong_replies) problems.push_back(std::to_string(wrong_replies) + " replies arrived wrong");
  return problems;
}

namespace {
struct Chain {
  ctxbench_uswitch_fn fn;
  void* main = nullptr;
  std::vector<void*> sp;
  std::vector<int> visits;
  std::vector<int> order;
};
struct ChainLink {
  Chain* chain;
  int index;
};

void chain_link(void* arg) {
  auto* link = static_cast<ChainLink*>(arg);
  Chain& c = *link->chain;
  const auto i = static_cast<std::size_t>(link->index);
  for (;;) {
    ++c.visits[i];
    c.order.push_back(link->index);
    void* next = i + 1 < c.sp.size() ? c.sp[i + 1] : c.main;
    c.fn(&c.sp[i], next, nullptr);
  }
}
}  // namespace

std::vector<std::string> chain_of_contexts(Variant variant, int contexts) {
  std::vector<std::string> problems;
  Chain chain{switch_of(variant)};
  std::vector<std::unique_ptr<Stack>> stacks;
  std::vector<ChainLink> links(static_cast<std::size_t>(contexts));
  chain.sp.resize(static_cast<std::size_t>(contexts));
  chain.visits.assign(static_cast<std::size_t>(contexts), 0);
  for (int i = 0; i < contexts; ++i) {
    stacks.push_back(std::make_unique<Stack>(16 * 1024));
    links[static_cast<std::size_t>(i)] = {&chain, i};
    chain.sp[static_cast<std::size_t>(i)] =
        make(variant, *stacks.back(), chain_link, &links[static_cast<std::size_t>(i)]);
    if (!chain.sp[static_cast<std::size_t>(i)]) return {"the full variant cannot run here"};
  }
  dirty_stack_below();
  for (int lap = 0; lap < 2; ++lap) chain.fn(&chain.main, chain.sp[0], nullptr);  // first lap starts, second resumes
  for (int i = 0; i < contexts; ++i)
    if (chain.visits[static_cast<std::size_t>(i)] != 2)
      problems.push_back("context " + std::to_string(i) + " ran " +
                         std::to_string(chain.visits[static_cast<std::size_t>(i)]) + " times, not twice");
  bool in_order = chain.order.size() == static_cast<std::size_t>(2 * contexts);
  for (std::size_t k = 0; in_order && k < chain.order.size(); ++k)
    in_order = chain.order[k] == static_cast<int>(k % static_cast<std::size_t>(contexts));
  if (!in_order) problems.push_back("the contexts did not run in chain order");
  return problems;
}

namespace {
struct RoundingProbe {
  ctxbench_uswitch_fn fn;
  void* main = nullptr;
  void* self = nullptr;
  int rounding_at_entry = -1;
};

void report_rounding(void* arg) {
  auto* probe = static_cast<RoundingProbe*>(arg);
  probe->rounding_at_entry = std::fegetround();
  std::fesetround(FE_DOWNWARD);  // this context's own mode, which the switch back must not leak where it is swapped
  probe->fn(&probe->self, probe->main, nullptr);
  std::abort();
}
}  // namespace

std::vector<std::string> fp_control_inherited(Variant variant) {
  std::vector<std::string> problems;
  Stack stack;
  RoundingProbe probe{switch_of(variant)};
  const int before = std::fegetround();
  std::fesetround(FE_TOWARDZERO);  // unlike the default, so inheriting it is visible
  probe.self = make(variant, stack, report_rounding, &probe);
  std::fesetround(FE_UPWARD);  // the creator's mode when it switches
  if (probe.self) probe.fn(&probe.main, probe.self, nullptr);
  const int after = std::fegetround();
  std::fesetround(before);
  if (!probe.self) return {"the full variant cannot run here"};
  // Where the switch swaps FP control (x86 always: MXCSR and the x87 CW are
  // callee-saved; elsewhere only the full variant), a context has its own: a
  // new one starts with what its creator had when it made it, and the creator
  // gets its own back. Elsewhere the abi switch leaves FPCR/fcsr alone (they
  // belong to the thread), so both contexts see whatever was last set.
  const bool swapped = SENT_CTL_ABI_PRESERVED || variant == Variant::full;
  const int expected_at_entry = swapped ? FE_TOWARDZERO : FE_UPWARD;
  const int expected_after = swapped ? FE_UPWARD : FE_DOWNWARD;
  if (probe.rounding_at_entry != expected_at_entry)
    problems.push_back("a new context started with rounding mode " + std::to_string(probe.rounding_at_entry) +
                       ", expected " + std::to_string(expected_at_entry));
  if (after != expected_after)
    problems.push_back("after switching back the rounding mode was " + std::to_string(after) + ", expected " +
                       std::to_string(expected_after));
  return problems;
}

std::vector<std::string> full_state_described() {
  std::vector<std::string> problems;
  if (ctxbench_uswitch_full_state_bytes() == 0)
    problems.push_back(std::string("the full variant reports no state: ") + ctxbench_uswitch_full_state_what());
  if (std::strlen(ctxbench_uswitch_abi()) == 0) problems.push_back("no ABI name");
  return problems;
}

const std::vector<NamedCheck>& all_checks() {
  static const std::vector<NamedCheck> checks = {
      {"registers_survive.abi", [] { return registers_survive(Variant::abi); }},
      {"registers_survive.full", [] { return registers_survive(Variant::full); }},
      {"stack_aligned_at_entry.abi", [] { return stack_aligned_at_entry(Variant::abi); }},
      {"stack_aligned_at_entry.full", [] { return stack_aligned_at_entry(Variant::full); }},
      {"entry_receives_argument.abi", [] { return entry_receives_argument(Variant::abi); }},
      {"entry_receives_argument.full", [] { return entry_receives_argument(Variant::full); }},
      {"million_switches.abi", [] { return many_switches(Variant::abi, 1000000); }},
      {"million_switches.full", [] { return many_switches(Variant::full, 1000000); }},
      {"chain_of_1000_contexts.abi", [] { return chain_of_contexts(Variant::abi, 1000); }},
      {"chain_of_1000_contexts.full", [] { return chain_of_contexts(Variant::full, 1000); }},
      {"fp_control_inherited.abi", [] { return fp_control_inherited(Variant::abi); }},
      {"fp_control_inherited.full", [] { return fp_control_inherited(Variant::full); }},
      {"full_state_described", full_state_described},
      {"broken_switch_is_caught", broken_switch_is_caught},
  };
  return checks;
}

}  // namespace ctxbench::uswitch_test
