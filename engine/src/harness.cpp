#include "harness.hpp"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>

#include "idle.hpp"
#include "output.hpp"
#include "seccomp_filter.hpp"
#include "tasks.hpp"
#include "topology.hpp"
#include "wording.hpp"

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
  if (interrupted_flag().load()) throw ProbeError(Reason::interrupted, "interrupted");
  if (timeout_flag().load())
    throw ProbeError(Reason::timeout, "the variant overran its time limit (--timeout); stopped between batches");
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
  check.ok = expected > 0 && observed >= 0.9 * expected && observed <= 1.1 * expected;
  if (check.ok) return std::nullopt;
  if (expected <= 0) return std::make_pair(Reason::error, std::string("no switches were expected"));
  if (observed < 0.9 * expected)
    return std::make_pair(Reason::too_few_switches,
                          fmt::format("{}: {:.0f} observed vs {:.0f} expected ({:.0f}%): a waiter did not sleep (it "
                                      "spun or found the hand-off already done), so part of the figure is a call "
                                      "cost, not a switch",
                                      check.name, observed, expected, 100.0 * observed / expected));
  return std::make_pair(Reason::too_many_switches,
                        fmt::format("{}: {:.0f} observed vs {:.0f} expected ({:.0f}%): the primitive switches more "
                                    "than once per hand-off; see derived.per_observed_switch_ns",
                                    check.name, observed, expected, 100.0 * observed / expected));
}

namespace {
std::optional<std::pair<Reason, std::string>> judge_switches_per_op(double switches, double ops, Check& check) {
  const double per_op = ops > 0 ? switches / ops : 0;
  check.name = no_switches_check;
  check.expected = no_switches_expected();
  check.observed = per_op;
  check.ok = per_op < 0.01;
  if (check.ok) return std::nullopt;
  return std::make_pair(Reason::too_many_switches, kernel_switched_detail(per_op));
}
}  // namespace

std::optional<std::pair<Reason, std::string>> judge_no_switches(const SwitchCount& switches, double ops, Check& check) {
  check.detail = no_switches_counted(switches.voluntary, switches.involuntary, ops);
  return judge_switches_per_op(static_cast<double>(switches.voluntary + switches.involuntary), ops, check);
}

std::optional<std::pair<Reason, std::string>> judge_pooled_no_switches(double switches, double ops, int rounds,
                                                                       Check& check) {
  check.detail = no_switches_pooled(switches, ops, rounds);
  return judge_switches_per_op(switches, ops, check);
}

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

// Core cycles of the calling thread, where the hardware counter exists
// (it does not in most VMs); the error says why not.
class CycleCounter {
 public:
  CycleCounter() {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.exclude_hv = 1;
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
    if (fd_ < 0) {
      const int first_error = errno;
      attr.exclude_kernel = 1;  // unprivileged users may count user cycles only
      fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
      if (fd_ < 0)
        error_ = fmt::format("perf_event_open(cycles): {}", std::strerror(first_error));
      else
        user_only_ = true;
    }
  }
  ~CycleCounter() {
    if (fd_ >= 0) close(fd_);
  }
  std::optional<std::uint64_t> read_value() const {
    std::uint64_t value = 0;
    if (fd_ < 0 || ::read(fd_, &value, sizeof value) != sizeof value) return std::nullopt;
    return value;
  }
  const std::string& error() const { return error_; }
  bool user_only() const { return user_only_; }

 private:
  int fd_ = -1;
  bool user_only_ = false;
  std::string error_;
};

