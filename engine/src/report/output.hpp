// Reporters: the only code that writes results. JSON Lines (one record per
// line, flushed the moment it is done so a crash keeps what finished) and a
// human table. All writes go through one lock, which the signal monitor also
// takes before it writes the closing run_end record on Ctrl-C.
//
// Every write is checked (a Sink): the first one that fails (a full disk,
// a file-size limit, a pipe whose reader went away) throws OutputError, the
// other outputs stay usable, and a regular file is cut back to its last
// whole line so that what it holds is still importable.
#pragma once
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/record.hpp"

namespace ctx {

struct Counts {
  int ok = 0, suspect = 0, unsupported = 0, failed = 0;
  void add(Status status);
};

// A write to `name` failed with `error` (an errno value).
struct OutputError : std::runtime_error {
  OutputError(std::string name, int error);
  std::string name;
  int error;
};

// One output stream (stdout or the --out file) and the name errors give it.
class Sink {
 public:
  Sink(std::FILE* file, std::string name);
  // Writes all of `text` and flushes it; throws OutputError on failure.
  void write(std::string_view text);
  // Flushes (stdout) or closes (a file we opened); throws OutputError.
  void close();
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  bool failed() const { return failed_; }
  // Marks the sink unusable (the monitor saw its reader go away).
  void fail() { failed_ = true; }

 private:
  [[noreturn]] void error(int code);
  std::FILE* file_;
  std::string name_;
  int fd_;
  long long whole_;  // a regular file's size after the last complete write; -1 otherwise
  bool failed_ = false;
  bool closed_ = false;
};

// A diagnostic line on stderr, "ctxbench-engine: <text>". Never throws: a
// failing stderr must not turn a clean stop into std::terminate.
void diagnostic(std::string_view text);
// Raw text on stderr (the @progress protocol), equally quiet on failure.
void to_stderr(std::string_view text);

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const nlohmann::json& env) = 0;
  virtual void result(const Result& result) = 0;
  virtual void end(const nlohmann::json& run_end) = 0;
  // Where it writes; nullptr for a reporter that writes nowhere (a test's collector).
  virtual Sink* sink() { return nullptr; }
};

class JsonLinesReporter final : public Reporter {
 public:
  explicit JsonLinesReporter(Sink& out) : out_(out) {}
  void begin(const nlohmann::json& env) override;
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;

 private:
  Sink* sink() override { return &out_; }
  void line(const nlohmann::json& j);
  Sink& out_;
};

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(Sink& out) : out_(out) {}
  void begin(const nlohmann::json& env) override;
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;
  Sink* sink() override { return &out_; }

 private:
  Sink& out_;
};

// A preset's side-by-side view, for the table: after the last record, each
// measured record's median and its ratio to the cheapest one of the same unit.
class ComparisonReporter final : public Reporter {
 public:
  ComparisonReporter(Sink& out, std::string title) : out_(out), title_(std::move(title)) {}
  Sink* sink() override { return &out_; }
  void begin(const nlohmann::json&) override {}
  void result(const Result& result) override;
  void end(const nlohmann::json& run_end) override;

 private:
  struct Row {
    std::string label;
    Unit unit;
    double median;
  };
  Sink& out_;
  std::string title_;
  std::vector<Row> rows_;
  std::vector<std::string> unmeasured_;
};

// Fans records out to every reporter, under one lock. A reporter whose sink
// failed is skipped from then on; begin() and result() rethrow the failure
// (the run must stop), end() writes to the sinks still working and never throws.
class Output {
 public:
  void add(std::unique_ptr<Reporter> reporter);
  void begin(const nlohmann::json& env);
  void result(const Result& result);
  // The same, for a caller that holds lock().
  void result_locked(const Result& result);
  // Writes run_end once to every working sink; later calls do nothing. The
  // caller holds lock(). Returns the first failure, if one happened here.
  std::optional<OutputError> end(const std::string& run_id, double duration_s, bool interrupted);
  // A working sink that is a pipe whose reader went away, now marked failed;
  // nullptr when there is none. Polls without blocking; the caller holds lock().
  const Sink* broken_pipe();
  std::mutex& lock() { return mutex_; }
  const Counts& counts() const { return counts_; }
  int written() const { return counts_.ok + counts_.suspect + counts_.unsupported + counts_.failed; }

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
  std::mutex mutex_;
  Counts counts_;
  bool begun_ = false;
  bool ended_ = false;
};

}  // namespace ctx
