#include "os/topology.hpp"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

namespace ctx {

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    try {
      const int first = std::stoi(part.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
      for (int c = first; c <= last; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
    }
  }
  return cpus;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// {0,1,2,3,8} -> "0-3,8" (the kernel's own list format).
std::string cpu_list_text(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    text += fmt::format("{}{}", text.empty() ? "" : ",", cpus[i]);
    if (j > i) text += fmt::format("-{}", cpus[j]);
    i = j + 1;
  }
  return text;
}

int read_int(const std::string& path, int unknown = -1) {
  const std::string text = read_first_line(path);
  if (text.empty()) return unknown;
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    return unknown;
  }
}

bool contains(const std::vector<int>& cpus, int cpu) { return std::find(cpus.begin(), cpus.end(), cpu) != cpus.end(); }

// The last-level cache of one CPU: the cache/index* entry of the highest
// level that holds data (an instruction cache is never the LLC).
void read_llc(const std::string& cpu_dir, CpuPlace& place) {
  const std::string cache = cpu_dir + "/cache/";
  for (const auto& index : list_dir(cache)) {
    if (index.rfind("index", 0) != 0) continue;
    const std::string dir = cache + index + "/";
    const int level = read_int(dir + "level", 0);
    if (level <= place.llc_level || read_first_line(dir + "type") == "Instruction") continue;
    const auto shared = parse_cpu_list(read_first_line(dir + "shared_cpu_list"));
    if (shared.empty()) continue;
    place.llc_level = level;
    place.llc_cpus = shared;
    place.llc = read_int(dir + "id", *std::min_element(shared.begin(), shared.end()));
  }
}

int read_node(const std::string& root, const std::string& cpu_dir, int cpu) {
  for (const auto& name : list_dir(cpu_dir))
    if (name.size() > 4 && name.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4])))
      return std::atoi(name.c_str() + 4);
  // Older kernels have no cpuN/nodeM link; the node directories list their CPUs.
  const std::string nodes = root + "/devices/system/node/";
  for (const auto& name : list_dir(nodes))
    if (name.size() > 4 && name.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4])) &&
        contains(parse_cpu_list(read_first_line(nodes + name + "/cpulist")), cpu))
      return std::atoi(name.c_str() + 4);
  return -1;
}

std::string llc_text(const CpuPlace& p) {
  if (p.llc_level == 0) return fmt::format("package {} (no cache in sysfs)", p.package);
  return fmt::format("L{} (CPUs {})", p.llc_level, cpu_list_text(p.llc_cpus));
}

}  // namespace

const CpuPlace* Topology::find(int cpu) const {
  for (const auto& p : cpus)
    if (p.cpu == cpu) return &p;
  return nullptr;
}

bool Topology::has_smt_siblings() const {
  return std::any_of(cpus.begin(), cpus.end(), [](const CpuPlace& p) { return p.smt_siblings.size() > 1; });
}

std::string sysfs_root() {
  const char* root = std::getenv("CTXBENCH_SYSFS_ROOT");
  return root && *root ? std::string(root) : std::string("/sys");
}

std::vector<int> sysfs_online_cpus(const std::string& root) {
  return parse_cpu_list(read_first_line(root + "/devices/system/cpu/online"));
}

Topology read_topology(const std::vector<int>& cpus, const std::string& root) {
  Topology topology;
  topology.root = root;
  topology.smt_control = read_first_line(root + "/devices/system/cpu/smt/control");
  const std::string active = read_first_line(root + "/devices/system/cpu/smt/active");
  if (!active.empty()) topology.smt_active = active == "1";
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int cpu : sorted) {
    const std::string dir = root + "/devices/system/cpu/cpu" + std::to_string(cpu);
    const std::string t = dir + "/topology/";
    CpuPlace p;
    p.cpu = cpu;
    p.core = read_int(t + "core_id");
    p.package = read_int(t + "physical_package_id");
    p.die = read_int(t + "die_id");
    p.cluster = read_int(t + "cluster_id");
    if (p.cluster == 65535) p.cluster = -1;  // x86's "unknown" (BAD_APICID)
    p.smt_siblings = parse_cpu_list(read_first_line(t + "thread_siblings_list"));
    if (p.smt_siblings.empty()) p.smt_siblings = {cpu};
    p.node = read_node(root, dir, cpu);
    read_llc(dir, p);
    if (p.llc_level == 0) {
      // No cache in sysfs (some VMs and boards): the package stands in for the LLC.
      p.llc_cpus = parse_cpu_list(read_first_line(t + "package_cpus_list"));
      if (p.llc_cpus.empty()) p.llc_cpus = parse_cpu_list(read_first_line(t + "core_siblings_list"));
      if (p.llc_cpus.empty()) p.llc_cpus = {cpu};
      p.llc = *std::min_element(p.llc_cpus.begin(), p.llc_cpus.end());
    }
    topology.cpus.push_back(p);
  }
  return topology;
}