struct Sampled {
  std::vector<double> per_op;
  std::uint64_t iterations_per_sample = 0;
  std::uint64_t total_iterations = 0;  // in the kept samples, the ones that make the figure
  std::uint64_t all_iterations = 0;    // calibration, warm-up and set-aside samples included
  bool budget_hit = false;
  std::vector<double> reference_ns;               // the host reference, timed before each kept sample
  std::vector<double> set_aside;                  // per-op times of samples set aside as interference
  std::vector<SetAsideReason> set_aside_reasons;  // why, one per set-aside sample
  SwitchCount kept_switches;                      // the measuring thread's switches during the kept samples
  SwitchCount all_switches;                       // and during every batch (calibration and warm-up included)
  std::optional<std::uint64_t> kept_cycles;       // its core cycles then, where the counter reads
  std::optional<CounterTotals> counters;          // the kernel's counters, where read
};

// Which tasks and CPUs the kernel's counters are read for, and by which rule
// (kernel_counters.hpp). The calling thread is the first task; the partners
// are added when sampling starts (they run by then).
struct CounterPlan {
  Sharing sharing = Sharing::unknown;
  std::vector<int> cpus;
  int tasks = 1;  // the probe's tasks (ProbeDescriptor::tasks)
};

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

Sampled sample(const ProbeDescriptor& probe, const Params& params, Workload& workload, Clock& clock,
               const TimerInfo& timer, const HarnessOptions& options, double ops_per_iteration, const CounterPlan& plan,
               const CycleCounter* cycles = nullptr, std::uint64_t batch = 0,
               std::vector<TimedBatch>* kept_batches = nullptr) {
  Sampled out;
  if (cycles) out.kept_cycles = 0;
  auto add_switches = [](SwitchCount& total, const SwitchCount& before, const SwitchCount& after) {
    total.voluntary += after.voluntary - before.voluntary;
    total.involuntary += after.involuntary - before.involuntary;
  };
  auto timed = [&](std::uint64_t n, TimedBatch* readings = nullptr) {
    out.all_iterations += n;
    // Every batch's switches, outside its timing (for an expectation of none).
    const SwitchCount before = thread_switches();
    const double ns = time_batch(clock, timer, workload, n, readings);
    add_switches(out.all_switches, before, thread_switches());
    return ns;
  };
  out.iterations_per_sample = probe.fixed_iterations ? probe.fixed_iterations(params) : 0;
  if (out.iterations_per_sample == 0) out.iterations_per_sample = batch;  // an earlier round's calibration
  if (out.iterations_per_sample == 0)
    out.iterations_per_sample = calibrate_batch(timed, batch_target_ns(options, timer));
  for (int w = 0; w < options.warmup_samples; ++w) timed(out.iterations_per_sample);
  const std::uint64_t deadline = monotonic_raw_ns() + static_cast<std::uint64_t>(options.max_variant_s * 1e9);
  const double ops = static_cast<double>(out.iterations_per_sample) * ops_per_iteration;
  const int samples = probe.samples ? probe.samples(params, options.samples) : options.samples;
  // A sample whose host reference ran slowed, or that the kernel's counters
  // show another task or the host took time from, is set aside and taken
  // again, at most `samples` times: the host's short slow spells (a fraction
  // of a second) are waited out inside the attempt. Once the re-takes are used
  // up every sample is kept (and counted as interfered where it was), and the
  // attempt is judged as a whole. With --retries 0 nothing is taken again: the
  // reference and the counters are only recorded.
  int spare = options.retries > 0 && (options.reference || options.counters) ? samples : 0;
  // The tasks whose counters are read: this thread, then its partners.
  std::vector<TaskId> tasks;
  if (options.counters) {
    tasks.push_back({getpid(), static_cast<pid_t>(syscall(SYS_gettid))});
    for (const auto& partner : partner_tasks()) tasks.push_back(partner);
    CounterTotals totals;
    // A task this harness cannot see (not started through a Partner) leaves
    // only the steal counter to judge by.
    totals.sharing = static_cast<int>(tasks.size()) == plan.tasks ? plan.sharing : Sharing::unknown;
    totals.tasks = tasks.size();
    totals.cpus = plan.cpus;
    out.counters = std::move(totals);
  }
  const bool involuntary = out.counters && out.counters->sharing == Sharing::own_cpus;
  auto read_counters = [&](CounterSnapshot& into) {
    const std::uint64_t began = monotonic_raw_ns();
    into = options.counters->read(tasks, out.counters->cpus, involuntary);
    out.counters->read_ns.push_back(static_cast<double>(monotonic_raw_ns() - began));
    if (!into.ok && out.counters->unread.empty())
      out.counters->unread =
          "some task's /proc files or /proc/stat could not be read (a task ended?); those samples "
          "were judged by the host reference alone";
  };
  while (static_cast<int>(out.per_op.size()) < samples) {
    const double reference_ns = options.reference ? options.reference->time_once() : 0;
    // The counters, the kernel's switch counts and the cycles are read around
    // each sample (outside its timing), so they count that sample alone.
    CounterSnapshot counters_before, counters_after;
    if (out.counters) read_counters(counters_before);
    const SwitchCount before = thread_switches();
    const auto cycles_before = cycles ? cycles->read_value() : std::nullopt;
    TimedBatch readings;
    readings.ops = ops;
    const double per_op = timed(out.iterations_per_sample, &readings) / ops;
    const auto cycles_after = cycles ? cycles->read_value() : std::nullopt;
    const SwitchCount after = thread_switches();
    std::optional<SetAsideReason> why;
    SampleCounters counted;
    if (out.counters) {
      read_counters(counters_after);
      if (counters_before.ok && counters_after.ok) {
        counted = difference(counters_before, counters_after);
        why = judge_sample(counted, out.counters->sharing);
      }
    }
    if (!why && options.reference && reference_ns > slowed_ratio * options.reference->best_ns())
      why = SetAsideReason::host_reference;
    if (spare > 0 && why) {
      --spare;
      out.set_aside.push_back(per_op);
      out.set_aside_reasons.push_back(*why);
      if (out.counters) ++out.counters->set_aside[static_cast<std::size_t>(*why)];
    } else {
      if (options.reference) out.reference_ns.push_back(reference_ns);
      out.per_op.push_back(per_op);
      if (kept_batches) kept_batches->push_back(readings);
      out.total_iterations += out.iterations_per_sample;
      add_switches(out.kept_switches, before, after);
      if (cycles_before && cycles_after && out.kept_cycles)
        *out.kept_cycles += *cycles_after - *cycles_before;
      else
        out.kept_cycles.reset();
      if (out.counters) {
        out.counters->kept += counted;
        ++out.counters->kept_samples;
        // Interfered by the counters' rule (the reference's is judged per attempt).
        if (why && *why != SetAsideReason::host_reference) ++out.counters->kept_interfered;
      }
    }
    if (out.per_op.size() >= 5 && monotonic_raw_ns() > deadline) {
      out.budget_hit = true;
      break;
    }
  }
  return out;
}

