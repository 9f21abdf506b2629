// The probe registry. A probe is one file under engine/probes/ that fills a
// ProbeDescriptor and registers it with a static Registrar, all inside
// `namespace { namespace CTXBENCH_UNITY_ID {` (unity builds: see
// engine/CMakeLists.txt); `list`,
// docs/probes.md and schema/probe-names.json are generated from here.
// A descriptor says what one operation is, its unit, its parameters, its
// baseline, what the kernel should count, and whether it runs here. The
// harness owns time; a probe's Workload owns only its operation.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/derived.hpp"
#include "model/record.hpp"

namespace ctx {

class Context;
struct ProbeDescriptor;

// One thing a front end uses a probe for (ProbeDescriptor::roles).
struct ProbeRole {
  std::string role;  // "ladder:<rung>", "answer:<figure>", "explain:<part>", "seccomp:<axis>"
  int rank = 0;      // among the probes with this role, lowest first
};

struct ParamSpec {
  std::string name;
  std::vector<std::string> values;  // every allowed value
  std::vector<std::string> runs;    // values run by default (empty: all of `values`)
  std::string help;
  bool numeric = false;     // values are integers, recorded as numbers
  bool open_ended = false;  // numeric values outside `values` are accepted too
  bool optional = false;    // absent from the default variants; set only when chosen (--param, a preset)
  // Set by a run-wide option (--cpus, --between) as well as by --param; `list
  // --json` says so, for front ends.
  bool axis = false;
  // A value outside `runs` that runs by default too where this says so, given
  // the values already chosen for the parameters listed before this one (e.g.
  // policy=batch only beside cpus=same). Null: `runs` alone.
  std::function<bool(const std::string& value, const Params& earlier)> also_runs;
  std::string also_runs_help;  // when also_runs applies, in words, for `list` and the docs
};

// The one rule for what runs by default: `runs`, else every value; nothing
// for an optional parameter (the variant goes without it).
const std::vector<std::string>& default_values(const ParamSpec& spec);
// The probe's first default variant: the first default value of each
// parameter that has one.
Params default_params(const ProbeDescriptor& probe);
// The parameters whose values are numbers, as numbers (what the record keeps).
std::map<std::string, double> numeric_params(const ProbeDescriptor& probe, const Params& params);

enum class Counter { voluntary, involuntary, any };
const char* counter_name(Counter counter);

// What getrusage should show: so many switches where the operation really
// switches, or none where it must never enter the kernel's scheduler (a
// user-level switch: expects_no_switches). The harness checks it.
struct Expectation {
  Counter counter = Counter::voluntary;
  double main_per_op = 0;          // switches the measuring task makes per op
  double partner_per_handoff = 0;  // switches a partner makes per hand-off it serves
  std::string why;                 // one sentence: where the switches come from, or why none
  // The most switches per expected one the mechanism itself makes: 2 where a
  // side preempted by the task it woke (policy=normal) must still sleep for
  // the token, which another task holds until its turn (a ring, a mutex).
  double most = 1;
  // No switch at all: the kernel leaves the measuring task alone, counted
  // over every batch it runs (calibration and warm-up included).
  bool none() const { return main_per_op == 0 && partner_per_handoff == 0; }
};

// The descriptor's `expects` of a probe whose operation is a user-level
// switch (or the creation of a user-level context): no kernel switch.
std::optional<Expectation> expects_no_switches(const Params& params);

struct Support {
  bool ok = true;
  Reason code = Reason::not_supported_here;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(Reason code, std::string reason) { return {false, code, std::move(reason)}; }
};

// What a partner task (thread or process) saw over its life.
struct TaskReport {
  int task = 0;
  int cpu_start = -1;
  int cpu_end = -1;
  long voluntary = 0;
  long involuntary = 0;
  std::uint64_t handoffs = 0;
};

// Thrown by a workload when the operation cannot go on; the harness records
// the variant as failed (or unsupported) with this reason and moves on.
struct ProbeError : std::runtime_error {
  ProbeError(Reason reason, const std::string& detail, Status at_least = Status::failed)
      : std::runtime_error(detail), code(reason), status(at_least) {}
  Reason code;
  Status status;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Untimed, before each timed batch (e.g. map fresh pages to fault on).
  virtual void prepare(std::uint64_t /*iterations*/) {}
  // Timed: perform `iterations` iterations of the operation.
  virtual void run(std::uint64_t iterations) = 0;
  // Untimed, after each timed batch (e.g. unmap those pages).
  virtual void after(std::uint64_t /*iterations*/) {}
  // Stops partner tasks and reports what they saw; called once, after sampling.
  virtual std::vector<TaskReport> finish() { return {}; }
  // Adds probe-specific derived figures, checks or notes to the record.
  virtual void annotate(Result& /*result*/) {}
};

using WorkloadFactory = std::function<std::unique_ptr<Workload>(Context&)>;

// A CPU-pair matrix probe: the harness measures the workload once per pair
// of allowed CPUs (task 0 on the row CPU, task 1 on the column CPU), each
// cell calibrated, sampled and checked like a variant, and the record
// carries the cells (Result::matrix). At namespace scope: nested in
// ProbeDescriptor, GCC 12 built registrars that crashed at start-up (free()
// of an invalid pointer destroying the temporary descriptor).
struct PairMatrixSpec {
  bool diagonal = false;         // each CPU with itself is a cell too
  std::string rows;              // what the row CPU's task does, in words
  std::string columns;           // what the column CPU's task does
  std::string diagonal_why_not;  // when !diagonal: why those cells are not measured
};

struct ProbeDescriptor {
  std::string name;  // family.variant
  std::string op;    // what one operation is, in one sentence
  // What a front end uses this probe for, so that no front end names a probe:
  // e.g. {"ladder:syscall", 0}, the summary ladder's bare system call, first
  // choice; {"explain:bare_syscall", 0}, the figure `explain` prices system
  // calls at. Rank orders the probes that share a role, lowest first. `list
  // --json` and `docs probe-names` give them (schema/probe-names.json).
  std::vector<ProbeRole> roles;
  Unit unit = Unit::ns;
  // Operations in one iteration of Workload::run, e.g. 2 when one iteration
  // is a round trip and one op is one switch. A function when it depends on
  // the parameters (a ring of N processes makes N switches per lap).
  std::function<double(const Params&)> ops_per_iteration;
  std::vector<ParamSpec> params;
  std::string baseline;  // what is subtracted, in words; empty: nothing
  WorkloadFactory make;
  WorkloadFactory make_baseline;  // null when there is no baseline
  std::function<double(const Params&)> baseline_ops_per_iteration;
  std::function<std::optional<Expectation>(const Params&)> expects;  // null: not a switch probe
  std::function<Support(const Params&)> supported;                   // null: always
  // Tasks the probe runs (the measuring one included), for placement.
  std::function<int(const Params&)> tasks;
  // Fixed iterations per sample instead of calibration (switch.burst); 0 for
  // a variant that calibrates after all.
  std::function<std::uint64_t(const Params&)> fixed_iterations;
  // The timed samples to take, given what --samples asks for (switch.burst
  // takes many short tries whatever --samples says). The time budget still
  // applies. Null: --samples.
  std::function<int(const Params&, int requested)> samples;
  std::string method;  // where the method comes from, for docs/probes.md
  // Where the time of one op goes, in a sentence or two: docs/probes.md puts
  // it in the family's generated "where the time goes" section.
  std::string where_time_goes;
  // System calls one op makes, all tasks together, where the code makes the
  // same calls every time (e.g. a pipe switch: one write and one read); null
  // where it depends on timing (a futex wait skipped when the value already
  // changed). Recorded as derived.syscalls_per_op; `ctxbench explain` prices
  // them at the run's bare-syscall cost (syscall.enosys).
  std::function<double(const Params&)> syscalls_per_op;
  // The probe's figures that are functions of a record's summary (and
  // baseline), e.g. derived.per_round_trip_ns = 2 x the median. The harness
  // computes them (derive_from_summary) over the samples a record keeps: once
  // for a variant measured whole, and again over the pooled samples when
  // rounds are merged (merge_rounds), so no such figure is an average of the
  // rounds'. Null: none.
  std::function<void(Result&)> from_summary;
  // The probe's own derived figures, each with how a variant's rounds combine
  // it (derived.hpp): every figure from_summary writes (recompute), and any
  // total (sum). A figure defined nowhere is a per-op mean.
  std::vector<DerivedFigure> derived;
  // A CPU-pair matrix probe (see PairMatrixSpec); null for every other probe.
  std::optional<PairMatrixSpec> matrix;
  // The system calls one op makes, by name and number, for a probe with the
  // seccomp axis: the record says whether the kernel's cache answers each
  // under the filter (seccomp_filter.hpp).
  std::vector<std::pair<std::string, long>> syscalls;
};

// Fills a descriptor's defaults and inserts it into `probes`, kept sorted by
// name; throws std::logic_error on a name already there.
void insert_probe(std::vector<ProbeDescriptor>& probes, ProbeDescriptor descriptor);
void register_probe(ProbeDescriptor descriptor);
// The family of a probe name: what comes before the first dot ("switch" of "switch.pipe").
std::string probe_family(const std::string& name);
const std::vector<ProbeDescriptor>& all_probes();
const ProbeDescriptor* find_probe(const std::string& name);

struct Registrar {
  explicit Registrar(ProbeDescriptor descriptor) { register_probe(std::move(descriptor)); }
};

// Helpers for the descriptor's function fields.
inline std::function<double(const Params&)> constant(double value) {
  return [value](const Params&) { return value; };
}
// same | cross | any (the default runs) | smt | llc | remote (from the CPU
// topology): where the tasks run (an axis). `runs` and `help` let a probe
// choose its default placements and say what they mean for it.
ParamSpec cpus_param(std::vector<std::string> runs = {}, std::string help = {});
ParamSpec between_param();  // threads | processes (an axis)
ParamSpec policy_param();   // normal | batch (scheduling policy of every task)
// idle_param(): os/idle.hpp, beside the check of whether holding is permitted.
ParamSpec max_pairs_param();
// seccomp = none | allow | profile (optional: absent from the default
// variants): the variant is measured on a thread that first installs no
// filter, a filter that allows every call but runs on each, or a container
// runtime's kind of profile (seccomp_filter.hpp). Needs `syscalls` filled.
ParamSpec seccomp_param();  // how many CPU pairs a matrix probe measures before it samples

// The expectation of a two-task ping-pong where one op is one switch: each
// task leaves the CPU once per round trip (two ops), and both counters
// together are checked under either policy. Under normal the wakee may
// preempt its waker. Under batch it does not, so on a quiet CPU each switch is
// a voluntary sleep in `wait`; but while another task wants the CPU a tick may
// preempt a task between its post and its wait, and the wait then finds the
// token without sleeping: the switch is involuntary, still one per round trip
// (the split is in derived.*_switches_per_round_trip). SLEEPS_AFTER_PREEMPTION:
// under normal, a waker the wakee preempted still sleeps in `wait` afterwards
// (the answer is not there when it runs again: measured for a condition
// variable and a socketpair), so each task leaves the CPU once or twice per
// round trip (Expectation::most 2).
Expectation switch_expectation(const Params& params, const std::string& wait, bool sleeps_after_preemption = false);

// Under policy=normal, a task preempted by the task it woke that must then
// sleep for the token too: `most` 2 and the sentence that says so.
void allow_preemption_then_sleep(Expectation& e, const std::string& wait);

// How a variant's rounds combine `probe`'s derived figure `name`: the
// probe's definition, else the harness's (derived.hpp), else mean. `probe`
// may be null (the harness's figures alone).
Aggregation aggregation_of(const ProbeDescriptor* probe, const std::string& name);

// Checks a descriptor is complete; returns what is missing ("" when complete).
std::string descriptor_problems(const ProbeDescriptor& descriptor);

}  // namespace ctx
