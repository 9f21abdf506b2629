#include "measure/verdict_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/wording.hpp"

namespace ctx {

void add_to_totals(std::vector<Check>& totals, const Check& check) {
  auto total = std::find_if(totals.begin(), totals.end(), [&](const Check& t) { return t.name == check.name; });
  if (total == totals.end()) {
    totals.push_back(check);
    return;
  }
  if (total->expected.is_number() && check.expected.is_number() && total->observed.is_number() &&
      check.observed.is_number()) {
    total->expected = total->expected.get<double>() + check.expected.get<double>();
    total->observed = total->observed.get<double>() + check.observed.get<double>();
    const double expected = total->expected.get<double>();
    total->ratio = expected > 0 ? std::optional<double>(total->observed.get<double>() / expected) : std::nullopt;
  }
  total->ok = total->ok && check.ok;
}

long counted_switches(const SwitchCount& c, Counter counter) {
  switch (counter) {
    case Counter::voluntary: return c.voluntary;
    case Counter::involuntary: return c.involuntary;
    case Counter::any: return c.voluntary + c.involuntary;
  }
  return c.voluntary;
}

std::optional<std::pair<Reason, std::string>> judge_switches(double expected, double observed, Check& check) {
  check.expected = expected;
  check.observed = observed;
  check.ratio = expected > 0 ? std::optional<double>(observed / expected) : std::nullopt;
  check.ok = expected > 0 && observed >= 0.9 * expected && observed <= 1.1 * check.most * expected;
  if (check.ok) return std::nullopt;
  if (expected <= 0) return std::make_pair(Reason::error, no_switches_were_expected());
  if (observed < 0.9 * expected)
    return std::make_pair(Reason::too_few_switches, too_few_switches_detail(check.name, observed, expected));
  return std::make_pair(Reason::too_many_switches, too_many_switches_detail(check.name, observed, expected));
}

namespace {
std::optional<std::pair<Reason, std::string>> judge_switches_per_op(double switches, double ops, Check& check) {
  const double per_op = ops > 0 ? switches / ops : 0;
  check.kind = CheckKind::no_switches;
  check.name = no_switches_check;
  check.expected = no_switches_expected();
  check.observed = per_op;
  check.ok = per_op < 0.01;
  if (check.ok) return std::nullopt;
  return std::make_pair(Reason::too_many_switches, kernel_switched_detail(per_op));
}
}  // namespace

// Judged on the measuring thread's sleeps (voluntary switches): an operation
// that enters the scheduler sleeps; a preemption (involuntary) is other work
// taking the CPU, the load's and not the operation's, and is shown beside it.
std::optional<std::pair<Reason, std::string>> judge_no_switches(const SwitchCount& switches, double ops, Check& check) {
  check.detail = no_switches_counted(switches.voluntary, switches.involuntary, ops);
  return judge_switches_per_op(static_cast<double>(switches.voluntary), ops, check);
}

std::optional<std::pair<Reason, std::string>> judge_pooled_no_switches(double switches, double ops, int rounds,
                                                                       Check& check) {
  check.detail = no_switches_pooled(switches, ops, rounds);
  return judge_switches_per_op(switches, ops, check);
}

void add_switch_checks(const Expectation& expectation, double ops_total, double ops_all, const SwitchCount& main_delta,
                       const std::vector<TaskReport>& partners, std::optional<long> partner_runs_kept, Result& r) {
  const double expected_main = ops_total * expectation.main_per_op;
  const auto observed_main = static_cast<double>(counted_switches(main_delta, expectation.counter));
  double expected_all = expected_main, observed_all = observed_main;
  Check main_check;
  main_check.name = fmt::format("{}_switches.measuring_task", counter_name(expectation.counter));
  main_check.detail = expectation.why;
  main_check.most = expectation.most;
  if (auto problem = judge_switches(expected_main, observed_main, main_check))
    r.verdict.add(Status::suspect, problem->first, problem->second);
  r.checks.push_back(main_check);
  if (!partners.empty() && expectation.partner_per_handoff > 0) {
    double expected = 0, observed = 0;
    for (const auto& p : partners) {
      expected += static_cast<double>(p.handoffs) * expectation.partner_per_handoff;
      observed += static_cast<double>(counted_switches({p.voluntary, p.involuntary}, expectation.counter));
    }
    Check partner_check;
    partner_check.name = fmt::format("{}_switches.partners", counter_name(expectation.counter));
    partner_check.detail = partner_switches_detail(partners.size());
    partner_check.most = expectation.most;
    if (partner_runs_kept && expectation.counter == Counter::any && ops_all > 0) {
      // A count: the hand-offs the kept samples hold, to the nearest whole one
      // (a partner's few start-up hand-offs spread over every op otherwise
      // leave a fraction that depends on how many ops calibration took).
      expected = std::round(expected * ops_total / ops_all);
      observed = static_cast<double>(*partner_runs_kept);
      partner_check.detail = partner_switches_kept_detail(partners.size());
    }
    if (auto problem = judge_switches(expected, observed, partner_check))
      r.verdict.add(Status::suspect, problem->first, problem->second);
    r.checks.push_back(partner_check);
    expected_all += expected;
    observed_all += observed;
  }
  r.derived["involuntary_switches_measuring_task"] = main_delta.involuntary;
  // Every task's switches per op, split by kind: voluntary (the task slept)
  // and involuntary (it was preempted while runnable). The measuring task is
  // counted over the timed samples, each partner over its whole life, which
  // spans every op executed (calibration and warm-up included).
  double voluntary = ops_total > 0 ? static_cast<double>(main_delta.voluntary) / ops_total : 0;
  double involuntary = ops_total > 0 ? static_cast<double>(main_delta.involuntary) / ops_total : 0;
  if (ops_all > 0)
    for (const auto& p : partners) {
      voluntary += static_cast<double>(p.voluntary) / ops_all;
      involuntary += static_cast<double>(p.involuntary) / ops_all;
    }
  r.derived["voluntary_switches_per_op"] = voluntary;
  r.derived["involuntary_switches_per_op"] = involuntary;
  // per_observed_switch_ns follows from this and the summary (derive_from_summary).
  if (expected_all > 0 && observed_all > 0) r.derived["observed_switches_per_expected"] = observed_all / expected_all;
}

// Each switch of the spinning tasks means another task took the CPU while it waited,
// so some samples hold a wait for the scheduler, not a hand-off. None is
// expected; any is `too_many_switches`. The partners' counts cover their
// whole life (warm-up included).
void add_preemption_check(const SwitchCount& main_delta, const std::vector<TaskReport>& partners, Result& r) {
  long observed = main_delta.voluntary + main_delta.involuntary;
  for (const auto& p : partners) observed += p.voluntary + p.involuntary;
  Check check;
  check.kind = CheckKind::preemptions;
  check.name = "preemptions.spinning_tasks";
  check.expected = 0;
  check.observed = observed;
  check.ok = observed == 0;
  check.detail = preemptions_expected();
  if (!check.ok) r.verdict.add(Status::suspect, Reason::too_many_switches, spinning_tasks_preempted_detail(observed));
  r.checks.push_back(check);
}

void add_placement_check(const Placement& placement, Result& r) {
  Check check;
  check.kind = CheckKind::placement;
  check.name = "placement";
  check.expected = placement.cpus.empty() ? nlohmann::json("unpinned") : nlohmann::json(placement.cpus);
  nlohmann::json observed = {{"start", r.observed_start}, {"end", r.observed_end}};
  check.observed = observed;
  check.ok = true;
  if (!placement.cpus.empty()) {
    for (std::size_t t = 0; t < r.observed_start.size(); ++t) {
      const int want = placement.cpus[t % placement.cpus.size()];
      if ((r.observed_start[t] >= 0 && r.observed_start[t] != want) ||
          (r.observed_end[t] >= 0 && r.observed_end[t] != want))
        check.ok = false;
    }
    if (!check.ok) r.verdict.add(Status::suspect, Reason::migrated, migrated_detail());
  } else {
    check.detail = unpinned_detail();
  }
  r.checks.push_back(check);
}

void add_quantization_check(const Summary& summary, std::uint64_t ops_per_sample, const TimerInfo& timer, Result& r) {
  const double shortest_batch_ns = summary.min * static_cast<double>(ops_per_sample);
  if (timer.resolution_ns > 0 && shortest_batch_ns < 100 * timer.resolution_ns)
    r.verdict.add(Status::suspect, Reason::timer_quantization,
                  quantization_detail(shortest_batch_ns, timer.resolution_ns));
}

}  // namespace ctx
