// Turns the command line's choices into the list of variants to run: which
// probes (names or globs), and for each the cartesian product of its
// parameters' values (the probe's defaults, or the user's --cpus, --between
// and --param choices, or a preset's). Pure, so option handling is tested
// without running.
#pragma once
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/registry.hpp"

namespace ctx {

// A usage error: one line naming the problem and the fix; exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Variant {
  const ProbeDescriptor* probe;
  Params params;
};

struct Selection {
  std::vector<std::string> patterns;                        // empty: every probe
  std::map<std::string, std::vector<std::string>> choices;  // param name -> values
  // Choices made by a run-wide option (--cpus, --between, --hold-idle): they
  // narrow the chosen probes that have the parameter and leave the others
  // alone, where a --param no chosen probe has is refused as a typo.
  std::set<std::string> axes;
};

// Parses "a,b,c" into values; throws UsageError on empty items.
std::vector<std::string> split_list(const std::string& text, const std::string& option);

// Parses --param NAME=V1,V2 into `selection.choices`.
void add_param_choice(Selection& selection, const std::string& text);

// Parses a run-wide option (--cpus for the parameter `cpus`, --between,
// --hold-idle) into `selection.choices` and `selection.axes`: every value must
// be one that some probe's parameter of that name allows. The choice narrows
// the probes that have the parameter; expand() leaves the others alone.
void add_axis_choice(Selection& selection, const std::vector<ProbeDescriptor>& probes, const std::string& axis,
                     const std::string& text, const std::string& option);

// "did you mean a, b? " naming up to three of `known` close to `given` (a
// typo or a shortened name), or "" when none is.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& known);

// fnmatch-style glob; a pattern without * ? [ also matches as a family prefix
// ("switch" selects switch.*).
bool probe_matches(const std::string& pattern, const std::string& name);

std::vector<Variant> expand(const std::vector<ProbeDescriptor>& probes, const Selection& selection);

// A variant as `run --dry-run` prints it: {"probe": ..., "params": {...}}, the
// params as the variant's record will give them.
nlohmann::json variant_json(const Variant& variant);

// A whole number from `min` to `max` for `option`, or throws UsageError;
// parse_positive is the same from 1.
long parse_whole(const std::string& text, const std::string& option, long min, long max);
long parse_positive(const std::string& text, const std::string& option, long max);
double parse_seconds(const std::string& text, const std::string& option);

}  // namespace ctx
