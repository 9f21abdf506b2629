#include "report/wording.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <cstring>

#include "model/stats.hpp"

namespace ctx {

std::string format_params(const Params& params) {
  std::string text;
  for (const auto& [key, value] : params) text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
  return text.empty() ? "-" : text;
}

std::string format_ns(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:.1f} us", ns / 1e3);
  if (magnitude >= 100) return fmt::format("{:.0f} ns", ns);
  return fmt::format("{:.1f} ns", ns);
}

std::string format_value(double value, Unit unit) {
  if (unit == Unit::ns) return format_ns(value);
  if (unit == Unit::msgs_per_s) return fmt::format("{:.0f} msgs/s", value);
  return fmt::format("{:.1f} {}", value, unit_name(unit));
}

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

std::vector<std::string> interference_notes(const Result& r) {
  std::vector<std::string> notes;
  const Interference& in = *r.interference;
  const double best = in.best_ns;
  const auto& attempts = in.attempts;
  const std::size_t kept = in.kept;
  if (attempts.size() > 1) {
    std::string medians;
    for (std::size_t i = 0; i < attempts.size(); ++i)
      medians += fmt::format("{}{}: {:.4g} (reference {:.2f}x)", i == 0 ? "" : ", ", i + 1, attempts[i].median,
                             attempts[i].reference_median_ns / best);
    notes.push_back(fmt::format(
        "host interference: the reference loop ran over {:.2f}x its best while this variant was measured, so it was "
        "measured {} times and attempt {} is kept (its reference ran fastest); medians by attempt: {}",
        slowed_ratio, attempts.size(), kept + 1, medians));
  }
  if (!attempts.empty() && slowed(attempts[kept], best) && attempts[kept].reference_median_ns > slowed_ratio * best)
    notes.push_back(fmt::format(
        "host interference: the CPU was slowed during the kept attempt too (reference {:.2f}x its best): the figure "
        "carries it",
        attempts[kept].reference_median_ns / best));
  return notes;
}

namespace {
// "cpu_taken 3, host_reference 1": how many set-aside samples each reason took.
std::string by_reason(const std::vector<SetAsideReason>& reasons) {
  std::array<std::size_t, set_aside_reason_count> counts{};
  for (const auto reason : reasons) ++counts[static_cast<std::size_t>(reason)];
  std::string out;
  for (int i = 0; i < set_aside_reason_count; ++i)
    if (counts[static_cast<std::size_t>(i)] > 0)
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", set_aside_reason_name(static_cast<SetAsideReason>(i)),
                         counts[static_cast<std::size_t>(i)]);
  return out;
}

const char* reason_words(SetAsideReason reason) {
  switch (reason) {
    case SetAsideReason::host_reference: return "the host reference timed before it ran slowed";
    case SetAsideReason::cpu_taken: return "another task or the host held the variant's CPU for part of it";
    case SetAsideReason::preempted: return "a task of the variant was switched out involuntarily";
    case SetAsideReason::steal: return "the hypervisor reported time stolen from a CPU of the variant";
  }
  return "";
}
}  // namespace

std::vector<std::string> set_aside_notes(const Result& r) {
  std::vector<std::string> notes;
  if (!r.set_aside.empty())
    notes.push_back(
        fmt::format("host interference: {} (by reason: {}; each was taken again; the samples and their "
                    "reasons are in set_aside)",
                    set_aside_statement(r.samples, r.set_aside, r.unit), by_reason(r.set_aside_reasons)));
  if (r.baseline && !r.baseline->set_aside.empty())
    notes.push_back(fmt::format("host interference, baseline: {} (by reason: {})",
                                set_aside_statement(r.baseline->samples, r.baseline->set_aside, r.baseline->unit),
                                by_reason(r.baseline->set_aside_reasons)));
  if (r.clean && !got_clean(*r.clean) && clean_enough(*r.clean))
    notes.push_back(fmt::format(
        "host interference: {} of the {} samples asked for came clean within the clean budget ({:.2g} s); the {} "
        "fastest set-aside samples were kept to make up the figure, and could move its median at most {} place(s) "
        "in the sorted samples, inside its interval",
        r.clean->clean, r.clean->needed, r.clean->budget_s, r.clean->filled, r.clean->filled));
  return notes;
}

