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

std::string unstable_detail(const Stability& stability, const Result& r) {
  std::string modes;
  for (const auto& m : stability.modes)
    modes +=
        fmt::format("{}{:.0f}% near {}", modes.empty() ? "" : ", ", 100 * m.share,
                    r.unit == Unit::ns ? format_ns(m.center) : fmt::format("{:.4g} {}", m.center, unit_name(r.unit)));
  std::string detail = fmt::format(
      "the samples are not one figure: {} mode(s){}{}; the middle half spans {:.2f}x (p75/p25), so one median does not "
      "describe them",
      stability.modes.size(), modes.empty() ? "" : " (" + modes + ")",
      stability.outside_modes > 0 ? fmt::format(", {:.0f}% outside any mode", 100 * stability.outside_modes) : "",
      stability.middle_spread);
  if (r.placement_requested == "cross") {
    detail += "; a cross-CPU wake-up waits for the other CPU to leave its idle state, whose cost varies (most on a VM)";
    if (r.params.count("idle")) detail += ": compare with the idle=held variant, which keeps that CPU out of deep idle";
  }
  return detail;
}

std::string nonpositive_detail(double baseline, double median) {
  return fmt::format(
      "the baseline ({:.1f} ns) is not below the result ({:.1f} ns): the figure is the primitive's own cost, and the "
      "difference is noise",
      baseline, median);
}

std::string round_failed_note(int round) {
  return fmt::format(
      "this variant was measured in interleaved rounds and round {} did not finish; the record is that round's, and "
      "the samples of the rounds before it are not kept",
      round);
}

}  // namespace ctx
