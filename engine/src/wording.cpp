#include "wording.hpp"

#include <fmt/format.h>

#include "output.hpp"
#include "stats.hpp"

namespace ctx {

std::string set_aside_statement(const std::vector<double>& kept, const std::vector<double>& set_aside, Unit unit) {
  if (set_aside.empty() || kept.empty()) return "";
  std::vector<double> all = kept;
  all.insert(all.end(), set_aside.begin(), set_aside.end());
  return fmt::format("{}, {} of {} samples set aside as host interference; {} with them",
                     format_value(summarize(kept).median, unit), set_aside.size(), all.size(),
                     format_value(summarize(all).median, unit));
}

}  // namespace ctx
