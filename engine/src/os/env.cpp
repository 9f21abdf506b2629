// Environment capture (env.hpp): the env record, each of its parts read by a
// function of its own.
#include "os/env.hpp"

#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "model/record.hpp"
#include "os/sandbox.hpp"
#include "os/tasks.hpp"
#include "os/topology.hpp"

namespace ctx {

namespace {

// Key: value lines of /proc/cpuinfo for the first CPU.
std::map<std::string, std::string> cpuinfo_first() {
  std::map<std::string, std::string> fields;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = colon + 1 < line.size() ? line.substr(colon + 2) : "";
    fields[key] = value;
  }
  return fields;
}

nlohmann::json json_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

namespace {

// The CPU: its model, which CPUs there are and where each is, the flags that
// bear on switch costs, and the timer.
nlohmann::json cpu_json(const TimerInfo& timer, const std::string& timer_note, nlohmann::json& notes) {
  const auto info = cpuinfo_first();
  auto field = [&](const char* key) {
    auto it = info.find(key);
    return it == info.end() ? std::string() : it->second;
  };
  std::string model = field("model name");
  if (model.empty()) model = field("uarch");
  if (model.empty()) model = field("isa");
  if (model.empty()) model = field("CPU part");
  nlohmann::json cpu = {{"model", model.empty() ? "unknown" : model}, {"vendor", field("vendor_id")}};
  const auto online = parse_cpu_list(read_first_line("/sys/devices/system/cpu/online"));
  cpu["logical"] = std::max<long>(1, sysconf(_SC_NPROCESSORS_CONF));
  cpu["online"] = online;
  cpu["allowed"] = allowed_cpus();
  // Where each online CPU is (core, package, die, cluster, NUMA node, LLC,
  // SMT siblings). A substitute sysfs tree (CTXBENCH_SYSFS_ROOT, for tests)
  // is named, since its topology is not this machine's.
  const std::string root = sysfs_root();
  std::vector<int> described = sysfs_online_cpus(root);
  if (described.empty()) described = allowed_cpus();
  const Topology topology = read_topology(described, root);
  cpu["topology"] = topology_json(topology);
  cpu["smt"] = smt_json(topology);
  if (root != "/sys") {
    cpu["topology_root"] = root;
    notes.push_back("topology read from " + root + " (CTXBENCH_SYSFS_ROOT), not from /sys");
  }
  std::set<std::string> interesting = {
      "constant_tsc", "nonstop_tsc", "tsc_known_freq", "hypervisor", "pti",  "avx",  "avx2",  "avx512f",  "xsave",
      "xsaves",       "fsgsbase",    "pcid",           "invpcid",    "ibrs", "ibpb", "stibp", "md_clear", "rdtscp"};
  nlohmann::json flags = nlohmann::json::array();
  std::stringstream flag_stream(field("flags").empty() ? field("Features") : field("flags"));
  for (std::string f; flag_stream >> f;)
    if (interesting.count(f) || field("flags").empty()) flags.push_back(f);
  cpu["flags"] = flags;
  cpu["tsc"] = {{"timer", timer.source},
                {"ns_per_tick", timer.ns_per_tick},
                {"overhead_ns", timer.overhead_ns},
                {"resolution_ns", timer.resolution_ns}};
  if (!timer_note.empty()) cpu["tsc"]["note"] = timer_note;
  return cpu;
}

// Frequency policy and idle states.
nlohmann::json frequency_json(nlohmann::json& notes) {
  const std::string cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq/";
  nlohmann::json frequency = {
      {"driver", json_or_null(read_first_line(cpufreq + "scaling_driver"))},
      {"governor", json_or_null(read_first_line(cpufreq + "scaling_governor"))},
      {"epp", json_or_null(read_first_line(cpufreq + "energy_performance_preference"))},
      {"no_turbo", json_or_null(read_first_line("/sys/devices/system/cpu/intel_pstate/no_turbo"))},
      {"boost", json_or_null(read_first_line("/sys/devices/system/cpu/cpufreq/boost"))},
      {"cpuidle_driver", json_or_null(read_first_line("/sys/devices/system/cpu/cpuidle/current_driver"))},
      {"cpuidle_governor", json_or_null(read_first_line("/sys/devices/system/cpu/cpuidle/current_governor_ro"))}};
  nlohmann::json idle_states = nlohmann::json::array();
  for (const auto& state : list_dir("/sys/devices/system/cpu/cpu0/cpuidle"))
    idle_states.push_back(
        {{"name", read_first_line("/sys/devices/system/cpu/cpu0/cpuidle/" + state + "/name")},
         {"latency_us", read_first_line("/sys/devices/system/cpu/cpu0/cpuidle/" + state + "/latency")}});
  frequency["idle_states"] = idle_states;
  if (frequency["driver"].is_null())
    notes.push_back("no cpufreq driver exposed (typical in a VM): frequency policy unknown");
  return frequency;
}

// Virtualization: the CPUID hypervisor bit and vendor, DMI, systemd-detect-virt, WSL.
nlohmann::json virtualization_json() {
  nlohmann::json virt;
  std::string detected = "none";
#if defined(__x86_64__)
  {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid(1, &a, &b, &c, &d);
    const bool bit = (c >> 31) & 1u;
    virt["hypervisor_bit"] = bit;
    if (bit) {
      unsigned regs[4] = {};
      __cpuid(0x40000000u, regs[0], regs[1], regs[2], regs[3]);
      char vendor[13] = {};
      std::memcpy(vendor, &regs[1], 4);
      std::memcpy(vendor + 4, &regs[2], 4);
      std::memcpy(vendor + 8, &regs[3], 4);
      virt["hypervisor_vendor"] = std::string(vendor);
      detected = std::string(vendor);
    } else {
      virt["hypervisor_vendor"] = nullptr;
    }
  }
#else
  virt["hypervisor_bit"] = nullptr;
  virt["hypervisor_vendor"] = nullptr;
  if (!read_first_line("/sys/hypervisor/type").empty()) detected = read_first_line("/sys/hypervisor/type");
#endif
  virt["dmi_product"] = json_or_null(read_first_line("/sys/class/dmi/id/product_name"));
  virt["dmi_vendor"] = json_or_null(read_first_line("/sys/class/dmi/id/sys_vendor"));
  auto detect_virt = [](const char* flag) {
    std::string answer;
    if (access("/usr/bin/systemd-detect-virt", X_OK) != 0 && access("/bin/systemd-detect-virt", X_OK) != 0)
      return answer;
    if (FILE* pipe = popen((std::string("systemd-detect-virt ") + flag + " 2>/dev/null").c_str(), "r")) {
      char line[128] = {};
      if (fgets(line, sizeof line, pipe)) answer = line;
      pclose(pipe);
      while (!answer.empty() && (answer.back() == '\n' || answer.back() == ' ')) answer.pop_back();
    }
    return answer;
  };
  const std::string sdv_vm = detect_virt("--vm"), sdv_container = detect_virt("--container");
  virt["systemd_detect_virt"] = json_or_null(sdv_vm);
  virt["container"] = json_or_null(sdv_container == "none" ? "" : sdv_container);
  const std::string osrelease = read_first_line("/proc/sys/kernel/osrelease");
  const bool wsl = osrelease.find("microsoft") != std::string::npos || osrelease.find("WSL") != std::string::npos;
  virt["wsl"] = wsl;
  // The hypervisor is what shapes switch costs (VM exits on IPIs and HLT);
  // a container only adds namespaces and cgroups, so it is a separate field.
  static const std::map<std::string, std::string> vendors = {
      {"KVMKVMKVM", "kvm"},     {"Microsoft Hv", "hyperv"}, {"VMwareVMware", "vmware"}, {"XenVMMXenVMM", "xen"},
      {"TCGTCGTCGTCG", "qemu"}, {"ACRNACRNACRN", "acrn"},   {"bhyve bhyve ", "bhyve"},  {" lrpepyh  vr", "parallels"}};
  if (auto it = vendors.find(detected); it != vendors.end()) detected = it->second;
  if (wsl)
    detected = "wsl";
  else if (!sdv_vm.empty() && sdv_vm != "none")
    detected = sdv_vm;
  virt["detected"] = detected;
  return virt;
}

long memory_total_kib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long value = 0;
  in >> key >> value;
  return value;
}

// The effective capabilities of the engine (CapEff of /proc/self/status).
std::string effective_capabilities() {
  std::string cap_effective;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) cap_effective = line.substr(line.find_first_not_of(" \t", 7));
  return cap_effective;
}

