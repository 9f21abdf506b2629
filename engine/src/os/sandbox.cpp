#include "os/sandbox.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "os/topology.hpp"

namespace ctx {

ProcessSandbox read_process_sandbox(const std::string& path) {
  ProcessSandbox out;
  std::ifstream in(path);
  auto number = [](const std::string& line, std::size_t from) -> std::optional<int> {
    try {
      return std::stoi(line.substr(from));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Seccomp:", 0) == 0) out.seccomp_mode = number(line, 8);
    if (line.rfind("Seccomp_filters:", 0) == 0) out.seccomp_filters = number(line, 16);
    if (line.rfind("TracerPid:", 0) == 0) out.tracer_pid = number(line, 10);
    if (line.rfind("NoNewPrivs:", 0) == 0) out.no_new_privs = number(line, 11);
  }
  return out;
}

std::string seccomp_mode_name(std::optional<int> mode) {
  if (!mode) return "unknown";
  switch (*mode) {
    case 0: return "disabled";
    case 1: return "strict";
    case 2: return "filter";
    default: return "unknown";
  }
}

namespace {

nlohmann::json optional_number(std::optional<int> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json audit_unknown(const std::string& why) {
  return {{"state", "unknown"}, {"rules", nullptr}, {"auditd_pid", nullptr}, {"why", why}};
}

// Sends one audit request and hands every reply message to `each` until the
// kernel's acknowledgement or NLMSG_DONE; returns "" or why it failed.
template <typename Each>
std::string audit_request(int fd, std::uint16_t type, Each each) {
  nlmsghdr request{};
  request.nlmsg_len = NLMSG_LENGTH(0);
  request.nlmsg_type = type;
  request.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  request.nlmsg_seq = type;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &request, request.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    return fmt::format("send: {}", std::strerror(errno));
  alignas(nlmsghdr) char buffer[16384];
  bool data_seen = false;
  for (;;) {
    const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
    if (got < 0) return fmt::format("receive: {}", std::strerror(errno));
    int left = static_cast<int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return "";
      if (h->nlmsg_type == NLMSG_ERROR) {
        const int error = static_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
        if (error != 0) return std::strerror(-error);
        // The acknowledgement: AUDIT_GET's status came before it; a rule
        // listing goes on until NLMSG_DONE.
        if (type == AUDIT_GET && data_seen) return "";
        continue;
      }
      if (h->nlmsg_type == type) {
        data_seen = true;
        each(h);
        if (type == AUDIT_GET) return "";
      }
    }
  }
}

}  // namespace

nlohmann::json audit_json() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
  if (fd < 0) return audit_unknown(fmt::format("the audit netlink socket cannot be opened: {}", std::strerror(errno)));
  timeval wait{1, 0};  // the kernel answers at once; never hang the run on it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  audit_status status{};
  std::string why = audit_request(fd, AUDIT_GET, [&](nlmsghdr* h) {
    std::memcpy(&status, NLMSG_DATA(h), std::min<std::size_t>(sizeof status, h->nlmsg_len - NLMSG_LENGTH(0)));
  });
  if (!why.empty()) {
    close(fd);
    return audit_unknown(
        fmt::format("the kernel refused the audit status request ({}): reading it needs CAP_AUDIT_CONTROL in the "
                    "initial PID namespace",
                    why));
  }
  int rules = 0;
  const std::string rules_why = audit_request(fd, AUDIT_LIST_RULES, [&](nlmsghdr*) { ++rules; });
  close(fd);
  const char* state = status.enabled == 0 ? "disabled" : status.enabled == 2 ? "locked" : "enabled";
  nlohmann::json audit = {{"state", state},
                          {"rules", rules_why.empty() ? nlohmann::json(rules) : nlohmann::json(nullptr)},
                          {"auditd_pid", status.pid}};
  if (!rules_why.empty()) audit["why"] = "the rules could not be listed: " + rules_why;
  return audit;
}

nlohmann::json sandbox_json(const ProcessSandbox& process, const std::string& status_path, nlohmann::json audit) {
  nlohmann::json seccomp = {{"mode", seccomp_mode_name(process.seccomp_mode)},
                            {"filters", optional_number(process.seccomp_filters)},
                            {"source", status_path}};
  if (!process.seccomp_mode) seccomp["why"] = status_path + " has no Seccomp line (a kernel without CONFIG_SECCOMP)";
  nlohmann::json sandbox = {{"seccomp", seccomp},
                            {"no_new_privs", optional_number(process.no_new_privs)},
                            {"tracer_pid", optional_number(process.tracer_pid)},
                            {"traced", process.tracer_pid ? nlohmann::json(*process.tracer_pid != 0) : nullptr},
                            {"audit", std::move(audit)}};
  return sandbox;
}

namespace {

// Events listed in a set_event file (one "system:event" per line); nullopt when
// it cannot be read (tracefs is root-only on most systems).
std::optional<int> enabled_events(const std::string& set_event) {
  std::ifstream in(set_event);
  if (!in) return std::nullopt;
  int count = 0;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() != '#') ++count;
  if (in.bad()) return std::nullopt;
  return count;
}

bool tracing_on(const std::string& buffer) {
  std::ifstream in(buffer + "/tracing_on");
  int on = 0;
  return static_cast<bool>(in >> on) && on != 0;
}

}  // namespace

nlohmann::json tracepoints_json(const std::vector<std::string>& roots) {
  std::vector<std::string> problems;
  for (const auto& root : roots) {
    errno = 0;
    const auto top = enabled_events(root + "/set_event");
    if (!top) {
      const int error = errno;
      problems.push_back(fmt::format("{}/set_event: {}", root, std::strerror(error ? error : ENOENT)));
      continue;
    }
    // The top-level buffer and each instance are separate buffers, each with
    // its own events and its own tracing_on.
    int enabled = *top;
    bool recording = *top > 0 && tracing_on(root);
    for (const auto& name : list_dir(root + "/instances")) {
      const std::string instance = root + "/instances/" + name;
      const auto events = enabled_events(instance + "/set_event");
      if (!events) continue;
      enabled += *events;
      recording = recording || (*events > 0 && tracing_on(instance));
    }
    return {{"source", root}, {"enabled", enabled}, {"recording", recording}};
  }
  return {{"source", nullptr},
          {"enabled", nullptr},
          {"recording", nullptr},
          {"why", fmt::format("no readable set_event ({}): tracefs is not mounted or not readable here (root only)",
                              fmt::join(problems, "; "))}};
}

nlohmann::json capture_sandbox() {
  // Filters belong to threads: the calling thread is the one that measures.
  std::string path = "/proc/thread-self/status";
  if (access(path.c_str(), R_OK) != 0) path = "/proc/self/status";
  nlohmann::json sandbox = sandbox_json(read_process_sandbox(path), path, audit_json());
  sandbox["tracepoints"] = tracepoints_json({"/sys/kernel/tracing", "/sys/kernel/debug/tracing"});
  return sandbox;
}

}  // namespace ctx
