// What the harness tells a reader in words: the notes and details a record
// carries beside its figures. The reasons' names are the closed catalogue in
// record.hpp; the sentences that explain a reason or a host reference's
// decision are here, so the harness measures and decides and nothing else.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "record.hpp"

namespace ctx {

// "1.10 us, 4 of 34 samples set aside as host interference; 1.31 us with
// them": the figure, how many samples were left out of it and the figure
// with them. Empty when none were set aside.
std::string set_aside_statement(const std::vector<double>& kept, const std::vector<double>& set_aside, Unit unit);

// Why an unstable record's median is not one figure (stats.hpp's rule), with
// the likely cause where the placement points at one.
std::string unstable_detail(const Stability& stability, const Result& r);

// A baseline that is not below the figure it would be subtracted from.
std::string nonpositive_detail(double baseline, double median);

// A variant measured in rounds whose round `round` (from 2) was unsupported
// or failed: the record is that round's.
std::string round_failed_note(int round);

}  // namespace ctx
