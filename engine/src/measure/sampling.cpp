#include "measure/sampling.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "report/wording.hpp"

namespace ctx {

double batch_target_ns(const HarnessOptions& options, const TimerInfo& timer) {
  return std::max({options.min_sample_s * 1e9, 1000.0 * timer.resolution_ns, 100.0 * timer.overhead_ns});
}

std::uint64_t calibrate_batch(const std::function<double(std::uint64_t)>& timed_run, double target_ns,
                              std::uint64_t max_iterations) {
  // The first batch pays for cold caches, page faults and lazy binding; it
  // only warms up and is never taken as the answer.
  timed_run(1);
  std::uint64_t iterations = 1;
  for (;;) {
    double elapsed = timed_run(iterations);
    if (iterations >= max_iterations) return iterations;
    if (elapsed >= target_ns) {
      // One batch that reached the target may have been stretched by a
      // moment the CPU was taken from it (another task, or the hypervisor
      // running another vCPU): a few iterations would then be taken for the
      // whole batch, and every sample would be too short to time. So the
      // count is timed again and kept when that batch also lasts half the
      // target; otherwise calibration goes on from the shorter timing.
      const double again = timed_run(iterations);
      if (again >= target_ns / 2) return iterations;
      elapsed = again;
    }
    // Predict the count that reaches the target with 40% head-room, but grow
    // at most tenfold while a batch is still under a tenth of the target
    // (one slow first batch must not make the next one enormous).
    double factor = elapsed > 0 ? target_ns * 1.4 / elapsed : 10.0;
    if (elapsed < target_ns / 10) factor = std::min(factor, 10.0);
    factor = std::max(factor, 2.0);
    const double next = std::ceil(static_cast<double>(iterations) * factor);
    iterations = next >= static_cast<double>(max_iterations) ? max_iterations : static_cast<std::uint64_t>(next);
  }
}

namespace {
// Between batches: stop if the run was interrupted or the variant overran.
void check_stop() {
  if (interrupted_flag().load()) throw ProbeError(Reason::interrupted, interrupted_detail());
  if (timeout_flag().load()) throw ProbeError(Reason::timeout, stopped_between_batches_detail());
}
}  // namespace

double time_batch(Clock& clock, const TimerInfo& timer, Workload& workload, std::uint64_t iterations,
                  TimedBatch* readings) {
  check_stop();
  workload.prepare(iterations);
  const std::uint64_t start = clock.now();
  workload.run(iterations);
  const std::uint64_t end = clock.now();
  if (readings) {
    readings->start = start;
    readings->end = end;
  }
  workload.after(iterations);
  check_stop();
  // One read's cost falls inside [start, end]: subtract it once per batch.
  return clock.ticks_to_ns(end - start) - timer.overhead_ns;
}

// How the tasks of a variant share its CPUs. A create probe's children come
// and go between reads, so its tasks are never all known.
CounterPlan counter_plan(const ProbeDescriptor& probe, const Params& params, const Placement& placement) {
  CounterPlan plan;
  plan.tasks = probe.tasks ? probe.tasks(params) : 1;
  std::vector<int> distinct = placement.cpus;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  plan.cpus = distinct.empty() ? allowed_cpus() : distinct;
  if (probe_family(probe.name) == "create") return plan;
  if (plan.tasks == 1 || (distinct.size() == 1 && !placement.cpus.empty()))
    plan.sharing = Sharing::one_cpu;
  else if (!placement.cpus.empty() && static_cast<int>(distinct.size()) == plan.tasks)
    plan.sharing = Sharing::own_cpus;
  return plan;
}

namespace {

void add_switches(SwitchCount& total, const SwitchCount& before, const SwitchCount& after) {
  total.voluntary += after.voluntary - before.voluntary;
  total.involuntary += after.involuntary - before.involuntary;
}

// One timed sample and what was read around it (outside its timing).
struct Taken {
  double per_op = 0;
  double reference_ns = 0;
  TimedBatch readings;
  SwitchCount switches;
  std::optional<std::uint64_t> cycles;  // unset: a read failed
  SampleCounters counted;
  std::optional<SetAsideReason> why;  // the interference the counters or the reference saw
  double cpu_loop_ns = 0;             // the plain loop, timed before it
  double cpu_calls_ns = 0;            // and the call loop
};

void keep(const Taken& t, const HarnessOptions& options, std::vector<TimedBatch>* kept_batches, Sampled& out) {
  if (options.reference) out.reference_ns.push_back(t.reference_ns);
  out.per_op.push_back(t.per_op);
  if (kept_batches) kept_batches->push_back(t.readings);
  out.total_iterations += out.iterations_per_sample;
  if (t.cpu_loop_ns > 0) out.cpu_loop_ns = std::min(out.cpu_loop_ns.value_or(t.cpu_loop_ns), t.cpu_loop_ns);
  if (t.cpu_calls_ns > 0) out.cpu_calls_ns = std::min(out.cpu_calls_ns.value_or(t.cpu_calls_ns), t.cpu_calls_ns);
  add_switches(out.kept_switches, {}, t.switches);
  if (t.cycles && out.kept_cycles)
    *out.kept_cycles += *t.cycles;
  else
    out.kept_cycles.reset();
  if (out.counters) {
    out.counters->kept += t.counted;
    ++out.counters->kept_samples;
    // Interfered by the counters' rule (the reference's is judged per attempt).
    if (t.why && *t.why != SetAsideReason::host_reference) ++out.counters->kept_interfered;
  }
}

void set_aside(const Taken& t, Sampled& out) {
  out.set_aside.push_back(t.per_op);
  out.set_aside_reasons.push_back(*t.why);
  if (out.counters) ++out.counters->set_aside[static_cast<std::size_t>(*t.why)];
}

// Fewer clean samples than asked for: the fastest of those set aside join
// them (interference only adds time, so the fastest carry the least of it),
// up to `least`, and count as interfered; the rest are set aside in the
// order taken.
void close_clean(std::vector<Taken>& aside, std::size_t least, const HarnessOptions& options,
                 std::vector<TimedBatch>* kept_batches, Sampled& out) {
  std::vector<std::size_t> order(aside.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return aside[a].per_op < aside[b].per_op; });
  std::vector<bool> filled(aside.size(), false);
  for (std::size_t k = 0; k < order.size() && out.per_op.size() < least; ++k) {
    keep(aside[order[k]], options, kept_batches, out);
    filled[order[k]] = true;
    ++out.clean->filled;
  }
  for (std::size_t i = 0; i < aside.size(); ++i)
    if (!filled[i]) set_aside(aside[i], out);
}

// What one variant's samples share: the workload, the clock and the
// kernel's counters read around each sample; what they find goes into `out`.
class VariantSampler {
 public:
  VariantSampler(Workload& workload, Clock& clock, const TimerInfo& timer, const HarnessOptions& options,
                 const CycleCounter* cycles, Sampled& out)
      : workload_(workload), clock_(clock), timer_(timer), options_(options), cycles_(cycles), out_(out) {}

