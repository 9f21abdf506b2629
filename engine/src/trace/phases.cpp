// Follows each switch through the events (see phases.hpp) and sums up the
// phases between consecutive marks.
#include "trace/phases.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_map>

namespace ctx {

namespace {

enum Mark : int {
  call_entry,
  waking,
  ipi_entry,
  poll_wake,
  wakeup,
  ipi_exit,
  idle_exit,
  other_task,
  switch_in,
  call_exit,
  next_call,
  // Not marks of a chain: the tiling's phase for time between chains when
  // one of the variant's tasks was on a CPU (phases.hpp).
  between_switches,
  variant_ran,
};
static_assert(std::size(mark_names) == variant_ran + 1);

struct MarkAt {
  std::uint64_t ts;
  int mark;
  int cpu;
  auto operator<=>(const MarkAt&) const = default;
};

struct Chain {
  int wakee = -1;
  int waker_cpu = -1;
  int switch_cpu = -1;
  bool switched = false;
  bool direct = false;
  bool done = false;
  std::uint64_t waking_ts = 0;
  std::vector<MarkAt> marks;
  bool has(int mark) const {
    return std::any_of(marks.begin(), marks.end(), [&](const MarkAt& m) { return m.mark == mark; });
  }
};

// The last time each per-CPU mark was seen on a CPU.
struct CpuMarks {
  std::uint64_t ipi_entry = 0, ipi_exit = 0, idle_exit = 0, poll_wake = 0;
  int poll_wake_cpu = -1;  // where the waker ran
};

// The median batch, or the middle two of an even count, in time order: the
// batches whose time per operation is the median.
std::vector<TimedBatch> median_batches(const std::vector<TimedBatch>& all) {
  std::vector<TimedBatch> sorted = all;
  const auto per_op = [](const TimedBatch& b) {
    return b.ops > 0 ? static_cast<double>(b.end - b.start) / b.ops : 0.0;
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const TimedBatch& x, const TimedBatch& y) { return per_op(x) < per_op(y); });
  const std::size_t n = sorted.size();
  std::vector<TimedBatch> middle(sorted.begin() + static_cast<std::ptrdiff_t>((n - 1) / 2),
                                 sorted.begin() + static_cast<std::ptrdiff_t>(n / 2 + 1));
  std::sort(middle.begin(), middle.end(), [](const TimedBatch& x, const TimedBatch& y) { return x.start < y.start; });
  return middle;
}

// The tiling (phases.hpp): every chain's phases as intervals, each instant of
// the median batches given to the earliest-starting interval that covers it.
using Span = std::pair<std::uint64_t, std::uint64_t>;  // [first, second)

// When one of the variant's tasks was on a CPU, merged over the CPUs, in
// time order: a task is on a CPU from the switch that brings it in to the
// switch that takes it out, where that switch names it as the task leaving
// (otherwise an event between was lost, and the span is dropped); a span
// still open at the end ends at the CPU's last recorded event.
std::vector<Span> variant_on_cpu(const std::vector<TraceEvent>& events, const std::set<int>& ours) {
  struct Current {
    int task = -1;
    std::uint64_t since = 0;
  };
  std::map<int, Current> current;
  std::map<int, std::uint64_t> last;
  std::vector<Span> spans;
  for (const auto& e : events) {
    last[e.cpu] = e.ts;
    if (e.kind != TraceKind::sched_switch) continue;
    Current& c = current[e.cpu];
    if (c.task >= 0 && c.task == e.a && e.ts > c.since) spans.push_back({c.since, e.ts});
    c = ours.count(static_cast<int>(e.b)) ? Current{static_cast<int>(e.b), e.ts} : Current{};
  }
  for (const auto& [cpu, c] : current)
    if (c.task >= 0 && last[cpu] > c.since) spans.push_back({c.since, last[cpu]});
  std::sort(spans.begin(), spans.end());
  std::vector<Span> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, s.second);
    else
      merged.push_back(s);
  }
  return merged;
}

