// ctxbench-seccomp-exec: runs a command under one of the seccomp axis's
// filters (seccomp_filter.hpp), so that a whole process, the engine included,
// pays a filter on every system call: what the test of the env record's
// sandbox block runs the engine under, and what bench/gate.py uses to slow a
// run for real.
//
//   ctxbench-seccomp-exec allow|profile [--calls NAME,...] -- CMD [ARG...]
//
// --calls (allow only): only these system calls read an argument and so run
// the filter; every other call is answered by the kernel's cache.
// Exit status: CMD's (it is exec'd), 2 for a usage error, 1 when the filter
// cannot be built or installed, 127 when CMD cannot be run.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "model/registry.hpp"
#include "os/seccomp_filter.hpp"

namespace {

int usage(const std::string& problem) {
  std::fprintf(stderr,
               "ctxbench-seccomp-exec: %s; usage: ctxbench-seccomp-exec allow|profile [--calls NAME,...] -- CMD "
               "[ARG...]\n",
               problem.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("no filter named");
  const std::string mode = argv[1];
  if (mode != "allow" && mode != "profile") return usage("the filter is allow or profile, not '" + mode + "'");
  std::vector<long> inspected;
  int i = 2;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--calls") != 0 || i + 1 >= argc)
      return usage(std::string("unknown option '") + argv[i] + "'");
    if (mode != "allow") return usage("--calls applies to the allow filter only");
    std::stringstream names(argv[++i]);
    for (std::string name; std::getline(names, name, ',');) {
      const long number = ctx::syscall_number(name);
      if (number < 0)
        return usage(ctx::have_libseccomp() ? "no system call named '" + name + "' on this architecture"
                                            : "--calls needs libseccomp to know system calls by name (built without)");
      inspected.push_back(number);
    }
    if (inspected.empty()) return usage("--calls names no system call");
  }
  if (i >= argc) return usage("no '--' before the command");
  if (i + 1 >= argc) return usage("no command after '--'");
  try {
    ctx::install_seccomp_filter(ctx::build_seccomp_filter(mode, inspected));
  } catch (const ctx::ProbeError& e) {
    std::fprintf(stderr, "ctxbench-seccomp-exec: %s\n", e.what());
    return 1;
  }
  execvp(argv[i + 1], argv + i + 1);
  std::fprintf(stderr, "ctxbench-seccomp-exec: cannot run %s: %s\n", argv[i + 1], std::strerror(errno));
  return 127;
}
