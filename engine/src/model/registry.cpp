#include "model/registry.hpp"

#include <algorithm>
#include <regex>
#include <stdexcept>

namespace ctx {

namespace {
std::vector<ProbeDescriptor>& registry_storage() {
  static std::vector<ProbeDescriptor> probes;
  return probes;
}
}  // namespace

const char* counter_name(Counter counter) {
  switch (counter) {
    case Counter::voluntary: return "voluntary";
    case Counter::involuntary: return "involuntary";
    case Counter::any: return "voluntary+involuntary";
  }
  return "voluntary";
}

std::optional<Expectation> expects_no_switches(const Params&) {
  return Expectation{Counter::any, 0, 0,
                     "the operation stays in user space (a user-level switch, or making a user-level context), so "
                     "the kernel's scheduler is never entered; a timer tick may still preempt a batch now and then"};
}

void insert_probe(std::vector<ProbeDescriptor>& probes, ProbeDescriptor descriptor) {
  if (!descriptor.ops_per_iteration) descriptor.ops_per_iteration = constant(1);
  if (descriptor.make_baseline && !descriptor.baseline_ops_per_iteration)
    descriptor.baseline_ops_per_iteration = constant(1);
  if (!descriptor.tasks) descriptor.tasks = [](const Params&) { return 1; };
  auto position = std::lower_bound(probes.begin(), probes.end(), descriptor.name,
                                   [](const ProbeDescriptor& p, const std::string& n) { return p.name < n; });
  if (position != probes.end() && position->name == descriptor.name)
    throw std::logic_error("probe registered twice: " + descriptor.name);
  probes.insert(position, std::move(descriptor));
}

void register_probe(ProbeDescriptor descriptor) { insert_probe(registry_storage(), std::move(descriptor)); }

std::string probe_family(const std::string& name) { return name.substr(0, name.find('.')); }

const std::vector<ProbeDescriptor>& all_probes() { return registry_storage(); }

const ProbeDescriptor* find_probe(const std::string& name) {
  for (const auto& p : registry_storage())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string>& default_values(const ParamSpec& spec) {
  static const std::vector<std::string> none;
  if (spec.optional) return none;
  return spec.runs.empty() ? spec.values : spec.runs;
}

Params default_params(const ProbeDescriptor& probe) {
  Params params;
  for (const auto& spec : probe.params)
    if (const auto& values = default_values(spec); !values.empty()) params[spec.name] = values.front();
  return params;
}

std::map<std::string, double> numeric_params(const ProbeDescriptor& probe, const Params& params) {
  std::map<std::string, double> numbers;
  for (const auto& spec : probe.params)
    if (auto value = params.find(spec.name); spec.numeric && value != params.end())
      numbers[spec.name] = std::stod(value->second);
  return numbers;
}

ParamSpec cpus_param(std::vector<std::string> runs, std::string help) {
  // smt, llc and remote run only when asked for (--cpus).
  if (runs.empty()) runs = {"same", "cross", "any"};
  ParamSpec spec{"cpus", {"same", "cross", "any", "smt", "llc", "remote"}, std::move(runs), std::move(help)};
  if (spec.help.empty())
    spec.help =
        "same: all tasks pinned to one CPU; cross: to two CPUs; any: unpinned; smt: to two SMT siblings of one core; "
        "llc: to two cores sharing the last-level cache; remote: to two CPUs in different LLCs (other NUMA nodes "
        "first). smt, llc and remote come from the CPU topology in sysfs and are unsupported, with the reason, where "
        "the machine has no such pair";
  spec.axis = true;
  return spec;
}

ParamSpec between_param() {
  ParamSpec spec{"between", {"threads", "processes"}, {}, "the tasks are threads of one process, or processes"};
  spec.axis = true;
  return spec;
}

ParamSpec policy_param() {
  ParamSpec spec{
      "policy",
      {"normal", "batch"},
      {"normal"},
      "scheduling policy of every task. normal (SCHED_OTHER, what applications get, and what perf bench and "
      "lmbench measure): a woken task may preempt its waker at once, so on one CPU a round trip is one sleep and "
      "one preemption. batch (SCHED_BATCH): a woken task does not preempt its waker, so each side sleeps in its "
      "wait and both switches are voluntary sleeps, a full wake-up each"};
  spec.also_runs = [](const std::string& value, const Params& earlier) {
    const auto cpus = earlier.find("cpus");
    return value == "batch" && cpus != earlier.end() && cpus->second == "same";
  };
  spec.also_runs_help = "batch beside cpus=same, where the two policies differ";
  return spec;
}

ParamSpec seccomp_param() {
  ParamSpec spec{"seccomp",
                 {"none", "allow", "profile"},
                 {},
                 "a seccomp filter on the measuring tasks, installed on a thread made for the variant (never on the "
                 "engine itself), and measured without the host reference, none included, so that the values "
                 "differ by the filter alone. none: no filter. allow: two BPF instructions that allow every call but "
                 "read an argument, so the kernel's cache cannot answer and the filter runs on every call. profile: "
                 "a container runtime's kind of default profile built with libseccomp (a few hundred rules; calls "
                 "allowed by name alone may be answered by the kernel's cache). Unsupported without libseccomp "
                 "(profile) or where the kernel refuses a filter"};
  spec.optional = true;
  return spec;
}

ParamSpec max_pairs_param() {
  return {"max_pairs",
          {"256"},
          {"256"},
          "the most CPU pairs (matrix cells) measured: every ordered pair up to this many, beyond it a sample "
          "stratified by topology class, stated in the record",
          true,
          true};
}

Expectation switch_expectation(const Params& params, const std::string& wait, bool sleeps_after_preemption) {
  const auto policy = params.find("policy");
  if (policy != params.end() && policy->second == "normal") {
    Expectation e{Counter::any, 0.5, 1,
                  "each side switches out once per round trip (two switches): a sleep in " + wait +
                      " or a preemption by the task it woke"};
    if (sleeps_after_preemption) allow_preemption_then_sleep(e, wait);
    return e;
  }
  return {Counter::any, 0.5, 1,
          "each side switches out once per round trip (two switches): a sleep in " + wait +
              ", or, while another task wants the CPU, a preemption after which " + wait + " finds the token waiting"};
}

void allow_preemption_then_sleep(Expectation& e, const std::string& wait) {
  e.most = 2;
  e.why += ", or both: preempted by the task it woke, it runs again before its token is back and sleeps in " + wait +
           " too (up to twice as many switches)";
}

Aggregation aggregation_of(const ProbeDescriptor* probe, const std::string& name) {
  auto named = [&](const DerivedFigure& figure) { return figure.name == name; };
  if (probe)
    if (auto own = std::find_if(probe->derived.begin(), probe->derived.end(), named); own != probe->derived.end())
      return own->aggregation;
  const auto& harness = harness_figures();
  if (auto figure = std::find_if(harness.begin(), harness.end(), named); figure != harness.end())
    return figure->aggregation;
  return Aggregation::mean;
}

std::string descriptor_problems(const ProbeDescriptor& d) {
  std::string problems;
  auto missing = [&](const char* what) { problems += std::string(problems.empty() ? "" : ", ") + what; };
  static const std::regex name_pattern("^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+$");
  if (!std::regex_match(d.name, name_pattern)) missing("name is not family.variant");
  if (d.op.size() < 8) missing("op (what one operation is)");
  if (!d.make) missing("make (the workload)");
  if (d.make_baseline && d.baseline.empty()) missing("baseline description");
  if (!d.make_baseline && !d.baseline.empty()) missing("make_baseline");
  if (d.method.empty()) missing("method (where it comes from)");
  for (const auto& p : d.params) {
    if (p.values.empty()) missing("values of a parameter");
    if (p.help.empty()) missing("help of a parameter");
    if (p.optional && !p.runs.empty()) missing("default run values of an optional parameter");
    for (const auto& r : p.runs)
      if (!p.open_ended && std::find(p.values.begin(), p.values.end(), r) == p.values.end())
        missing("default run value not among allowed values");
  }
  const bool seccomp_axis =
      std::any_of(d.params.begin(), d.params.end(), [](const ParamSpec& p) { return p.name == "seccomp"; });
  if (seccomp_axis && d.syscalls.empty()) missing("syscalls (the system calls one op makes, for the seccomp axis)");
  return problems;
}

}  // namespace ctx
