// Presets: named experiments that run fixed variants and print a comparison
// (e.g. fibers-vs-threads). Each preset registers itself like a probe does.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "output.hpp"

namespace ctx {

struct PresetContext {
  Clock& clock;
  const TimerInfo& timer;
  HarnessOptions options;
  Output& output;    // records go here, as for a plain run
  std::FILE* table;  // the preset's side-by-side summary (stdout, or stderr with --json)
  std::string run_id;
};

struct PresetDescriptor {
  std::string name;
  std::string description;
  std::function<int(PresetContext&)> run;  // returns the exit status
};

void register_preset(PresetDescriptor preset);
const std::vector<PresetDescriptor>& all_presets();

struct PresetRegistrar {
  explicit PresetRegistrar(PresetDescriptor preset) { register_preset(std::move(preset)); }
};

}  // namespace ctx
