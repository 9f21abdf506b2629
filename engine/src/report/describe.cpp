#include "report/describe.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "report/output.hpp"
#include "report/wording.hpp"

namespace ctx {

namespace {
// The support verdict for the probe's default variant.
Support default_support(const ProbeDescriptor& probe) {
  if (!probe.supported) return Support::yes();
  return probe.supported(default_params(probe));
}

// What runs by default, where that is not simply every value.
std::string default_note(const ParamSpec& spec) {
  if (spec.optional) return " (unset by default)";
  std::string note = spec.runs.empty() ? "" : fmt::format(" (runs by default: {})", fmt::join(spec.runs, ", "));
  if (!spec.also_runs_help.empty()) note += fmt::format("; also {}", spec.also_runs_help);
  return note;
}
}  // namespace

static nlohmann::json roles_json(const ProbeDescriptor& probe) {
  nlohmann::json roles = nlohmann::json::array();
  for (const auto& r : probe.roles) roles.push_back({{"role", r.role}, {"rank", r.rank}});
  return roles;
}

nlohmann::json describe_probe(const ProbeDescriptor& probe) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& spec : probe.params) {
    params.push_back(
        {{"name", spec.name},
         {"values", spec.values},
         {"default", default_values(spec)},
         {"help", spec.help},
         {"numeric", spec.numeric},
         {"open_ended", spec.open_ended},
         {"optional", spec.optional},
         {"axis", spec.axis},
         {"also_runs", spec.also_runs_help.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec.also_runs_help)}});
  }
  nlohmann::json expects = nullptr;
  if (probe.expects) {
    if (auto e = probe.expects(default_params(probe)))
      expects = {{"counter", counter_name(e->counter)},
                 {"measuring_task_per_op", e->main_per_op},
                 {"partner_per_handoff", e->partner_per_handoff},
                 {"why", e->why}};
  }
  const Support support = default_support(probe);
  return {{"name", probe.name},
          {"roles", roles_json(probe)},
          {"family", probe_family(probe.name)},
          {"op", probe.op},
          {"unit", unit_name(probe.unit)},
          {"baseline", probe.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.baseline)},
          {"params", params},
          {"expects", expects},
          {"method", probe.method},
          {"where_time_goes",
           probe.where_time_goes.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.where_time_goes)},
          {"supported", support.ok},
          {"reason", support.ok ? nlohmann::json(nullptr) : nlohmann::json(support.reason)}};
}

std::string probes_table() {
  std::string out = fmt::format("{:<30} {:<6} {:<11} {}\n", "probe", "unit", "here", "one operation");
  for (const auto& p : all_probes()) {
    const Support s = default_support(p);
    out += fmt::format("{:<30} {:<6} {:<11} {}\n", p.name, unit_name(p.unit), s.ok ? "supported" : "unsupported", p.op);
    for (const auto& spec : p.params)
      out += fmt::format("{:<30}   --param {}={}{}\n", "", spec.name, fmt::join(spec.values, "|"), default_note(spec));
    if (!p.baseline.empty()) out += fmt::format("{:<30}   baseline: {}\n", "", p.baseline);
    if (!s.ok) out += fmt::format("{:<30}   why not: {}\n", "", s.reason);
  }
  return out;
}

std::vector<nlohmann::json> read_reference_run(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read reference run '" + path + "'");
  std::vector<nlohmann::json> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(fmt::format("{}:{}: not a JSON record", path, number));
    }
  }
  if (records.empty() || records.front().value("kind", "") != "env")
    throw std::runtime_error(path + ": not a run (the first record must be the env record)");
  return records;
}