nlohmann::json topology_json(const Topology& topology) {
  auto known = [](int value) { return value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value); };
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : topology.cpus) {
    list.push_back({{"cpu", p.cpu},
                    {"core", known(p.core)},
                    {"package", known(p.package)},
                    {"die", known(p.die)},
                    {"cluster", known(p.cluster)},
                    {"node", known(p.node)},
                    {"llc", p.llc},
                    {"llc_level", p.llc_level > 0 ? nlohmann::json(p.llc_level) : nlohmann::json(nullptr)},
                    {"llc_shared_with", cpu_list_text(p.llc_cpus)},
                    {"smt_siblings", cpu_list_text(p.smt_siblings)}});
  }
  return list;
}

nlohmann::json smt_json(const Topology& topology) {
  return {{"control", topology.smt_control.empty() ? nlohmann::json(nullptr) : nlohmann::json(topology.smt_control)},
          {"active", topology.smt_active ? nlohmann::json(*topology.smt_active) : nlohmann::json(nullptr)},
          {"siblings_present", topology.has_smt_siblings()}};
}

const char* pair_class_name(PairClass cls) {
  switch (cls) {
    case PairClass::same_cpu: return "same_cpu";
    case PairClass::smt: return "smt";
    case PairClass::llc: return "llc";
    case PairClass::node: return "node";
    case PairClass::other_node: return "other_node";
  }
  return "other_node";
}

PairClass classify(const CpuPlace& a, const CpuPlace& b) {
  if (a.cpu == b.cpu) return PairClass::same_cpu;
  if (contains(a.smt_siblings, b.cpu)) return PairClass::smt;
  if (contains(a.llc_cpus, b.cpu)) return PairClass::llc;
  if (a.node == b.node) return PairClass::node;  // both -1: no NUMA, one node
  return PairClass::other_node;
}

