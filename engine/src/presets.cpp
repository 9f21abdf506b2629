#include "presets.hpp"

namespace ctx {

namespace {
std::vector<PresetDescriptor>& storage() {
  static std::vector<PresetDescriptor> presets;
  return presets;
}
}  // namespace

void register_preset(PresetDescriptor preset) { storage().push_back(std::move(preset)); }
const std::vector<PresetDescriptor>& all_presets() { return storage(); }

}  // namespace ctx
