// Turns the command line's choices into the list of variants to run: which
// probes (names or globs), and for each the cartesian product of its
// parameters' values (the probe's defaults, or the user's --cpus, --between
// and --param choices). Pure, so option handling is tested without running.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "registry.hpp"

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
};

// Parses "a,b,c" into values; throws UsageError on empty items.
std::vector<std::string> split_list(const std::string& text, const std::string& option);

// Parses --param NAME=V1,V2 into `selection.choices`.
void add_param_choice(Selection& selection, const std::string& text);

// fnmatch-style glob; a pattern without * ? [ also matches as a family prefix
// ("switch" selects switch.*).
bool probe_matches(const std::string& pattern, const std::string& name);

std::vector<Variant> expand(const std::vector<ProbeDescriptor>& probes, const Selection& selection);

// Parses a positive whole number for `option`, or throws UsageError.
long parse_positive(const std::string& text, const std::string& option, long max);
double parse_seconds(const std::string& text, const std::string& option);

}  // namespace ctx
