#include "plan/selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

namespace ctx {

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  if (text.empty()) throw UsageError(fmt::format("{}: no value given; give a comma-separated list", option));
  std::vector<std::string> values;
  std::size_t start = 0;
  while (start <= text.size()) {  // one more round after a trailing comma: its empty value
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty())
      throw UsageError(fmt::format("{}: empty value in '{}'; give a comma-separated list such as a,b", option, text));
    // A value given twice would be measured twice, and compare would pick one.
    if (std::find(values.begin(), values.end(), item) != values.end())
      throw UsageError(fmt::format("{}: '{}' is given twice in '{}'; give each value once", option, item, text));
    values.push_back(item);
  }
  return values;
}

void add_param_choice(Selection& selection, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--param: '{}' is not NAME=VALUE[,VALUE]; write e.g. --param procs=2,8", text));
  const std::string name = text.substr(0, eq);
  if (selection.choices.count(name))
    throw UsageError(fmt::format("--param {} is given twice; list its values in one --param {}=V1,V2", name, name));
  selection.choices[name] = split_list(text.substr(eq + 1), "--param " + name);
}

void add_axis_choice(Selection& selection, const std::vector<ProbeDescriptor>& probes, const std::string& axis,
                     const std::string& text, const std::string& option) {
  std::vector<std::string> allowed;
  for (const auto& p : probes)
    for (const auto& spec : p.params)
      if (spec.name == axis)
        for (const auto& v : spec.values)
          if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) allowed.push_back(v);
  auto values = split_list(text, option);
  for (const auto& v : values)
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      throw UsageError(
          fmt::format("{}: '{}' is not a value of {}; use {} (comma-separated)", option, v, axis,
                      allowed.empty() ? "none: no probe has it" : fmt::format("{}", fmt::join(allowed, ", "))));
  selection.choices[axis] = std::move(values);
  selection.axes.insert(axis);
}

