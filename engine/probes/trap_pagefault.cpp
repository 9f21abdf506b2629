// trap.pagefault: one minor page fault, the first touch of an anonymous page.
// Before each timed batch of k ops the workload maps k fresh private
// anonymous pages (untimed); the batch touches one byte in each, so every
// touch traps into the kernel, which finds no page table entry and, for a
// write, allocates and zeroes a page and maps it (for a read, maps the shared
// zero page); after the batch the pages are unmapped (untimed). One op is one
// fault: the trap, the fault handler and the return, plus, once per 512
// pages, a page-table page. Transparent huge pages would let one fault cover
// 2 MiB (and multi-size THP 16-64 KiB), so the mapping is MADV_NOHUGEPAGE.
// A check compares the minor faults the kernel counted for this thread
// (getrusage RUSAGE_THREAD, ru_minflt) with the pages touched.
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "os/tasks.hpp"

namespace {
namespace CTXBENCH_UNITY_ID {
using namespace ctx;

long thread_minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

class FirstTouch final : public Workload {
 public:
  explicit FirstTouch(bool write) : write_(write), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {}
  ~FirstTouch() override { unmap(); }
  FirstTouch(const FirstTouch&) = delete;
  FirstTouch& operator=(const FirstTouch&) = delete;

  void prepare(std::uint64_t iterations) override {
    unmap();
    bytes_ = static_cast<std::size_t>(iterations) * page_;
    void* at = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (at == MAP_FAILED) {
      bytes_ = 0;
      throw_errno(fmt::format("mmap of {} pages to fault on", iterations));
    }
    pages_ = static_cast<char*>(at);
    // EINVAL where the kernel has no THP: then there is nothing to turn off.
    if (madvise(pages_, bytes_, MADV_NOHUGEPAGE) != 0 && errno != EINVAL) throw_errno("madvise(MADV_NOHUGEPAGE)");
    faults_before_ = thread_minor_faults();
  }
  void run(std::uint64_t iterations) override {
    char* at = pages_;
    if (write_) {
      for (std::uint64_t i = 0; i < iterations; ++i, at += page_) *static_cast<volatile char*>(at) = 1;
    } else {
      for (std::uint64_t i = 0; i < iterations; ++i, at += page_) (void)*static_cast<volatile char*>(at);
    }
  }
  void after(std::uint64_t iterations) override {
    faults_ += thread_minor_faults() - faults_before_;
    touched_ += iterations;
    unmap();
  }
  void annotate(Result& r) override {
    Check check;
    check.name = "minor_faults";
    check.expected = touched_;
    check.observed = faults_;
    const double ratio = touched_ ? static_cast<double>(faults_) / static_cast<double>(touched_) : 0.0;
    check.ratio = ratio;
    check.ok = ratio >= 0.9 && ratio <= 1.1;
    check.detail =
        "getrusage(RUSAGE_THREAD) ru_minflt over every timed batch "
        "(calibration and warm-up included) vs pages "
        "touched; one fault per page expected";
    if (ratio < 0.9)
      r.verdict.add(Status::suspect, Reason::count_mismatch,
                    fmt::format("{} minor faults for {} pages touched "
                                "({:.0f}%): pages were already mapped (huge "
                                "pages or prefaulting), so part of the figure "
                                "is a plain memory access",
                                faults_, touched_, 100 * ratio));
    else if (ratio > 1.1)
      r.verdict.add(Status::suspect, Reason::count_mismatch,
                    fmt::format("{} minor faults for {} pages touched ({:.0f}%): "
                                "something else faulted inside the "
                                "timed batches, so the figure is not one fault per op",
                                faults_, touched_, 100 * ratio));
    r.checks.push_back(check);
    r.derived["page_bytes"] = static_cast<double>(page_);
    r.derived["minor_faults_per_op"] = ratio;
  }

 private:
  void unmap() {
    if (pages_) munmap(pages_, bytes_);
    pages_ = nullptr;
    bytes_ = 0;
  }

  bool write_;
  std::size_t page_;
  char* pages_ = nullptr;
  std::size_t bytes_ = 0;
  long faults_before_ = 0;
  long faults_ = 0;
  std::uint64_t touched_ = 0;
};

const Registrar registrar({
    .name = "trap.pagefault",
    .op = "one minor page fault: the first touch (a 1-byte write or read) of a "
          "fresh anonymous page, huge pages off",
    .roles = {{"profile:minor_fault", 0}},
    .params = {{"touch",
                {"write", "read"},
                {},
                "write: the kernel allocates and zeroes a page; read: it maps "
                "the shared zero page, no allocation"}},
    .make = [](Context& ctx) { return std::make_unique<FirstTouch>(ctx.param("touch") == "write"); },
    .method = "lmbench lat_pagefault and libMicro's memory tests, on anonymous "
              "memory; pages mapped and unmapped "
              "outside the timed region (the harness's prepare/after hooks)",
});

}  // namespace CTXBENCH_UNITY_ID
}  // namespace
