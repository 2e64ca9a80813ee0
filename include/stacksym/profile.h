// stacksym/profile.h — a profile: deduplicated stacks of normalized frames, with counts and,
// for a recording of where threads wait, off-CPU time.
//
// This is what `record` produces and every output (pprof, folded, flame graph, report)
// consumes. User frames are normalized (module = ELF build ID + path, address = file
// offset), so a profile stays meaningful after the process exits and can be symbolized on
// another machine. Each distinct frame is stored once (Profile::frames) and symbolized once
// (Profile::symbols), however many stacks refer to it.
//
//   Profile p;
//   uint32_t m = p.AddModule({.kind = ModuleKind::kElf, .path = "/usr/bin/bash", ...});
//   uint32_t f = p.InternFrame({FrameKind::kUser, m, 0x4a2f0});
//   p.AddSample({.pid = 1, .tid = 1, .comm = "bash", .frames = {f}}, /*count=*/1);
//   p.AddOffCpu({.pid = 1, .tid = 1, .comm = "bash", .frames = {f},
//                .state = ThreadState::kSleeping}, /*nanoseconds=*/2'000'000);
//   uint64_t wall = p.Value(0, SampleType::kWall);   // CPU + off-CPU time of stack 0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stacksym/frame.h"
#include "stacksym/module.h"
#include "stacksym/reason.h"

namespace stacksym {

enum class FrameKind : uint8_t {
  kUser,     // address = file offset inside module; in a module with a pid (anonymous memory,
             // JIT code), the virtual address in that process
  kUserRaw,  // could not be normalized: address = virtual address in the process
  kKernel,   // address = kernel virtual address
  // An interpreted Python function (a CPython code object at a line). Named when recorded:
  // its symbols hold the qualified name, name, file, first line and line, and symbolizing
  // leaves it alone. module = the profile's kPythonModulePath module; address = the frame's
  // number among the profile's distinct Python frames (no meaning beyond identity).
  kPython,
};

// The module of every Python frame (pprof: its mapping's file name).
inline constexpr std::string_view kPythonModulePath = "[python]";

struct ProfileFrame {
  FrameKind kind = FrameKind::kUser;
  uint32_t module = 0;  // index into Profile::modules (ignored for kUserRaw)
  uint64_t address = 0;
  bool operator==(const ProfileFrame&) const = default;
};

// What a thread was doing when its stack was taken: running (a CPU sample), or off CPU in one of
// the scheduler's states (an off-CPU interval, recorded when it left the CPU). Off-CPU stacks of
// one code path in different states stay apart, so that a reader can tell sleeping from
// waiting on I/O from being preempted.
enum class ThreadState : uint8_t {
  kRunning,          // on CPU (CPU samples)
  kSleeping,         // off CPU, interruptible sleep (futex, pipe, nanosleep, poll...)
  kUninterruptible,  // off CPU, uninterruptible sleep (disk I/O, page faults...)
  kPreempted,        // off CPU, still runnable: preempted by another task
  kOther,            // off CPU in another state (stopped, traced, ...)
};
const char* ThreadStateName(ThreadState state);  // "running", "sleeping", "uninterruptible"...
std::optional<ThreadState> ParseThreadState(std::string_view name);

struct ProfileStack {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;              // thread name
  std::vector<uint32_t> frames;  // indices into Profile::frames, leaf (innermost) first;
                                 // kernel frames come before user frames
  ThreadState state = ThreadState::kRunning;
  bool operator==(const ProfileStack&) const = default;
};

// The values a profile's stacks carry, and the one a single-valued output (folded, the flame
// graph, report) shows: CPU samples (a count), CPU time (samples × period), off-CPU time, or
// wall time (CPU + off-CPU), the times in nanoseconds.
enum class SampleType : uint8_t { kSamples, kCpu, kOffCpu, kWall };
const char* SampleTypeName(SampleType type);  // "samples", "cpu", "off_cpu", "wall"
const char* SampleTypeUnit(SampleType type);  // "count" or "nanoseconds"
std::optional<SampleType> ParseSampleType(std::string_view name);

// The most samples a profile holds in all, so that every count, however stacks merge, fits
// pprof's int64 sample values. Readers refuse input beyond it.
inline constexpr uint64_t kMaxTotalSamples = uint64_t{INT64_MAX};

class ElfFile;  // stacksym/elf.h

// A process seen in a recording: what a profile store labels its samples with. Read by the
// recorder from /proc while the process lives (the first time it is seen, and again after an
// exec); a field it could not read is empty.
struct ProfileProcess {
  uint32_t pid = 0;
  std::string executable;    // /proc/PID/exe's target (without " (deleted)")
  std::string name;          // the thread group leader's comm
  std::string container_id;  // from /proc/PID/cgroup (docker, containerd, cri-o, podman)
  bool operator==(const ProfileProcess&) const = default;
};

// One CPU sample (value: its count) or one off-CPU interval (value: its nanoseconds, scaled as
// the stack's value is), at time_ns (wall clock, ns since the epoch): the sample's time, or the
// end of the interval. Kept only with Profile::keep_times.
struct TimedValue {
  uint64_t time_ns = 0;
  uint64_t value = 0;
  bool operator==(const TimedValue&) const = default;
};

// ELF files kept open for a profile's modules, by build ID (by path for a module without one):
// the recorder opens each mapped file while its process lives, so that files deleted or
// replaced since still symbolize. Not persisted: a profile read from a file has none.
class ModuleFiles {
 public:
  // Keeps `file` for `module` (replacing one kept before); a null file is not kept.
  void Keep(const Module& module, std::shared_ptr<ElfFile> file);
  std::shared_ptr<ElfFile> Find(const Module& module) const;  // null: none kept
  size_t size() const { return files_.size(); }

