// The sandbox the engine runs in, for the env record: what sits on every
// system call the measuring task makes. A seccomp filter runs its BPF program
// on each call (mode and filter count from /proc/self/status), a tracer that
// stops on system calls (strace) multiplies their cost (TracerPid), and
// syscall auditing sends each call through the kernel's audit path (the audit
// status and rule count, asked over the audit netlink socket, which needs
// CAP_AUDIT_CONTROL in the initial PID namespace; otherwise "unknown" and
// why), and the kernel's tracepoints enabled through tracefs slow every
// switch and, for the syscall events, every call (the events enabled in
// set_event at the top level and in each instance, and whether a buffer with
// events is recording: tracing_on). Only reads; never changes a setting.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ctx {

// The seccomp and ptrace lines of a /proc/<pid>/status file.
struct ProcessSandbox {
  std::optional<int> seccomp_mode;     // 0 disabled, 1 strict, 2 filter; nullopt: no such line
  std::optional<int> seccomp_filters;  // filters attached (Linux 5.9+)
  std::optional<int> tracer_pid;       // 0: not traced
  std::optional<int> no_new_privs;
};

// Reads `path` (a /proc/<pid>/status file); every field nullopt when unreadable.
ProcessSandbox read_process_sandbox(const std::string& path);
// "disabled" | "strict" | "filter" | "unknown".
std::string seccomp_mode_name(std::optional<int> mode);

// The env record's `sandbox` block for the calling thread's process (see the schema).
nlohmann::json capture_sandbox();
// The block from given parts (pure; the audit part as audit_json returns it).
nlohmann::json sandbox_json(const ProcessSandbox& process, const std::string& status_path, nlohmann::json audit);
// The tracepoints enabled through tracefs under the first of `roots` that has a
// set_event file: {"source", "enabled", "recording"}; {"source": null,
// "enabled": null, "recording": null, "why"} when none can be read. Events
// opened with perf_event_open (perf record, the engine's traced pass) do not
// show in set_event and are not counted.
nlohmann::json tracepoints_json(const std::vector<std::string>& roots);
// Syscall auditing: {"state": enabled|disabled|locked|unknown, "rules", "auditd_pid", "why"}.
nlohmann::json audit_json();

}  // namespace ctx
