// Probe descriptors as data for people and programs: `list` (table or JSON),
// docs/probes.md and schema/probe-names.json are all generated from here.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "registry.hpp"

namespace ctx {

nlohmann::json describe_probe(const ProbeDescriptor& probe);
std::string probes_markdown();
std::string probe_names_json();
std::string probes_table();

}  // namespace ctx