  double timed(std::uint64_t n, TimedBatch* readings = nullptr) {
    out_.all_iterations += n;
    // Every batch's switches, outside its timing (for an expectation of none).
    const SwitchCount before = thread_switches();
    const double ns = time_batch(clock_, timer_, workload_, n, readings);
    add_switches(out_.all_switches, before, thread_switches());
    return ns;
  }

  // The tasks whose counters are read: this thread, then its partners.
  void start_counters(const CounterPlan& plan) {
    if (!options_.counters) return;
    tasks_.push_back({getpid(), static_cast<pid_t>(syscall(SYS_gettid))});
    for (const auto& partner : partner_tasks()) tasks_.push_back(partner);
    CounterTotals totals;
    // A task this harness cannot see (not started through a Partner) leaves
    // only the steal counter to judge by.
    totals.sharing = static_cast<int>(tasks_.size()) == plan.tasks ? plan.sharing : Sharing::unknown;
    totals.tasks = tasks_.size();
    totals.cpus = plan.cpus;
    out_.counters = std::move(totals);
    involuntary_ = out_.counters->sharing == Sharing::own_cpus;
  }

  // One sample of `ops` operations.
  Taken take(double ops) {
    Taken t;
    t.cpu_loop_ns = time_cpu_loop(clock_);
    t.cpu_calls_ns = time_call_loop(clock_);
    t.reference_ns = options_.reference ? options_.reference->time_once() : 0;
    // The counters, the kernel's switch counts and the cycles are read around
    // each sample (outside its timing), so they count that sample alone.
    CounterSnapshot counters_before, counters_after;
    if (out_.counters) read_counters(counters_before);
    const SwitchCount before = thread_switches();
    const auto cycles_before = cycles_ ? cycles_->read_value() : std::nullopt;
    t.readings.ops = ops;
    t.per_op = timed(out_.iterations_per_sample, &t.readings) / ops;
    const auto cycles_after = cycles_ ? cycles_->read_value() : std::nullopt;
    add_switches(t.switches, before, thread_switches());
    if (cycles_before && cycles_after) t.cycles = *cycles_after - *cycles_before;
    if (out_.counters) {
      read_counters(counters_after);
      if (counters_before.ok && counters_after.ok) {
        t.counted = difference(counters_before, counters_after);
        t.why = judge_sample(t.counted, out_.counters->sharing);
      }
    }
    if (!t.why && options_.reference && t.reference_ns > slowed_ratio * options_.reference->best_ns())
      t.why = SetAsideReason::host_reference;
    return t;
  }

