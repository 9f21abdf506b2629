#include "describe.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "output.hpp"

namespace ctx {

namespace {
// The support verdict for the probe's default variant.
Support default_support(const ProbeDescriptor& probe) {
  if (!probe.supported) return Support::yes();
  Params params;
  for (const auto& spec : probe.params) params[spec.name] = spec.runs.empty() ? spec.values.front() : spec.runs.front();
  return probe.supported(params);
}
}  // namespace

nlohmann::json describe_probe(const ProbeDescriptor& probe) {
  nlohmann::json params = nlohmann::json::array();
  Params defaults;
  for (const auto& spec : probe.params) {
    const auto& runs = spec.runs.empty() ? spec.values : spec.runs;
    params.push_back(
        {{"name", spec.name},
         {"values", spec.values},
         {"default", runs},
         {"help", spec.help},
         {"numeric", spec.numeric},
         {"open_ended", spec.open_ended},
         {"also_runs", spec.also_runs_help.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec.also_runs_help)}});
    defaults[spec.name] = runs.front();
  }
  nlohmann::json expects = nullptr;
  if (probe.expects) {
    if (auto e = probe.expects(defaults))
      expects = {{"counter", counter_name(e->counter)},
                 {"measuring_task_per_op", e->main_per_op},
                 {"partner_per_handoff", e->partner_per_handoff},
                 {"why", e->why}};
  }
  const Support support = default_support(probe);
  return {{"name", probe.name},
          {"family", probe.name.substr(0, probe.name.find('.'))},
          {"op", probe.op},
          {"unit", unit_name(probe.unit)},
          {"baseline", probe.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.baseline)},
          {"params", params},
          {"expects", expects},
          {"method", probe.method},
          {"supported", support.ok},
          {"reason", support.ok ? nlohmann::json(nullptr) : nlohmann::json(support.reason)}};
}

std::string probes_table() {
  std::string out = fmt::format("{:<30} {:<6} {:<11} {}\n", "probe", "unit", "here", "one operation");
  for (const auto& p : all_probes()) {
    const Support s = default_support(p);
    out += fmt::format("{:<30} {:<6} {:<11} {}\n", p.name, unit_name(p.unit), s.ok ? "supported" : "unsupported", p.op);
    for (const auto& spec : p.params)
      out += fmt::format("{:<30}   --param {}={}{}{}\n", "", spec.name, fmt::join(spec.values, "|"),
                         spec.runs.empty() ? "" : fmt::format(" (default {})", fmt::join(spec.runs, ",")),
                         spec.also_runs_help.empty() ? "" : fmt::format(" (also {})", spec.also_runs_help));
    if (!p.baseline.empty()) out += fmt::format("{:<30}   baseline: {}\n", "", p.baseline);
    if (!s.ok) out += fmt::format("{:<30}   why not: {}\n", "", s.reason);
  }
  return out;
}

std::vector<nlohmann::json> read_reference_run(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read reference run '" + path + "'");
  std::vector<nlohmann::json> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(fmt::format("{}:{}: not a JSON record", path, number));
    }
  }
  if (records.empty() || records.front().value("kind", "") != "env")
    throw std::runtime_error(path + ": not a run (the first record must be the env record)");
  return records;
}

namespace {

std::string params_text(const nlohmann::json& params) {
  std::string text;
  for (const auto& [key, value] : params.items())
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", key,
                        value.is_string() ? value.get<std::string>() : value.dump());
  return text.empty() ? "(no parameters)" : text;
}

std::string value_text(double value, const std::string& unit) {
  if (unit == "ns") return format_ns(value);
  return fmt::format("{:.0f} {}", value, unit);
}

// Median of the first ok/suspect record of `probe` whose params contain `want`.
std::optional<double> reference_median(const std::vector<nlohmann::json>& records, const std::string& probe,
                                       const std::map<std::string, std::string>& want = {}) {
  for (const auto& r : records) {
    if (r.value("kind", "") != "result" || r.value("probe", "") != probe || r["summary"].is_null()) continue;
    bool match = true;
    for (const auto& [key, value] : want) {
      const auto& p = r["params"];
      if (!p.contains(key))
        match = false;
      else if ((p[key].is_string() ? p[key].get<std::string>() : p[key].dump()) != value)
        match = false;
    }
    if (match) return r["summary"]["median"].get<double>();
  }
  return std::nullopt;
}

