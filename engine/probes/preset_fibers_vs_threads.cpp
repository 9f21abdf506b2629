// The fibers-vs-threads preset (`ctxbench-engine run --preset
// fibers-vs-threads`): the classic Boost.Fiber vs std::thread experiment,
// made trustworthy. Four workers take turns round-robin on one CPU, each
// making 1,000,000 switches (100,000 with --quick): once as Boost.Fiber
// fibers on one thread (this_fiber::yield), once as kernel threads handing a
// futex baton on (SCHED_BATCH, as switch.threads_round_robin does).
//
// Each switch is timed on its own: the worker giving up the CPU reads the
// clock just before, the worker resuming reads it just after, so every
// interval is exactly one switch (a worker's own yield-to-return would span
// all four). Every such interval contains one timer call's cost, so the cost
// of the same number of back-to-back timer-call pairs is measured on the same
// CPU just before each run and subtracted: both figures are printed, and the
// record's samples (means over chunks of 10,000 switches) are the corrected
// ones; the printed per-switch figures are their medians. The kernel's
// switch counts are checked: each thread sleeps once per turn; fibers never.
// The only output is the side-by-side table on the preset's stream and one
// record per kind through the run's reporters.
#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "presets.hpp"
#include "uswitch_common.hpp"

#if CTXBENCH_HAVE_BOOST_FIBER
#include <boost/fiber/all.hpp>
#endif

