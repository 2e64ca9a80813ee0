// SampleAggregator — turns raw samples into Profile stacks while their processes live:
// user addresses are normalized at once (build ID + file offset), each module's ELF file is
// opened and kept (Profile::files), and equal (pid, tid, comm, stack) samples are counted together.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/python_processes.h"
#include "capture/sample_source.h"
#include "capture/user_stack_unwinder.h"
#include "normalize/jit_files.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"
#include "stacksym/profile.h"

namespace stacksym::capture {

struct AggregatorCounters {
  uint64_t aggregated = 0;  // samples (with counts) added to the profile
  uint64_t user_stacks_empty = 0;
  uint64_t user_stacks_truncated = 0;
  uint64_t build_id_frames = 0;
  uint64_t build_id_fallbacks = 0;
  uint64_t frames_not_normalized = 0;
  uint64_t user_stacks_unwound = 0;   // stack copies walked (or answered by a remembered walk)
  uint64_t user_context_missing = 0;  // stack copies the kernel could not take (no user registers)
  uint64_t unwind_cache_hits = 0;
  uint64_t unwind_ends[kUnwindEndCount] = {};
  uint64_t bpf_unwind_ends[kUnwindEndCount] = {};  // walks in the BPF program, by end
  uint64_t verify_samples = 0;  // BPF-unwound chains compared with the stack copy's
  uint64_t verify_agreed = 0;
  uint64_t verify_no_reference = 0;  // stack copies with a pc the reader (late) could not place
  uint64_t off_cpu = 0;              // --off-cpu: intervals added to the profile
  uint64_t off_cpu_ns = 0;           // ... and their nanoseconds, before scaling
  uint64_t off_cpu_unmatched = 0;    // ends of intervals whose stacks never came (diagnostic)
};

class SampleAggregator {
 public:
  // unwind_tables: the recording's table cache (null: a private one). off_cpu_sample: the
  // probability with which off-CPU intervals were kept; each counts 1/p times its length.
  // python: the processes running CPython whose samples carry Python frames (null: none do).
  explicit SampleAggregator(std::shared_ptr<UnwindTableCache> unwind_tables = nullptr,
                            double off_cpu_sample = 1.0,
                            std::shared_ptr<PythonProcesses> python = nullptr);
  void Add(const RawSample& sample);
  // Mappings may have changed since the VMA cache was filled: drop it (called periodically).
  void RevalidateMappings() {
    normalizer_.RevalidateAll();
    unwinder_.Revalidate();
  }
  uint64_t unwind_fp_frames() const { return unwinder_.fp_frames(); }

  // Reads the perf maps and jitdumps of the processes with frames in anonymous memory (JIT
  // code) into profile().jit_files, as they are now: at the end of a recording or window.
  // Processes that have exited since are forgotten (their files were just read).
  void CollectJitFiles();

  Profile& profile() { return profile_; }

  // Windows (RecordOptions::window_s): the profile so far, handed over whole, and a new empty
  // one with the same settings in its place. Intervals still open carry over (their stacks
  // interned again in the new profile); files and process facts are kept for the next window
  // when it uses them again, so that a window costs no reopening.
  Profile TakeProfile();
  // Sample times: wall clock = monotonic + offset; a time before `not_before` (monotonic ns: a
  // sample read after its window closed) is kept at not_before.
  void SetClock(int64_t wall_minus_monotonic_ns, uint64_t not_before) {
    wall_minus_monotonic_ns_ = wall_minus_monotonic_ns;
    not_before_ns_ = not_before;
  }
  uint64_t late_samples() const { return late_samples_; }
  const AggregatorCounters& counters() const { return counters_; }
  const std::vector<std::string>& verify_differences() const { return verify_differences_; }

 private:
  uint32_t InternModule(pid_t pid, const Module& module);
  // The frame of an address normalized to `module` (interned) and `file_offset`.
  ProfileFrame UserFrame(uint32_t module, uint64_t file_offset, uint64_t vaddr) const;
  void NoteJitProcess(pid_t pid);
  // addrs_ of process `pid` normalized (every frame raw when the pid is meaningless).
  const NormalizedBatch& Normalize(pid_t pid);
  uint32_t KernelModule();
  void Verify(const RawSample& s, UnwindEnd end);
  void AppendUserFrames(const RawSample& s, std::span<const uint64_t> ips,
                        std::vector<uint32_t>* frames);
  std::shared_ptr<ElfFile> ModuleFile(pid_t pid, const Module& module);
  void AppendBuildIdFrames(const RawSample& s, std::vector<uint32_t>* frames);
  void AddOffCpu(const ProfileStack& stack, uint64_t ns, uint64_t intervals, uint64_t end_ns);
  uint64_t WallTime(uint64_t monotonic_ns);
  void NoteProcess(uint32_t pid);
  ProfileStack CarryStack(const Profile& from, const ProfileStack& stack);
  void CloseOffCpu(const RawSample& s);

  Profile profile_;
  std::unordered_map<std::string, uint32_t> module_index_;  // kind|path|build ID → index
  uint32_t kernel_module_ = UINT32_MAX;
  Normalizer normalizer_;
  // Files opened to unwind through modules that no frame has named yet (InternModule takes
  // them over).
  std::unordered_map<std::string, std::shared_ptr<ElfFile>> unwind_files_;
  // The files the last window kept, for this window's modules (windows only).
  std::unordered_map<std::string, std::shared_ptr<ElfFile>> carried_files_;
  // What /proc said of each process (by pid) this window and the last; an exec forgets it.
  std::unordered_map<uint32_t, ProfileProcess> processes_, carried_processes_;
  int64_t wall_minus_monotonic_ns_ = 0;
  uint64_t not_before_ns_ = 0;
  uint64_t late_samples_ = 0;
  UserStackUnwinder unwinder_;
  std::unique_ptr<PythonStacks> python_;  // null: no Python frames
  std::vector<uint64_t> unwound_;
  AggregatorCounters counters_;
  double off_cpu_scale_ = 1.0;  // 1 / off_cpu_sample
  // --off-cpu: stacks of intervals still open, by tid, with their start (OffCpuPart::kOpen).
  struct OpenInterval {
    uint64_t start_ns = 0;
    ProfileStack stack;
  };
  std::unordered_map<uint32_t, OpenInterval> open_off_cpu_;
  std::vector<std::string> verify_differences_;
  // Processes with frames in anonymous memory: their JIT files, opened while they live (null
  // beyond kMaxOpenJitProcesses, or when that failed: then opened when collected).
  std::unordered_map<uint32_t, std::unique_ptr<normalize::ProcessJitFiles>> jit_processes_;
  // Reused buffers.
  NormalizedBatch batch_;
  std::vector<uint64_t> addrs_;
  ProfileStack stack_;
};

}  // namespace stacksym::capture
