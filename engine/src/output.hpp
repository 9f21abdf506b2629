// Reporters: the only code that writes results. JSON Lines (one record per
// line, flushed the moment it is done so a crash keeps what finished) and a
// human table. All writes go through one lock, which the signal monitor also
// takes before it writes the closing run_end record on Ctrl-C.
#pragma once
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record.hpp"

namespace ctx {

struct Counts {
  int ok = 0, suspect = 0, unsupported = 0, failed = 0;
  void add(Status status);
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const nlohmann::json& env) = 0;
  virtual void result(const Result& result) = 0;
  virtual void end(const nlohmann::json& run_end) = 0;
};

class JsonLinesReporter final : public Reporter {
 public:
  explicit JsonLinesReporter(std::FILE* out) : out_(out) {}
  void begin(const nlohmann::json& env) override;
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;

 private:
  void line(const nlohmann::json& j);
  std::FILE* out_;
};

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(std::FILE* out) : out_(out) {}
  void begin(const nlohmann::json& env) override;
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;

 private:
  std::FILE* out_;
};

// A preset's side-by-side view, for the table: after the last record, each
// measured record's median and its ratio to the cheapest one of the same unit.
class ComparisonReporter final : public Reporter {
 public:
  ComparisonReporter(std::FILE* out, std::string title) : out_(out), title_(std::move(title)) {}
  void begin(const nlohmann::json&) override {}
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;

 private:
  struct Row {
    std::string label;
    Unit unit;
    double median;
  };
  std::FILE* out_;
  std::string title_;
  std::vector<Row> rows_;
  std::vector<std::string> unmeasured_;
};

// Fans records out to every reporter, under one lock.
class Output {
 public:
  void add(std::unique_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
  void begin(const nlohmann::json& env);
  void result(const Result& result);
  // Writes run_end once; later calls do nothing. The caller holds lock().
  void end(const std::string& run_id, double duration_s, bool interrupted);
  std::mutex& lock() { return mutex_; }
  const Counts& counts() const { return counts_; }

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
  std::mutex mutex_;
  Counts counts_;
  bool ended_ = false;
};

// "key=value key=value" in parameter order.
std::string format_params(const Params& params);
// A duration in ns with a sensible unit (ns, us, ms).
std::string format_ns(double ns);
// A figure in its unit, as the table and the generated docs show it.
std::string format_value(double value, Unit unit);

}  // namespace ctx