// Time of [from, to) inside the spans (sorted, disjoint).
std::uint64_t overlap(const std::vector<Span>& spans, std::uint64_t from, std::uint64_t to) {
  std::uint64_t ns = 0;
  auto it =
      std::lower_bound(spans.begin(), spans.end(), from, [](const Span& s, std::uint64_t t) { return s.second <= t; });
  for (; it != spans.end() && it->first < to; ++it) {
    const std::uint64_t lo = std::max(from, it->first), hi = std::min(to, it->second);
    if (hi > lo) ns += hi - lo;
  }
  return ns;
}

Tiling tile(const std::vector<Chain>& chains, const std::vector<TimedBatch>& all, const std::vector<Span>& ran) {
  const std::vector<TimedBatch> batches = median_batches(all);
  struct Interval {
    std::uint64_t from, to;
    std::pair<int, int> phase;
    std::size_t chain;
  };
  std::vector<Interval> intervals;
  for (std::size_t c = 0; c < chains.size(); ++c) {
    const Chain& chain = chains[c];
    if (!chain.done) continue;
    for (std::size_t i = 1; i < chain.marks.size(); ++i)
      intervals.push_back(
          {chain.marks[i - 1].ts, chain.marks[i].ts, {chain.marks[i - 1].mark, chain.marks[i].mark}, c});
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& x, const Interval& y) { return x.from != y.from ? x.from < y.from : x.to < y.to; });
  // Time of [from, to) inside the batches.
  auto inside = [&](std::uint64_t from, std::uint64_t to) {
    std::uint64_t ns = 0;
    for (const auto& b : batches) {
      const std::uint64_t lo = std::max(from, b.start), hi = std::min(to, b.end);
      if (hi > lo) ns += hi - lo;
    }
    return ns;
  };
  Tiling tiling;
  tiling.samples = all.size();
  tiling.batches = batches.size();
  for (const auto& b : batches) {
    tiling.switches += b.ops;
    if (b.end > b.start) tiling.batch_ns += static_cast<double>(b.end - b.start);
  }
  std::map<std::pair<int, int>, std::uint64_t> ns;
  std::set<std::size_t> reaching;
  std::uint64_t covered_until = 0;
  std::vector<Span> covered;  // the chain time counted: disjoint, in time order
  for (const auto& iv : intervals) {
    const std::uint64_t from = std::max(iv.from, covered_until);
    if (from > iv.from) tiling.overlap_ns += static_cast<double>(inside(iv.from, std::min(from, iv.to)));
    if (from >= iv.to) continue;
    if (const std::uint64_t t = inside(from, iv.to); t > 0) {
      ns[iv.phase] += t;
      reaching.insert(iv.chain);
    }
    covered.push_back({from, iv.to});
    covered_until = iv.to;
  }
  // Between chains: the time one of the variant's tasks was on a CPU is a
  // hand-over without a wake-up (the partner had not slept), its own phase;
  // the time none was is left.
  for (const auto& b : batches) {
    std::uint64_t cursor = b.start;
    auto gap = [&](std::uint64_t to) {
      if (to > cursor)
        if (const std::uint64_t t = overlap(ran, cursor, to); t > 0) ns[{between_switches, variant_ran}] += t;
    };
    auto it = std::lower_bound(covered.begin(), covered.end(), b.start,
                               [](const Span& c, std::uint64_t t) { return c.second <= t; });
    for (; it != covered.end() && it->first < b.end; ++it) {
      gap(std::min(it->first, b.end));
      cursor = std::max(cursor, it->second);
    }
    gap(b.end);
  }
  tiling.chains = reaching.size();
  if (tiling.switches > 0) tiling.traced_per_switch_ns = tiling.batch_ns / tiling.switches;
  std::uint64_t covered_ns = 0;  // at most the batches' time: the intervals counted are disjoint and inside them
  for (const auto& [phase, t] : ns) {
    covered_ns += t;
    TiledPhase p;
    p.from = mark_names[phase.first];
    p.to = mark_names[phase.second];
    p.per_switch_ns = tiling.switches > 0 ? static_cast<double>(t) / tiling.switches : 0;
    p.share = tiling.batch_ns > 0 ? static_cast<double>(t) / tiling.batch_ns : 0;
    tiling.phases.push_back(std::move(p));
  }
  if (tiling.batch_ns > 0) tiling.covered_share = static_cast<double>(covered_ns) / tiling.batch_ns;
  return tiling;
}

