// A fake sysfs tree in a temporary directory, for the topology tests: the
// files the kernel writes under devices/system/cpu (topology/, cache/index*,
// cpuN/nodeM, smt/) for a machine of any shape. CPUs are numbered as Linux
// numbers them on x86: the first thread of every core, package by package,
// then the second threads.
#pragma once
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ctx::testing {

struct MachineShape {
  int packages = 1;           // one NUMA node each
  int cores_per_package = 1;  //
  int threads_per_core = 1;   // 2: SMT
  int cores_per_llc = 1;      // cores sharing one last-level cache
  bool caches = true;         // false: no cache/ directories (some VMs)
  std::string smt_control = "notsupported";
};

class FakeSysfs {
 public:
  explicit FakeSysfs(const MachineShape& shape) {
    char pattern[] = "/tmp/ctxbench-sysfs-XXXXXX";
    root_ = mkdtemp(pattern);
    const int cores = shape.packages * shape.cores_per_package;
    const int cpus = cores * shape.threads_per_core;
    write("devices/system/cpu/online", fmt::format("0-{}", cpus - 1));
    write("devices/system/cpu/smt/control", shape.smt_control);
    write("devices/system/cpu/smt/active", shape.threads_per_core > 1 ? "1" : "0");
    for (int cpu = 0; cpu < cpus; ++cpu) {
      const int package = (cpu % cores) / shape.cores_per_package, core = cpu % shape.cores_per_package;
      std::vector<int> siblings, llc, package_cpus;
      for (int t = 0; t < shape.threads_per_core; ++t) {
        siblings.push_back(t * cores + package * shape.cores_per_package + core);
        for (int c = 0; c < shape.cores_per_package; ++c) {
          const int id = t * cores + package * shape.cores_per_package + c;
          package_cpus.push_back(id);
          if (c / shape.cores_per_llc == core / shape.cores_per_llc) llc.push_back(id);
        }
      }
      const std::string dir = fmt::format("devices/system/cpu/cpu{}/", cpu);
      write(dir + "topology/core_id", std::to_string(core));
      write(dir + "topology/physical_package_id", std::to_string(package));
      write(dir + "topology/die_id", std::to_string(package));
      write(dir + "topology/cluster_id", "65535");
      write(dir + "topology/thread_siblings_list", list(siblings));
      write(dir + "topology/package_cpus_list", list(package_cpus));
      std::filesystem::create_directories(root_ + "/" + dir + fmt::format("node{}", package));
      if (!shape.caches) continue;
      cache(dir + "cache/index0/", 1, "Data", siblings, core);
      cache(dir + "cache/index1/", 1, "Instruction", siblings, core);
      cache(dir + "cache/index2/", 2, "Unified", siblings, core);
      const int llc_id = package * (shape.cores_per_package / shape.cores_per_llc) + core / shape.cores_per_llc;
      cache(dir + "cache/index3/", 3, "Unified", llc, llc_id);
    }
  }
  ~FakeSysfs() { std::filesystem::remove_all(root_); }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;
  const std::string& root() const { return root_; }

 private:
  // Plain comma lists ("0,64"): the kernel writes ranges, and parse_cpu_list
  // reads both; ranges are tested on their own.
  static std::string list(const std::vector<int>& cpus) {
    std::string text;
    for (int c : cpus) text += fmt::format("{}{}", text.empty() ? "" : ",", c);
    return text;
  }
  void cache(const std::string& dir, int level, const char* type, const std::vector<int>& shared, int id) {
    write(dir + "level", std::to_string(level));
    write(dir + "type", type);
    write(dir + "shared_cpu_list", list(shared));
    write(dir + "id", std::to_string(id));
  }
  void write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = root_ + "/" + relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  std::string root_;
};

}  // namespace ctx::testing
