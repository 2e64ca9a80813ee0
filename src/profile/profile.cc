// Profile: interning of modules, frames and stacks. Equality is always decided by a full
// comparison (std::unordered_map calls operator== on hash matches), so two different stacks
// that happen to hash alike are never merged — the hash only makes the lookup fast.
#include "stacksym/profile.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace stacksym {
namespace {

// 64-bit mix (splitmix64 finalizer): spreads small integers such as frame indices.
inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t Combine(uint64_t seed, uint64_t value) {
  return Mix(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

}  // namespace

size_t Profile::FrameHash::operator()(const ProfileFrame& f) const {
  uint64_t h = Combine(static_cast<uint64_t>(f.kind), f.module);
  return static_cast<size_t>(Combine(h, f.address));
}

size_t Profile::StackHash::operator()(const ProfileStack& s) const {
  uint64_t h = Combine(Combine(s.pid, s.tid), static_cast<uint64_t>(s.state));
  h = Combine(h, std::hash<std::string>{}(s.comm));
  for (uint32_t frame : s.frames) h = Combine(h, frame);
  return static_cast<size_t>(Combine(h, s.frames.size()));
}

std::string ModuleFiles::Key(const Module& module) {
  if (module.build_id.empty()) return "p" + module.path;
  return "b" + std::string(module.build_id.begin(), module.build_id.end());
}

void ModuleFiles::Keep(const Module& module, std::shared_ptr<ElfFile> file) {
  if (file) files_[Key(module)] = std::move(file);
}

std::shared_ptr<ElfFile> ModuleFiles::Find(const Module& module) const {
  auto it = files_.find(Key(module));
  return it == files_.end() ? nullptr : it->second;
}

uint32_t Profile::AddModule(const Module& module) {
  // Modules are few (tens to hundreds); a linear scan keeps the struct free of another index.
  // A profile keeps a module's identity only: where one process mapped it says nothing of
  // another's samples.
  for (size_t i = 0; i < modules.size(); ++i) {
    if (modules[i].SameIdentity(module)) return static_cast<uint32_t>(i);
  }
  modules.push_back(module.Identity());
  return static_cast<uint32_t>(modules.size() - 1);
}

void Profile::RebuildIndexesIfStale() {
  // The vectors are public: a reader (e.g. of a saved profile) may have filled them directly.
  if (frame_index_.size() != frames.size()) {
    frame_index_.clear();
    frame_index_.reserve(frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      frame_index_.emplace(frames[i], static_cast<uint32_t>(i));
    }
  }
  if (stack_index_.size() != stacks.size()) {
    stack_index_.clear();
    stack_index_.reserve(stacks.size());
    for (size_t i = 0; i < stacks.size(); ++i) {
      stack_index_.emplace(stacks[i], static_cast<uint32_t>(i));
    }
    counts.resize(stacks.size(), 0);
    if (!off_cpu_ns.empty()) off_cpu_ns.resize(stacks.size(), 0);
  }
}

uint32_t Profile::InternFrame(const ProfileFrame& frame) {
  RebuildIndexesIfStale();
  ProfileFrame key = frame;
  // The module is documented as ignored for raw frames: clear it so that it cannot split
  // otherwise equal frames.
  if (key.kind == FrameKind::kUserRaw) key.module = 0;
  auto [it, inserted] = frame_index_.try_emplace(key, static_cast<uint32_t>(frames.size()));
  if (inserted) {
    frames.push_back(key);
    if (!symbols.empty()) symbols.resize(frames.size());
  }
  return it->second;
}

uint32_t Profile::InternStack(const ProfileStack& stack) {
  RebuildIndexesIfStale();
  auto [it, inserted] = stack_index_.try_emplace(stack, static_cast<uint32_t>(stacks.size()));
  if (inserted) {
    stacks.push_back(stack);
    counts.push_back(0);
    if (!off_cpu_ns.empty()) off_cpu_ns.push_back(0);
  }
  return it->second;
}

void Profile::AddSample(const ProfileStack& stack, uint64_t count, uint64_t time_ns) {
  uint32_t index = InternStack(stack);
  counts[index] += count;
  if (keep_times) {
    times.resize(stacks.size());
    times[index].push_back({time_ns, count});
  }
}

void Profile::AddOffCpu(const ProfileStack& stack, uint64_t nanoseconds, uint64_t time_ns) {
  uint32_t index = InternStack(stack);
  off_cpu_ns.resize(stacks.size(), 0);
  off_cpu_ns[index] += nanoseconds;
  if (keep_times) {
    times.resize(stacks.size());
    times[index].push_back({time_ns, nanoseconds});
  }
}

void Profile::AddProcess(ProfileProcess process) {
  auto it = std::lower_bound(processes.begin(), processes.end(), process.pid,
                             [](const ProfileProcess& p, uint32_t pid) { return p.pid < pid; });
  if (it != processes.end() && it->pid == process.pid) {
    *it = std::move(process);
  } else {
    processes.insert(it, std::move(process));
  }
}

const ProfileProcess* Profile::FindProcess(uint32_t pid) const {
  auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                             [](const ProfileProcess& p, uint32_t id) { return p.pid < id; });
  return it != processes.end() && it->pid == pid ? &*it : nullptr;
}

uint64_t Profile::total_samples() const { return Total(SampleType::kSamples); }

uint64_t Profile::Value(size_t stack, SampleType type) const {
  uint64_t samples = stack < counts.size() ? counts[stack] : 0;
  uint64_t off_cpu = stack < off_cpu_ns.size() ? off_cpu_ns[stack] : 0;
  switch (type) {
    case SampleType::kSamples:
      return samples;
    case SampleType::kCpu:
      return samples * period_ns;
    case SampleType::kOffCpu:
      return off_cpu;
    case SampleType::kWall:
      return samples * period_ns + off_cpu;
  }
  return 0;
}

uint64_t Profile::Total(SampleType type) const {
  uint64_t total = 0;
  for (size_t i = 0; i < stacks.size(); ++i) total += Value(i, type);
  return total;
}

const char* ThreadStateName(ThreadState state) {
  switch (state) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kSleeping:
      return "sleeping";
    case ThreadState::kUninterruptible:
      return "uninterruptible";
    case ThreadState::kPreempted:
      return "preempted";
    case ThreadState::kOther:
      break;
  }
  return "other";
}

std::optional<ThreadState> ParseThreadState(std::string_view name) {
  for (ThreadState s :
       {ThreadState::kRunning, ThreadState::kSleeping, ThreadState::kUninterruptible,
        ThreadState::kPreempted, ThreadState::kOther}) {
    if (name == ThreadStateName(s)) return s;
  }
  return std::nullopt;
}

const char* SampleTypeName(SampleType type) {
  switch (type) {
    case SampleType::kSamples:
      return "samples";
    case SampleType::kCpu:
      return "cpu";
    case SampleType::kOffCpu:
      return "off_cpu";
    case SampleType::kWall:
      break;
  }
  return "wall";
}

const char* SampleTypeUnit(SampleType type) {
  return type == SampleType::kSamples ? "count" : "nanoseconds";
}

std::optional<SampleType> ParseSampleType(std::string_view name) {
  for (SampleType t :
       {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall}) {
    if (name == SampleTypeName(t)) return t;
  }
  return std::nullopt;
}

}  // namespace stacksym
