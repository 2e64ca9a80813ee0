// Which stacks an output shows (ProfileFilter, FilterProfile) and which of their values (sample
// types by name, ChooseSampleType): the one place every writer, report and command asks.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "stacksym/output.h"

namespace stacksym {
namespace {

constexpr SampleType kSampleTypes[] = {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu,
                                       SampleType::kWall};
constexpr ThreadState kThreadStates[] = {ThreadState::kRunning, ThreadState::kSleeping,
                                         ThreadState::kUninterruptible, ThreadState::kPreempted,
                                         ThreadState::kOther};

Error NoOffCpuTime(const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument,
                   what + ": the profile has no off-CPU time; record with --off-cpu");
}

// Stack `s` of `from` (its frames already renumbered for `out`) with its values, and with
// keep_times each sample's or interval's own time: a running stack's times are its counts, an
// off-CPU stack's its nanoseconds. Any part of a value its times do not cover is added untimed.
void AddStackValues(const Profile& from, size_t s, const ProfileStack& stack, Profile* out) {
  bool running = stack.state == ThreadState::kRunning;
  uint64_t count = from.Value(s, SampleType::kSamples);
  uint64_t off_cpu = from.Value(s, SampleType::kOffCpu);
  uint64_t& timed_value = running ? count : off_cpu;
  if (from.keep_times && s < from.times.size()) {
    out->keep_times = true;
    for (const TimedValue& t : from.times[s]) {
      if (running) {
        out->AddSample(stack, t.value, t.time_ns);
      } else {
        out->AddOffCpu(stack, t.value, t.time_ns);
      }
      timed_value -= std::min(timed_value, t.value);
    }
    out->keep_times = false;
  }
  out->AddSample(stack, count);
  if (from.has_off_cpu()) out->AddOffCpu(stack, off_cpu);
}

}  // namespace

bool ProfileFilter::Keeps(const ProfileStack& stack) const {
  if (comm && stack.comm != *comm) return false;
  if (pid && stack.pid != *pid) return false;
  return states.empty() || std::find(states.begin(), states.end(), stack.state) != states.end();
}

Profile FilterProfile(const Profile& profile, const ProfileFilter& filter) {
  std::vector<uint32_t> kept;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    if (filter.Keeps(profile.stacks[s])) kept.push_back(static_cast<uint32_t>(s));
  }
  return FilterProfileStacks(profile, kept);
}

Profile FilterProfileStacks(const Profile& profile, std::span<const uint32_t> stacks) {
  // Rebuilt through the Profile API (its private lookup tables must match the vectors). Only
  // the modules and frames the kept stacks use are carried over, in the order first used, so
  // that a per-process copy (what the exporters send) names no other process's files.
  Profile out;
  out.period_ns = profile.period_ns;
  out.start_time_ns = profile.start_time_ns;
  out.duration_ns = profile.duration_ns;
  out.lost_samples = profile.lost_samples;
  out.event = profile.event;
  out.off_cpu_recorded = profile.has_off_cpu();  // even if no off-CPU stack is kept
  constexpr uint32_t kUnmapped = UINT32_MAX;
  std::vector<uint32_t> module_map(profile.modules.size(), kUnmapped);
  std::vector<uint32_t> frame_map(profile.frames.size(), kUnmapped);
  auto map_frame = [&](uint32_t index) {
    if (index >= frame_map.size()) return index;  // dangling: left for the writers to report
    if (frame_map[index] == kUnmapped) {
      ProfileFrame frame = profile.frames[index];
      if (frame.kind != FrameKind::kUserRaw && frame.module < module_map.size()) {
        uint32_t& module = module_map[frame.module];
        if (module == kUnmapped) {
          const Module& kept = profile.modules[frame.module];
          module = out.AddModule(kept);
          if (std::shared_ptr<ElfFile> file = profile.files.Find(kept)) out.files.Keep(kept, file);
        }
        frame.module = module;
      }
      frame_map[index] = out.InternFrame(frame);
    }
    return frame_map[index];
  };
  std::vector<uint32_t> pids;
  for (uint32_t s : stacks) {
    if (s >= profile.stacks.size()) continue;
    ProfileStack stack = profile.stacks[s];
    for (uint32_t& frame : stack.frames) frame = map_frame(frame);
    pids.push_back(stack.pid);
    AddStackValues(profile, s, stack, &out);
  }
  out.symbols.resize(out.frames.size());
  for (size_t i = 0; i < frame_map.size() && i < profile.symbols.size(); ++i) {
    if (frame_map[i] != kUnmapped && profile.symbols[i] && !out.symbols[frame_map[i]]) {
      out.symbols[frame_map[i]] = profile.symbols[i];
    }
  }
  std::sort(pids.begin(), pids.end());
  for (const ProfileProcess& process : profile.processes) {
    if (std::binary_search(pids.begin(), pids.end(), process.pid)) out.AddProcess(process);
  }
  out.keep_times = profile.keep_times;
  if (out.keep_times) out.times.resize(out.stacks.size());
  return out;
}

Result<std::vector<ThreadState>> ParseThreadStates(std::string_view list) {
  std::vector<ThreadState> states;
  while (true) {
    size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    std::optional<ThreadState> state = ParseThreadState(name);
    if (!state) {
      std::string known;
      for (ThreadState s : kThreadStates)
        known += std::string(known.empty() ? "" : ", ") + ThreadStateName(s);
      return MakeError(ErrorCode::kInvalidArgument,
                       "unknown thread state \"" + std::string(name) + "\" (known: " + known + ")");
    }
    if (std::find(states.begin(), states.end(), *state) == states.end()) states.push_back(*state);
    if (comma == std::string_view::npos) return states;
    list.remove_prefix(comma + 1);
  }
}

Result<SampleType> ParseSampleTypeName(std::string_view name) {
  if (std::optional<SampleType> type = ParseSampleType(name)) return *type;
  std::string known;
  for (SampleType t : kSampleTypes)
    known += std::string(known.empty() ? "" : ", ") + SampleTypeName(t);
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown sample type \"" + std::string(name) + "\" (known: " + known + ")");
}

Result<SampleType> ChooseSampleType(const Profile& profile, std::optional<SampleType> asked,
                                    const ProfileFilter& filter) {
  if (!profile.has_off_cpu()) {
    if (asked == SampleType::kOffCpu || asked == SampleType::kWall) {
      return NoOffCpuTime(std::string("sample type ") + SampleTypeName(*asked));
    }
    for (ThreadState state : filter.states) {
      if (state != ThreadState::kRunning) {
        return NoOffCpuTime(std::string("thread state ") + ThreadStateName(state));
      }
    }
  }
  return asked.value_or(profile.DefaultSampleType());
}

}  // namespace stacksym