// "Where the time goes" for user-level vs kernel switches, from the figures.
std::string uswitch_story(const std::vector<nlohmann::json>& ref) {
  const auto own = reference_median(ref, "uswitch.asm", {{"fpstate", "abi"}, {"fpcontrol", "same"}});
  const auto full = reference_median(ref, "uswitch.asm", {{"fpstate", "full"}, {"fpcontrol", "same"}});
  const auto mxcsr = reference_median(ref, "uswitch.asm", {{"fpstate", "abi"}, {"fpcontrol", "differs"}});
  const auto boost = reference_median(ref, "uswitch.boost_context");
  const auto coroutine = reference_median(ref, "uswitch.coroutine");
  const auto ucontext = reference_median(ref, "uswitch.ucontext");
  const auto syscall = reference_median(ref, "syscall.getpid");
  const auto kernel = reference_median(ref, "switch.threads_round_robin");
  const auto pipe = reference_median(ref, "switch.futex", {{"between", "threads"}, {"cpus", "same"}});
  if (!own) return "";
  std::string out = "\n### Where the time goes (generated from the reference run)\n\n";
  out += fmt::format(
      "- **Own assembly switch** (`uswitch.asm`, fpstate=abi): {} per switch: it saves and restores "
      "only the callee-saved registers, the stack pointer and the return address, plus the FP "
      "control words the ABI requires. This is the floor: no kernel, no allocation.\n",
      format_ns(*own));
  if (full)
    out += fmt::format(
        "- **Saving the whole vector/FP state** as well (fpstate=full): {} ({:.1f}x the ABI switch): "
        "the cost that lazy or ABI-only FP saving avoids.\n",
        format_ns(*full), *full / *own);
  if (mxcsr)
    out += fmt::format(
        "- **Contexts with different FP control words** (fpcontrol=differs): {} ({:.1f}x): loading a "
        "changed MXCSR/FPCR on every switch is far dearer than saving it.\n",
        format_ns(*mxcsr), *mxcsr / *own);
  if (boost)
    out += fmt::format(
        "- **Boost.Context** (`uswitch.boost_context`): {} ({:.2f}x the own switch): the same "
        "register swap plus the fiber's resume bookkeeping.\n",
        format_ns(*boost), *boost / *own);
  if (coroutine)
    out += fmt::format(
        "- **C++20 coroutine** symmetric transfer (`uswitch.coroutine`): {}: stackless, so a resume "
        "is an indirect call and nothing is saved.\n",
        format_ns(*coroutine));
  if (ucontext) {
    out += fmt::format("- **ucontext** (`uswitch.ucontext`): {} ({:.0f}x the own switch).", format_ns(*ucontext),
                       *ucontext / *own);
    std::optional<double> sigprocmask;
    for (const auto& r : ref)
      if (r.value("probe", "") == "uswitch.ucontext" && r.contains("baseline") && r["baseline"].is_object())
        sigprocmask = r["baseline"]["value"].get<double>();
    if (sigprocmask)
      out += fmt::format(
          " Every swapcontext makes one rt_sigprocmask system call; that call alone (the probe's baseline) costs "
          "{}, {:.0f}% of the swap, and the rest ({}) is saving and restoring the full ucontext_t.",
          format_ns(*sigprocmask), 100.0 * *sigprocmask / *ucontext, format_ns(*ucontext - *sigprocmask));
    else if (syscall)
      out += fmt::format(
          " Every swapcontext makes one rt_sigprocmask system call; a bare system call here "
          "(`syscall.getpid`) costs {}.",
          format_ns(*syscall));
    out += "\n";
  }
  if (kernel)
    out += fmt::format(
        "- **Kernel thread switch** (`switch.threads_round_robin`, one CPU, futex baton): {} "
        "({:.0f}x the own switch): futex wait and wake system calls, the scheduler's pick and the kernel's save and "
        "restore of the full register state (threads share one address space: no page-table switch).\n",
        format_ns(*kernel), *kernel / *own);
  else if (pipe)
    out += fmt::format("- **Kernel thread switch** (`switch.futex`, threads, one CPU): {} ({:.0f}x).\n",
                       format_ns(*pipe), *pipe / *own);
  return out;
}

}  // namespace