namespace {

std::string param_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string params_text(const nlohmann::json& params) {
  Params values;
  for (const auto& [key, value] : params.items()) values[key] = param_text(value);
  return values.empty() ? "(no parameters)" : format_params(values);
}

std::string value_text(const nlohmann::json& value, const std::string& unit) {
  const auto known = unit_from_name(unit);
  return known ? format_value(value.get<double>(), *known) : fmt::format("{} {}", value.dump(), unit);
}

// A reference record of a probe's default placement: where every run-wide
// axis parameter (cpus, between) has its first default value. The section
// below compares operations, not placements.
bool at_default_axes(const ProbeDescriptor& probe, const nlohmann::json& record) {
  for (const auto& spec : probe.params) {
    const auto& defaults = default_values(spec);
    if (!spec.axis || defaults.empty() || !record["params"].contains(spec.name)) continue;
    if (param_text(record["params"][spec.name]) != defaults.front()) return false;
  }
  return true;
}

// A value run only beside the defaults (policy=batch beside cpus=same) is not
// the probe's default variant.
bool only_run_beside(const ProbeDescriptor& probe, const nlohmann::json& record) {
  for (const auto& spec : probe.params) {
    const auto& defaults = default_values(spec);
    if (!spec.also_runs || defaults.empty() || !record["params"].contains(spec.name)) continue;
    if (std::find(defaults.begin(), defaults.end(), param_text(record["params"][spec.name])) == defaults.end())
      return true;
  }
  return false;
}

// "Where the time goes" in one family, generated from its probes'
// descriptors (what one op is, its unit, where its time goes) and the
// reference run's records of their default placements, cheapest first, each
// as a multiple of the cheapest of its unit. Every probe of the family is
// listed, measured or not, so a new probe appears here without an edit.
std::string where_the_time_goes(const std::string& family, const std::vector<const ProbeDescriptor*>& probes,
                                const std::vector<nlohmann::json>& reference) {
  struct Row {
    std::string probe, params, unit, status;
    double median;
    std::optional<double> net;
  };
  std::vector<Row> rows;
  std::set<std::string> measured;
  for (const auto* p : probes) {
    // The default variants; a run that has none of them (recorded under
    // older defaults) gives what it measured at the default placement.
    std::vector<const nlohmann::json*> found, beside;
    for (const auto& r : reference) {
      if (r.value("kind", "") != "result" || r.value("probe", "") != p->name || r["summary"].is_null()) continue;
      if (at_default_axes(*p, r)) (only_run_beside(*p, r) ? beside : found).push_back(&r);
    }
    if (found.empty()) found = beside;
    for (const auto* record : found) {
      const auto& r = *record;
      measured.insert(p->name);
      Row row{p->name,
              params_text(r["params"]),
              r.value("unit", "ns"),
              r["verdict"].value("status", "?"),
              r["summary"]["median"].get<double>(),
              std::nullopt};
      if (!r["corrected"].is_null()) row.net = r["corrected"]["median"].get<double>();
      rows.push_back(row);
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return std::tie(a.unit, a.median) < std::tie(b.unit, b.median); });
  std::string out = fmt::format("\n### Where the time goes in `{}` (generated)\n\n", family);
  if (!rows.empty()) {
    out +=
        "Medians from the reference run at each probe's default placement, of its default variants (a variant run "
        "only beside them, as the batch policy, only where the run has no default one), cheapest first; *x "
        "cheapest* is the "
        "ratio to the cheapest of the same unit, *net* the median minus the probe's baseline.\n\n"
        "| probe | params | median | x cheapest | net |\n|---|---|---|---|---|\n";
    for (const auto& row : rows) {
      double cheapest = row.median;
      for (const auto& other : rows)
        if (other.unit == row.unit && other.median > 0) cheapest = std::min(cheapest, other.median);
      const std::string ratio = cheapest > 0 && row.median > 0 ? fmt::format("{:.1f}", row.median / cheapest) : "-";
      out += fmt::format("| `{}` | {} | {}{} | {} | {} |\n", row.probe, row.params,
                         value_text(nlohmann::json(row.median), row.unit),
                         row.status == "ok" ? "" : " (" + row.status + ")", ratio,
                         row.net ? value_text(nlohmann::json(*row.net), row.unit) : "-");
    }
    out += "\n";
  }
  for (const auto* p : probes) {
    out += fmt::format("- `{}`: one op is {}.", p->name, p->op);
    if (!p->where_time_goes.empty()) out += " " + p->where_time_goes;
    if (!reference.empty() && !measured.count(p->name)) out += " (Not measured in the reference run.)";
    out += "\n";
  }
  return out;
}

// The page's opening: what it is, and where its measured lines come from.
std::string probes_preamble(const std::vector<nlohmann::json>& reference) {
  std::string out =
      "<!-- Generated by `ctxbench-engine docs probes` (make docs) from the probe registry. Do not edit. -->\n"
      "# Probes\n\n"
      "Every probe `ctxbench-engine` knows, generated from its registry. One *op* is what one\n"
      "sample is divided by; the harness times batches of ops, subtracts one timer read per\n"
      "batch, and subtracts the baseline named here (measured in the same run) to give the\n"
      "`corrected` figures. Switch probes are checked against the kernel's switch counters\n"
      "(getrusage) as described under *expects*. Where a probe is unsupported on some\n"
      "machines the reason is given by the engine at run time, never a made-up figure.\n";
  if (!reference.empty()) {
    const auto& env = reference.front();
    std::string command = "ctxbench-engine run";
    if (env.contains("options") && env["options"].value("quick", false)) command += " --quick";
    out += fmt::format(
        "\n*Measured* lines come from the reference run `{}` (`{} --json`, stored in "
        "docs/data/reference-run.jsonl) on {} ({} CPUs, kernel {}, virtualization {}, timer {}). They are "
        "medians; see the record for the distribution, the baseline and the checks.\n",
        env.value("run_id", "?"), command, env["cpu"].value("model", "?"), env["cpu"].value("logical", 0),
        env["kernel"].value("release", "?"), env["virtualization"].value("detected", "?"),
        env["cpu"].contains("tsc") ? env["cpu"]["tsc"].value("timer", "?") : "?");
  }
  return out;
}

// What the kernel's counters are expected to show of probe `p`; empty when
// nothing is expected.
std::string expects_line(const ProbeDescriptor& p) {
  std::string out;
  const auto described = describe_probe(p);
  const auto& expects = described["expects"];
  if (!expects.is_null() && expects["measuring_task_per_op"].get<double>() == 0 &&
      expects["partner_per_handoff"].get<double>() == 0)
    out += fmt::format(
        "- **expects:** no kernel switch of the measuring task (voluntary + involuntary, over every batch): {}\n",
        expects["why"].get<std::string>());
  else if (!expects.is_null())
    out += fmt::format(
        "- **expects:** {} switches: {} per op by the measuring task, {} per hand-off by each "
        "partner (default parameters). {}\n",
        described["expects"]["counter"].get<std::string>(), described["expects"]["measuring_task_per_op"].get<double>(),
        described["expects"]["partner_per_handoff"].get<double>(), described["expects"]["why"].get<std::string>());
  return out;
}

// The reference run's figures of probe `p`, one line per variant.
std::vector<std::string> measured_lines(const ProbeDescriptor& p, const std::vector<nlohmann::json>& reference) {
  std::vector<std::string> measured;
  for (const auto& r : reference) {
    if (r.value("kind", "") != "result" || r.value("probe", "") != p.name) continue;
    const std::string status = r["verdict"].value("status", "?");
    if (r["summary"].is_null()) {
      const auto& reasons = r["verdict"]["reasons"];
      measured.push_back(fmt::format("{}: {} ({})", params_text(r["params"]), status,
                                     reasons.empty() ? "" : reasons[0].value("detail", "")));
      continue;
    }
    const std::string unit = r.value("unit", "ns");
    std::string line = fmt::format("{}: {}", params_text(r["params"]), value_text(r["summary"]["median"], unit));
    if (!r["corrected"].is_null())
      line += fmt::format(" ({} after the baseline)", value_text(r["corrected"]["median"], unit));
    if (status != "ok") line += fmt::format(" — {}", status);
    measured.push_back(line);
  }
  return measured;
}

}  // namespace