std::optional<std::string> interference_detail(const Result& r) {
  std::vector<std::string> parts;
  if (r.interference && !r.interference->attempts.empty() && r.interference->best_ns > 0) {
    const auto& kept = r.interference->attempts[r.interference->kept];
    const double ratio = kept.reference_median_ns / r.interference->best_ns;
    if (ratio > slowed_ratio)
      parts.push_back(
          fmt::format("the host reference ran {:.2f}x its best over the kept samples (over {:.2f}x is "
                      "slowed): the CPU itself ran slower",
                      ratio, slowed_ratio));
  }
  if (r.clean && !clean_enough(*r.clean))
    parts.push_back(fmt::format(
        "only {} of the {} samples asked for came clean of interference within the clean budget ({:.2g} s; "
        "{:.2g} s spent, {} set aside{}){}",
        r.clean->clean, r.clean->needed, r.clean->budget_s, r.clean->spent_s, r.set_aside.size(),
        r.set_aside_reasons.empty() ? "" : fmt::format(": {}", by_reason(r.set_aside_reasons)),
        r.clean->filled > 0
            ? fmt::format("; the {} fastest set-aside samples were kept to make the figure", r.clean->filled)
            : ""));
  if (r.counters && interfered_share(*r.counters) > kept_interfered_limit) {
    const CounterTotals& c = *r.counters;
    std::string what = c.sharing == Sharing::one_cpu    ? reason_words(SetAsideReason::cpu_taken)
                       : c.sharing == Sharing::own_cpus ? "a task of the variant was switched out involuntarily, or "
                                                          "the hypervisor stole time from its CPUs"
                                                        : reason_words(SetAsideReason::steal);
    std::string share;
    if (c.sharing == Sharing::one_cpu && c.kept.wall_ns > 0)
      share = fmt::format("; the CPU gave {:.1f}% of the kept samples' time to others",
                          100 * std::max(0.0, c.kept.wall_ns - c.kept.exec_ns) / c.kept.wall_ns);
    parts.push_back(fmt::format("{} of {} kept samples were still interfered with after the re-takes ran out ({}){}",
                                c.kept_interfered, c.kept_samples, what, share));
  }
  if (parts.empty()) return std::nullopt;
  std::string detail;
  for (const auto& p : parts) detail += (detail.empty() ? "" : "; ") + p;
  return detail + "; the figure carries it, so compare it with a quieter run";
}

std::string failed_remeasurement_note(const Result& failed_attempt) {
  return fmt::format("{}: {}", failed_remeasurement_prefix,
                     failed_attempt.verdict.reasons.empty() ? std::string("no samples")
                                                            : failed_attempt.verdict.reasons.front().second);
}

std::string rounds_not_remeasured_note() {
  return "host interference: measured in interleaved rounds, a slowed variant is not measured again (its rounds "
         "were already spread over the run)";
}

std::string ended_early_note(std::size_t done, int rounds) {
  if (rounds == 0) return "the run ended before this variant was measured again; its attempts so far are kept";
  return fmt::format("the run ended after {} of this variant's {} rounds; the record holds those", done, rounds);
}

std::string no_switches_expected() {
  return "0 sleeps in the kernel per op (voluntary context switches, getrusage RUSAGE_THREAD; preemptions by other "
         "work are shown, not judged)";
}

std::string no_switches_counted(long voluntary, long involuntary, double ops) {
  return fmt::format("{} voluntary and {} involuntary over {:.0f} ops (calibration and warm-up included)", voluntary,
                     involuntary, ops);
}

std::string no_switches_pooled(double switches, double ops, int rounds) {
  return fmt::format(
      "{:.0f} voluntary kernel context switches (sleeps) over {:.0f} ops in {} rounds (calibration and "
      "warm-up included)",
      switches, ops, rounds);
}

