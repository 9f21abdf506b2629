// Presets: named experiments made of ordinary probe variants. A preset is a
// selection, probe names and parameter choices as --param takes them, that
// goes through the same expansion, harness, records and reporters as any run,
// so its records are those of the same probes run by name with the same
// parameters. In table mode the comparison reporter adds the preset's medians
// side by side. Each preset registers itself like a probe does.
#pragma once
#include <string>
#include <vector>

#include "plan/selection.hpp"

namespace ctx {

struct PresetDescriptor {
  std::string name;
  std::string description;          // one sentence: what it compares
  std::vector<std::string> probes;  // names or globs
  std::vector<std::string> params;  // NAME=V1,V2, as --param takes them
};

void register_preset(PresetDescriptor preset);
const std::vector<PresetDescriptor>& all_presets();

// The named preset's selection; a UsageError naming the known presets if
// there is no such preset.
Selection preset_selection(const std::string& name);
const PresetDescriptor& find_preset(const std::string& name);

struct PresetRegistrar {
  explicit PresetRegistrar(PresetDescriptor preset) { register_preset(std::move(preset)); }
};

}  // namespace ctx