namespace {
// Edits (insert, delete, substitute) between two short names.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string did_you_mean(const std::string& given, const std::vector<std::string>& known) {
  // Names within a third of the given length in edits (a typo), else names
  // that start with what was given (a shortened name); never an unrelated word.
  const std::size_t limit = std::max<std::size_t>(1, given.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> close;
  for (const auto& name : known)
    if (const std::size_t d = edit_distance(given, name); d <= limit) close.emplace_back(d, name);
  if (close.empty())
    for (const auto& name : known)
      if (given.size() >= 3 && name.rfind(given, 0) == 0) close.emplace_back(name.size() - given.size(), name);
  if (close.empty()) return "";
  std::stable_sort(close.begin(), close.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> names;
  for (const auto& [d, name] : close)
    if (names.size() < 3 && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return fmt::format("did you mean {}? ", fmt::join(names, ", "));
}

bool probe_matches(const std::string& pattern, const std::string& name) {
  if (pattern.find_first_of("*?[") == std::string::npos) return name == pattern || name.rfind(pattern + ".", 0) == 0;
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

namespace {
bool is_integer(const std::string& text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A whole number without leading zeros ("08" -> "8"), so that equal numbers
// are one variant; anything else as it is.
std::string canonical_number(const std::string& text) {
  if (!is_integer(text)) return text;
  const auto first = text.find_first_not_of('0');
  return first == std::string::npos ? "0" : text.substr(first);
}

// The probes the patterns name, in the order first named; every probe when
// there is no pattern.
std::vector<const ProbeDescriptor*> chosen_probes(const std::vector<ProbeDescriptor>& probes,
                                                  const std::vector<std::string>& patterns) {
  std::vector<const ProbeDescriptor*> chosen;
  if (patterns.empty()) {
    for (const auto& p : probes) chosen.push_back(&p);
    return chosen;
  }
  for (const auto& pattern : patterns) {
    bool any = false;
    for (const auto& p : probes) {
      if (!probe_matches(pattern, p.name)) continue;
      any = true;
      if (std::find(chosen.begin(), chosen.end(), &p) == chosen.end()) chosen.push_back(&p);
    }
    if (!any) {
      // Families first: "syscal" is most likely the family syscall.
      std::vector<std::string> names;
      for (const auto& p : probes) {
        const std::string family = p.name.substr(0, p.name.find('.'));
        if (std::find(names.begin(), names.end(), family) == names.end()) names.push_back(family);
      }
      for (const auto& p : probes) names.push_back(p.name);
      throw UsageError(fmt::format("unknown probe '{}'; {}run 'ctxbench-engine list' to see the probe names", pattern,
                                   did_you_mean(pattern, names)));
    }
  }
  return chosen;
}

// A --param for a name no chosen probe has is a typo, not a no-op; a run-wide
// axis (--cpus, --between) narrows the probes that have it and leaves the
// others alone.
void check_param_names(const std::vector<const ProbeDescriptor*>& chosen, const Selection& selection) {
  for (const auto& [name, values] : selection.choices) {
    bool known = false;
    for (const auto* p : chosen)
      for (const auto& spec : p->params) known = known || spec.name == name;
    if (!known && !selection.axes.count(name)) {
      std::vector<std::string> names;
      for (const auto* p : chosen)
        for (const auto& spec : p->params) names.push_back(spec.name);
      throw UsageError(fmt::format("parameter '{}' belongs to none of the chosen probes; {}see 'ctxbench-engine list'",
                                   name, did_you_mean(name, names)));
    }
  }
}

// The values of one of probe `p`'s parameters that run: the ones given, each
// checked, or else its defaults.
std::vector<std::string> chosen_values(const ProbeDescriptor& p, const ParamSpec& spec, const Selection& selection) {
  std::vector<std::string> values = default_values(spec);
  const auto choice = selection.choices.find(spec.name);
  if (choice == selection.choices.end()) return values;
  values.clear();
  for (const auto& given : choice->second) {
    const std::string v = spec.numeric ? canonical_number(given) : given;
    if (std::find(values.begin(), values.end(), v) != values.end())
      throw UsageError(fmt::format("{}: {} is given twice (as {}); give each value once", spec.name, v, given));
    values.push_back(v);
  }
  for (const auto& v : values) {
    const bool listed = std::find(spec.values.begin(), spec.values.end(), v) != spec.values.end();
    // Up to 9 digits: a count, never a number std::stol cannot hold.
    const bool accepted = listed || (spec.open_ended && spec.numeric && is_integer(v) && v != "0" && v.size() <= 9);
    if (!accepted)
      throw UsageError(fmt::format("{}={}: not allowed for {}; allowed: {}{}", spec.name, v, p.name,
                                   fmt::join(spec.values, ", "),
                                   spec.open_ended ? " (or another positive whole number)" : ""));
  }
  return values;
}

// Every combination of probe `p`'s chosen parameter values.
std::vector<Params> combinations(const ProbeDescriptor& p, const Selection& selection) {
  std::vector<Params> combos(1);
  for (const auto& spec : p.params) {
    const std::vector<std::string> values = chosen_values(p, spec, selection);
    if (values.empty()) continue;  // an optional parameter nobody chose: the variant goes without it
    const bool chosen_by_user = selection.choices.count(spec.name) > 0;
    std::vector<Params> next;
    for (const auto& combo : combos) {
      std::vector<std::string> here = values;
      // Values that run by default only beside some earlier choices.
      if (!chosen_by_user && spec.also_runs)
        for (const auto& v : spec.values)
          if (std::find(here.begin(), here.end(), v) == here.end() && spec.also_runs(v, combo)) here.push_back(v);
      for (const auto& v : here) {
        Params extended = combo;
        extended[spec.name] = v;
        next.push_back(extended);
      }
    }
    combos = std::move(next);
  }
  return combos;
}

}  // namespace

std::vector<Variant> expand(const std::vector<ProbeDescriptor>& probes, const Selection& selection) {
  const std::vector<const ProbeDescriptor*> chosen = chosen_probes(probes, selection.patterns);
  check_param_names(chosen, selection);
  std::vector<Variant> variants;
  for (const auto* p : chosen)
    for (auto& combo : combinations(*p, selection)) variants.push_back({p, std::move(combo)});
  return variants;
}

nlohmann::json variant_json(const Variant& variant) {
  return {{"probe", variant.probe->name},
          {"params", params_to_json(variant.params, numeric_params(*variant.probe, variant.params))}};
}

long parse_whole(const std::string& text, const std::string& option, long min, long max) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(fmt::format("{}: '{}' is not a whole number; give one from {} to {}", option, text, min, max));
  if (value < min || value > max)
    throw UsageError(
        fmt::format("{}: '{}' is out of range; give a whole number from {} to {}", option, text, min, max));
  return value;
}

long parse_positive(const std::string& text, const std::string& option, long max) {
  return parse_whole(text, option, 1, max);
}

double parse_seconds(const std::string& text, const std::string& option) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(value > 0) || value > 3600)
    throw UsageError(
        fmt::format("{}: '{}' is not a duration in seconds; give a number above 0 such as 0.01", option, text));
  return value;
}

}  // namespace ctx
