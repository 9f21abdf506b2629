// The record: one per probe variant, the engine's only output contract.
// Field meanings live in schema/record.schema.json (schema version 1); this
// file builds the JSON and nothing else. Changing a field means changing the
// schema and both sides' tests in the same commit.
#pragma once
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/interference.hpp"
#include "model/stats.hpp"

namespace ctx {

inline constexpr int schema_version = 1;

enum class Unit { ns, cycles, instructions, msgs_per_s };
const char* unit_name(Unit unit);
std::optional<Unit> unit_from_name(const std::string& name);

enum class Status { ok, suspect, unsupported, failed };
const char* status_name(Status status);

// The closed set of reasons a verdict is not plain `ok` (the schema's enum).
enum class Reason {
  too_few_switches,
  too_many_switches,
  count_mismatch,  // a kernel counter other than switches disagrees with the ops
  migrated,
  placement_unavailable,
  nonpositive_after_baseline,
  high_spread,
  timer_quantization,
  unstable,  // the samples are not one figure (modes, or a wide middle half)
  not_supported_here,
  permission_denied,
  built_without,
  child_failed,
  timeout,
  interrupted,
  error,
  interference,  // the kept samples carry the host's or other tasks' time (kernel counters, host reference)
};
const char* reason_name(Reason reason);

using Params = std::map<std::string, std::string>;

// What a check judges, so the code that judges it again (pooled rounds, a
// matrix's summed cells) asks the kind, not the name.
enum class CheckKind {
  switches,     // the `<counter>_switches.*` counts against the probe's expectation
  no_switches,  // kernel_not_involved: a user-level switch the kernel must not see
  preemptions,  // a spinning matrix's tasks, never switched
  placement,    // where the tasks ran
};

struct Check {
  std::string name;
  nlohmann::json expected;
  nlohmann::json observed;
  std::optional<double> ratio;
  bool ok = true;
  std::string detail;
  CheckKind kind = CheckKind::switches;
  double most = 1;  // switches: the most per expected one that are the mechanism's (Expectation::most)
};

struct Baseline {
  std::string name;
  std::string probe;
  double value = 0;
  Unit unit = Unit::ns;
  std::optional<Summary> summary;
  std::vector<double> samples;                    // the kept samples the summary is over (not in the record)
  std::uint64_t iterations_per_sample = 0;        // its calibrated batch (not in the record)
  std::vector<double> set_aside;                  // samples set aside as host interference (not in the summary)
  std::vector<SetAsideReason> set_aside_reasons;  // why, one per set-aside sample
};

struct Verdict {
  Status status = Status::ok;
  std::vector<std::pair<Reason, std::string>> reasons;
  // Worsens the status (ok < suspect < unsupported < failed) and adds the reason.
  void add(Status at_least, Reason reason, std::string detail);
};

// One cell of a CPU-pair matrix: the pair, its class, and the summary of its
// own samples (which are a slice of the record's `samples`).
struct MatrixCell {
  int row = -1;     // CPU of task 0 (the measuring task)
  int column = -1;  // CPU of task 1 (the partner)
  std::string pair_class;
  std::size_t first_sample = 0;  // this cell's samples: samples[first_sample, first_sample + summary.n)
  Summary summary;
  std::uint64_t ops_per_sample = 0;
  std::vector<int> observed;  // where tasks 0 and 1 were seen (start and end of the cell)
  std::optional<double> switches_expected, switches_observed;  // both tasks, where the kernel counts switches
  std::vector<std::string> problems;                           // "code: detail" for each reason the cell is not ok
};

// One class of pairs (same_cpu, smt, llc, node, other_node): the summary of
// every sample of its measured cells, and the spread of the cells' medians.
struct MatrixClass {
  std::string name;
  std::size_t pairs = 0;     // pairs of this class among the allowed CPUs
  std::size_t measured = 0;  // cells measured
  std::optional<Summary> summary;
  double lowest_cell_median = 0, highest_cell_median = 0;
};

struct Matrix {
  std::vector<int> cpus;  // rows and columns, in topology order
  std::string rows, columns, diagonal;
  std::vector<MatrixCell> cells;
  std::vector<MatrixClass> classes;
  std::size_t pairs = 0, limit = 0;
  bool sampled = false;
  std::string rule;
  nlohmann::json topology;  // the matrix CPUs' entries, as in the env record
  std::string topology_root;
};

// How the host reference ran while the variant was measured, attempt by
// attempt (see host_reference.hpp); the record is the kept attempt's.
struct Interference {
  std::string reference;  // what the loop is and the rule
  double best_ns = 0;     // the reference's fastest time in this run
  int retries = 0;        // re-measurements allowed (--retries)
  std::vector<InterferenceAttempt> attempts;
  std::size_t kept = 0;
  bool no_more_attempts = false;  // a re-measurement failed (not in the record)
};

// What the kernel's counters said about a variant's samples (kernel_counters.hpp).
struct CounterTotals {
  Sharing sharing = Sharing::unknown;
  std::size_t tasks = 0;  // tasks read around each sample
  std::vector<int> cpus;  // CPUs whose steal was read
  SampleCounters kept;    // summed over the kept samples
  std::size_t kept_samples = 0;
  std::size_t kept_interfered = 0;  // kept samples the rule would have set aside (its re-takes ran out)
  std::array<std::size_t, set_aside_reason_count> set_aside{};  // set-aside samples by reason
  std::vector<double> read_ns;  // the cost of each read, outside the timed batches (the record: its median)
  std::string unread;           // why some read failed; empty when every read worked
};
// Kept samples the counters' rule would have set aside, over the kept samples.
inline double interfered_share(const CounterTotals& counters) {
  return counters.kept_samples > 0
             ? static_cast<double>(counters.kept_interfered) / static_cast<double>(counters.kept_samples)
             : 0.0;
}

// How a sample set got samples clean of interference (sampling.hpp): taken
// again within a time budget until `needed` are clean; too few, and the
// fastest set-aside ones make up a figure (interference only adds time).
struct CleanSampling {
  std::size_t needed = 0;  // samples asked for
  std::size_t clean = 0;   // taken clean: neither the counters nor the reference saw interference
  std::size_t filled = 0;  // too few clean: the fastest interfered samples kept beside them
  double budget_s = 0;     // the budget (--clean-budget; a round: its share)
  double spent_s = 0;      // the time the samples took, re-takes included
  // The kept samples still lean right (interference's tail): a figure it cannot move.
  std::optional<double> tail_figure;
  // The filled samples could not move the median out of its interval
  // (finish.hpp: filled_inside_interval); true when none was filled.
  bool filled_inside = true;
};
// `needed` clean samples were got.
inline bool got_clean(const CleanSampling& c) { return c.clean >= c.needed; }
// Clean enough for the figure: every sample asked for came clean, or the few
// filled in could not move the median out of its interval.
inline bool clean_enough(const CleanSampling& c) { return got_clean(c) || c.filled_inside; }

struct Result {
  std::string run_id;
  std::size_t variant_index = 0;  // place in the run's selection, from 1; 0: not part of a run
  std::string probe;
  std::string family;
  Params params;
  std::map<std::string, double> numeric_params;  // params whose values are numbers
  Unit unit = Unit::ns;
  std::string op;
  std::uint64_t ops_per_sample = 0;
  std::uint64_t iterations_per_sample = 0;  // the calibrated batch (not in the record: ops_per_sample is)
  int warmup_samples = 0;
  std::vector<double> samples;
  std::vector<double> set_aside;  // samples set aside as host interference: not in `samples` nor the summary
  std::vector<SetAsideReason> set_aside_reasons;  // why, one per set-aside sample
  std::optional<Summary> summary;
  std::optional<Baseline> baseline;
  std::optional<Stability> stability;
  nlohmann::json derived = nlohmann::json::object();
  std::string timer_source;
  std::optional<double> timer_overhead_ns;
  std::optional<double> timer_resolution_ns;
  bool timer_corrected = false;
  std::string placement_requested = "none";
  std::vector<int> placement_cpus;
  std::string placement_why;  // how the CPU was chosen (a same-CPU variant: the least busy); empty: by rule
  std::vector<int> observed_start;
  std::vector<int> observed_end;
  std::vector<Check> checks;
  Verdict verdict;
  std::string started_at;
  double duration_s = 0;
  std::vector<std::string> notes;
  std::optional<Matrix> matrix;              // matrix probes only
  std::optional<Interference> interference;  // variants measured with the host reference
  bool host_reference = false;               // the samples were judged by the host reference
  std::optional<CounterTotals> counters;     // the kernel's counters around each sample, where read
  std::optional<CleanSampling> clean;        // where interfered samples were taken again (sampling.hpp)
  nlohmann::json trace;                      // the traced pass (traced_pass.hpp); null: none
  nlohmann::json schedule;                   // how the run scheduled the variant (schedule.hpp); null: not in a run
};

nlohmann::json summary_to_json(const Summary& summary);
// The samples set aside as host interference and the summary of every sample
// with them; null when none were set aside.
nlohmann::json set_aside_to_json(const std::vector<double>& kept, const std::vector<double>& set_aside,
                                 const std::vector<SetAsideReason>& reasons);
nlohmann::json counters_to_json(const CounterTotals& counters);
// The record's `clean`: `kept` and `set_aside` are the record's sample counts.
inline constexpr const char* tail_method =
    "shorth: the median of the shortest interval holding half the kept samples and one more, given where the "
    "kept samples lean right (p90 further above the median than twice p10 below it, and over 5% above it); "
    "interference only adds time, so it moves the tail, not this";
nlohmann::json clean_to_json(const CleanSampling& clean, std::size_t kept, std::size_t set_aside);
// A variant's parameters as a record gives them: numbers where `numbers` has them.
nlohmann::json params_to_json(const Params& values, const std::map<std::string, double>& numbers);
nlohmann::json result_to_json(const Result& result);
nlohmann::json matrix_to_json(const Matrix& matrix);

std::string utc_now_iso();
std::string new_run_id();

}  // namespace ctx