std::vector<int> topology_order(const Topology& topology, std::vector<int> cpus) {
  auto key = [&](int cpu) {
    const CpuPlace* p = topology.find(cpu);
    if (!p) return std::make_tuple(1, 0, 0, 0, 0, 0, cpu);  // undescribed CPUs go last
    return std::make_tuple(0, p->node, p->package, p->die, p->llc, p->core, cpu);
  };
  std::sort(cpus.begin(), cpus.end(), [&](int a, int b) { return key(a) < key(b); });
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

namespace {

// A CPU sysfs does not describe is its own core, LLC and node.
CpuPlace place_of(const Topology& topology, int cpu) {
  if (const CpuPlace* p = topology.find(cpu)) return *p;
  CpuPlace p;
  p.cpu = cpu;
  p.smt_siblings = {cpu};
  p.llc_cpus = {cpu};
  p.llc = cpu;
  return p;
}

std::string pair_detail(const CpuPlace& a, const CpuPlace& b, PairClass cls) {
  switch (cls) {
    case PairClass::same_cpu: return fmt::format("CPU {} with itself", a.cpu);
    case PairClass::smt:
      return fmt::format("CPUs {} and {} are SMT siblings (core {}, package {})", a.cpu, b.cpu, a.core, a.package);
    case PairClass::llc:
      return fmt::format("CPUs {} and {} are different cores (core {} and {}) sharing the last-level cache, {}", a.cpu,
                         b.cpu, a.core, b.core, llc_text(a));
    case PairClass::node:
      return fmt::format("CPUs {} and {} share NUMA node {} but not a last-level cache ({} and {})", a.cpu, b.cpu,
                         a.node, llc_text(a), llc_text(b));
    case PairClass::other_node:
      return fmt::format("CPU {} is on NUMA node {} and CPU {} on node {}", a.cpu, a.node, b.cpu, b.node);
  }
  return "";
}

}  // namespace

std::optional<CpuPair> find_pair(const Topology& topology, const std::vector<int>& allowed,
                                 const std::string& placement, std::string* why) {
  std::vector<PairClass> wanted;
  if (placement == "smt")
    wanted = {PairClass::smt};
  else if (placement == "llc")
    wanted = {PairClass::llc};
  else if (placement == "remote")
    wanted = {PairClass::other_node, PairClass::node};  // the farthest there is
  else {
    *why = fmt::format("unknown placement '{}'", placement);
    return std::nullopt;
  }
  const std::vector<int> cpus = topology_order(topology, allowed);
  if (cpus.size() < 2) {
    *why = fmt::format(
        "--cpus {} needs two CPUs but only CPU {} is allowed (affinity mask); run without taskset "
        "or allow more CPUs",
        placement, cpus.empty() ? -1 : cpus.front());
    return std::nullopt;
  }
  // The first CPU in topology order that has a partner of the nearest wanted class.
  for (PairClass cls : wanted)
    for (int a : cpus)
      for (int b : cpus) {
        const CpuPlace pa = place_of(topology, a), pb = place_of(topology, b);
        if (classify(pa, pb) == cls) return CpuPair{a, b, cls, pair_detail(pa, pb, cls)};
      }
  const std::string list = cpu_list_text(cpus);
  const CpuPlace first = place_of(topology, cpus.front());
  if (placement == "smt")
    *why = fmt::format("no two allowed CPUs ({}) are SMT siblings: every core runs one hardware thread here{}", list,
                       topology.smt_control.empty() ? "" : " (SMT control: " + topology.smt_control + ")");
  else if (placement == "llc")
    *why = fmt::format("no two allowed CPUs ({}) on different cores share a last-level cache", list);
  else
    *why = fmt::format(
        "every allowed CPU ({}) shares one last-level cache ({}) and one NUMA node: there is no remote CPU here", list,
        llc_text(first));
  return std::nullopt;
}

MatrixPlan plan_matrix(const Topology& topology, const std::vector<int>& allowed, bool diagonal, std::size_t limit) {
  MatrixPlan plan;
  plan.cpus = topology_order(topology, allowed);
  plan.limit = limit;
  constexpr PairClass order[] = {PairClass::same_cpu, PairClass::smt, PairClass::llc, PairClass::node,
                                 PairClass::other_node};
  std::map<PairClass, std::vector<CpuPair>> by_class;
  for (int a : plan.cpus)
    for (int b : plan.cpus) {
      if (a == b && !diagonal) continue;
      const CpuPlace pa = place_of(topology, a), pb = place_of(topology, b);
      const PairClass cls = classify(pa, pb);
      by_class[cls].push_back({a, b, cls, ""});
      ++plan.pairs;
    }
  std::map<PairClass, std::size_t> quota;
  for (const auto& [cls, pairs] : by_class) quota[cls] = pairs.size();
  plan.sampled = plan.pairs > limit;
  if (plan.sampled) {
    // Share the limit equally; what a small class cannot use goes to the rest.
    for (auto& [cls, q] : quota) q = 0;
    std::size_t remaining = limit;
    for (;;) {
      std::vector<PairClass> open;
      for (PairClass cls : order)
        if (by_class.count(cls) && quota[cls] < by_class[cls].size()) open.push_back(cls);
      if (open.empty() || remaining == 0) break;
      const std::size_t share = remaining / open.size();
      if (share == 0) {
        for (std::size_t i = 0; i < remaining; ++i) ++quota[open[i]];
        break;
      }
      for (PairClass cls : open) {
        const std::size_t take = std::min(share, by_class[cls].size() - quota[cls]);
        quota[cls] += take;
        remaining -= take;
      }
    }
  }
  std::vector<CpuPair> chosen;
  for (const auto& [cls, pairs] : by_class) {
    const std::size_t q = quota[cls], n = pairs.size();
    // Evenly spaced along the class's pairs (the middle of each of q strides).
    for (std::size_t i = 0; i < q; ++i) chosen.push_back(pairs[(2 * i + 1) * n / (2 * q)]);
    plan.per_class[pair_class_name(cls)] = {n, q};
  }
  auto position = [&](int cpu) { return std::find(plan.cpus.begin(), plan.cpus.end(), cpu) - plan.cpus.begin(); };
  std::sort(chosen.begin(), chosen.end(), [&](const CpuPair& x, const CpuPair& y) {
    return std::make_pair(position(x.first), position(x.second)) <
           std::make_pair(position(y.first), position(y.second));
  });
  for (auto& cell : chosen)
    cell.detail = pair_detail(place_of(topology, cell.first), place_of(topology, cell.second), cell.cls);
  plan.cells = std::move(chosen);
  const std::string what = fmt::format("ordered pairs of the {} allowed CPUs{}", plan.cpus.size(),
                                       diagonal ? " (each CPU with itself included)" : "");
  if (!plan.sampled)
    plan.rule = fmt::format("all {} {}", plan.pairs, what);
  else
    plan.rule = fmt::format(
        "a sample of {} of the {} {}, stratified by class (same_cpu, smt, llc, node, other_node): the limit of {} is "
        "shared equally by the {} classes present, a class with fewer pairs than its share gives the rest to the "
        "others, and each class's share is taken evenly spaced along its pairs in topology order",
        plan.cells.size(), plan.pairs, what, limit, by_class.size());
  return plan;
}

}  // namespace ctx