// Follows the events in time order and builds the chains, one per hand-over
// from one of the variant's tasks to another (phases.hpp).
class ChainFollower {
 public:
  ChainFollower(const std::set<int>& ours, PhaseReport& report) : ours_(ours), report_(report) {}

  void follow(const TraceEvent& e) {
    if (is_ours(e.tid)) seen.insert(e.tid);
    switch (e.kind) {
      case TraceKind::fork: break;  // read by variant_tasks
      case TraceKind::sys_enter:
        if (is_ours(e.tid)) open_call_[e.tid] = e.ts;
        break;
      case TraceKind::sys_exit: on_sys_exit(e); break;
      case TraceKind::waking: on_waking(e); break;
      case TraceKind::wakeup: {
        const auto it = pending_.find(static_cast<int>(e.a));
        if (it != pending_.end() && !chains[it->second].switched && !chains[it->second].has(wakeup))
          chains[it->second].marks.push_back({e.ts, wakeup, e.cpu});
        break;
      }
      case TraceKind::sched_switch: on_sched_switch(e); break;
      case TraceKind::wake_idle_poll:
        cpu_marks_[static_cast<int>(e.a)].poll_wake = e.ts;
        cpu_marks_[static_cast<int>(e.a)].poll_wake_cpu = e.cpu;
        break;
      case TraceKind::cpu_idle:
        if (e.a == idle_exit_state) cpu_marks_[e.cpu].idle_exit = e.ts;
        break;
      case TraceKind::ipi_entry: cpu_marks_[e.cpu].ipi_entry = e.ts; break;
      case TraceKind::ipi_exit: cpu_marks_[e.cpu].ipi_exit = e.ts; break;
    }
  }

  std::set<int> seen;
  std::vector<Chain> chains;

 private:
  struct Away {
    int task;             // one of ours, switched out inside a call
    std::uint64_t entry;  // that call's entry
    std::uint64_t ts;     // when a task not of the variant (or idle) got its CPU
  };

  bool is_ours(std::int64_t tid) const { return tid > 0 && ours_.count(static_cast<int>(tid)) > 0; }

  void on_sys_exit(const TraceEvent& e) {
    if (!is_ours(e.tid)) return;
    if (const auto it = pending_.find(e.tid); it != pending_.end()) {
      Chain& chain = chains[it->second];
      // Woken before it slept: no switch, but the chain goes on to the
      // task's next call all the same (it is part of the ping-pong).
      if (!chain.switched) ++report_.without_switch;
      chain.marks.push_back({e.ts, call_exit, e.cpu});
      chain.done = true;
      awaiting_next_[e.tid] = it->second;
      pending_.erase(it);
    }
    open_call_.erase(e.tid);
  }

  void on_waking(const TraceEvent& e) {
    const auto call = open_call_.find(e.tid);
    if (!is_ours(e.tid) || !is_ours(e.a) || e.a == e.tid || call == open_call_.end()) return;
    ++report_.woken;
    link_next_call(e.tid, call->second, e.cpu);
    Chain chain;
    chain.wakee = static_cast<int>(e.a);
    chain.waker_cpu = e.cpu;
    chain.waking_ts = e.ts;
    chain.marks = {{call->second, call_entry, e.cpu}, {e.ts, waking, e.cpu}};
    start_chain(std::move(chain));
  }

  void on_sched_switch(const TraceEvent& e) {
    const int prev = static_cast<int>(e.a), next = static_cast<int>(e.b);
    if (is_ours(prev)) left_in_call_[prev] = open_call_.count(prev) > 0;
    if (!is_ours(next)) {
      // One of ours gave the CPU away inside a call to a task that is not
      // the variant's (or to idle): what runs until one of ours comes back
      // is other work, a phase of the hand-over.
      if (const auto call = open_call_.find(prev); is_ours(prev) && call != open_call_.end())
        away_[e.cpu] = {prev, call->second, e.ts};
      return;
    }
    const auto gone = away_.find(e.cpu);
    std::optional<Away> left;
    if (gone != away_.end()) {
      left = gone->second;
      away_.erase(gone);
    }
    if (const auto it = pending_.find(next); it != pending_.end()) {
      switch_in_woken(it->second, e, left);
      return;
    }
    // No wake-up: a task that stays runnable gets the CPU from one of ours
    // that gave it away in a call, at once (yield) or after other work.
    if (!is_ours(prev) && left && left->task != next && open_call_.count(left->task)) {
      link_next_call(left->task, left->entry, e.cpu);
      start_direct_chain(next, e.cpu,
                         {{left->entry, call_entry, e.cpu}, {left->ts, other_task, e.cpu}, {e.ts, switch_in, e.cpu}});
      return;
    }
    const auto call = open_call_.find(prev);
    if (!is_ours(prev) || call == open_call_.end()) return;
    link_next_call(prev, call->second, e.cpu);
    start_direct_chain(next, e.cpu, {{call->second, call_entry, e.cpu}, {e.ts, switch_in, e.cpu}});
  }