std::string kernel_switched_detail(double per_op) {
  return fmt::format(
      "the measuring thread slept in the kernel {:.3f} times per op: the operation is not the user-level switch "
      "alone",
      per_op);
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

std::string interrupted_detail() { return "interrupted"; }

std::string stopped_between_batches_detail() {
  return "the variant overran its time limit (--timeout); stopped between batches";
}

std::string counters_unread_note() {
  return "some task's /proc files or /proc/stat could not be read (a task ended?); those samples were judged by the "
         "host reference alone";
}

std::string cycle_counter_unavailable(int error) {
  return fmt::format("perf_event_open(cycles): {}", std::strerror(error));
}

std::string cycles_user_only() { return "user mode only (perf_event_paranoid)"; }

std::string cycle_counter_read_failed() { return "counter read failed"; }

std::string no_switches_were_expected() { return "no switches were expected"; }

std::string too_few_switches_detail(const std::string& check, double observed, double expected) {
  return fmt::format(
      "{}: {:.0f} observed vs {:.0f} expected ({:.0f}%): a waiter did not sleep (it spun or found the hand-off "
      "already done), so part of the figure is a call cost, not a switch",
      check, observed, expected, 100.0 * observed / expected);
}

std::string too_many_switches_detail(const std::string& check, double observed, double expected) {
  return fmt::format(
      "{}: {:.0f} observed vs {:.0f} expected ({:.0f}%): the primitive switches more than once per hand-off; see "
      "derived.per_observed_switch_ns",
      check, observed, expected, 100.0 * observed / expected);
}

std::string partner_switches_detail(std::size_t partners) {
  return fmt::format("{} partner task(s), over their whole life (warm-up included)", partners);
}

std::string partner_switches_kept_detail(std::size_t partners) {
  return fmt::format(
      "{} partner task(s), over the kept samples: the times the kernel switched them in, against the hand-offs "
      "those samples hold (every hand-off, warm-up included, scaled by the kept samples' share of the ops)",
      partners);
}

std::string preemptions_expected() {
  return "switches of the spinning tasks (voluntary + involuntary): none when nothing else wants their CPUs";
}

std::string spinning_tasks_preempted_detail(long switches) {
  return fmt::format(
      "the spinning tasks were switched out {} times: another task took their CPU, so some samples include a wait "
      "for the scheduler (is the machine busy?)",
      switches);
}

std::string migrated_detail() { return "a task ran on a CPU other than the one it was pinned to"; }

std::string unpinned_detail() { return "unpinned: the scheduler placed the tasks"; }

std::string quantization_detail(double shortest_batch_ns, double resolution_ns) {
  return fmt::format("the shortest batch lasted {:.0f} ns, under 100x the timer's resolution ({:.1f} ns)",
                     shortest_batch_ns, resolution_ns);
}

std::string idle_held_without_driver_note() {
  return "idle=held: no cpuidle driver is active (current_driver: none), so an idle CPU takes the architecture's "
         "default halt, which the latency request does not change; held and free measure the same idle path here";
}

std::string budget_ran_out_note(std::size_t samples, double budget_s) {
  return fmt::format("sampling stopped after {} samples: the variant's time budget ({:.0f} s) ran out", samples,
                     budget_s);
}

std::string no_seccomp_thread_detail(const std::string& error) {
  return fmt::format("no thread could be started to measure the seccomp variant: {}", error);
}

std::string seccomp_axis_note() {
  return "seccomp axis: measured on a thread made for the variant, without the host reference (under a filter its "
         "system calls would pay the filter), as every value of the axis is, so the values differ by the filter alone";
}

std::string only_allowed_cpu_why(int cpu) { return fmt::format("CPU {}: the only CPU the affinity mask allows", cpu); }

std::string least_busy_cpu_why(int cpu, const std::string& why) { return fmt::format("CPU {}: {}", cpu, why); }

std::string matrix_needs_two_cpus(int only_cpu) {
  return fmt::format(
      "a CPU-pair matrix needs two CPUs but only CPU {} is allowed (affinity mask); run without taskset or allow "
      "more CPUs",
      only_cpu);
}

std::string matrix_diagonal(bool measured, const std::string& why_not) {
  return measured ? "measured: each CPU with itself" : "not measured: " + why_not;
}

std::string matrix_cell_name(int row, int column) { return fmt::format("cell {}->{}", row, column); }

std::string matrix_cell_reason(const std::string& cell, const std::string& detail) { return cell + ": " + detail; }

std::string matrix_cell_problem(const std::string& reason, const std::string& detail) {
  return fmt::format("{}: {}", reason, detail);
}

std::string matrix_summed_switches_detail(std::size_t cells) {
  return fmt::format("summed over the {} cells; each cell is judged on its own (matrix cells' switches)", cells);
}

std::string matrix_placement_expected() { return "each cell's two CPUs"; }

std::string matrix_placement_detail(bool stayed, std::size_t cells) {
  return stayed ? fmt::format("every task of the {} cells stayed on its CPU", cells)
                : "a task of some cell ran elsewhere (see the cells' problems)";
}

std::string matrix_reason_detail(std::size_t cells_with_it, std::size_t cells, const std::string& first) {
  return fmt::format("{} of {} cells; the first, {}", cells_with_it, cells, first);
}

std::string matrix_cut_short_note(std::size_t cut_short, std::size_t cells, double budget_s) {
  return fmt::format(
      "{} of {} cells stopped sampling early: the matrix's budget ({:.0f} s) is shared by its cells, each taking at "
      "least five samples",
      cut_short, cells, budget_s);
}

std::string matrix_baseline_failed(const std::string& error) { return "baseline: " + error; }

std::string matrix_nonpositive_detail(double baseline, double median) {
  return fmt::format("the baseline ({:.1f} ns) is not below the matrix's median ({:.1f} ns)", baseline, median);
}

// ---- a run ----

std::string progress_line(const ProgressPoint& at, const std::string& probe, const Params& params) {
  nlohmann::json line = {
      {"index", at.index + 1}, {"total", at.total}, {"probe", probe}, {"params", nlohmann::json(params)}};
  if (at.attempt > 1) line["attempt"] = at.attempt;
  if (at.round > 0) {
    line["round"] = at.round;
    line["rounds"] = at.rounds;
  }
  return fmt::format("@progress {}\n", line.dump());
}

std::string progress_text(const ProgressPoint& at, const std::string& probe, const Params& params) {
  return fmt::format("[{}/{}] {} {}{}{}\n", at.index + 1, at.total, probe, format_params(params),
                     at.round > 0 ? fmt::format(" (round {}/{})", at.round, at.rounds) : "",
                     at.attempt > 1 ? fmt::format(" (attempt {}, host interference)", at.attempt) : "");
}

std::string variant_overran_detail(double timeout_s) {
  return fmt::format("the variant overran its {:g} s limit (--timeout)", timeout_s);
}

std::string parent_gone_error() { return "error: the process that started the engine is gone; nothing was run"; }

std::string parent_watch_refused_note(int error) {
  return fmt::format(
      "note: prctl(PR_SET_PDEATHSIG) was refused ({}: a sandbox's seccomp filter?); the "
      "engine checks every 0.1 s that the process that started it is still there instead",
      std::strerror(error));
}

std::string trace_unavailable_error(const std::string& problem) {
  return fmt::format("--trace: {}; or give --trace-optional to run untraced", problem);
}

std::string trace_unavailable_note(const std::string& problem) {
  return fmt::format("note: --trace: {}; running untraced (--trace-optional)", problem);
}

std::string tracefs_mounted_note() {
  return "note: --trace: tracefs was not mounted; the engine mounted it at /sys/kernel/tracing in a mount "
         "namespace of its own, which ends with the run (nothing changed outside it)";
}

std::string no_monitor_thread_error(const std::string& error) {
  return fmt::format(
      "error: cannot start the engine's monitor thread: {}; nothing was run (is the process "
      "limit, ulimit -u, too low?)",
      error);
}

std::string out_unwritable_error(const std::string& path, int error) {
  return fmt::format("--out: cannot write '{}': {}; choose a writable path", path, std::strerror(error));
}

std::string preset_title(const std::string& name, const std::string& description,
                         const std::vector<std::string>* laps) {
  // The header states the laps this run makes (a --param laps=... replaces the preset's).
  std::string title = name + ": " + description;
  if (laps) title += fmt::format("; {} laps each (one lap is one switch by every worker)", fmt::join(*laps, ", "));
  return title;
}

}  // namespace ctx