void add_switch_checks(const Expectation& expectation, double ops_total, double ops_all, const SwitchCount& main_delta,
                       const std::vector<TaskReport>& partners, Result& r) {
  const double expected_main = ops_total * expectation.main_per_op;
  const auto observed_main = static_cast<double>(counted_switches(main_delta, expectation.counter));
  double expected_all = expected_main, observed_all = observed_main;
  Check main_check;
  main_check.name = fmt::format("{}_switches.measuring_task", counter_name(expectation.counter));
  main_check.detail = expectation.why;
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
    partner_check.detail = fmt::format("{} partner task(s), over their whole life (warm-up included)", partners.size());
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

// A matrix probe that expects no switches spins on both sides (matrix.cacheline):
// each switch of its tasks means another task took the CPU while it waited,
// so some samples hold a wait for the scheduler, not a hand-off. None is
// expected; any is `too_many_switches`. The partners' counts cover their
// whole life (warm-up included).
void add_preemption_check(const SwitchCount& main_delta, const std::vector<TaskReport>& partners, Result& r) {
  long observed = main_delta.voluntary + main_delta.involuntary;
  for (const auto& p : partners) observed += p.voluntary + p.involuntary;
  Check check;
  check.name = "preemptions.spinning_tasks";
  check.expected = 0;
  check.observed = observed;
  check.ok = observed == 0;
  check.detail = "switches of the spinning tasks (voluntary + involuntary): none when nothing else wants their CPUs";
  if (!check.ok)
    r.verdict.add(Status::suspect, Reason::too_many_switches,
                  fmt::format("the spinning tasks were switched out {} times: another task took their CPU, so some "
                              "samples include a wait for the scheduler (is the machine busy?)",
                              observed));
  r.checks.push_back(check);
}

void add_placement_check(const Placement& placement, Result& r) {
  Check check;
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
    if (!check.ok)
      r.verdict.add(Status::suspect, Reason::migrated, "a task ran on a CPU other than the one it was pinned to");
  } else {
    check.detail = "unpinned: the scheduler placed the tasks";
  }
  r.checks.push_back(check);
}

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
void measure_matrix(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                    const HarnessOptions& options, Result& r);

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
    r.verdict.add(Status::failed, Reason::error,
                  fmt::format("no thread could be started to measure the seccomp variant: {}", e.what()));
    return;
  }
  if (filtered) describe_filter(filter, probe.syscalls, r.derived);
  if (options.reference)
    r.notes.push_back(
        "seccomp axis: measured on a thread made for the variant, without the host reference (under a filter its "
        "system calls would pay the filter), as every value of the axis is, so the values differ by the filter alone");
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
    r.placement_why = fmt::format("CPU {}: the only CPU the affinity mask allows", placement.cpus.front());
    return;
  }
  const auto before = busy_ticks(read_proc_stat());
  std::this_thread::sleep_for(std::chrono::duration<double>(options.least_busy_window_s));
  const auto after = busy_ticks(read_proc_stat());
  const CpuChoice choice = least_busy_cpu(allowed, before, after, options.least_busy_window_s);
  if (choice.cpu < 0) return;
  std::fill(placement.cpus.begin(), placement.cpus.end(), choice.cpu);
  r.placement_why = fmt::format("CPU {}: {}", choice.cpu, choice.why);
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
    measure_matrix(probe, params, clock, timer, options, r);
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