  // A woken task switched in: its chain takes the switch and what happened
  // on its CPU since the waking.
  void switch_in_woken(std::size_t index, const TraceEvent& e, const std::optional<Away>& left) {
    Chain& chain = chains[index];
    if (chain.switched) return;
    chain.switched = true;
    chain.switch_cpu = e.cpu;
    chain.marks.push_back({e.ts, switch_in, e.cpu});
    if (left && left->ts > chain.waking_ts) chain.marks.push_back({left->ts, other_task, e.cpu});
    if (e.cpu != chain.waker_cpu) {
      // What happened on the wakee's CPU between the waking and the switch.
      const CpuMarks& m = cpu_marks_[e.cpu];
      const auto between = [&](std::uint64_t t) { return t > chain.waking_ts && t <= e.ts; };
      if (between(m.ipi_entry)) chain.marks.push_back({m.ipi_entry, ipi_entry, e.cpu});
      if (between(m.ipi_exit) && m.ipi_exit >= m.ipi_entry) chain.marks.push_back({m.ipi_exit, ipi_exit, e.cpu});
      if (between(m.idle_exit)) chain.marks.push_back({m.idle_exit, idle_exit, e.cpu});
      if (between(m.poll_wake)) chain.marks.push_back({m.poll_wake, poll_wake, m.poll_wake_cpu});
    }
    end_at_switch_in(index);
  }

  // A chain that `starter` begins at `entry` is the next call of the chain
  // that last switched `starter` in.
  void link_next_call(int starter, std::uint64_t entry, int starter_cpu) {
    const auto it = awaiting_next_.find(starter);
    if (it == awaiting_next_.end()) return;
    Chain& before = chains[it->second];
    if (!before.marks.empty() && entry >= before.marks.back().ts)
      before.marks.push_back({entry, next_call, starter_cpu});
    awaiting_next_.erase(it);
  }

  // A task preempted in user mode comes back to user mode: its chain ends at
  // the switch, with no call exit.
  void end_at_switch_in(std::size_t index) {
    Chain& chain = chains[index];
    const auto left = left_in_call_.find(chain.wakee);
    if (left == left_in_call_.end() || left->second) return;
    chain.done = true;
    awaiting_next_[chain.wakee] = index;
    pending_.erase(chain.wakee);
  }

  void start_chain(Chain chain) {
    if (const auto old = pending_.find(chain.wakee); old != pending_.end()) pending_.erase(old);  // superseded
    chains.push_back(std::move(chain));
    pending_[chains.back().wakee] = chains.size() - 1;
  }

  // A hand-over with no wake-up: the CPU goes straight to a runnable task of
  // the variant, switched in at once, its chain done at the switch-in.
  void start_direct_chain(int wakee, int cpu, std::vector<MarkAt> marks) {
    Chain chain;
    chain.wakee = wakee;
    chain.waker_cpu = cpu;
    chain.switch_cpu = cpu;
    chain.switched = true;
    chain.direct = true;
    chain.marks = std::move(marks);
    start_chain(std::move(chain));
    end_at_switch_in(chains.size() - 1);
  }

  const std::set<int>& ours_;
  PhaseReport& report_;
  std::unordered_map<int, std::uint64_t> open_call_;    // task -> its current call's entry
  std::unordered_map<int, std::size_t> pending_;        // wakee -> chain not yet done
  std::unordered_map<int, std::size_t> awaiting_next_;  // task -> done chain waiting for the task's next call
  std::map<int, CpuMarks> cpu_marks_;
  std::unordered_map<int, bool> left_in_call_;  // task -> it was switched out inside a call (else preempted in user)
  std::map<int, Away> away_;                    // CPU -> since one of ours gave it to other work
};

