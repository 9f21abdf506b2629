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

}  // namespace ctx