 private:
  static std::string Key(const Module& module);
  std::unordered_map<std::string, std::shared_ptr<ElfFile>> files_;
};

struct Profile {
  std::vector<Module> modules;
  std::vector<ProfileFrame> frames;  // distinct frames
  std::vector<ProfileStack> stacks;  // distinct stacks
  std::vector<uint64_t> counts;      // CPU samples per stack, parallel to stacks (0: off-CPU only)
  // Off-CPU nanoseconds per stack, parallel to stacks; empty when the recording measured no
  // off-CPU time (has_off_cpu()).
  std::vector<uint64_t> off_cpu_ns;
  std::vector<std::optional<FrameSymbols>> symbols;  // parallel to frames once symbolized

  uint64_t period_ns = 0;      // sampling period (1e9 / frequency)
  uint64_t start_time_ns = 0;  // wall clock, ns since the epoch
  uint64_t duration_ns = 0;
  uint64_t lost_samples = 0;  // samples the recorder knows it dropped (not in counts)
  std::string event;          // what was sampled ("cpu-clock", "cycles"); empty if unknown
  ModuleFiles files;          // files the recorder kept open (SymbolizeProfile looks here first)
  // JIT symbol files the recorder read, by pid (SymbolizeProfile looks here first).
  std::unordered_map<uint32_t, std::shared_ptr<const JitFiles>> jit_files;

  // The processes the stacks belong to, by pid (what the recorder could read of them; a
  // profile read from a file has none). AddProcess replaces an entry of the same pid.
  std::vector<ProfileProcess> processes;
  void AddProcess(ProfileProcess process);
  const ProfileProcess* FindProcess(uint32_t pid) const;  // null: not known

  // With keep_times, every sample and off-CPU interval is also kept with its own time, per
  // stack (times, parallel to stacks): what OTLP profiles carry (one timestamp per sample).
  bool keep_times = false;
  std::vector<std::vector<TimedValue>> times;

  uint32_t AddModule(const Module& module);         // deduplicated by identity; keeps the identity
  uint32_t InternFrame(const ProfileFrame& frame);  // deduplicated
  // Aggregates equal stacks; time_ns (wall clock) is kept with keep_times.
  void AddSample(const ProfileStack& stack, uint64_t count, uint64_t time_ns = 0);
  // Off-CPU time of a stack (its state says which kind of wait); aggregates equal stacks.
  // time_ns: when the interval ended (kept with keep_times).
  void AddOffCpu(const ProfileStack& stack, uint64_t nanoseconds, uint64_t time_ns = 0);
  uint64_t total_samples() const;
  // The recording measured off-CPU time (AddOffCpu, or off_cpu_ns filled by a reader), so the
  // off-CPU and wall values mean something, even where they are 0.
  bool has_off_cpu() const { return !off_cpu_ns.empty() || off_cpu_recorded; }
  bool off_cpu_recorded = false;  // set by a recorder that measured off-CPU time
  // Stack `stack`'s value of `type` (see SampleType).
  uint64_t Value(size_t stack, SampleType type) const;
  uint64_t Total(SampleType type) const;
  // What a single-valued output shows when the user does not say: wall time for a recording
  // of off-CPU time, else samples.
  SampleType DefaultSampleType() const {
    return has_off_cpu() ? SampleType::kWall : SampleType::kSamples;
  }

 private:
  // Rebuilds the lookup indexes when the public vectors were filled directly.
  void RebuildIndexesIfStale();
  uint32_t InternStack(const ProfileStack& stack);  // its index, added with no value when new
  struct FrameHash {
    size_t operator()(const ProfileFrame& f) const;
  };
  struct StackHash {
    size_t operator()(const ProfileStack& s) const;
  };
  std::unordered_map<ProfileFrame, uint32_t, FrameHash> frame_index_;
  std::unordered_map<ProfileStack, uint32_t, StackHash> stack_index_;
};

}  // namespace stacksym
