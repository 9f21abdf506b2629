// What the probe families' unit tests share: quick harness settings, one
// clock for all of them, a way to run one variant, a family's probes from the
// registry, and readers of a record's checks and reasons.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "measure/harness.hpp"
#include "model/registry.hpp"
#include "os/timer.hpp"

namespace ctx::testing {

// --quick settings, with fewer samples: tests check records, not speed.
inline HarnessOptions quick_options(int samples = 5, double budget_s = 5) {
  HarnessOptions options = HarnessOptions::quick_run();
  options.samples = samples;
  options.max_variant_s = budget_s;
  return options;
}

inline MonotonicRawClock& test_clock() {
  static MonotonicRawClock clock;
  return clock;
}

inline const TimerInfo& test_timer() {
  static const TimerInfo timer = characterize(test_clock(), 2000);
  return timer;
}

inline const ProbeDescriptor& probe_named(const std::string& name) {
  const ProbeDescriptor* probe = find_probe(name);
  if (!probe) throw std::logic_error("no probe " + name);
  return *probe;
}

inline Result run_probe(const std::string& name, const Params& params,
                        const HarnessOptions& options = quick_options()) {
  return run_variant(probe_named(name), params, test_clock(), test_timer(), options);
}

// The probe's first default variant, with `overrides`.
inline Result run_default_variant(const std::string& name, const Params& overrides = {},
                                  const HarnessOptions& options = quick_options()) {
  Params params = default_params(probe_named(name));
  for (const auto& [key, value] : overrides) params[key] = value;
  return run_probe(name, params, options);
}

// Every registered probe of `family`, so that a family's behaviour tests
// cover a new probe without an edit.
inline std::vector<const ProbeDescriptor*> family_probes(const std::string& family) {
  std::vector<const ProbeDescriptor*> probes;
  for (const auto& p : all_probes())
    if (probe_family(p.name) == family) probes.push_back(&p);
  if (probes.empty()) throw std::logic_error("no probe in family " + family);
  return probes;
}

inline std::string reasons(const Result& r) {
  std::string text;
  for (const auto& [code, detail] : r.verdict.reasons) text += std::string(reason_name(code)) + ": " + detail + "; ";
  return text;
}

// The first check whose name starts with `prefix` (a whole name finds itself).
// Measured and fine apart from noise: ok, or suspect only because other work
// on a busy machine split the samples into modes (reason `unstable`). Tests
// check behaviour, never how steady the machine was.
inline bool measured_ok(const Result& r) {
  if (r.verdict.status == Status::ok) return true;
  if (r.verdict.status != Status::suspect) return false;
  for (const auto& reason : r.verdict.reasons)
    if (reason.first != Reason::unstable) return false;
  return true;
}

inline const Check* find_check(const Result& r, const std::string& prefix) {
  for (const auto& c : r.checks)
    if (c.name.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

}  // namespace ctx::testing
