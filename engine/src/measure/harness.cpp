// One job: measuring one probe variant to a finished Result, step by step
// (harness.hpp lists the steps; the parts it calls each hold one of them).
#include "measure/harness.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <system_error>
#include <thread>

#include "measure/cycle_counter.hpp"
#include "measure/finish.hpp"
#include "measure/pair_matrix.hpp"
#include "os/idle.hpp"
#include "os/seccomp_filter.hpp"
#include "os/tasks.hpp"
#include "os/topology.hpp"
#include "report/output.hpp"
#include "report/wording.hpp"

namespace ctx {

namespace {

// Restores the calling thread's affinity and policy when a variant ends.
class AffinityGuard {
 public:
  AffinityGuard() { saved_ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0; }
  ~AffinityGuard() {
    if (saved_ok_) sched_setaffinity(0, sizeof saved_, &saved_);
    sched_param normal{};
    sched_setscheduler(0, SCHED_OTHER, &normal);  // undo a variant's `policy`
  }

 private:
  cpu_set_t saved_{};
  bool saved_ok_ = false;
};

std::optional<Baseline> measure_baseline(const ProbeDescriptor& probe, const Params& params, Context& ctx, Clock& clock,
                                         const TimerInfo& timer, const HarnessOptions& options) {
  auto baseline = probe.make_baseline(ctx);
  // Sampled under the probe's rule: the corrected figure subtracts the
  // baseline's median from the probe's, so both must leave out the same
  // moments (a baseline sampled in a slow spell would lower it).
  // The baseline is one task on task 0's CPU (or unpinned): busy on one CPU throughout.
  CounterPlan plan;
  plan.sharing = Sharing::one_cpu;
  if (const auto cpu = ctx.placement().cpu_for(0))
    plan.cpus = {*cpu};
  else
    plan.cpus = allowed_cpus();
  Sampled base = sample(probe, params, *baseline, clock, timer, options, probe.baseline_ops_per_iteration(params), plan,
                        nullptr, options.baseline_batch);
  baseline->finish();
  Baseline b;
  b.name = probe.baseline;
  b.probe = probe.name + ".baseline";
  b.summary = summarize(base.per_op);
  b.value = b.summary->median;
  b.unit = Unit::ns;
  b.iterations_per_sample = base.iterations_per_sample;
  b.samples = std::move(base.per_op);
  b.set_aside = std::move(base.set_aside);
  b.set_aside_reasons = std::move(base.set_aside_reasons);
  return b;
}

// What the harness does with one placement: calibrate, warm up, sample, check
// the kernel's counts and the CPUs. A whole variant also measures its
// baseline and lets the workload annotate; a matrix cell does neither (the
// matrix measures its baseline once).
enum class Scope { variant, matrix_cell };
void measure_at(const ProbeDescriptor& probe, const Params& params, const Placement& placement, Clock& clock,
                const TimerInfo& timer, const HarnessOptions& options, Scope scope, Result& r);

// A whole variant at one placement. A variant with the seccomp axis (none
// included) is measured on a thread made for it, which installs the filter
// first (none: nothing): the threads and processes the workload starts
// inherit it, the engine's own threads never see it (filters belong to a
// thread and what it creates), and the monitor's timeout and Ctrl-C flags
// reach it as they reach any variant. The host reference is not timed for
// any of the axis's variants: under a filter its getppid loop would pay the
// filter and read as a slowed host, and none must be measured as the others
// are (no sample set aside, no re-measurement) for the difference to be the
// filter's alone.
void measure_variant(const ProbeDescriptor& probe, const Params& params, const Placement& placement, Clock& clock,
                     const TimerInfo& timer, const HarnessOptions& options, Result& r) {
  const auto mode = params.find("seccomp");
  if (mode == params.end()) {
    measure_at(probe, params, placement, clock, timer, options, Scope::variant, r);
    return;
  }
  const bool filtered = mode->second != "none";
  SeccompFilter filter;
  try {
    if (filtered) filter = build_seccomp_filter(mode->second);
  } catch (const ProbeError& e) {
    r.verdict.add(e.status, e.code, e.what());
    return;
  }
  HarnessOptions axis_options = options;
  axis_options.reference = nullptr;
  try {
    std::thread measuring([&] {
      try {
        if (filtered) install_seccomp_filter(filter);
      } catch (const ProbeError& e) {
        r.verdict.add(e.status, e.code, e.what());
        return;
      }
      measure_at(probe, params, placement, clock, timer, axis_options, Scope::variant, r);
    });
    measuring.join();
  } catch (const std::system_error& e) {
    r.verdict.add(Status::failed, Reason::error, no_seccomp_thread_detail(e.what()));
    return;
  }
  if (filtered) describe_filter(filter, probe.syscalls, r.derived);
  if (options.reference) r.notes.push_back(seccomp_axis_note());
}

// A same-CPU variant goes to the allowed CPU with the least other work, read
// from /proc/stat over a short window just before it (the engine sleeps
// meanwhile, so the window holds others' work alone). One allowed CPU (an
// affinity mask the user set) is taken as it is.
void place_on_least_busy(Placement& placement, const HarnessOptions& options, Result& r) {
  if (!options.place_on_least_busy || placement.requested != "same" || placement.cpus.empty()) return;
  const std::vector<int> allowed = allowed_cpus();
  if (options.same_cpu >= 0 && std::find(allowed.begin(), allowed.end(), options.same_cpu) != allowed.end()) {
    std::fill(placement.cpus.begin(), placement.cpus.end(), options.same_cpu);
    return;  // the first round's record says why
  }
  if (allowed.size() < 2) {
    r.placement_why = only_allowed_cpu_why(placement.cpus.front());
    return;
  }
  const auto before = busy_ticks(read_proc_stat());
  std::this_thread::sleep_for(std::chrono::duration<double>(options.least_busy_window_s));
  const auto after = busy_ticks(read_proc_stat());
  const CpuChoice choice = least_busy_cpu(allowed, before, after, options.least_busy_window_s);
  if (choice.cpu < 0) return;
  std::fill(placement.cpus.begin(), placement.cpus.end(), choice.cpu);
  r.placement_why = least_busy_cpu_why(choice.cpu, choice.why);
}

// A record of the variant before anything is measured: what it is, when it
// started and the timer it is measured with.
Result variant_header(const ProbeDescriptor& probe, const Params& params, const TimerInfo& timer,
                      const HarnessOptions& options) {
  Result r;
  r.probe = probe.name;
  r.family = probe_family(probe.name);
  r.params = params;
  r.numeric_params = numeric_params(probe, params);
  r.unit = probe.unit;
  r.op = probe.op;
  r.started_at = utc_now_iso();
  r.timer_source = timer.source;
  r.timer_overhead_ns = timer.overhead_ns;
  r.timer_resolution_ns = timer.resolution_ns;
  r.warmup_samples = options.warmup_samples;
  // A matrix's cells differ by design; the seccomp axis is measured without it (measure_variant).
  r.host_reference = options.reference != nullptr && !probe.matrix && !params.count("seccomp");
  return r;
}

}  // namespace

void derive_from_summary(const ProbeDescriptor& probe, bool counts_ticks, const TimerInfo& timer, Result& r) {
  if (!r.summary) return;
  // The median in ns per op: a rate probe's samples are ops per second.
  double median_ns = r.summary->median;
  if (probe.unit == Unit::msgs_per_s) {
    std::vector<double> ns;
    ns.reserve(r.samples.size());
    for (const double v : r.samples) ns.push_back(1e9 / v);
    median_ns = summarize(ns).median;
    r.derived["median_ns_per_msg"] = median_ns;
  }
  if (counts_ticks) r.derived["tsc_ticks_per_op"] = median_ns / timer.ns_per_tick;
  // What one switch costs if every observed switch shares the time.
  if (const auto per_expected = r.derived.find("observed_switches_per_expected");
      per_expected != r.derived.end() && per_expected->is_number() && per_expected->get<double>() > 0)
    r.derived["per_observed_switch_ns"] = median_ns / per_expected->get<double>();
  if (probe.from_summary) probe.from_summary(r);
}

Result run_variant(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                   const HarnessOptions& options) {
  Result r = variant_header(probe, params, timer, options);
  const std::uint64_t began = monotonic_raw_ns();
  auto done = [&]() -> Result {
    r.duration_s = static_cast<double>(monotonic_raw_ns() - began) / 1e9;
    if (r.verdict.status == Status::unsupported || r.verdict.status == Status::failed) {
      r.summary.reset();
      r.stability.reset();
    }
    return r;
  };

  if (probe.supported) {
    const Support support = probe.supported(params);
    if (!support.ok) {
      r.verdict.add(Status::unsupported, support.code, support.reason);
      return done();
    }
  }
  if (probe.matrix) {
    MatrixMeasures measure;
    measure.cell = [&](const Placement& cell, const HarnessOptions& cell_options) {
      Result c;
      measure_at(probe, params, cell, clock, timer, cell_options, Scope::matrix_cell, c);
      return c;
    };
    if (probe.make_baseline)
      measure.baseline = [&](int cpu, const HarnessOptions& baseline_options) {
        AffinityGuard restore_affinity;
        Context ctx(params, Placement{"matrix", {cpu}, ""}, baseline_options.quick);
        ctx.pin(0);
        return measure_baseline(probe, params, ctx, clock, timer, baseline_options);
      };
    measure.derive = [&](Result& m) { derive_from_summary(probe, clock.counts_ticks(), timer, m); };
    measure_matrix(probe, params, options, measure, r);
    return done();
  }
  const auto cpus = params.find("cpus");
  std::string why;
  auto placement = resolve_placement(cpus == params.end() ? "none" : cpus->second, probe.tasks(params), &why);
  if (!placement) {
    r.placement_requested = cpus->second;
    r.verdict.add(Status::unsupported, Reason::placement_unavailable, why);
    return done();
  }
  place_on_least_busy(*placement, options, r);
  measure_variant(probe, params, *placement, clock, timer, options, r);
  if (!options.defer_retries) {
    while (wants_another_attempt(r, options)) {
      Result again = measure_attempt(probe, params, clock, timer, options, r.started_at);
      keep_better_attempt(r, std::move(again));
    }
    close_interference(r, options);
  }
  return done();
}

Result measure_attempt(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                       const HarnessOptions& options, const std::string& started_at) {
  Result again = variant_header(probe, params, timer, options);
  again.started_at = started_at;  // the variant's start, whichever attempt is kept
  const auto cpus = params.find("cpus");
  std::string why;
  auto placement = resolve_placement(cpus == params.end() ? "none" : cpus->second, probe.tasks(params), &why);
  if (!placement) {
    again.verdict.add(Status::unsupported, Reason::placement_unavailable, why);
    return again;
  }
  place_on_least_busy(*placement, options, again);
  const std::uint64_t began = monotonic_raw_ns();
  measure_variant(probe, params, *placement, clock, timer, options, again);
  again.duration_s = static_cast<double>(monotonic_raw_ns() - began) / 1e9;
  return again;
}

namespace {

// idle=held: the request to keep every CPU out of deep idle, with what the
// record says of it; unset (and r unsupported) where it cannot be held.
bool hold_idle(const Params& params, std::optional<IdleHold>& hold, Result& r) {
  const auto idle = params.find("idle");
  if (idle == params.end() || idle->second != "held") return true;
  std::string why_not;
  bool denied = false;
  hold = IdleHold::acquire(&why_not, &denied);
  if (!hold) {
    r.verdict.add(Status::unsupported, denied ? Reason::permission_denied : Reason::not_supported_here, why_not);
    return false;
  }
  if (const auto effective = hold->effective_us()) r.derived["idle_latency_bound_us"] = *effective;
  const std::string driver = cpuidle_driver();
  r.derived["cpuidle_driver"] = driver.empty() ? "unknown" : driver;
  if (driver == "none") r.notes.push_back(idle_held_without_driver_note());
  return true;
}

// The samples taken and the ops they stand for, and where the tasks ran.
void record_samples(const Sampled& measured, double ops_per_iteration, int main_cpu_start, int main_cpu_end,
                    const std::vector<TaskReport>& partners, int tasks, const HarnessOptions& options, Result& r) {
  r.iterations_per_sample = measured.iterations_per_sample;
  r.samples = measured.per_op;
  r.ops_per_sample =
      static_cast<std::uint64_t>(std::llround(static_cast<double>(measured.iterations_per_sample) * ops_per_iteration));
  if (r.ops_per_sample == 0) r.ops_per_sample = 1;
  // Every op the workload performed (calibration, warm-up and set-aside
  // samples included), so a test can compare with what the kernel saw.
  r.derived["ops_executed"] = static_cast<double>(measured.all_iterations) * ops_per_iteration;
  r.derived["ops_in_figure"] = static_cast<double>(measured.total_iterations) * ops_per_iteration;
  r.clean = measured.clean;
  if (measured.cpu_loop_ns) r.derived["cpu_loop_ns"] = *measured.cpu_loop_ns;
  if (measured.cpu_calls_ns) r.derived["cpu_calls_ns"] = *measured.cpu_calls_ns;
  if (measured.budget_hit) r.notes.push_back(budget_ran_out_note(measured.per_op.size(), options.max_variant_s));
  r.observed_start.assign(static_cast<std::size_t>(tasks), -1);
  r.observed_end = r.observed_start;
  r.observed_start[0] = main_cpu_start;
  r.observed_end[0] = main_cpu_end;
  for (const auto& p : partners) {
    if (p.task > 0 && static_cast<std::size_t>(p.task) < r.observed_start.size()) {
      r.observed_start[static_cast<std::size_t>(p.task)] = p.cpu_start;
      r.observed_end[static_cast<std::size_t>(p.task)] = p.cpu_end;
    }
  }
}

// The partners' switches over the kept samples, where the kernel's counters
// were read around every one of them for this thread and each partner.
std::optional<long> partner_runs_kept(const Sampled& measured, const std::vector<TaskReport>& partners) {
  if (!measured.counters || partners.empty()) return std::nullopt;
  const CounterTotals& c = *measured.counters;
  if (c.sharing == Sharing::unknown || c.tasks != partners.size() + 1 || c.kept_samples == 0 ||
      static_cast<std::size_t>(c.kept.counted) != c.kept_samples)
    return std::nullopt;
  return c.kept.partner_runs;
}

// The checks judged where the samples were counted: the switches, the
// placement, the timer's resolution; and the core cycles per op.
void judge_counted(const ProbeDescriptor& probe, const Params& params, const Placement& placement,
                   const Sampled& measured, const std::vector<TaskReport>& partners, double ops_per_iteration,
                   const TimerInfo& timer, const CycleCounter& cycles, Result& r) {
  const double ops_total = static_cast<double>(measured.total_iterations) * ops_per_iteration;
  const double ops_all = static_cast<double>(measured.all_iterations) * ops_per_iteration;
  const std::optional<Expectation> expectation = probe.expects ? probe.expects(params) : std::nullopt;
  if (expectation && !expectation->none())
    add_switch_checks(*expectation, ops_total, ops_all, measured.kept_switches, partners,
                      partner_runs_kept(measured, partners), r);
  if (probe.matrix && !probe.expects) add_preemption_check(measured.kept_switches, partners, r);
  add_placement_check(placement, r);
  if (probe.syscalls_per_op) r.derived["syscalls_per_op"] = probe.syscalls_per_op(params);
  add_quantization_check(summarize(r.samples), r.ops_per_sample, timer, r);
  if (measured.kept_cycles && ops_total > 0) {
    r.derived["core_cycles_per_op"] = static_cast<double>(*measured.kept_cycles) / ops_total;
    if (cycles.user_only()) r.derived["core_cycles_scope"] = cycles_user_only();
  } else {
    r.derived["core_cycles_per_op"] = nullptr;
    r.derived["core_cycles_unavailable"] = cycles.error().empty() ? cycle_counter_read_failed() : cycles.error();
  }
}

// How finish_record finishes what measure_at sampled.
Finishing finishing(const ProbeDescriptor& probe, const Params& params, const Sampled& measured,
                    double ops_per_iteration, Clock& clock, const TimerInfo& timer, const HarnessOptions& options,
                    Scope scope) {
  Finishing how;
  how.measured = scope == Scope::variant ? Measured::batches : Measured::cell;
  how.derive = [&probe, &clock, &timer](Result& m) { derive_from_summary(probe, clock.counts_ticks(), timer, m); };
  if (scope != Scope::variant) return how;
  if (probe.expects)
    if (const auto expectation = probe.expects(params); expectation && expectation->none())
      how.no_switches =
          NoSwitchCounts{measured.all_switches, 0, static_cast<double>(measured.all_iterations) * ops_per_iteration};
  if (options.reference && !measured.reference_ns.empty()) {
    Interference in;
    in.reference = options.reference->describe();
    in.retries = options.retries;
    how.reference = std::move(in);
    how.reference_ns = measured.reference_ns;
    how.best_ns = options.reference->best_ns();
  }
  return how;
}

void measure_at(const ProbeDescriptor& probe, const Params& params, const Placement& placement, Clock& clock,
                const TimerInfo& timer, const HarnessOptions& options, Scope scope, Result& r) {
  r.placement_requested = placement.requested;
  r.placement_cpus = placement.cpus;
  if (!placement.detail.empty()) r.notes.push_back(placement.detail);

  // idle=held: the latency request lives as long as this object, so it is
  // released when the variant ends, on every path out of it (a crash or
  // Ctrl-C ends the process, which closes the descriptor too). It is taken
  // after the workload has forked its partners, so no child inherits it.
  std::optional<IdleHold> idle_hold;
  AffinityGuard restore_affinity;
  Context ctx(params, placement, options.quick);
  try {
    ctx.pin(0);
    const int main_cpu_start = current_cpu();
    const double ops_per_iteration = probe.ops_per_iteration(params);
    auto workload = probe.make(ctx);
    if (!hold_idle(params, idle_hold, r)) return;
    CycleCounter cycles;
    Sampled measured = sample(probe, params, *workload, clock, timer, options, ops_per_iteration,
                              counter_plan(probe, params, placement), &cycles, options.batch, options.kept_batches);
    const int main_cpu_end = current_cpu();
    const std::vector<TaskReport> partners = workload->finish();
    record_samples(measured, ops_per_iteration, main_cpu_start, main_cpu_end, partners, probe.tasks(params), options,
                   r);
    if (probe.make_baseline && scope == Scope::variant)
      r.baseline = measure_baseline(probe, params, ctx, clock, timer, options);
    r.timer_corrected = true;
    judge_counted(probe, params, placement, measured, partners, ops_per_iteration, timer, cycles, r);
    // The samples set aside as interference stay in the record, in its unit, with their reasons.
    r.set_aside = measured.set_aside;
    r.set_aside_reasons = measured.set_aside_reasons;
    if (scope == Scope::variant) r.counters = measured.counters;
    if (probe.unit == Unit::msgs_per_s) {
      // The samples were ns per message; the unit asked for is a rate.
      for (double& v : r.samples) v = 1e9 / v;
      for (double& v : r.set_aside) v = 1e9 / v;
    }
    finish_record(r, finishing(probe, params, measured, ops_per_iteration, clock, timer, options, scope));
    if (scope == Scope::variant) workload->annotate(r);
  } catch (const ProbeError& e) {
    r.verdict.add(e.status, e.code, e.what());
  } catch (const std::exception& e) {
    r.verdict.add(Status::failed, Reason::error, e.what());
  }
}

}  // namespace

}  // namespace ctx