bool wants_another_attempt(const Result& r, const HarnessOptions& options) {
  if (!r.interference || !options.reference || r.interference->no_more_attempts) return false;
  if (!r.summary || r.verdict.status == Status::unsupported || r.verdict.status == Status::failed) return false;
  if (interrupted_flag().load()) return false;
  const Interference& in = *r.interference;
  return in.attempts.size() <= static_cast<std::size_t>(options.retries) &&
         slowed(in.attempts[in.kept], options.reference->best_ns());
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

void keep_better_attempt(Result& r, Result&& again) {
  Interference& in = *r.interference;
  if (!again.interference || !again.summary || again.verdict.status == Status::unsupported ||
      again.verdict.status == Status::failed) {
    in.no_more_attempts = true;
    r.duration_s += again.duration_s;
    r.notes.push_back(failed_remeasurement_note(again));
    return;
  }
  std::vector<InterferenceAttempt> attempts = std::move(in.attempts);
  attempts.push_back(again.interference->attempts.front());
  std::size_t kept = in.kept;
  const double duration_s = r.duration_s + again.duration_s;  // every attempt's time
  if (attempt_to_keep(attempts) == attempts.size() - 1) {
    // The new attempt is kept: its record replaces the old one, notes and all,
    // except the note of a failed re-measurement, which stays true.
    std::vector<std::string> failed_notes;
    for (auto& note : r.notes)
      if (note.starts_with(failed_remeasurement_prefix)) failed_notes.push_back(note);
    std::string run_id = std::move(r.run_id);  // the run's, not the attempt's, as its place and schedule
    const std::size_t variant_index = r.variant_index;
    again.trace = std::move(r.trace);  // the variant's traced pass, whichever attempt is kept
    nlohmann::json schedule = std::move(r.schedule);
    r = std::move(again);
    r.run_id = std::move(run_id);
    r.variant_index = variant_index;
    r.schedule = std::move(schedule);
    r.notes.insert(r.notes.end(), failed_notes.begin(), failed_notes.end());
    kept = attempts.size() - 1;
  }
  r.interference->attempts = std::move(attempts);
  r.interference->kept = kept;
  r.duration_s = duration_s;
}

void close_interference(Result& r, const HarnessOptions& options) {
  if (r.interference && options.reference) {
    Interference& in = *r.interference;
    // The best was fixed when the run started: every attempt was judged by it.
    const double best = options.reference->best_ns();
    in.best_ns = best;
    for (auto& note : interference_notes(r)) r.notes.push_back(std::move(note));
  }
  for (auto& note : set_aside_notes(r)) r.notes.push_back(std::move(note));
  judge_interference(r);
}

void judge_interference(Result& r) {
  if (r.verdict.status != Status::ok && r.verdict.status != Status::suspect) return;
  if (std::any_of(r.verdict.reasons.begin(), r.verdict.reasons.end(),
                  [](const auto& reason) { return reason.first == Reason::interference; }))
    return;
  if (auto detail = interference_detail(r)) r.verdict.add(Status::suspect, Reason::interference, *detail);
}

namespace {

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
    if (const auto idle = params.find("idle"); idle != params.end() && idle->second == "held") {
      std::string why_not;
      bool denied = false;
      idle_hold = IdleHold::acquire(&why_not, &denied);
      if (!idle_hold) {
        r.verdict.add(Status::unsupported, denied ? Reason::permission_denied : Reason::not_supported_here, why_not);
        return;
      }
      if (const auto effective = idle_hold->effective_us()) r.derived["idle_latency_bound_us"] = *effective;
      const std::string driver = cpuidle_driver();
      r.derived["cpuidle_driver"] = driver.empty() ? "unknown" : driver;
      if (driver == "none")
        r.notes.push_back(
            "idle=held: no cpuidle driver is active (current_driver: none), so an idle CPU takes the architecture's "
            "default halt, which the latency request does not change; held and free measure the same idle path here");
    }
    CycleCounter cycles;
    Sampled measured = sample(probe, params, *workload, clock, timer, options, ops_per_iteration,
                              counter_plan(probe, params, placement), &cycles, options.batch, options.kept_batches);
    r.iterations_per_sample = measured.iterations_per_sample;
    const int main_cpu_end = current_cpu();
    const std::vector<TaskReport> partners = workload->finish();
    r.samples = measured.per_op;
    r.ops_per_sample = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(measured.iterations_per_sample) * ops_per_iteration));
    if (r.ops_per_sample == 0) r.ops_per_sample = 1;
    // The ops of the kept samples: the switch checks and per-op counts are over these.
    const double ops_total = static_cast<double>(measured.total_iterations) * ops_per_iteration;
    // Every op the workload performed (calibration, warm-up and set-aside
    // samples included), so a test can compare with what the kernel saw.
    r.derived["ops_executed"] = static_cast<double>(measured.all_iterations) * ops_per_iteration;
    r.derived["ops_in_figure"] = ops_total;
    if (measured.budget_hit)
      r.notes.push_back(fmt::format("sampling stopped after {} samples: the variant's time budget ({:.0f} s) ran out",
                                    measured.per_op.size(), options.max_variant_s));

    r.observed_start.assign(static_cast<std::size_t>(probe.tasks(params)), -1);
    r.observed_end = r.observed_start;
    r.observed_start[0] = main_cpu_start;
    r.observed_end[0] = main_cpu_end;
    for (const auto& p : partners) {
      if (p.task > 0 && static_cast<std::size_t>(p.task) < r.observed_start.size()) {
        r.observed_start[static_cast<std::size_t>(p.task)] = p.cpu_start;
        r.observed_end[static_cast<std::size_t>(p.task)] = p.cpu_end;
      }
    }
    if (probe.make_baseline && scope == Scope::variant)
      r.baseline = measure_baseline(probe, params, ctx, clock, timer, options);

    const Summary summary = summarize(r.samples);
    r.summary = summary;
    r.timer_corrected = true;
    const double ops_all = static_cast<double>(measured.all_iterations) * ops_per_iteration;
    const std::optional<Expectation> expectation = probe.expects ? probe.expects(params) : std::nullopt;
    if (expectation && !expectation->none())
      add_switch_checks(*expectation, ops_total, ops_all, measured.kept_switches, partners, r);
    if (probe.matrix && !probe.expects) add_preemption_check(measured.kept_switches, partners, r);
    add_placement_check(placement, r);
    if (probe.syscalls_per_op) r.derived["syscalls_per_op"] = probe.syscalls_per_op(params);
    const double shortest_batch_ns = summary.min * static_cast<double>(r.ops_per_sample);
    if (timer.resolution_ns > 0 && shortest_batch_ns < 100 * timer.resolution_ns)
      r.verdict.add(Status::suspect, Reason::timer_quantization,
                    fmt::format("the shortest batch lasted {:.0f} ns, under 100x the timer's resolution ({:.1f} ns)",
                                shortest_batch_ns, timer.resolution_ns));
    if (r.baseline && summary.median - r.baseline->value <= 0)
      r.verdict.add(Status::suspect, Reason::nonpositive_after_baseline,
                    nonpositive_detail(r.baseline->value, summary.median));
    if (measured.kept_cycles && ops_total > 0) {
      r.derived["core_cycles_per_op"] = static_cast<double>(*measured.kept_cycles) / ops_total;
      if (cycles.user_only()) r.derived["core_cycles_scope"] = "user mode only (perf_event_paranoid)";
    } else {
      r.derived["core_cycles_per_op"] = nullptr;
      r.derived["core_cycles_unavailable"] = cycles.error().empty() ? "counter read failed" : cycles.error();
    }
    // The samples set aside as interference stay in the record, in its unit, with their reasons.
    r.set_aside = measured.set_aside;
    r.set_aside_reasons = measured.set_aside_reasons;
    if (scope == Scope::variant) r.counters = measured.counters;
    if (probe.unit == Unit::msgs_per_s) {
      // The samples were ns per message; the unit asked for is a rate.
      for (double& v : r.samples) v = 1e9 / v;
      for (double& v : r.set_aside) v = 1e9 / v;
      r.summary = summarize(r.samples);
    }
    derive_from_summary(probe, clock.counts_ticks(), timer, r);
    if (scope == Scope::variant && options.reference && !measured.reference_ns.empty()) {
      Interference in;
      in.reference = options.reference->describe();
      in.retries = options.retries;
      in.attempts.push_back(judge_attempt(measured.reference_ns, options.reference->best_ns(), r.summary->median));
      in.attempts.back().set_aside = r.set_aside.size();
      if (!r.set_aside.empty()) in.attempts.back().set_aside_median = summarize(r.set_aside).median;
      if (r.counters) in.attempts.back().interfered_share = interfered_share(*r.counters);
      r.interference = std::move(in);
    }
    if (scope == Scope::variant) {
      // A matrix cell's samples are judged with the matrix (its cells differ
      // by design); a variant's must be one figure.
      r.stability = assess_stability(r.samples);
      if (r.stability && r.stability->unstable)
        r.verdict.add(Status::suspect, Reason::unstable, unstable_detail(*r.stability, r));
      if (expectation && expectation->none()) {
        Check check;
        if (auto problem = judge_no_switches(measured.all_switches, ops_all, check))
          r.verdict.add(Status::suspect, problem->first, problem->second);
        r.checks.push_back(check);
      }
      workload->annotate(r);
    }
  } catch (const ProbeError& e) {
    r.verdict.add(e.status, e.code, e.what());
  } catch (const std::exception& e) {
    r.verdict.add(Status::failed, Reason::error, e.what());
  }
}

