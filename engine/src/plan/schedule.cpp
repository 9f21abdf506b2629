#include "plan/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "measure/finish.hpp"
#include "os/tasks.hpp"
#include "report/wording.hpp"

namespace ctx {

std::vector<std::size_t> round_order(std::size_t count, std::uint32_t seed, int round) {
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  // std::shuffle's algorithm is the library's, so the permutation is drawn
  // here (Fisher-Yates over mt19937's output, which the standard fixes): one
  // seed gives one order on every build.
  std::seed_seq seq{seed, static_cast<std::uint32_t>(round)};
  std::mt19937 generator(seq);
  for (std::size_t i = count; i > 1; --i) {
    const std::size_t j = generator() % i;  // a bias of at most count / 2^32: irrelevant to an order
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

int samples_in_round(int samples, int rounds, int round) {
  if (rounds <= 0 || round < 0 || round >= rounds) throw std::invalid_argument("no such round");
  return samples / rounds + (round < samples % rounds ? 1 : 0);
}

int rounds_for(const ProbeDescriptor& probe, int samples, const ScheduleOptions& schedule) {
  if (!schedule.interleave || probe.samples || probe.matrix) return 1;
  return std::max(1, std::min(schedule.rounds, samples));
}

namespace {

bool finished_badly(const Result& r) {
  return r.verdict.status == Status::unsupported || r.verdict.status == Status::failed;
}

// Reasons judged again over the pooled samples; a round's own are dropped.
bool judged_again(Reason code) {
  return code == Reason::unstable || code == Reason::nonpositive_after_baseline || code == Reason::too_few_switches ||
         code == Reason::too_many_switches || code == Reason::interference;
}

}  // namespace

namespace {

// The record a variant's rounds pool into, before any round is added: what
// the variant is, where it ran and when it started (the first round's), with
// nothing measured yet.
Result empty_pool(const std::vector<Result>& rounds) {
  Result r = rounds.front();
  r.samples.clear();
  r.set_aside.clear();
  r.set_aside_reasons.clear();
  if (r.counters) {
    // Summed over the rounds; the first round's sharing, tasks and CPUs (every
    // round runs where the first did).
    CounterTotals totals;
    totals.sharing = r.counters->sharing;
    totals.tasks = r.counters->tasks;
    totals.cpus = r.counters->cpus;
    r.counters = std::move(totals);
  }
  if (r.clean) r.clean = CleanSampling{};  // summed over the rounds
  r.checks.clear();
  r.verdict = Verdict{};
  r.notes.clear();
  r.derived = nlohmann::json::object();
  r.duration_s = 0;
  r.observed_end = rounds.back().observed_end;
  if (r.baseline) {
    r.baseline->samples.clear();
    r.baseline->set_aside.clear();
    r.baseline->set_aside_reasons.clear();
  }
  return r;
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

void add_counters(CounterTotals& c, const CounterTotals& p) {
  if (p.sharing != c.sharing) c.sharing = Sharing::unknown;
  c.kept += p.kept;
  c.kept_samples += p.kept_samples;
  c.kept_interfered += p.kept_interfered;
  for (std::size_t i = 0; i < c.set_aside.size(); ++i) c.set_aside[i] += p.set_aside[i];
  append(c.read_ns, p.read_ns);
  if (c.unread.empty()) c.unread = p.unread;
}

// What the rounds add up to beside the record itself.
struct Pooled {
  std::vector<double> reference_ns;
  std::map<std::string, double> weighted;  // per-op derived figures x samples
  double weights = 0;
  std::set<std::string> notes;
  NoSwitchCounts unexpected;  // where no switch is expected: every round's
};

// Round k's samples, counts, checks, reasons, notes and figures, into r.
void pool_round(const Result& part, int k, const ProbeDescriptor* probe, Result& r, Pooled& pooled) {
  for (const auto& check : part.checks)
    if (check.kind == CheckKind::no_switches && check.observed.is_number()) {
      // Its figure is per op over every batch of the round (derived.ops_executed).
      const double ops = part.derived.value("ops_executed", 0.0);
      pooled.unexpected.pooled += std::round(check.observed.get<double>() * ops);
      pooled.unexpected.ops += ops;
    }
  append(r.samples, part.samples);
  append(r.set_aside, part.set_aside);
  append(r.set_aside_reasons, part.set_aside_reasons);
  if (r.counters && part.counters) add_counters(*r.counters, *part.counters);
  if (r.clean && part.clean) {
    r.clean->needed += part.clean->needed;
    r.clean->clean += part.clean->clean;
    r.clean->filled += part.clean->filled;
    r.clean->budget_s += part.clean->budget_s;
    r.clean->spent_s += part.clean->spent_s;
  }
  r.duration_s += part.duration_s;
  r.ops_per_sample = std::min(r.ops_per_sample, part.ops_per_sample);
  if (r.baseline && part.baseline) {
    append(r.baseline->samples, part.baseline->samples);
    append(r.baseline->set_aside, part.baseline->set_aside);
    append(r.baseline->set_aside_reasons, part.baseline->set_aside_reasons);
  }
  for (const auto& check : part.checks) add_to_totals(r.checks, check);
  for (const auto& [code, detail] : part.verdict.reasons)
    if (!judged_again(code)) r.verdict.add(part.verdict.status, code, fmt::format("round {}: {}", k + 1, detail));
  for (const auto& note : part.notes)
    if (pooled.notes.insert(note).second) r.notes.push_back(note);
  const double weight = static_cast<double>(part.samples.size());
  pooled.weights += weight;
  for (const auto& [key, value] : part.derived.items()) {
    if (!value.is_number()) {
      if (!r.derived.contains(key)) r.derived[key] = value;  // a text: the same in every round
      continue;
    }
    switch (aggregation_of(probe, key)) {
      case Aggregation::sum: r.derived[key] = r.derived.value(key, 0.0) + value.get<double>(); break;
      case Aggregation::mean: pooled.weighted[key] += value.get<double>() * weight; break;
      case Aggregation::recompute: break;  // computed when finished, over the pooled samples and counts
    }
  }
  if (!part.trace.is_null()) r.trace = part.trace;  // the variant's traced pass, from the round that ran it
  if (part.interference && !part.interference->attempts.empty())
    append(pooled.reference_ns, part.interference->attempts[part.interference->kept].reference_ns);
}

}  // namespace

Result merge_rounds(std::vector<Result> rounds, double best_ns, const std::function<void(Result&)>& derive,
                    const ProbeDescriptor* probe) {
  if (rounds.empty()) throw std::invalid_argument("merge_rounds: no rounds");
  const int count = static_cast<int>(rounds.size());
  for (int k = 0; k < count; ++k)
    if (finished_badly(rounds[static_cast<std::size_t>(k)])) {
      Result r = std::move(rounds[static_cast<std::size_t>(k)]);
      if (k > 0) r.notes.push_back(round_failed_note(k + 1));
      return r;
    }
  if (count == 1) return std::move(rounds.front());

  Result r = empty_pool(rounds);
  Pooled pooled;
  for (int k = 0; k < count; ++k) pool_round(rounds[static_cast<std::size_t>(k)], k, probe, r, pooled);
  for (const auto& [key, sum] : pooled.weighted) r.derived[key] = pooled.weights > 0 ? sum / pooled.weights : sum;
  if (r.baseline) {
    r.baseline->summary = summarize(r.baseline->samples);
    r.baseline->value = r.baseline->summary->median;
  }
  Finishing how;
  how.measured = Measured::rounds;
  how.parts = rounds.size();
  how.derive = derive;  // the figures that are functions of the summary, over the pooled samples
  how.no_switches = pooled.unexpected;
  if (rounds.front().interference) {
    how.reference = *rounds.front().interference;
    how.reference_ns = std::move(pooled.reference_ns);
    how.best_ns = best_ns;
  }
  finish_record(r, how);
  return r;
}

nlohmann::json round_figures(const std::vector<Result>& rounds, double baseline) {
  nlohmann::json figures = nlohmann::json::array();
  for (std::size_t k = 0; k < rounds.size(); ++k) {
    const Result& part = rounds[k];
    nlohmann::json median = nullptr;
    if (!part.samples.empty()) median = summarize(part.samples).median - baseline;
    figures.push_back(
        {{"round", k}, {"n", part.samples.size()}, {"median", median}, {"set_aside", part.set_aside.size()}});
  }
  return figures;
}

Scheduler::Scheduler(const std::vector<Variant>& variants, const HarnessOptions& harness,
                     const ScheduleOptions& schedule, Clock& clock, const TimerInfo& timer, Output& output,
                     std::string run_id, ScheduleHooks hooks)
    : variants_(variants),
      harness_(harness),
      schedule_(schedule),
      clock_(clock),
      timer_(timer),
      output_(output),
      run_id_(std::move(run_id)),
      hooks_(std::move(hooks)) {
  harness_.defer_retries = true;  // the scheduler decides when a variant is measured again
}

void Scheduler::run() {
  if (schedule_.interleave)
    run_rounds();
  else
    run_whole();
}

nlohmann::json Scheduler::schedule_record(const Variant& variant) const {
  if (!schedule_.interleave) return {{"interleave", "off"}};
  return {{"interleave", "rounds"},
          {"rounds", rounds_for(*variant.probe, harness_.samples, schedule_)},
          {"seed", schedule_.seed}};
}

std::optional<OutputError> Scheduler::finish_locked(Result& result) {
  close_interference(result, harness_);
  try {
    output_.result_locked(result);
  } catch (const OutputError& failure) {
    return failure;
  }
  return std::nullopt;
}

Result Scheduler::merged(const Pending& pending) const { return merged(pending.index, pending.rounds); }

Result Scheduler::merged(std::size_t index, const std::vector<Result>& rounds) const {
  const ProbeDescriptor& probe = *variants_[index].probe;
  Result r = merge_rounds(
      rounds, harness_.reference ? harness_.reference->best_ns() : 0,
      [&](Result& m) { derive_from_summary(probe, clock_.counts_ticks(), timer_, m); }, &probe);
  r.run_id = run_id_;
  r.variant_index = index + 1;
  r.schedule = schedule_record(variants_[index]);
  r.schedule["round_figures"] = round_figures(rounds, r.baseline ? r.baseline->value : 0);
  if (rounds.size() > 1 && r.interference && harness_.retries > 0 &&
      slowed(r.interference->attempts.front(), harness_.reference ? harness_.reference->best_ns() : 0))
    r.notes.push_back(rounds_not_remeasured_note());
  return r;
}

void Scheduler::run_whole() {
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    const Variant& v = variants_[i];
    hooks_.announce(i, 1, 0);
    Result result = hooks_.limited([&] {
      Result r = run_variant(*v.probe, v.params, clock_, timer_, harness_);
      if (hooks_.after_measured) hooks_.after_measured(v, r);
      return r;
    });
    result.variant_index = i + 1;
    result.run_id = run_id_;
    result.schedule = schedule_record(v);
    std::optional<OutputError> failed;
    {
      std::lock_guard guard(output_.lock());
      if (wants_another_attempt(result, harness_)) {
        pending_.push_back({i, {}, std::move(result), monotonic_raw_ns(), false});
        continue;
      }
      failed = finish_locked(result);
    }
    if (failed) hooks_.output_failed(*failed);
  }
  // The slowed variants, again, in passes: each pass comes after the rest of
  // the run (or the pass before), so its attempts fall in other moments of
  // the host's load; a variant is written as soon as it is done.
  for (;;) {
    std::size_t count = 0;
    {
      std::lock_guard guard(output_.lock());
      std::erase_if(pending_, [](const Pending& p) { return p.written; });
      count = pending_.size();
    }
    if (count == 0) break;
    for (std::size_t k = 0; k < count; ++k) {  // the vector is only erased from between passes
      std::size_t index = 0, attempt = 0;
      std::uint64_t ended = 0;
      std::string started_at;
      {
        std::lock_guard guard(output_.lock());
        const Pending& p = pending_[k];
        index = p.index;
        ended = p.last_ended_ns;
        attempt = p.result.interference->attempts.size() + 1;
        started_at = p.result.started_at;
      }
      const Variant& v = variants_[index];
      const auto gap_ns = static_cast<std::uint64_t>(harness_.retry_gap_s * 1e9);
      const std::uint64_t now = monotonic_raw_ns();
      if (now < ended + gap_ns) std::this_thread::sleep_for(std::chrono::nanoseconds(ended + gap_ns - now));
      hooks_.announce(index, attempt, 0);
      Result again =
          hooks_.limited([&] { return measure_attempt(*v.probe, v.params, clock_, timer_, harness_, started_at); });
      std::optional<OutputError> failed;
      {
        std::lock_guard guard(output_.lock());
        Pending& p = pending_[k];
        keep_better_attempt(p.result, std::move(again));
        p.last_ended_ns = monotonic_raw_ns();
        if (!wants_another_attempt(p.result, harness_)) {
          p.written = true;  // whether or not a sink takes it, it is not written again
          failed = finish_locked(p.result);
        }
      }
      if (failed) hooks_.output_failed(*failed);
    }
  }
}

void Scheduler::run_rounds() {
  const std::size_t count = variants_.size();
  std::vector<int> rounds_of(count);
  int most = 1;
  for (std::size_t i = 0; i < count; ++i) {
    rounds_of[i] = rounds_for(*variants_[i].probe, harness_.samples, schedule_);
    most = std::max(most, rounds_of[i]);
  }
  {
    std::lock_guard guard(output_.lock());
    pending_.clear();
    for (std::size_t i = 0; i < count; ++i) pending_.push_back({i, {}, {}, 0, false});
  }
  for (int round = 0; round < most; ++round) {
    for (const std::size_t i : round_order(count, schedule_.seed, round)) {
      if (round >= rounds_of[i]) continue;
      {
        std::lock_guard guard(output_.lock());
        if (pending_[i].written) continue;  // an earlier round was unsupported or failed
      }
      const Variant& v = variants_[i];
      HarnessOptions options = harness_;
      options.samples = samples_in_round(harness_.samples, rounds_of[i], round);
      options.clean_budget_s = harness_.clean_budget_s / rounds_of[i];  // the variant's budget, shared by its rounds
      {
        // Later rounds take the batch sizes the first calibrated: every
        // round's samples are batches of one size, and a round costs its
        // samples and warm-up, not another calibration.
        std::lock_guard guard(output_.lock());
        if (!pending_[i].rounds.empty()) {
          const Result& first = pending_[i].rounds.front();
          options.batch = first.iterations_per_sample;
          options.baseline_batch = first.baseline ? first.baseline->iterations_per_sample : 0;
          if (first.placement_requested == "same" && !first.placement_cpus.empty())
            options.same_cpu = first.placement_cpus.front();
        }
      }
      hooks_.announce(i, 1, round + 1);
      const bool last_round = round + 1 == rounds_of[i];
      // After the last round, the traced pass (after_measured) runs on the
      // merged record, so it compares with the pooled samples' median; the
      // round is kept only once that is done, so a run ended meanwhile
      // writes the rounds before it (write_unfinished_locked).
      std::optional<Result> whole;
      Result part = hooks_.limited([&] {
        Result r = run_variant(*v.probe, v.params, clock_, timer_, options);
        if (!finished_badly(r) && last_round) {
          std::vector<Result> all;
          {
            std::lock_guard guard(output_.lock());
            all = pending_[i].rounds;
          }
          all.push_back(r);
          whole = merged(i, all);
          if (hooks_.after_measured) hooks_.after_measured(v, *whole);
        }
        return r;
      });
      std::optional<OutputError> failed;
      {
        std::lock_guard guard(output_.lock());
        Pending& p = pending_[i];
        const bool last = finished_badly(part) || last_round;
        p.rounds.push_back(std::move(part));
        if (last) {
          Result r = whole ? std::move(*whole) : merged(p);
          p.written = true;
          failed = finish_locked(r);
        } else if (hooks_.round_kept) {
          hooks_.round_kept(unfinished(p));
        }
      }
      if (failed) hooks_.output_failed(*failed);
    }
  }
}

Result Scheduler::unfinished(const Pending& p) const {
  Result r;
  if (schedule_.interleave) {
    r = merged(p);
    r.notes.push_back(
        ended_early_note(p.rounds.size(), rounds_for(*variants_[p.index].probe, harness_.samples, schedule_)));
  } else {
    r = p.result;
    r.notes.push_back(ended_early_note(0, 0));
  }
  close_interference(r, harness_);
  return r;
}

void Scheduler::write_unfinished_locked() {
  for (auto& p : pending_) {
    if (p.written) continue;
    p.written = true;
    if (schedule_.interleave && p.rounds.empty()) continue;
    const Result r = unfinished(p);
    try {
      output_.result_locked(r);
    } catch (const OutputError&) {
      // The sink that failed is skipped from now on; run_end still goes to the others.
    }
  }
}

}  // namespace ctx
