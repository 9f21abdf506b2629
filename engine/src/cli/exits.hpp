// How a command of the engine ends: its exit statuses, a usage error as one
// line on stderr, and a command's whole output written to stdout, checked.
//
// Exit status (docs/cli.md): 0 done, 1 failed (e.g. no thread could be
// started), 2 usage, 3 an output could not be written, 130 interrupted,
// 141 the reader of an output pipe went away (as a SIGPIPE death reads).
#pragma once
#include <string>

#include "cli/monitor.hpp"
#include "report/output.hpp"

namespace ctx {

inline constexpr int exit_failure = 1;
inline constexpr int exit_usage = 2;
inline constexpr int exit_output = 3;

// Says "error: message" on stderr; returns exit_usage.
int usage_error(const std::string& message);

// The exit status of an output that failed with `error` (an errno value).
int output_exit_code(int error);

// After an output failed nothing more is flushed: the FILE may still hold
// the bytes that did not fit, and a regular file was cut to whole lines.
[[noreturn]] void exit_after(const OutputError& failure, const std::string& what_happened = "");

// Writes a command's whole output to stdout and flushes it, checked; 0.
int print_checked(const std::string& text);

}  // namespace ctx
