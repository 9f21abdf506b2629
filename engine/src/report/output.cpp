#include "report/output.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "report/wording.hpp"

namespace ctx {

OutputError::OutputError(std::string name_, int error_)
    : std::runtime_error(fmt::format("cannot write to {}: {}", name_, std::strerror(error_))),
      name(std::move(name_)),
      error(error_) {}

namespace {
// The size of a regular file (its whole lines so far), or -1 for anything else.
long long regular_size(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<long long>(st.st_size) : -1;
}
}  // namespace

Sink::Sink(std::FILE* file, std::string name)
    : file_(file), name_(std::move(name)), fd_(fileno(file)), whole_(regular_size(fd_)) {}

void Sink::error(int code) {
  failed_ = true;
  // A cut line would make the file unreadable as JSON Lines: cut it back to
  // the last whole line (ftruncate frees space, so it works on a full disk).
  // The bytes still buffered in the FILE are never flushed: every exit after
  // an output failure is an _exit.
  if (whole_ >= 0) (void)!ftruncate(fd_, whole_);
  throw OutputError(name_, code == 0 ? EIO : code);
}

void Sink::write(std::string_view text) {
  if (failed_) throw OutputError(name_, EIO);
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) error(errno);
  if (whole_ >= 0) whole_ = regular_size(fd_);
}

void Sink::close() {
  if (closed_ || failed_) return;
  closed_ = true;
  errno = 0;
  if (file_ == stdout) {
    if (std::fflush(file_) != 0 || std::ferror(file_)) error(errno);
    return;
  }
  if (std::fclose(file_) != 0) {
    failed_ = true;
    throw OutputError(name_, errno == 0 ? EIO : errno);
  }
}

void to_stderr(std::string_view text) {
  // stderr is unbuffered: one fwrite, whose failure is nobody's to report.
  (void)!std::fwrite(text.data(), 1, text.size(), stderr);
}

void diagnostic(std::string_view text) {
  std::string line = "ctxbench-engine: ";
  line += text;
  line += '\n';
  to_stderr(line);
}

void Counts::add(Status status) {
  switch (status) {
    case Status::ok: ++ok; break;
    case Status::suspect: ++suspect; break;
    case Status::unsupported: ++unsupported; break;
    case Status::failed: ++failed; break;
  }
}

