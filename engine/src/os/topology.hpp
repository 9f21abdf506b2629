// Where the CPUs are: for each CPU its core, package, die, cluster, NUMA node,
// last-level cache and SMT siblings, read from sysfs. The sysfs root is "/sys"
// unless CTXBENCH_SYSFS_ROOT names another tree, so tests describe any machine
// (a 128-CPU two-node box, SMT on or off) with a few files in a temp
// directory. Pure functions over that picture class a pair of CPUs (same CPU,
// SMT sibling, same LLC, same node, other node), pick the pair a placement
// (`smt`, `llc`, `remote`) asks for, and choose the cells of a CPU-pair
// matrix: every ordered pair up to a limit, beyond it a sample stratified by
// class. Reads files only; never changes a setting.
#pragma once
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ctx {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
std::vector<int> parse_cpu_list(const std::string& text);
// The names in a directory (no dot entries), sorted; empty when unreadable.
std::vector<std::string> list_dir(const std::string& path);
// First line of a file, trimmed; "" when unreadable.
std::string read_first_line(const std::string& path);

struct CpuPlace {
  int cpu = -1;
  int core = -1;                  // topology/core_id (unique within a package)
  int package = -1;               // topology/physical_package_id
  int die = -1;                   // topology/die_id
  int cluster = -1;               // topology/cluster_id; -1 where the kernel does not know (x86 shows 65535)
  int node = -1;                  // NUMA node (cpuN/nodeM); -1 when the kernel has no NUMA
  int llc = -1;                   // the last-level cache's id (its `id` file, else its lowest CPU)
  int llc_level = 0;              // cache level of the LLC; 0 when sysfs has no cache (then the package stands in)
  std::vector<int> llc_cpus;      // CPUs sharing the LLC (shared_cpu_list)
  std::vector<int> smt_siblings;  // CPUs of the same core (thread_siblings_list), itself included
};

struct Topology {
  std::string root;                // the sysfs root it was read from
  std::vector<CpuPlace> cpus;      // ascending CPU id
  std::string smt_control;         // devices/system/cpu/smt/control ("" when absent)
  std::optional<bool> smt_active;  // devices/system/cpu/smt/active
  const CpuPlace* find(int cpu) const;
  // True when some CPU listed has another hardware thread on its core.
  bool has_smt_siblings() const;
};

// $CTXBENCH_SYSFS_ROOT when set and not empty, else "/sys".
std::string sysfs_root();
// The online CPUs that sysfs under `root` lists (devices/system/cpu/online).
std::vector<int> sysfs_online_cpus(const std::string& root);
// Reads the topology of `cpus` under `root`; a CPU sysfs does not describe
// keeps -1 fields (and counts as its own core and LLC).
Topology read_topology(const std::vector<int>& cpus, const std::string& root);

// What the environment record says about each CPU, and about SMT.
nlohmann::json topology_json(const Topology& topology);
nlohmann::json smt_json(const Topology& topology);

// ---- pairs -------------------------------------------------------------------
// How close two CPUs are, nearest first. `node` is "same NUMA node, another
// LLC"; `other_node` is another NUMA node.
enum class PairClass { same_cpu, smt, llc, node, other_node };
const char* pair_class_name(PairClass cls);
PairClass classify(const CpuPlace& a, const CpuPlace& b);

// CPU ids in topology order: NUMA node, package, die, LLC, core, CPU; SMT
// siblings end up side by side and each LLC is one block.
std::vector<int> topology_order(const Topology& topology, std::vector<int> cpus);

struct CpuPair {
  int first = -1;
  int second = -1;
  PairClass cls = PairClass::same_cpu;
  std::string detail;  // one sentence: where the two CPUs are
};

// The pair a placement asks for among `allowed`: smt (SMT siblings), llc
// (two cores sharing the LLC) or remote (outside the first CPU's LLC: on
// another node when there is one, else another LLC of the node). nullopt
// and `why` when the machine has no such pair.
std::optional<CpuPair> find_pair(const Topology& topology, const std::vector<int>& allowed,
                                 const std::string& placement, std::string* why);

// ---- the cells of a CPU-pair matrix ------------------------------------------------
struct MatrixPlan {
  std::vector<int> cpus;       // rows and columns, in topology order
  std::vector<CpuPair> cells;  // (row, column) pairs to measure, row-major in that order
  std::size_t pairs = 0;       // how many pairs there are in all
  std::size_t limit = 0;
  bool sampled = false;  // pairs > limit: a stratified sample was chosen
  std::string rule;      // the selection, in words
  std::map<std::string, std::pair<std::size_t, std::size_t>> per_class;  // class -> (pairs, chosen)
};

// Every ordered pair of `allowed` CPUs (with the diagonal when `diagonal`),
// or, past `limit`, a stratified sample: the limit is shared equally by the
// classes present (a class with fewer pairs than its share gives the rest to
// the others) and each class's share is taken evenly spaced along its pairs
// in topology order. Deterministic: the same machine gives the same cells.
MatrixPlan plan_matrix(const Topology& topology, const std::vector<int>& allowed, bool diagonal, std::size_t limit);

}  // namespace ctx
