#include "cli/exits.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace ctx {

int usage_error(const std::string& message) {
  diagnostic("error: " + message);
  return exit_usage;
}

int output_exit_code(int error) { return error == EPIPE ? exit_broken_pipe : exit_output; }

void exit_after(const OutputError& failure, const std::string& what_happened) {
  diagnostic(fmt::format("error: {}{}", failure.what(), what_happened));
  _exit(output_exit_code(failure.error));
}

int print_checked(const std::string& text) {
  Sink out(stdout, "stdout");
  try {
    out.write(text);
    out.close();
  } catch (const OutputError& failure) {
    exit_after(failure);
  }
  return 0;
}

}  // namespace ctx
