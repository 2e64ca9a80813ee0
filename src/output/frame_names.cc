#include "output/frame_names.h"

#include "base/hex.h"

namespace stacksym::output {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string FrameModuleName(const Profile& profile, const ProfileFrame& frame) {
  if (frame.kind == FrameKind::kKernel) {
    if (frame.module < profile.modules.size() && !profile.modules[frame.module].path.empty() &&
        profile.modules[frame.module].kind == ModuleKind::kKernel) {
      return profile.modules[frame.module].path;
    }
    return "[kernel.kallsyms]";
  }
  if (frame.kind == FrameKind::kUser && frame.module < profile.modules.size() &&
      !profile.modules[frame.module].path.empty()) {
    return profile.modules[frame.module].path;
  }
  return "[unknown]";
}

std::string UnsymbolizedName(const Profile& profile, const ProfileFrame& frame) {
  std::string hex = HexU64(frame.address);
  if (frame.kind == FrameKind::kUser && frame.module < profile.modules.size() &&
      !profile.modules[frame.module].path.empty()) {
    return BaseName(profile.modules[frame.module].path) + "+" + hex;
  }
  return hex;
}

static std::string FunctionName(const SourceFrame& line) {
  if (!line.function.empty()) return line.function;
  if (!line.raw_function.empty()) return line.raw_function;
  return "[unknown]";
}

std::vector<std::vector<NamedEntry>> NameAllFrames(const Profile& profile) {
  std::vector<std::vector<NamedEntry>> names(profile.frames.size());
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    bool kernel = frame.kind == FrameKind::kKernel;
    const FrameSymbols* symbols =
        i < profile.symbols.size() && profile.symbols[i] ? &*profile.symbols[i] : nullptr;
    std::vector<NamedEntry>& out = names[i];
    if (symbols == nullptr || symbols->lines.empty()) {
      out.push_back(
          {UnsymbolizedName(profile, frame), kernel ? EntryKind::kKernel : EntryKind::kUser});
      continue;
    }
    // lines are innermost first; the display order is outermost first.
    for (size_t j = symbols->lines.size(); j-- > 0;) {
      bool inlined = j + 1 < symbols->lines.size();
      EntryKind kind = kernel    ? EntryKind::kKernel
                       : inlined ? EntryKind::kInline
                                 : EntryKind::kUser;
      out.push_back({FunctionName(symbols->lines[j]), kind});
    }
  }
  return names;
}

std::string OffCpuStateFrameName(ThreadState state) {
  if (state == ThreadState::kRunning) return "";
  return std::string("[off-cpu: ") + ThreadStateName(state) + "]";
}

}  // namespace stacksym::output
