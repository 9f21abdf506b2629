// syscall.read, syscall.write: one byte through the file layer to a device
// that does no I/O, so the figure is the system call plus the VFS path (fd
// lookup, file position, the character device's read/write method), lmbench's
// "null I/O". The file is opened once, outside the timed region. Each call is
// made through syscall(2) and its result checked: a short or failed transfer
// fails the variant rather than timing an error path. One op is one call.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

class OneByteIo final : public Workload {
 public:
  OneByteIo(std::string path, bool writing) : path_(std::move(path)), writing_(writing) {
    fd_ = open(path_.c_str(), (writing_ ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (fd_ < 0) throw_errno("open " + path_);
  }
  ~OneByteIo() override { close(fd_); }
  OneByteIo(const OneByteIo&) = delete;
  OneByteIo& operator=(const OneByteIo&) = delete;

  void run(std::uint64_t iterations) override {
    char byte = 0;
    const long number = writing_ ? SYS_write : SYS_read;
    for (std::uint64_t i = 0; i < iterations; ++i)
      if (syscall(number, fd_, &byte, 1) != 1)
        throw_errno((writing_ ? "write of 1 byte to " : "read of 1 byte from ") + path_);
  }

 private:
  std::string path_;
  bool writing_;
  int fd_ = -1;
};

const Registrar read_probe({
    .name = "syscall.read",
    .op = "one read of 1 byte from /dev/zero through syscall(SYS_read), on a descriptor opened beforehand",
    .params = {seccomp_param()},
    .make = [](Context&) { return std::make_unique<OneByteIo>("/dev/zero", false); },
    .method = "lmbench lat_syscall 'read' (null I/O); batched and timer-corrected. The engine is multi-threaded (its "
              "signal thread), so its descriptor table is shared and the kernel's fd "
              "lookup takes a reference on the file instead of the single-threaded fast path, which costs "
              "more per call than a one-thread loop (measured in docs/accuracy.md)",
    .syscalls = {{"read", SYS_read}},
});

const Registrar write_probe({
    .name = "syscall.write",
    .op = "one write of 1 byte to /dev/null through syscall(SYS_write), on a descriptor opened beforehand",
    .params = {seccomp_param()},
    .make = [](Context&) { return std::make_unique<OneByteIo>("/dev/null", true); },
    .method = "lmbench lat_syscall 'write' (null I/O); batched and timer-corrected. The engine is multi-threaded (its "
              "signal thread), so its descriptor table is shared and the kernel's fd "
              "lookup takes a reference on the file instead of the single-threaded fast path, which costs "
              "more per call than a one-thread loop (measured in docs/accuracy.md)",
    .syscalls = {{"write", SYS_write}},
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
