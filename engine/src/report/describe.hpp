// Probe descriptors as data for people and programs: `list` (table or JSON),
// docs/probes.md and schema/probe-names.json are all generated from here.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "model/registry.hpp"

namespace ctx {

nlohmann::json describe_probe(const ProbeDescriptor& probe);

// docs/probes.md. With a reference run (the records of one `run --json`,
// env first), every probe also shows what it measured there, and families
// get a generated "where the time goes" comparison from those figures.
std::string probes_markdown(const std::vector<nlohmann::json>& reference = {});
// Reads a JSON Lines run; throws std::runtime_error naming the bad line.
std::vector<nlohmann::json> read_reference_run(const std::string& path);
std::string probe_names_json();
std::string probes_table();

}  // namespace ctx
