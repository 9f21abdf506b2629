#include "plan/presets.hpp"

#include <fmt/format.h>

namespace ctx {

namespace {
std::vector<PresetDescriptor>& storage() {
  static std::vector<PresetDescriptor> presets;
  return presets;
}
}  // namespace

void register_preset(PresetDescriptor preset) { storage().push_back(std::move(preset)); }
const std::vector<PresetDescriptor>& all_presets() { return storage(); }

const PresetDescriptor& find_preset(const std::string& name) {
  std::string names;
  for (const auto& p : all_presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw UsageError(fmt::format("--preset: unknown preset '{}'; known: {}", name, names.empty() ? "none" : names));
}

Selection preset_selection(const std::string& name) {
  const PresetDescriptor& preset = find_preset(name);
  Selection selection;
  selection.patterns = preset.probes;
  for (const auto& param : preset.params) add_param_choice(selection, param);
  return selection;
}

}  // namespace ctx