// What sits on every system call of the measuring task (sandbox.hpp), and a
// note for each thing that adds to the figures.
nlohmann::json sandbox_json(nlohmann::json& notes) {
  const nlohmann::json sandbox = capture_sandbox();
  if (sandbox["seccomp"]["mode"] == "filter")
    notes.push_back(fmt::format(
        "the engine runs under {} seccomp filter(s): every system call here pays the filter, so system-call and "
        "kernel-switch figures include it",
        sandbox["seccomp"]["filters"].is_number() ? sandbox["seccomp"]["filters"].dump() : "unknown"));
  if (sandbox["traced"] == true)
    notes.push_back(
        fmt::format("the engine is traced by process {} (TracerPid): a tracer that stops on system calls "
                    "(strace) adds its stops to every one",
                    sandbox["tracer_pid"].dump()));
  if (sandbox["tracepoints"]["recording"] == true)
    notes.push_back(
        fmt::format("{} tracepoint event(s) are enabled in tracefs ({}) and recording: every switch or "
                    "system call that fires one writes an event, and the figures include it",
                    sandbox["tracepoints"]["enabled"].dump(), sandbox["tracepoints"]["source"].get<std::string>()));
  return sandbox;
}

}  // namespace

nlohmann::json capture_environment(const std::string& run_id, const TimerInfo& timer, const std::string& timer_note) {
  nlohmann::json env;
  env["schema"] = schema_version;
  env["kind"] = "env";
  env["run_id"] = run_id;
  env["producer"] = {{"name", "ctxbench-engine"}, {"version", CTXBENCH_VERSION}};
  env["started_at"] = utc_now_iso();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  env["hostname"] = host;
  utsname uts{};
  uname(&uts);
  env["arch"] = uts.machine;
  nlohmann::json notes = nlohmann::json::array();
  env["cpu"] = cpu_json(timer, timer_note, notes);
  env["frequency"] = frequency_json(notes);
  env["kernel"] = {{"sysname", uts.sysname},
                   {"release", uts.release},
                   {"version", uts.version},
                   {"cmdline", read_first_line("/proc/cmdline")},
                   {"preempt", json_or_null(read_first_line("/sys/kernel/debug/sched/preempt"))}};
  const std::string cs = "/sys/devices/system/clocksource/clocksource0/";
  env["clocksource"] = {{"current", read_first_line(cs + "current_clocksource")},
                        {"available", read_first_line(cs + "available_clocksource")}};
  env["virtualization"] = virtualization_json();
  nlohmann::json mitigations = nlohmann::json::object();
  for (const auto& name : list_dir("/sys/devices/system/cpu/vulnerabilities"))
    mitigations[name] = read_first_line("/sys/devices/system/cpu/vulnerabilities/" + name);
  env["mitigations"] = mitigations;
  env["scheduler"] = {{"autogroup", json_or_null(read_first_line("/proc/sys/kernel/sched_autogroup_enabled"))},
                      {"sched_ext", json_or_null(read_first_line("/sys/kernel/sched_ext/root/ops"))},
                      {"perf_event_paranoid", json_or_null(read_first_line("/proc/sys/kernel/perf_event_paranoid"))}};
  env["memory"] = {{"total_kib", memory_total_kib()},
                   {"page_size", sysconf(_SC_PAGESIZE)},
                   {"thp", json_or_null(read_first_line("/sys/kernel/mm/transparent_hugepage/enabled"))}};
  // Who ran it: privileges decide what perf counters and policies are allowed.
  env["process"] = {{"uid", getuid()}, {"euid", geteuid()}, {"cap_effective", effective_capabilities()}};
  env["sandbox"] = sandbox_json(notes);
  env["libc"] = {{"name", "glibc"}, {"version", gnu_get_libc_version()}};
  env["compiler"] = {{"id", "gcc"}, {"version", __VERSION__}};
  env["build"] = {{"type", CTXBENCH_BUILD_TYPE},
                  {"flags", CTXBENCH_BUILD_FLAGS},
                  {"boost_context", CTXBENCH_HAVE_BOOST_CONTEXT == 1},
                  {"boost_fiber", CTXBENCH_HAVE_BOOST_FIBER == 1},
                  {"static", CTXBENCH_STATIC_LINK == 1}};
  if (!timer_note.empty()) notes.push_back(timer_note);
  env["notes"] = notes;
  return env;
}

}  // namespace ctx
