// Which stacks an output shows (ProfileFilter, FilterProfile) and which of their values (sample
// types by name, ChooseSampleType): the one place every writer, report and command asks.
#include <algorithm>

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

}  // namespace

bool ProfileFilter::Keeps(const ProfileStack& stack) const {
  if (comm && stack.comm != *comm) return false;
  if (pid && stack.pid != *pid) return false;
  return states.empty() || std::find(states.begin(), states.end(), stack.state) != states.end();
}

Profile FilterProfile(const Profile& profile, const ProfileFilter& filter) {
  // Rebuilt through the Profile API (its private lookup tables must match the vectors);
  // indices are remapped in case the input held duplicate modules or frames.
  Profile out;
  out.period_ns = profile.period_ns;
  out.start_time_ns = profile.start_time_ns;
  out.duration_ns = profile.duration_ns;
  out.off_cpu_recorded = profile.has_off_cpu();  // even if no off-CPU stack is kept
  std::vector<uint32_t> module_map(profile.modules.size());
  for (size_t i = 0; i < profile.modules.size(); ++i) {
    module_map[i] = out.AddModule(profile.modules[i]);
  }
  std::vector<uint32_t> frame_map(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    ProfileFrame frame = profile.frames[i];
    if (frame.module < module_map.size()) frame.module = module_map[frame.module];
    frame_map[i] = out.InternFrame(frame);
  }
  out.symbols.resize(out.frames.size());
  for (size_t i = 0; i < profile.frames.size() && i < profile.symbols.size(); ++i) {
    if (profile.symbols[i] && !out.symbols[frame_map[i]]) {
      out.symbols[frame_map[i]] = profile.symbols[i];
    }
  }
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    ProfileStack stack = profile.stacks[s];
    if (!filter.Keeps(stack)) continue;
    for (uint32_t& frame : stack.frames) {
      if (frame < frame_map.size()) frame = frame_map[frame];
    }
    out.AddSample(stack, profile.Value(s, SampleType::kSamples));
    if (profile.has_off_cpu()) out.AddOffCpu(stack, profile.Value(s, SampleType::kOffCpu));
  }
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