// A CPU-pair matrix. Each cell is measured by measure_at with the pair as its
// placement (task 0 on the row CPU, task 1 on the column CPU), so calibration,
// warm-up, timer correction, the division into ops and the checks are exactly
// a variant's. The cells share the variant's sampling budget evenly (each
// still takes at least five samples), the baseline is measured once, on the
// first CPU, and the record's samples are every cell's samples in cell order.
void measure_matrix(const ProbeDescriptor& probe, const Params& params, Clock& clock, const TimerInfo& timer,
                    const HarnessOptions& options, Result& r) {
  const auto& spec = *probe.matrix;
  const std::vector<int> allowed = allowed_cpus();
  const Topology topology = read_topology(allowed, sysfs_root());
  const auto limit_param = params.find("max_pairs");
  const std::size_t limit = limit_param == params.end() ? 256 : std::stoul(limit_param->second);
  const MatrixPlan plan = plan_matrix(topology, allowed, spec.diagonal, limit);
  r.placement_requested = "matrix";
  r.placement_cpus = plan.cpus;
  if (plan.cpus.size() < 2) {
    r.verdict.add(Status::unsupported, Reason::placement_unavailable,
                  fmt::format("a CPU-pair matrix needs two CPUs but only CPU {} is allowed (affinity mask); run "
                              "without taskset or allow more CPUs",
                              plan.cpus.empty() ? -1 : plan.cpus.front()));
    return;
  }
  Matrix m;
  m.cpus = plan.cpus;
  m.rows = spec.rows;
  m.columns = spec.columns;
  m.diagonal = spec.diagonal ? "measured: each CPU with itself" : "not measured: " + spec.diagonal_why_not;
  m.pairs = plan.pairs;
  m.limit = plan.limit;
  m.sampled = plan.sampled;
  m.rule = plan.rule;
  m.topology = topology_json(topology);
  m.topology_root = topology.root;

  HarnessOptions per_cell = options;
  per_cell.reference = nullptr;  // cells differ by design; the matrix is not re-measured
  per_cell.counters = nullptr;   // nor judged sample by sample
  per_cell.max_variant_s = options.max_variant_s / static_cast<double>(plan.cells.size());
  std::vector<Check> summed;                                   // each check, added up over the cells
  std::map<Reason, std::pair<std::size_t, std::string>> seen;  // reason -> (cells, the first one's detail)
  std::size_t cut_short = 0;
  double ops_executed = 0;
  for (const auto& pair : plan.cells) {
    const std::string where = fmt::format("cell {}->{}", pair.first, pair.second);
    Result cell;
    measure_at(probe, params, Placement{"matrix", {pair.first, pair.second}, ""}, clock, timer, per_cell,
               Scope::matrix_cell, cell);
    if (cell.verdict.status == Status::unsupported || cell.verdict.status == Status::failed) {
      // A broken cell stops the matrix: the record says which and why.
      for (const auto& [code, detail] : cell.verdict.reasons)
        r.verdict.add(cell.verdict.status, code, where + ": " + detail);
      return;
    }
    MatrixCell c;
    c.row = pair.first;
    c.column = pair.second;
    c.pair_class = pair_class_name(pair.cls);
    c.first_sample = r.samples.size();
    c.summary = *cell.summary;
    c.ops_per_sample = cell.ops_per_sample;
    c.observed = cell.observed_start;
    r.samples.insert(r.samples.end(), cell.samples.begin(), cell.samples.end());
    for (const auto& check : cell.checks) add_to_totals(summed, check);
    for (const auto& check : cell.checks)
      if (check.name.find("_switches.") != std::string::npos && check.expected.is_number()) {
        c.switches_expected = c.switches_expected.value_or(0) + check.expected.get<double>();
        c.switches_observed = c.switches_observed.value_or(0) + check.observed.get<double>();
      }
    for (const auto& [code, detail] : cell.verdict.reasons) {
      c.problems.push_back(fmt::format("{}: {}", reason_name(code), detail));
      auto& [count, first] = seen[code];
      if (count++ == 0) first = where + ": " + detail;
    }
    cut_short += cell.notes.empty() ? 0 : 1;
    ops_executed += cell.derived.value("ops_executed", 0.0);
    r.ops_per_sample = r.ops_per_sample == 0 ? cell.ops_per_sample : std::min(r.ops_per_sample, cell.ops_per_sample);
    m.cells.push_back(std::move(c));
  }
  for (auto& check : summed) {
    if (check.name.find("_switches.") != std::string::npos && check.expected.is_number() &&
        check.observed.is_number()) {
      Check judged = check;
      judge_switches(check.expected.get<double>(), check.observed.get<double>(), judged);
      check.ratio = judged.ratio;
      check.ok = judged.ok;
      check.detail = fmt::format("summed over the {} cells; each cell is judged on its own (matrix cells' switches)",
                                 plan.cells.size());
    } else if (check.name == "placement") {
      check.expected = "each cell's two CPUs";
      check.observed = nullptr;
      check.detail = check.ok ? fmt::format("every task of the {} cells stayed on its CPU", plan.cells.size())
                              : "a task of some cell ran elsewhere (see the cells' problems)";
    }
    r.checks.push_back(check);
  }
  for (const auto& [code, what] : seen)
    r.verdict.add(Status::suspect, code,
                  fmt::format("{} of {} cells; the first, {}", what.first, plan.cells.size(), what.second));
  if (cut_short > 0)
    r.notes.push_back(
        fmt::format("{} of {} cells stopped sampling early: the matrix's budget ({:.0f} s) is shared "
                    "by its cells, each taking at least five samples",
                    cut_short, plan.cells.size(), options.max_variant_s));

  if (probe.make_baseline) {
    AffinityGuard restore_affinity;
    Context ctx(params, Placement{"matrix", {plan.cpus.front()}, ""}, options.quick);
    try {
      ctx.pin(0);
      HarnessOptions unjudged = options;
      unjudged.reference = nullptr;  // as the cells: a matrix is not judged by the host reference
      unjudged.counters = nullptr;
      r.baseline = measure_baseline(probe, params, ctx, clock, timer, unjudged);
    } catch (const ProbeError& e) {
      r.verdict.add(e.status, e.code, std::string("baseline: ") + e.what());
      return;
    }
  }
  // Per class: the summary of every sample of its cells, and how far the cells' medians spread.
  for (const auto& [name, counts] : plan.per_class) {
    MatrixClass k;
    k.name = name;
    k.pairs = counts.first;
    std::vector<double> pooled, medians;
    for (const auto& c : m.cells) {
      if (c.pair_class != name) continue;
      ++k.measured;
      pooled.insert(pooled.end(), r.samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample),
                    r.samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample + c.summary.n));
      medians.push_back(c.summary.median);
    }
    if (!pooled.empty()) {
      k.summary = summarize(pooled);
      k.lowest_cell_median = *std::min_element(medians.begin(), medians.end());
      k.highest_cell_median = *std::max_element(medians.begin(), medians.end());
    }
    m.classes.push_back(k);
  }
  const Summary summary = summarize(r.samples);
  r.summary = summary;
  r.timer_corrected = true;
  r.derived["ops_executed"] = ops_executed;
  r.derived["cells"] = static_cast<double>(m.cells.size());
  derive_from_summary(probe, clock.counts_ticks(), timer, r);
  if (r.baseline && summary.median - r.baseline->value <= 0)
    r.verdict.add(Status::suspect, Reason::nonpositive_after_baseline,
                  fmt::format("the baseline ({:.1f} ns) is not below the matrix's median ({:.1f} ns)",
                              r.baseline->value, summary.median));
  r.matrix = std::move(m);
}

}  // namespace

}  // namespace ctx
