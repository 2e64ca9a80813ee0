// Folded stacks (Brendan Gregg's format): "comm;outer;...;leaf COUNT", one line per stack.
#include <charconv>
#include <map>
#include <unordered_map>

#include "output/frame_names.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

constexpr std::string_view kInlineSuffix = "_[i]";
constexpr std::string_view kKernelSuffix = "_[k]";
constexpr std::string_view kPythonSuffix = "_[py]";

// ';' separates frames and a newline separates stacks, so neither may appear inside a name.
void AppendSanitized(std::string_view name, std::string* out) {
  for (char c : name) {
    if (c == ';') {
      out->push_back(':');
    } else if (c == '\n' || c == '\r') {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

std::string FormatFolded(const Profile& profile, const FoldedOptions& options) {
  const SampleType type = options.sample_type.value_or(profile.DefaultSampleType());
  std::vector<std::vector<output::NamedEntry>> names = output::NameAllFrames(profile);
  // Stacks that differ only by pid/tid fold into one line; std::map sorts the output.
  std::map<std::string, uint64_t> lines;
  std::string line;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    uint64_t value = profile.Value(s, type);
    if (value == 0) continue;
    const ProfileStack& stack = profile.stacks[s];
    line.clear();
    AppendSanitized(stack.comm.empty() ? "[unknown]" : stack.comm, &line);
    for (size_t f = stack.frames.size(); f-- > 0;) {
      uint32_t frame = stack.frames[f];
      if (frame >= names.size()) continue;
      for (const output::NamedEntry& entry : names[frame]) {
        line.push_back(';');
        AppendSanitized(entry.name, &line);
        // A plain frame whose name happens to end in a marker would be read back as a
        // kernel or inlined frame: a trailing space keeps it plain.
        if (entry.kind == output::EntryKind::kUser &&
            (entry.name.ends_with(kKernelSuffix) || entry.name.ends_with(kInlineSuffix) ||
             entry.name.ends_with(kPythonSuffix))) {
          line.push_back(' ');
        }
        if (entry.kind == output::EntryKind::kKernel && options.mark_kernel) {
          line.append(kKernelSuffix);
        } else if (entry.kind == output::EntryKind::kPython && options.mark_python) {
          line.append(kPythonSuffix);
        } else if (entry.kind == output::EntryKind::kInline && options.mark_inline) {
          line.append(kInlineSuffix);
        }
      }
    }
    // Off CPU: the state last, as the leaf (a plain frame when read back).
    if (stack.state != ThreadState::kRunning) {
      line.push_back(';');
      line += output::OffCpuStateFrameName(stack.state);
    }
    lines[line] += value;
  }
  std::string out;
  for (const auto& [stack, value] : lines) {
    out += stack;
    out += ' ';
    out += std::to_string(value);
    out += '\n';
  }
  return out;
}

Result<Profile> ParseFolded(std::string_view text) {
  Profile profile;
  uint32_t user_module =
      profile.AddModule({.kind = ModuleKind::kUnknown, .path = "[folded]", .build_id = {}});
  uint32_t kernel_module =
      profile.AddModule({.kind = ModuleKind::kKernel, .path = "[kernel.kallsyms]", .build_id = {}});
  uint32_t python_module = UINT32_MAX;  // added with the first "_[py]" frame
  // A folded frame has no address: each distinct (kind, inline chain) gets the next number.
  std::unordered_map<std::string, uint32_t> frame_by_key;
  std::vector<uint32_t> root_first;
  size_t line_number = 0;
  uint64_t total = 0;  // bounded so that merged counts cannot wrap (kMaxTotalSamples)
  auto error = [&](const std::string& what) {
    return MakeError(ErrorCode::kMalformed,
                     "folded stacks line " + std::to_string(line_number) + ": " + what);
  };

  while (!text.empty()) {
    ++line_number;
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;

    size_t space = line.rfind(' ');
    if (space == std::string_view::npos || space == 0) {
      return error("expected \"stack COUNT\"");
    }
    std::string_view count_text = line.substr(space + 1);
    uint64_t count = 0;
    auto [end, ec] =
        std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (ec != std::errc() || end != count_text.data() + count_text.size()) {
      return error("bad sample count \"" + std::string(count_text) + "\"");
    }
    if (count > kMaxTotalSamples - total) {
      return error("sample counts add up to more than 2^63-1");
    }
    total += count;
    std::string_view stack_text = line.substr(0, space);

    // Split into comm and frames; a frame followed by "_[i]" frames forms one inline chain.
    ProfileStack stack;
    root_first.clear();
    size_t pos = 0;
    bool first = true;
    std::vector<std::string> chain;  // outermost first
    bool chain_kernel = false;
    bool chain_python = false;
    auto flush_chain = [&]() {
      if (chain.empty()) return;
      std::string key(chain_kernel ? "k" : chain_python ? "p" : "u");
      for (const std::string& name : chain) {
        key += '\n';
        key += name;
      }
      auto [it, inserted] = frame_by_key.try_emplace(key, 0);
      if (inserted) {
        ProfileFrame frame{chain_kernel ? FrameKind::kKernel : FrameKind::kUser,
                           chain_kernel ? kernel_module : user_module, profile.frames.size()};
        if (chain_python) {
          if (python_module == UINT32_MAX) {
            python_module = profile.AddModule({.kind = ModuleKind::kAnonymous,
                                               .path = std::string(kPythonModulePath),
                                               .build_id = {}});
          }
          frame = {FrameKind::kPython, python_module, profile.frames.size()};
        }
        it->second = profile.InternFrame(frame);
        profile.symbols.resize(profile.frames.size());
        FrameSymbols symbols;
        for (size_t i = chain.size(); i-- > 0;) {
          SourceFrame sf;
          sf.function = chain[i];
          sf.inlined = i != 0;
          symbols.lines.push_back(std::move(sf));
        }
        profile.symbols[it->second] = std::move(symbols);
      }
      root_first.push_back(it->second);
      chain.clear();
    };
    while (pos <= stack_text.size()) {
      size_t semi = stack_text.find(';', pos);
      std::string_view part = stack_text.substr(
          pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
      pos = semi == std::string_view::npos ? stack_text.size() + 1 : semi + 1;
      if (first) {
        stack.comm = std::string(part);
        first = false;
        continue;
      }
      if (part.empty()) return error("empty frame name");
      if (part.ends_with(kInlineSuffix) && !chain.empty() && !chain_kernel && !chain_python) {
        chain.emplace_back(part.substr(0, part.size() - kInlineSuffix.size()));
        continue;
      }
      flush_chain();
      chain_kernel = part.ends_with(kKernelSuffix);
      chain_python = part.ends_with(kPythonSuffix);
      if (chain_kernel) {
        part.remove_suffix(kKernelSuffix.size());
      } else if (chain_python) {
        part.remove_suffix(kPythonSuffix.size());
      } else if (part.ends_with(kInlineSuffix)) {
        part.remove_suffix(kInlineSuffix.size());  // an inlined frame with no caller shown
      }
      if (part.empty()) return error("empty frame name");
      chain.emplace_back(part);
    }
    flush_chain();
    stack.frames.assign(root_first.rbegin(), root_first.rend());
    profile.AddSample(stack, count);
  }
  return profile;
}

}  // namespace stacksym