std::string probes_markdown(const std::vector<nlohmann::json>& reference) {
  std::string out = probes_preamble(reference);
  // A family gets a "where the time goes" section when one of its probes says
  // where its time goes.
  std::map<std::string, std::vector<const ProbeDescriptor*>> families;
  std::set<std::string> explained;
  for (const auto& p : all_probes()) {
    families[probe_family(p.name)].push_back(&p);
    if (!p.where_time_goes.empty()) explained.insert(probe_family(p.name));
  }
  auto close_family = [&](const std::string& family) {
    if (explained.count(family)) out += where_the_time_goes(family, families[family], reference);
  };
  std::string family;
  for (const auto& p : all_probes()) {
    const std::string f = probe_family(p.name);
    if (f != family) {
      close_family(family);
      family = f;
      out += fmt::format("\n## {}\n", family);
    }
    out += fmt::format("\n### `{}`\n\n- **op:** {}\n- **unit:** {}\n", p.name, p.op, unit_name(p.unit));
    out += fmt::format("- **baseline:** {}\n", p.baseline.empty() ? "none" : p.baseline);
    for (const auto& spec : p.params)
      out += fmt::format("- **param `{}`:** {} — {}{}\n", spec.name, fmt::join(spec.values, ", "), spec.help,
                         default_note(spec));
    out += expects_line(p);
    out += fmt::format("- **method:** {}\n", p.method);
    const std::vector<std::string> measured = measured_lines(p, reference);
    if (!measured.empty()) {
      out += "- **measured:**\n";
      for (const auto& m : measured) out += fmt::format("  - {}\n", m);
    }
  }
  close_family(family);
  return out;
}

std::string probe_names_json() {
  nlohmann::json names = nlohmann::json::array();
  nlohmann::json roles = nlohmann::json::object();
  for (const auto& p : all_probes()) {
    names.push_back(p.name);
    if (!p.roles.empty()) roles[p.name] = roles_json(p);
  }
  nlohmann::json doc = {{"$comment", "Generated by `ctxbench-engine docs probe-names` from the registry. Do not edit."},
                        {"engine_probes", names},
                        {"roles", roles}};
  return doc.dump(2) + "\n";
}

}  // namespace ctx
