#include "measure/pair_matrix.hpp"

#include <algorithm>
#include <map>

#include "measure/finish.hpp"
#include "measure/verdict_checks.hpp"
#include "os/topology.hpp"
#include "report/wording.hpp"

namespace ctx {

namespace {

Matrix matrix_header(const PairMatrixSpec& spec, const MatrixPlan& plan, const Topology& topology) {
  Matrix m;
  m.cpus = plan.cpus;
  m.rows = spec.rows;
  m.columns = spec.columns;
  m.diagonal = matrix_diagonal(spec.diagonal, spec.diagonal_why_not);
  m.pairs = plan.pairs;
  m.limit = plan.limit;
  m.sampled = plan.sampled;
  m.rule = plan.rule;
  m.topology = topology_json(topology);
  m.topology_root = topology.root;
  return m;
}

// What the cells add up to beside their samples.
struct CellTotals {
  std::vector<Check> summed;                                   // each check, added up over the cells
  std::map<Reason, std::pair<std::size_t, std::string>> seen;  // reason -> (cells, the first one's detail)
  std::size_t cut_short = 0;
  double ops_executed = 0;
};

// One measured cell into the matrix and r's samples; false (r says which
// cell and why) when it is unsupported or failed, which stops the matrix.
bool add_cell(const CpuPair& pair, const Result& cell, Matrix& m, CellTotals& totals, Result& r) {
  const std::string where = matrix_cell_name(pair.first, pair.second);
  if (cell.verdict.status == Status::unsupported || cell.verdict.status == Status::failed) {
    for (const auto& [code, detail] : cell.verdict.reasons)
      r.verdict.add(cell.verdict.status, code, matrix_cell_reason(where, detail));
    return false;
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
  for (const auto& check : cell.checks) add_to_totals(totals.summed, check);
  for (const auto& check : cell.checks)
    if (check.kind == CheckKind::switches && check.expected.is_number()) {
      c.switches_expected = c.switches_expected.value_or(0) + check.expected.get<double>();
      c.switches_observed = c.switches_observed.value_or(0) + check.observed.get<double>();
    }
  for (const auto& [code, detail] : cell.verdict.reasons) {
    c.problems.push_back(matrix_cell_problem(reason_name(code), detail));
    auto& [count, first] = totals.seen[code];
    if (count++ == 0) first = matrix_cell_reason(where, detail);
  }
  totals.cut_short += cell.notes.empty() ? 0 : 1;
  totals.ops_executed += cell.derived.value("ops_executed", 0.0);
  r.ops_per_sample = r.ops_per_sample == 0 ? cell.ops_per_sample : std::min(r.ops_per_sample, cell.ops_per_sample);
  m.cells.push_back(std::move(c));
  return true;
}

// Per class: the summary of every sample of its cells, and how far the cells' medians spread.
void add_classes(const MatrixPlan& plan, const std::vector<double>& samples, Matrix& m) {
  for (const auto& [name, counts] : plan.per_class) {
    MatrixClass k;
    k.name = name;
    k.pairs = counts.first;
    std::vector<double> pooled, medians;
    for (const auto& c : m.cells) {
      if (c.pair_class != name) continue;
      ++k.measured;
      pooled.insert(pooled.end(), samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample),
                    samples.begin() + static_cast<std::ptrdiff_t>(c.first_sample + c.summary.n));
      medians.push_back(c.summary.median);
    }
    if (!pooled.empty()) {
      k.summary = summarize(pooled);
      k.lowest_cell_median = *std::min_element(medians.begin(), medians.end());
      k.highest_cell_median = *std::max_element(medians.begin(), medians.end());
    }
    m.classes.push_back(k);
  }
}

}  // namespace

void measure_matrix(const ProbeDescriptor& probe, const Params& params, const HarnessOptions& options,
                    const MatrixMeasures& measure, Result& r) {
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
                  matrix_needs_two_cpus(plan.cpus.empty() ? -1 : plan.cpus.front()));
    return;
  }
  Matrix m = matrix_header(spec, plan, topology);
  HarnessOptions per_cell = options;
  per_cell.reference = nullptr;  // cells differ by design; the matrix is not re-measured
  per_cell.counters = nullptr;   // nor judged sample by sample
  per_cell.max_variant_s = options.max_variant_s / static_cast<double>(plan.cells.size());
  CellTotals totals;
  for (const auto& pair : plan.cells) {
    const Result cell = measure.cell(Placement{"matrix", {pair.first, pair.second}, ""}, per_cell);
    if (!add_cell(pair, cell, m, totals, r)) return;
  }
  Finishing how;
  how.measured = Measured::matrix;
  how.parts = plan.cells.size();
  how.derive = measure.derive;
  r.checks = std::move(totals.summed);
  judge_totals(r, how);
  for (const auto& [code, what] : totals.seen)
    r.verdict.add(Status::suspect, code, matrix_reason_detail(what.first, plan.cells.size(), what.second));
  if (totals.cut_short > 0)
    r.notes.push_back(matrix_cut_short_note(totals.cut_short, plan.cells.size(), options.max_variant_s));

  if (measure.baseline) {
    try {
      HarnessOptions unjudged = options;
      unjudged.reference = nullptr;  // as the cells: a matrix is not judged by the host reference
      unjudged.counters = nullptr;
      r.baseline = measure.baseline(plan.cpus.front(), unjudged);
    } catch (const ProbeError& e) {
      r.verdict.add(e.status, e.code, matrix_baseline_failed(e.what()));
      return;
    }
  }
  add_classes(plan, r.samples, m);
  r.timer_corrected = true;
  r.derived["ops_executed"] = totals.ops_executed;
  r.derived["cells"] = static_cast<double>(m.cells.size());
  finish_record(r, how);
  r.matrix = std::move(m);
}

}  // namespace ctx
