// ctxbench-uswitch-selftest: the uswitch correctness checks without
// GoogleTest, so that cross builds can run them under qemu-user
// (engine/tests/cross_smoke.sh). Prints one line per check and exits 1 if
// any failed.
//
// `ctxbench-uswitch-selftest --ucontext-swaps N` instead makes exactly N
// swapcontext calls (N/2 round trips between two ucontexts) and nothing
// else, for the test that counts swapcontext's rt_sigprocmask system calls
// with strace.
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "checks.hpp"

namespace {

ucontext_t main_context, peer_context;

void peer() {
  for (;;) swapcontext(&peer_context, &main_context);
}

int ucontext_swaps(long swaps) {
  static std::vector<char> stack(64 * 1024);
  getcontext(&peer_context);
  peer_context.uc_stack.ss_sp = stack.data();
  peer_context.uc_stack.ss_size = stack.size();
  peer_context.uc_link = nullptr;
  makecontext(&peer_context, peer, 0);
  for (long i = 0; i < swaps / 2; ++i) swapcontext(&main_context, &peer_context);  // two swaps per round trip
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--ucontext-swaps") == 0) return ucontext_swaps(std::atol(argv[2]));
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--ucontext-swaps N]\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a check that crashes still shows its name
  int failed = 0;
  for (const auto& check : ctxbench::uswitch_test::all_checks()) {
    std::printf("...  %s\n", check.name.c_str());
    const auto problems = check.run();
    std::printf("%s %s\n", problems.empty() ? "ok  " : "FAIL", check.name.c_str());
    for (const auto& p : problems) std::printf("     %s\n", p.c_str());
    failed += problems.empty() ? 0 : 1;
  }
  std::printf("%d of %zu uswitch checks failed\n", failed, ctxbench::uswitch_test::all_checks().size());
  return failed ? 1 : 0;
}
