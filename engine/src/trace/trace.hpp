// Recording the kernel's tracepoints with perf_event_open: one event per
// tracepoint per CPU, every CPU's events written to one ring buffer (mmap)
// of that CPU, timestamps on CLOCK_MONOTONIC_RAW so CPUs compare. Tracepoint
// ids and field offsets are read from tracefs (events/<system>/<name>/id and
// format), tried at /sys/kernel/tracing and /sys/kernel/debug/tracing.
//
// Why perf_event_open and not tracefs's own buffer or eBPF (docs/tracing.md):
// the events live as file descriptors of this process, so nothing is left
// enabled on any way out (Ctrl-C, a crash, SIGKILL: the kernel closes them);
// tracefs is only read, never written (mounted, where it was not, in the
// engine's own mount namespace: prepare_tracing); no library and no compiler is needed
// (libbpf and a BPF program would be both), and a sample costs a ring write,
// which the docs measure.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trace/phases.hpp"

namespace ctx {

// One tracepoint the traced pass asks for.
struct TracepointSpec {
  const char* system;
  const char* name;
  TraceKind kind;
  const char* field_a;  // payload fields read into TraceEvent::a / b (nullptr: none)
  const char* field_b;
  bool required;  // without it the pass is unsupported; others are left out, said so
  // Recorded for the calling task and the tasks it creates (inherit) rather
  // than for the whole CPU: system calls are most of any CPU's events, and
  // other processes' calls would fill the ring.
  bool own_tasks;
};
const std::vector<TracepointSpec>& traced_tracepoints();

// A tracepoint payload field as tracefs's format file gives it, and the
// reading of one from a sample's raw payload (0 when it lies outside).
struct TraceField {
  std::size_t offset = 0, size = 0;
  bool is_signed = false;
};
std::map<std::string, TraceField> read_tracepoint_format(const std::string& path);  // events/<system>/<name>/format
std::int64_t read_tracepoint_field(const unsigned char* raw, std::size_t raw_size, const TraceField& field);

// One sample of a ring whose events ask for IDENTIFIER | TID | TIME | CPU |
// RAW (the traced pass's and the profile's); `raw` lives until the next one.
struct PerfSample {
  std::uint64_t id = 0, time = 0;
  std::uint32_t pid = 0, tid = 0, cpu = 0, raw_size = 0;
  const unsigned char* raw = nullptr;
};
// A context switch as perf's own switch records give it (an event opened
// with context_switch on a whole CPU: PERF_RECORD_SWITCH_CPU_WIDE, with
// sample_id_all and sample_type TID | TIME | CPU | IDENTIFIER): the task the
// record is of (`tid`), and the one it switched from (coming in) or to (going out).
struct PerfSwitch {
  bool out = false;
  std::uint32_t tid = 0, other_tid = 0, cpu = 0;
  std::uint64_t time = 0;
};
// Opens, disabled, perf's switch records of one CPU (every task's switches
// there, as PerfSwitch reads them; the fd, or -1 with errno).
int open_switch_record_event(int cpu);
// Hands every sample in a perf ring (`base`, mapped `length` bytes, the first
// `page` its header) to `take`, and every switch record to `switches` when
// given; frees their space, and adds what the kernel reported dropped to
// `lost`. `record`: scratch space kept between calls.
void drain_perf_ring(void* base, std::size_t length, std::size_t page, std::vector<unsigned char>& record,
                     std::uint64_t* lost, const std::function<void(const PerfSample&)>& take,
                     const std::function<void(const PerfSwitch&)>& switches = nullptr);

// "/sys/kernel/tracing" or "/sys/kernel/debug/tracing" when its sched_switch
// id is readable; nullopt and `why` otherwise.
std::optional<std::string> find_tracefs(std::string* why);

// Before a traced run, while the engine has one thread: whether the traced
// pass can record here. Where tracefs is not mounted and the engine runs as
// root, it is mounted in a mount namespace of the engine's own (unshare, /
// made private: nothing changes outside the engine, and the mount ends with
// it; `mounted` is set). nullopt when a session can be opened; else what
// stands in the way and the fix, in one sentence.
std::optional<std::string> prepare_tracing(bool* mounted);

class TraceSession {
 public:
  // Opens every tracepoint on every CPU in `cpus`, disabled (the own_tasks
  // ones for the calling task and its future children only); nullptr and
  // `why` (what was refused, and what would permit it) when it cannot.
  // `denied` is set when the refusal is a permission.
  static std::unique_ptr<TraceSession> open(const std::vector<int>& cpus, std::string* why, bool* denied);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  void enable();
  void disable();
  // The recorded events of every CPU, in time order; `lost` counts the
  // events the kernel said it could not write, and `full` is set when a
  // ring filled up (the kernel says nothing of what it dropped after that).
  std::vector<TraceEvent> read(std::uint64_t* lost, bool* full);
  const std::string& tracefs() const { return tracefs_; }
  const std::vector<std::string>& events() const { return events_; }    // system:name opened
  const std::vector<std::string>& missing() const { return missing_; }  // optional ones absent here
  std::size_t ring_bytes() const { return ring_bytes_; }                // per CPU
  // Whether the switches come from perf's switch records rather than the
  // sched_switch tracepoint (which some guests never fire on a CPU's way out
  // of idle; docs/tracing.md): each switch is then one sched_switch event
  // built from the outgoing task's record, or, out of idle, the incoming one's.
  bool switch_records() const { return switch_records_; }

 private:
  struct Impl;
  TraceSession();
  std::unique_ptr<Impl> impl_;
  std::string tracefs_;
  std::vector<std::string> events_, missing_;
  std::size_t ring_bytes_ = 0;
  bool switch_records_ = false;
};

}  // namespace ctx