namespace {
using namespace ctx;

constexpr int workers = 4;
constexpr std::uint64_t chunk = 10000;  // switches per record sample

// What one worker saw: its timed switches (the ones it resumed from) and
// the kernel's view of it.
struct Tally {
  std::uint64_t ticks = 0, switches = 0;
  std::uint64_t chunk_ticks = 0, chunk_switches = 0;
  std::vector<double> chunk_means;  // ticks per switch, per chunk
  SwitchCount kernel{};
  int cpu_start = -1, cpu_end = -1;
  void add(std::uint64_t interval) {
    ticks += interval;
    ++switches;
    chunk_ticks += interval;
    if (++chunk_switches == chunk) {
      chunk_means.push_back(static_cast<double>(chunk_ticks) / static_cast<double>(chunk));
      chunk_ticks = chunk_switches = 0;
    }
  }
};

// The stamp a worker leaves when it gives up the CPU; 0 when none is pending.
// Ordered by the hand-off itself (the futex baton's release/acquire, or the
// single thread the fibers share).
struct Stamp {
  Clock& clock;
  std::atomic<std::uint64_t> out{0};
};

// A worker's life: one untimed lap so that everybody has started, then `n`
// timed turns. `hand_off` gives the CPU to the next worker and returns when
// this one's turn comes round again. Whoever resumes takes the stamp the
// worker before it left (after the warm-up lap too: the first timed turns of
// the others start then), so that each of the n x workers timed turns is
// measured exactly once.
template <class HandOff>
void take_turns(Stamp& stamp, Tally& tally, std::uint64_t n, HandOff hand_off) {
  auto take_stamp = [&] {
    const std::uint64_t in = stamp.clock.now();  // the first thing after the switch
    const std::uint64_t out = stamp.out.exchange(0, std::memory_order_relaxed);
    if (out != 0) tally.add(in - out);  // the worker that ran before us stamped it
  };
  hand_off();  // warm-up lap
  take_stamp();
  for (std::uint64_t i = 0; i < n; ++i) {
    stamp.out.store(stamp.clock.now(), std::memory_order_relaxed);  // the last thing before the switch
    hand_off();
    take_stamp();
  }
}

struct KindRun {
  std::string kind;  // "fibers" | "threads"
  std::optional<Support> unsupported;
  std::string error;
  std::vector<Tally> tallies = std::vector<Tally>(workers);
  std::uint64_t wall_ticks = 0;
  int cpu = -1;
};

double ns_per_tick(Clock& clock) { return clock.ticks_to_ns(1'000'000'000) / 1e9; }

void pin_or_throw(int cpu) {
  if (!pin_current_thread(cpu))
    throw ProbeError(Reason::placement_unavailable, fmt::format("cannot pin to CPU {}", cpu), Status::unsupported);
}

// ---- the two kinds -------------------------------------------------------------

KindRun run_fibers([[maybe_unused]] Clock& clock, [[maybe_unused]] std::uint64_t n, int cpu) {
  KindRun run;
  run.kind = "fibers";
  run.cpu = cpu;
#if CTXBENCH_HAVE_BOOST_FIBER
  std::thread thread([&] {
    try {
      pin_or_throw(cpu);
      Stamp stamp{clock};
      const SwitchCount before = thread_switches();
      std::vector<boost::fibers::fiber> fibers;
      for (int w = 0; w < workers; ++w)
        fibers.emplace_back([&, w] {
          Tally& tally = run.tallies[static_cast<std::size_t>(w)];
          tally.cpu_start = current_cpu();
          take_turns(stamp, tally, n, [] { boost::this_fiber::yield(); });
          tally.cpu_end = current_cpu();
        });
      const std::uint64_t start = clock.now();
      for (auto& f : fibers) f.join();  // the workers run while this (main) fiber waits
      run.wall_ticks = clock.now() - start;
      const SwitchCount after = thread_switches();
      // The fibers share one thread: its kernel switches are theirs.
      run.tallies[0].kernel = {after.voluntary - before.voluntary, after.involuntary - before.involuntary};
    } catch (const ProbeError& e) {
      if (e.status == Status::unsupported) run.unsupported = Support::no(e.code, e.what());
      run.error = e.what();
    } catch (const std::exception& e) {
      run.error = e.what();
    }
  });
  thread.join();
#else
  run.unsupported = uswitch::boost_support();
#endif
  return run;
}

KindRun run_threads(Clock& clock, std::uint64_t n, int cpu) {
  KindRun run;
  run.kind = "threads";
  run.cpu = cpu;
  uswitch::FutexBaton baton(workers);
  Stamp stamp{clock};
  std::atomic<int> ready{0};
  std::vector<std::string> errors(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      Tally& tally = run.tallies[static_cast<std::size_t>(w)];
      const int next = (w + 1) % workers;
      try {
        pin_or_throw(cpu);
        set_thread_policy("batch");  // a woken thread does not preempt its waker: one switch per hand-off
        tally.cpu_start = current_cpu();
        const SwitchCount before = thread_switches();
        ready.fetch_add(1);
        baton.wait(w);  // the start: the coordinator gives the baton to worker 0
        take_turns(stamp, tally, n, [&] {
          baton.pass(next);
          baton.wait(w);
        });
        baton.pass(next);  // let the next worker finish too
        const SwitchCount after = thread_switches();
        tally.kernel = {after.voluntary - before.voluntary, after.involuntary - before.involuntary};
        tally.cpu_end = current_cpu();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(w)] = e.what();
        baton.pass(next);  // do not leave the others waiting
      }
    });
  while (ready.load() < workers) std::this_thread::yield();
  const std::uint64_t start = clock.now();
  baton.pass(0);
  for (auto& t : threads) t.join();
  run.wall_ticks = clock.now() - start;
  for (const auto& e : errors)
    if (!e.empty() && run.error.empty()) run.error = e;
  return run;
}

// The cost of `pairs` back-to-back timer-call pairs on `cpu`, what the stamps
// add to every measured switch: the median over chunks of 10,000 pairs of the
// mean per pair, in ticks (a median, like the switch figure it is subtracted
// from, so that a preemption in one chunk moves neither).
struct TimerPairs {
  double median_ticks = 0;
  double mean_ticks = 0;
};

TimerPairs timer_pairs(Clock& clock, std::uint64_t pairs, int cpu) {
  TimerPairs result;
  std::thread thread([&] {
    pin_current_thread(cpu);
    std::vector<double> chunk_means;
    std::uint64_t sum = 0, chunk_sum = 0;
    for (std::uint64_t i = 1; i <= pairs; ++i) {
      const std::uint64_t before = clock.now();
      const std::uint64_t after = clock.now();
      sum += after - before;
      chunk_sum += after - before;
      if (i % chunk == 0) {
        chunk_means.push_back(static_cast<double>(chunk_sum) / static_cast<double>(chunk));
        chunk_sum = 0;
      }
    }
    result.mean_ticks = static_cast<double>(sum) / static_cast<double>(pairs);
    result.median_ticks = chunk_means.empty() ? result.mean_ticks : summarize(chunk_means).median;
  });
  thread.join();
  return result;
}

// ---- records and the table --------------------------------------------------------

struct Figures {
  bool measured = false;
  std::uint64_t switches = 0;
  double total_s = 0;
  double pair_ns = 0;            // one timer-call pair (median over chunks)
  double per_switch_raw_ns = 0;  // median over chunks of the stamped intervals
  double per_switch_ns = 0;      // the same, timer-corrected
};

Result make_record(const KindRun& run, std::uint64_t n, const TimerPairs& pairs, Clock& clock,
                   const PresetContext& preset, Figures& figures) {
  const double pair_ns = pairs.median_ticks * ns_per_tick(clock);
  const bool fibers = run.kind == "fibers";
  Result r;
  r.run_id = preset.run_id;
  r.probe = fibers ? "uswitch.boost_fiber" : "switch.threads_round_robin";
  r.family = fibers ? "uswitch" : "switch";
  r.params = {{fibers ? "fibers" : "threads", std::to_string(workers)},
              {"cpus", "same"},
              {"preset", "fibers-vs-threads"},
              {"switches_per_worker", std::to_string(n)},
              {"timing", "per_switch_stamps"}};
  if (!fibers) r.params["policy"] = "batch";
  r.numeric_params = {{fibers ? "fibers" : "threads", workers}, {"switches_per_worker", static_cast<double>(n)}};
  r.unit = Unit::ns;
  r.op = fibers ? "one Boost.Fiber switch (this_fiber::yield) from one of 4 fibers to the next, round-robin on one "
                  "thread, timed by a clock read just before and just after it"
                : "one kernel context switch (futex hand-off) from one of 4 threads to the next, round-robin on one "
                  "CPU, timed by a clock read just before and just after it";
  r.started_at = utc_now_iso();
  r.timer_source = clock.name();
  r.timer_overhead_ns = pair_ns;  // subtracted from every switch
  r.timer_resolution_ns = preset.timer.resolution_ns;
  r.placement_requested = "same";
  r.placement_cpus.assign(workers, run.cpu);
  if (run.unsupported) {
    r.verdict.add(Status::unsupported, run.unsupported->code, run.unsupported->reason);
    return r;
  }
  if (!run.error.empty()) {
    r.verdict.add(Status::failed, Reason::error, run.error);
    return r;
  }

  const double tick_ns = ns_per_tick(clock);
  std::uint64_t ticks = 0, switches = 0;
  std::vector<double> raw;  // ns per switch, per chunk, uncorrected
  for (const auto& t : run.tallies) {
    ticks += t.ticks;
    switches += t.switches;
    for (double mean : t.chunk_means) raw.push_back(mean * tick_ns);
    r.observed_start.push_back(t.cpu_start);
    r.observed_end.push_back(t.cpu_end);
  }
  if (raw.empty()) {
    r.verdict.add(Status::failed, Reason::error, "no switch was timed");
    return r;
  }
  for (double v : raw) r.samples.push_back(v - pair_ns);  // one timer-call pair per switch
  figures.measured = true;
  figures.switches = switches;
  figures.total_s = static_cast<double>(run.wall_ticks) * tick_ns / 1e9;
  figures.pair_ns = pair_ns;
  figures.per_switch_raw_ns = summarize(raw).median;
  figures.per_switch_ns = figures.per_switch_raw_ns - pair_ns;
  r.duration_s = figures.total_s;
  r.ops_per_sample = chunk;
  r.timer_corrected = true;
  r.summary = summarize(r.samples);
  r.derived["switches"] = static_cast<double>(switches);
  r.derived["total_s"] = figures.total_s;
  r.derived["timer_pair_ns"] = pair_ns;
  r.derived["timer_pair_mean_ns"] = pairs.mean_ticks * tick_ns;
  r.derived["per_switch_uncorrected_ns"] = figures.per_switch_raw_ns;
  r.derived["per_switch_ns"] = figures.per_switch_ns;
  r.derived["per_switch_mean_uncorrected_ns"] = static_cast<double>(ticks) * tick_ns / static_cast<double>(switches);
  r.derived["per_switch_wall_ns"] = figures.total_s * 1e9 / static_cast<double>(switches);

  Check counted;
  counted.name = "timed_switches";
  counted.expected = static_cast<double>(workers * n);
  counted.observed = static_cast<double>(switches);
  counted.ok = switches == workers * n;
  counted.detail = "every timed turn's stamp was taken by the next worker";
  if (!counted.ok) r.verdict.add(Status::suspect, Reason::error, "not every timed switch was measured");
  r.checks.push_back(counted);

  if (fibers) {
    const SwitchCount& k = run.tallies[0].kernel;
    Check kernel;
    kernel.name = "kernel_not_involved";
    const double per_switch = static_cast<double>(k.voluntary + k.involuntary) / static_cast<double>(switches);
    kernel.expected = "0 kernel context switches per fiber switch";
    kernel.observed = per_switch;
    kernel.ok = per_switch < 0.01;
    kernel.detail = fmt::format("the fibers' thread: {} voluntary, {} involuntary", k.voluntary, k.involuntary);
    if (!kernel.ok) r.verdict.add(Status::suspect, Reason::too_many_switches, "the kernel switched the fibers' thread");
    r.checks.push_back(kernel);
  } else {
    // Each thread sleeps in FUTEX_WAIT at its start, in the warm-up lap and
    // once per timed turn.
    Check kernel;
    kernel.name = "voluntary_switches.workers";
    kernel.detail = "each thread sleeps once per turn (n timed + start + warm-up)";
    double observed = 0;
    for (const auto& t : run.tallies) observed += static_cast<double>(t.kernel.voluntary);
    if (auto problem = judge_switches(static_cast<double>(workers * (n + 2)), observed, kernel))
      r.verdict.add(Status::suspect, problem->first, problem->second);
    r.checks.push_back(kernel);
  }
  Check placement;
  placement.name = "placement";
  placement.expected = r.placement_cpus;
  placement.observed = nlohmann::json{{"start", r.observed_start}, {"end", r.observed_end}};
  placement.ok = true;
  for (std::size_t t = 0; t < r.observed_start.size(); ++t)
    placement.ok = placement.ok && r.observed_start[t] == run.cpu && r.observed_end[t] == run.cpu;
  if (!placement.ok)
    r.verdict.add(Status::suspect, Reason::migrated, "a worker ran on a CPU other than the one it was pinned to");
  r.checks.push_back(placement);
  if (r.summary->median <= 0)
    r.verdict.add(Status::suspect, Reason::nonpositive_after_baseline,
                  "the timer-call cost is not below the measured switch: the figure is the timer's");
  r.notes.push_back(
      fmt::format("fibers-vs-threads preset: {} workers x {} switches; every switch timed by one clock "
                  "read pair; the cost of {} back-to-back pairs ({:.1f} ns each) subtracted",
                  workers, n, workers * n, pair_ns));
  return r;
}

std::string fmt_count(std::uint64_t value) {
  std::string digits = std::to_string(value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void print_table(std::FILE* out, std::uint64_t n, int cpu, const std::string& clock_name,
                 const std::vector<std::pair<std::string, Figures>>& rows, const std::vector<Result>& records) {
  fmt::print(out, "\nfibers-vs-threads: {} workers x {} switches each, round-robin on CPU {}\n", workers, fmt_count(n),
             cpu);
  fmt::print(out,
             "every switch timed by a {} read just before and just after it; the cost of {} back-to-back read\n"
             "pairs, measured just before each run on the same CPU, is subtracted. Per-switch figures are medians\n"
             "over chunks of {} switches.\n\n",
             clock_name, fmt_count(workers * n), fmt_count(chunk));
  fmt::print(out, "{:<24} {:>10} {:>9} {:>11} {:>11} {:>11}  {}\n", "", "switches", "total", "per switch", "timer pair",
             "corrected", "verdict");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [label, f] = rows[i];
    const Result& r = records[i];
    if (!f.measured) {
      const std::string why = r.verdict.reasons.empty() ? "" : r.verdict.reasons.front().second;
      fmt::print(out, "{:<24} {:>10} {:>9} {:>11} {:>11} {:>11}  {}: {}\n", label, "-", "-", "-", "-", "-",
                 status_name(r.verdict.status), why);
      continue;
    }
    fmt::print(out, "{:<24} {:>10} {:>9} {:>11} {:>11} {:>11}  {}\n", label, fmt_count(f.switches),
               fmt::format("{:.3f} s", f.total_s), format_ns(f.per_switch_raw_ns), format_ns(f.pair_ns),
               format_ns(f.per_switch_ns), status_name(r.verdict.status));
  }
  const Figures& fib = rows[0].second;
  const Figures& thr = rows[1].second;
  if (fib.measured && thr.measured && fib.per_switch_ns > 0 && thr.per_switch_ns > 0) {
    fmt::print(out,
               "\nfiber/thread ratio (per switch, corrected): {:.4f}: a kernel thread switch costs {:.1f}x a "
               "fiber switch ({:.1f}x uncorrected)\n",
               fib.per_switch_ns / thr.per_switch_ns, thr.per_switch_ns / fib.per_switch_ns,
               thr.per_switch_raw_ns / fib.per_switch_raw_ns);
  } else {
    fmt::print(out,
               "\nfiber/thread ratio: not available (a side was not measured, or its corrected figure is not "
               "positive)\n");
  }
  std::fflush(out);
}

int run_preset(PresetContext& preset) {
  const std::uint64_t n = preset.options.quick ? 100000 : 1000000;
  const std::vector<int> cpus = allowed_cpus();
  const int cpu = cpus.empty() ? 0 : cpus.front();
  fmt::print(stderr, "fibers-vs-threads: {} workers x {} switches, fibers then threads, on CPU {}\n", workers,
             fmt_count(n), cpu);
  // Each kind right after its own timer-pair measurement, so that both see
  // the machine in the same state.
  std::vector<Result> records;
  std::vector<std::pair<std::string, Figures>> rows;
  for (const bool fibers : {true, false}) {
    const TimerPairs pairs = timer_pairs(preset.clock, workers * n, cpu);
    const KindRun run = fibers ? run_fibers(preset.clock, n, cpu) : run_threads(preset.clock, n, cpu);
    Figures f;
    records.push_back(make_record(run, n, pairs, preset.clock, preset, f));
    rows.emplace_back(fibers ? "Boost.Fiber (4 fibers)" : "kernel threads (4)", f);
  }
  const Figures& fib = rows[0].second;
  const Figures& thr = rows[1].second;
  if (fib.measured && thr.measured && thr.per_switch_ns > 0 && fib.per_switch_ns > 0)
    for (auto& r : records) {
      r.derived["fiber_over_thread"] = fib.per_switch_ns / thr.per_switch_ns;
      r.derived["thread_over_fiber"] = thr.per_switch_ns / fib.per_switch_ns;
    }
  for (const auto& r : records) preset.output.result(r);
  print_table(preset.table, n, cpu, preset.clock.name(), rows, records);
  for (const auto& r : records)
    if (r.verdict.status == Status::failed) return 1;
  return 0;
}

const PresetRegistrar preset_registrar({
    .name = "fibers-vs-threads",
    .description = "4 workers x 1,000,000 switches each, Boost.Fiber vs kernel threads on one CPU, every switch timed "
                   "and the timer-call cost (same number of pairs) subtracted; prints both side by side with the "
                   "ratio",
    .run = run_preset,
});

}  // namespace