 private:
  void read_counters(CounterSnapshot& into) {
    const std::uint64_t read_began = monotonic_raw_ns();
    into = options_.counters->read(tasks_, out_.counters->cpus, involuntary_);
    out_.counters->read_ns.push_back(static_cast<double>(monotonic_raw_ns() - read_began));
    if (!into.ok && out_.counters->unread.empty()) out_.counters->unread = counters_unread_note();
  }

  Workload& workload_;
  Clock& clock_;
  const TimerInfo& timer_;
  const HarnessOptions& options_;
  const CycleCounter* cycles_;
  Sampled& out_;
  std::vector<TaskId> tasks_;
  bool involuntary_ = false;
};

}  // namespace

Sampled sample(const ProbeDescriptor& probe, const Params& params, Workload& workload, Clock& clock,
               const TimerInfo& timer, const HarnessOptions& options, double ops_per_iteration, const CounterPlan& plan,
               const CycleCounter* cycles, std::uint64_t batch, std::vector<TimedBatch>* kept_batches) {
  Sampled out;
  if (cycles) out.kept_cycles = 0;
  VariantSampler sampler(workload, clock, timer, options, cycles, out);
  out.iterations_per_sample = probe.fixed_iterations ? probe.fixed_iterations(params) : 0;
  if (out.iterations_per_sample == 0) out.iterations_per_sample = batch;  // an earlier round's calibration
  if (out.iterations_per_sample == 0)
    out.iterations_per_sample =
        calibrate_batch([&](std::uint64_t n) { return sampler.timed(n); }, batch_target_ns(options, timer));
  for (int w = 0; w < options.warmup_samples; ++w) sampler.timed(out.iterations_per_sample);
  const std::uint64_t began = monotonic_raw_ns();
  const std::uint64_t deadline = began + static_cast<std::uint64_t>(options.max_variant_s * 1e9);
  const auto budget_ns = static_cast<std::uint64_t>(std::max(0.0, options.clean_budget_s) * 1e9);
  const double ops = static_cast<double>(out.iterations_per_sample) * ops_per_iteration;
  const auto samples =
      static_cast<std::size_t>(probe.samples ? probe.samples(params, options.samples) : options.samples);
  // A sample whose host reference ran slowed, or that the kernel's counters
  // show another task or the host took time from, is set aside and taken
  // again until `samples` are clean, within the clean budget: the host's
  // short slow spells are waited out inside the attempt. The budget ends the
  // re-takes once `samples` were taken; the figure is then the clean
  // samples' (close_clean). With --retries 0 nothing is taken again: the
  // reference and the counters are only recorded.
  const bool retake = options.retries > 0 && (options.reference || options.counters);
  if (retake) out.clean = CleanSampling{samples, 0, 0, options.clean_budget_s, 0, std::nullopt};
  sampler.start_counters(plan);
  std::vector<Taken> aside;
  std::size_t taken = 0;
  while (out.per_op.size() < samples) {
    if (retake && taken >= samples && monotonic_raw_ns() - began >= budget_ns) break;  // the budget is spent
    Taken t = sampler.take(ops);
    ++taken;
    if (retake && t.why)
      aside.push_back(std::move(t));
    else
      keep(t, options, kept_batches, out);
    if (out.per_op.size() >= 5 && monotonic_raw_ns() > deadline) {
      out.budget_hit = true;
      break;
    }
  }
  if (retake) {
    out.clean->clean = out.per_op.size();
    out.clean->spent_s = static_cast<double>(monotonic_raw_ns() - began) / 1e9;
    close_clean(aside, samples, options, kept_batches, out);
  }
  return out;
}

}  // namespace ctx