std::string probes_markdown(const std::vector<nlohmann::json>& reference) {
  std::string out =
      "<!-- Generated by `ctxbench-engine docs probes` (make docs) from the probe registry. Do not edit. -->\n"
      "# Probes\n\n"
      "Every probe `ctxbench-engine` knows, generated from its registry. One *op* is what one\n"
      "sample is divided by; the harness times batches of ops, subtracts one timer read per\n"
      "batch, and subtracts the baseline named here (measured in the same run) to give the\n"
      "`corrected` figures. Switch probes are checked against the kernel's switch counters\n"
      "(getrusage) as described under *expects*. Where a probe is unsupported on some\n"
      "machines the reason is given by the engine at run time, never a made-up figure.\n";
  if (!reference.empty()) {
    const auto& env = reference.front();
    std::string command = "ctxbench-engine run";
    if (env.contains("options") && env["options"].value("quick", false)) command += " --quick";
    out += fmt::format(
        "\n*Measured* lines come from the reference run `{}` (`{} --json`, stored in "
        "docs/data/reference-run.jsonl) on {} ({} CPUs, kernel {}, virtualization {}, timer {}). They are "
        "medians; see the record for the distribution, the baseline and the checks.\n",
        env.value("run_id", "?"), command, env["cpu"].value("model", "?"), env["cpu"].value("logical", 0),
        env["kernel"].value("release", "?"), env["virtualization"].value("detected", "?"),
        env["cpu"].contains("tsc") ? env["cpu"]["tsc"].value("timer", "?") : "?");
  }
  std::string family;
  for (const auto& p : all_probes()) {
    const std::string f = p.name.substr(0, p.name.find('.'));
    if (f != family) {
      if (family == "uswitch" && !reference.empty()) out += uswitch_story(reference);
      family = f;
      out += fmt::format("\n## {}\n", family);
    }
    out += fmt::format("\n### `{}`\n\n- **op:** {}\n- **unit:** {}\n", p.name, p.op, unit_name(p.unit));
    out += fmt::format("- **baseline:** {}\n", p.baseline.empty() ? "none" : p.baseline);
    for (const auto& spec : p.params)
      out += fmt::format("- **param `{}`:** {} — {}{}{}\n", spec.name, fmt::join(spec.values, ", "), spec.help,
                         spec.runs.empty() ? "" : fmt::format(" (runs by default: {})", fmt::join(spec.runs, ", ")),
                         spec.also_runs_help.empty() ? "" : fmt::format("; also {}", spec.also_runs_help));
    const auto described = describe_probe(p);
    if (!described["expects"].is_null())
      out += fmt::format(
          "- **expects:** {} switches: {} per op by the measuring task, {} per hand-off by each "
          "partner (default parameters). {}\n",
          described["expects"]["counter"].get<std::string>(),
          described["expects"]["measuring_task_per_op"].get<double>(),
          described["expects"]["partner_per_handoff"].get<double>(), described["expects"]["why"].get<std::string>());
    out += fmt::format("- **method:** {}\n", p.method);
    std::vector<std::string> measured;
    for (const auto& r : reference) {
      if (r.value("kind", "") != "result" || r.value("probe", "") != p.name) continue;
      const std::string status = r["verdict"].value("status", "?");
      if (r["summary"].is_null()) {
        const auto& reasons = r["verdict"]["reasons"];
        measured.push_back(fmt::format("{}: {} ({})", params_text(r["params"]), status,
                                       reasons.empty() ? "" : reasons[0].value("detail", "")));
        continue;
      }
      const std::string unit = r.value("unit", "ns");
      std::string line = fmt::format("{}: {}", params_text(r["params"]), value_text(r["summary"]["median"], unit));
      if (!r["corrected"].is_null())
        line += fmt::format(" ({} after the baseline)", value_text(r["corrected"]["median"], unit));
      if (status != "ok") line += fmt::format(" — {}", status);
      measured.push_back(line);
    }
    if (!measured.empty()) {
      out += "- **measured:**\n";
      for (const auto& m : measured) out += fmt::format("  - {}\n", m);
    }
  }
  if (family == "uswitch" && !reference.empty()) out += uswitch_story(reference);
  return out;
}

std::string probe_names_json() {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& p : all_probes()) names.push_back(p.name);
  nlohmann::json doc = {{"$comment", "Generated by `ctxbench-engine docs probe-names` from the registry. Do not edit."},
                        {"engine_probes", names}};
  return doc.dump(2) + "\n";
}

}  // namespace ctx
