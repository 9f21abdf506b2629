// Shielding the measuring tasks (shield.hpp).
#include "os/shield.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

namespace ctx {

namespace {

constexpr const char* v1_shares = "262144";  // cpu.shares' highest (1024 is a task of nice 0)
constexpr const char* v2_weight = "10000";   // cpu.weight's highest (100 is the default)

bool write_cgroup_file(const std::string& path, const std::string& text, std::string* why) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int error = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    *why = fmt::format("cannot write {} to {}: {}", text, path, std::strerror(error));
    return false;
  }
  return true;
}

bool is_cgroup_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The cgroup that holds this process under the cpu controller: its directory
// and whether it is the unified (v2) hierarchy.
struct CpuCgroup {
  std::string dir;
  bool v2 = false;
};

std::optional<CpuCgroup> own_cpu_cgroup(std::string* why) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  bool v1 = false, v2 = false;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (line.substr(0, a) == "0" && controllers == ",,") {
      v2 = true;
      v2_path = line.substr(b + 1);
    } else if (controllers.find(",cpu,") != std::string::npos) {
      v1 = true;
      v1_path = line.substr(b + 1);
    }
  }
  if (v1)
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
      if (is_cgroup_dir(std::string(mount) + v1_path))
        return CpuCgroup{std::string(mount) + (v1_path == "/" ? "" : v1_path)};
  if (v2 && std::ifstream("/sys/fs/cgroup/cgroup.controllers"))
    return CpuCgroup{"/sys/fs/cgroup" + (v2_path == "/" ? std::string() : v2_path), true};
  *why = "no cgroup with the cpu controller holds this process (/proc/self/cgroup)";
  return std::nullopt;
}

// A process outside the cgroup, in a session of its own (a signal to the
// engine's group does not reach it), that removes `dir` once the engine has
// ended (the pipe's write end closed) and the cgroup is empty.
pid_t start_cgroup_watcher(const std::string& dir, int* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (child == 0) {
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    for (int fd = 3; fd < 4096; ++fd)
      if (fd != fds[0]) close(fd);  // the engine's outputs: a reader waits for their end, not ours
    char byte = 0;
    while (read(fds[0], &byte, 1) != 0 && errno == EINTR) {
    }
    for (int tries = 0; tries < 200; ++tries) {  // 10 s for the engine's last tasks to go
      if (rmdir(dir.c_str()) == 0 || errno == ENOENT) _exit(0);
      usleep(50000);
    }
    _exit(1);
  }
  close(fds[0]);
  *write_end = fds[1];
  return child;
}

}  // namespace

Shield::Shield(const std::string& kind) : requested_(kind) {
  if (kind.empty()) return;
  const auto own = own_cpu_cgroup(&why_not_);
  if (!own) return;
  const std::string dir = fmt::format("{}/ctxbench-shield-{}", own->dir, getpid());
  if (own->v2 && !write_cgroup_file(own->dir + "/cgroup.subtree_control", "+cpu", &why_not_)) return;
  if (mkdir(dir.c_str(), 0755) != 0) {
    why_not_ = fmt::format("cannot make the cgroup {}: {}", dir, std::strerror(errno));
    return;
  }
  dir_ = dir;
  came_from_ = own->dir + "/cgroup.procs";
  const std::string file = own->v2 ? "/cpu.weight" : "/cpu.shares";
  const std::string value = own->v2 ? v2_weight : v1_shares;
  watcher_ = start_cgroup_watcher(dir_, &watch_fd_);
  if (watcher_ < 0) why_not_ = fmt::format("cannot start the process that removes {}: {}", dir_, std::strerror(errno));
  if (watcher_ < 0 || !write_cgroup_file(dir_ + file, value, &why_not_) ||
      !write_cgroup_file(dir_ + "/cgroup.procs", std::to_string(getpid()), &why_not_)) {
    release();
    return;
  }
  applied_ = true;
  how_ = fmt::format(
      "the engine's tasks in the cgroup {} ({}{} = {}, the highest; other work of ordinary weight "
      "gets the CPU after them)",
      dir_, own->v2 ? "v2 " : "v1 ", file.substr(1), value);
}

Shield::~Shield() { release(); }

void Shield::release() {
  if (dir_.empty()) return;
  std::string ignored;
  if (applied_) write_cgroup_file(came_from_, std::to_string(getpid()), &ignored);
  rmdir(dir_.c_str());  // the watcher retries where a task has not left yet
  if (watch_fd_ >= 0) close(watch_fd_);
  watch_fd_ = -1;
  if (watcher_ > 0) waitpid(watcher_, nullptr, 0);
  watcher_ = -1;
  dir_.clear();
}

nlohmann::json Shield::record() const {
  if (requested_.empty()) return nullptr;
  nlohmann::json j = {{"requested", requested_}, {"applied", applied_}};
  if (applied_) j["how"] = how_;
  if (!applied_) j["why_not"] = why_not_;
  return j;
}

}  // namespace ctx