// The phases between consecutive marks of the done, switched chains (whose
// marks this puts in time order), summed up into the report.
void sum_phases(std::vector<Chain>& chains, const std::vector<TraceEvent>& events, std::optional<double> event_cost_ns,
                PhaseReport& report) {
  // Every recorded event's time, per CPU: a phase holds the events recorded
  // on the CPU where it ends, from its start up to (not with) its end.
  std::map<int, std::vector<std::uint64_t>> times;
  for (const auto& e : events) times[e.cpu].push_back(e.ts);
  auto events_in = [&](std::uint64_t from, std::uint64_t to, int cpu) {
    const auto& t = times[cpu];
    return static_cast<double>(std::lower_bound(t.begin(), t.end(), to) - std::lower_bound(t.begin(), t.end(), from));
  };
  struct Durations {
    std::vector<double> ns, events;  // per switch that had the phase
  };
  std::map<std::pair<int, int>, Durations> durations;
  std::vector<double> periods;
  for (auto& chain : chains) {
    if (!chain.done) continue;
    std::stable_sort(chain.marks.begin(), chain.marks.end());
    if (!chain.switched) continue;  // in the tiling only
    ++report.matched;
    if (chain.direct) ++report.direct;
    if (chain.switch_cpu != chain.waker_cpu) ++report.cross_cpu;
    for (std::size_t i = 1; i < chain.marks.size(); ++i) {
      const MarkAt &from = chain.marks[i - 1], &to = chain.marks[i];
      Durations& d = durations[{from.mark, to.mark}];
      d.ns.push_back(static_cast<double>(to.ts - from.ts));
      d.events.push_back(events_in(from.ts, to.ts, to.cpu));
    }
    if (chain.marks.back().mark == next_call)
      periods.push_back(static_cast<double>(chain.marks.back().ts - chain.marks.front().ts));
  }
  if (!periods.empty()) report.period = summarize(periods);
  const double matched = static_cast<double>(report.matched);
  for (const auto& [key, d] : durations) {
    PhaseStat stat;
    stat.from = mark_names[key.first];
    stat.to = mark_names[key.second];
    stat.count = d.ns.size();
    stat.summary = summarize(d.ns);
    double total = 0;
    for (double v : d.ns) total += v;
    stat.mean_per_switch_ns = total / matched;
    stat.typical_per_switch_ns = stat.summary.median * static_cast<double>(stat.count) / matched;
    stat.events_per_switch = summarize(d.events).median * static_cast<double>(stat.count) / matched;
    report.attributed_per_switch_ns += stat.mean_per_switch_ns;
    report.typical_per_switch_ns += stat.typical_per_switch_ns;
    if (event_cost_ns) {
      stat.corrected_per_switch_ns = stat.typical_per_switch_ns - stat.events_per_switch * *event_cost_ns;
      report.corrected_per_switch_ns = report.corrected_per_switch_ns.value_or(0) + *stat.corrected_per_switch_ns;
    }
    report.phases.push_back(std::move(stat));
  }
}

}  // namespace

std::set<int> variant_tasks(const std::vector<TraceEvent>& events, int seed) {
  std::set<int> tasks{seed};
  for (const auto& e : events)
    if (e.kind == TraceKind::fork && tasks.count(static_cast<int>(e.a))) tasks.insert(static_cast<int>(e.b));
  return tasks;
}

PhaseReport analyze_switches(const std::vector<TraceEvent>& events, int seed, std::optional<double> event_cost_ns,
                             const std::vector<TimedBatch>& batches) {
  const std::set<int> ours = variant_tasks(events, seed);
  PhaseReport report;
  ChainFollower follower(ours, report);
  for (const auto& e : events) follower.follow(e);
  report.tasks = follower.seen.size();
  sum_phases(follower.chains, events, event_cost_ns, report);
  if (!batches.empty()) report.tiling = tile(follower.chains, batches, variant_on_cpu(events, ours));
  return report;
}

}  // namespace ctx