void JsonLinesReporter::line(const nlohmann::json& j) {
  // One write of the whole line, newline included.
  out_.write(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void JsonLinesReporter::begin(const nlohmann::json& env) { line(env); }
void JsonLinesReporter::result(const Result& result) { line(result_to_json(result)); }
void JsonLinesReporter::end(const nlohmann::json& run_end) { line(run_end); }

void TableReporter::begin(const nlohmann::json& env) {
  std::string text =
      fmt::format("# ctxbench-engine {}  run {}\n# {} | {} cpus | kernel {} | virt {} | timer {}\n",
                  env["producer"]["version"].get<std::string>(), env["run_id"].get<std::string>(),
                  env["cpu"]["model"].get<std::string>(), env["cpu"]["logical"].get<long>(),
                  env["kernel"]["release"].get<std::string>(), env["virtualization"]["detected"].get<std::string>(),
                  env["cpu"]["tsc"]["timer"].get<std::string>());
  text += fmt::format("{:<28} {:<36} {:>10} {:>10} {:>21} {:>10} {:>10}  {}\n", "probe", "params", "median", "p99",
                      "95% CI of median", "baseline", "less base", "verdict");
  out_.write(text);
}

void TableReporter::result(const Result& r) {
  std::string median = "-", p99 = "-", ci = "-", baseline = "-", corrected = "-";
  if (r.summary) {
    median = format_value(r.summary->median, r.unit);
    p99 = format_value(r.summary->p99, r.unit);
    if (r.summary->median_ci)
      ci = fmt::format("{} .. {}", format_value(r.summary->median_ci->low, r.unit),
                       format_value(r.summary->median_ci->high, r.unit));
    if (r.baseline) {
      baseline = format_value(r.baseline->value, r.baseline->unit);
      corrected = format_value(r.summary->median - r.baseline->value, r.unit);
    }
  }
  std::string text =
      fmt::format("{:<28} {:<36} {:>10} {:>10} {:>21} {:>10} {:>10}  {}\n", r.probe, format_params(r.params), median,
                  p99, ci, baseline, corrected, status_name(r.verdict.status));
  for (const auto& [code, detail] : r.verdict.reasons) text += fmt::format("    {}: {}\n", reason_name(code), detail);
  // A figure that left samples out says so, with the figure they would make.
  if (const auto statement = set_aside_statement(r.samples, r.set_aside, r.unit); !statement.empty())
    text += fmt::format("    set aside: {}\n", statement);
  if (r.baseline)
    if (const auto statement = set_aside_statement(r.baseline->samples, r.baseline->set_aside, r.baseline->unit);
        !statement.empty())
      text += fmt::format("    baseline set aside: {}\n", statement);
  out_.write(text);
}

void TableReporter::end(const nlohmann::json& run_end) {
  const auto& c = run_end["counts"];
  out_.write(fmt::format("# {} ok, {} suspect, {} unsupported, {} failed{}\n", c["ok"].get<int>(),
                         c["suspect"].get<int>(), c["unsupported"].get<int>(), c["failed"].get<int>(),
                         run_end["interrupted"].get<bool>() ? " (interrupted: partial run)" : ""));
}

void ComparisonReporter::result(const Result& r) {
  const std::string label = r.probe + " " + format_params(r.params);
  if (r.summary && (r.verdict.status == Status::ok || r.verdict.status == Status::suspect))
    rows_.push_back({label, r.unit, r.summary->median});
  else
    unmeasured_.push_back(fmt::format("{}: {}", label, status_name(r.verdict.status)));
}

void ComparisonReporter::end(const nlohmann::json&) {
  std::string text = fmt::format("# {}\n", title_);
  for (const auto& row : rows_) {
    double cheapest = row.median;
    for (const auto& other : rows_)
      if (other.unit == row.unit && other.median > 0) cheapest = std::min(cheapest, other.median);
    const std::string ratio =
        cheapest > 0 && row.median > 0 ? fmt::format("{:.1f}x the cheapest", row.median / cheapest) : "no ratio";
    text += fmt::format("#   {}: {} ({})\n", row.label, format_value(row.median, row.unit), ratio);
  }
  for (const auto& line : unmeasured_) text += fmt::format("#   {} (not measured)\n", line);
  out_.write(text);
}

void Output::add(std::unique_ptr<Reporter> reporter) {
  std::lock_guard guard(mutex_);
  reporters_.push_back(std::move(reporter));
}

namespace {
// Calls `write` on every reporter whose sink still works; returns the first failure.
template <class Write>
std::optional<OutputError> to_each(std::vector<std::unique_ptr<Reporter>>& reporters, Write write) {
  std::optional<OutputError> first;
  for (auto& r : reporters) {
    if (r->sink() && r->sink()->failed()) continue;
    try {
      write(*r);
    } catch (const OutputError& e) {
      if (!first) first = e;
    }
  }
  return first;
}
}  // namespace

void Output::begin(const nlohmann::json& env) {
  std::lock_guard guard(mutex_);
  begun_ = true;
  if (auto failure = to_each(reporters_, [&](Reporter& r) { r.begin(env); })) throw *failure;
}

void Output::result(const Result& result) {
  std::lock_guard guard(mutex_);
  result_locked(result);
}

void Output::result_locked(const Result& result) {
  auto failure = to_each(reporters_, [&](Reporter& r) { r.result(result); });
  counts_.add(result.verdict.status);
  if (failure) throw *failure;
}

const Sink* Output::broken_pipe() {
  for (auto& r : reporters_) {
    Sink* sink = r->sink();
    if (!sink || sink->failed()) continue;
    // A pipe whose last reader closed reports POLLERR on its write end.
    pollfd p{sink->fd(), 0, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) {
      sink->fail();
      return sink;
    }
  }
  return nullptr;
}

std::optional<OutputError> Output::end(const std::string& run_id, double duration_s, bool interrupted) {
  if (ended_ || !begun_) return std::nullopt;  // no run_end without its env record
  ended_ = true;
  const nlohmann::json run_end = {{"schema", schema_version},
                                  {"kind", "run_end"},
                                  {"run_id", run_id},
                                  {"finished_at", utc_now_iso()},
                                  {"duration_s", duration_s},
                                  {"counts",
                                   {{"ok", counts_.ok},
                                    {"suspect", counts_.suspect},
                                    {"unsupported", counts_.unsupported},
                                    {"failed", counts_.failed}}},
                                  {"interrupted", interrupted}};
  // Every reporter's end first, then the closes: reporters may share a sink.
  auto failure = to_each(reporters_, [&](Reporter& r) { r.end(run_end); });
  auto closing = to_each(reporters_, [&](Reporter& r) {
    if (r.sink()) r.sink()->close();
  });
  return failure ? failure : closing;
}

}  // namespace ctx
