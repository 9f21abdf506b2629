// The seccomp axis: what a filter on every system call adds to a figure.
// A variant with seccomp=allow or seccomp=profile is measured on a thread
// made for it (harness.cpp), which installs the filter first; the threads
// and processes it starts inherit the filter, the engine's other threads
// never see it (seccomp filters belong to a thread and what it creates).
//
// allow: two classic BPF instructions written here (load the first argument,
//   return ALLOW). Every call is allowed, but because the program reads an
//   argument the kernel's constant-action cache (Linux 5.11+: a per-syscall
//   bitmap of verdicts that do not depend on arguments) cannot answer for it,
//   so the program runs on every call: the smallest filter that is evaluated.
// profile: shaped like a container runtime's default profile, built with
//   libseccomp (what runtimes use): default EPERM, a few hundred system calls
//   allowed by name, a handful allowed only for some arguments (personality,
//   clone without namespace flags, socket but not AF_VSOCK), clone3 answered
//   ENOSYS so that libc falls back to clone. Calls allowed by name alone are
//   answered by the kernel's cache where the kernel has one.
// The record says what was installed: rules, BPF instructions, and for each
// system call the probe makes, whether the cache answers it (computed by the
// same emulation the kernel uses to fill its cache: follow the program with
// only the syscall number and architecture known).
#pragma once
#include <linux/filter.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ctx {

struct SeccompFilter {
  std::string mode;                  // allow | profile
  std::vector<sock_filter> program;  // what is installed
  std::size_t rules = 0;             // rules given to libseccomp (0: the program is written directly)
  std::string built_with;            // in words, for the record
};

// True when this engine was built with libseccomp (the profile needs it).
bool have_libseccomp();

// Builds the filter of `mode` (allow | profile) without installing it. With
// allow, `inspected` limits the calls whose argument is read to those numbers
// (the others are answered by the cache); empty: every call. Throws
// ProbeError (built_without: no libseccomp for the profile; error otherwise).
SeccompFilter build_seccomp_filter(const std::string& mode, const std::vector<long>& inspected = {});

// Installs `filter` on the calling thread (no_new_privs first, as an
// unprivileged process must). Throws ProbeError (permission_denied when the
// kernel or an outer sandbox refuses, not_supported_here without seccomp).
void install_seccomp_filter(const SeccompFilter& filter);

// The AUDIT_ARCH_* value of this build's architecture.
std::uint32_t native_audit_arch();

// Whether the kernel's constant-action cache answers system call `number`
// without running `program`: the verdict, followed from the syscall number and
// architecture alone, is ALLOW (pure; the kernel's seccomp_is_const_allow rule).
bool answered_by_cache(const std::vector<sock_filter>& program, long number, std::uint32_t arch);

// What the record says of a variant measured under `filter`: derived fields
// seccomp_rules, seccomp_instructions, seccomp_built_with, seccomp_cache.
// `calls`: the probe's system calls, by name and number (ProbeDescriptor::syscalls).
void describe_filter(const SeccompFilter& filter, const std::vector<std::pair<std::string, long>>& calls,
                     nlohmann::json& derived);

// The number of a system call by name, where libseccomp knows it; -1 otherwise.
long syscall_number(const std::string& name);

}  // namespace ctx
