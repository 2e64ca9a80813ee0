// pprof (profile.proto) encoding and decoding of a Profile.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "output/flame_tree.h"
#include "output/gzip.h"
#include "profile.pb.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

namespace pb = perftools::profiles;

// Each module is laid out at its own synthetic, non-overlapping base, with file offset 0 at
// memory_start: address - memory_start + file_offset is then the normalized file offset, as
// the pprof format defines it, and tools that merge or sort mappings see disjoint ranges.
constexpr uint64_t kModuleSpacing = uint64_t{1} << 40;
constexpr uint64_t kMaxNormalizedOffset = kModuleSpacing - 1;

class StringTable {
 public:
  explicit StringTable(pb::Profile* out) : out_(out) { Intern(""); }
  // profile.proto strings must be UTF-8 (protobuf refuses to parse anything else), so bytes
  // that are not are replaced by '?'.
  int64_t Intern(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int64_t>(index_.size()));
    if (inserted) {
      it->second = static_cast<int64_t>(out_->string_table_size());
      std::string valid = output::ToValidUtf8(s);
      auto [vit, vinserted] = valid_index_.try_emplace(valid, it->second);
      if (vinserted) {
        out_->add_string_table(std::move(valid));
      } else {
        it->second = vit->second;
      }
    }
    return it->second;
  }

 private:
  pb::Profile* out_;
  std::unordered_map<std::string, int64_t> index_;        // by original string
  std::unordered_map<std::string, int64_t> valid_index_;  // by UTF-8 string
};

std::string HexBuildId(const std::vector<uint8_t>& id) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : id) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool ParseHexBuildId(const std::string& hex, std::vector<uint8_t>* out) {
  if (hex.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

struct MappingFacts {
  bool any_frame = false;
  uint64_t min_address = std::numeric_limits<uint64_t>::max();
  uint64_t max_address = 0;
  bool all_attempted = true;  // every frame went through symbolization
  bool any_function = false;
  bool any_file = false;
  bool any_line = false;
  bool any_inline = false;
};

const std::string kEventComment = "stacksym event: ";
const std::string kLostComment = "stacksym lost samples: ";

bool IsKernelPath(const std::string& path) { return path.rfind("[kernel", 0) == 0; }

}  // namespace

Result<std::string> EncodePprof(const Profile& profile, bool gzip) {
  pb::Profile out;
  StringTable strings(&out);

  auto add_value_type = [&](pb::ValueType* vt, const char* type, const char* unit) {
    vt->set_type(strings.Intern(type));
    vt->set_unit(strings.Intern(unit));
  };
  add_value_type(out.add_sample_type(), "samples", "count");
  add_value_type(out.add_sample_type(), "cpu", "nanoseconds");
  add_value_type(out.mutable_period_type(), "cpu", "nanoseconds");
  out.set_period(static_cast<int64_t>(profile.period_ns));
  out.set_time_nanos(static_cast<int64_t>(profile.start_time_ns));
  out.set_duration_nanos(static_cast<int64_t>(profile.duration_ns));
  // What pprof has no field for travels as comments (shown by `pprof -comments`).
  if (!profile.event.empty()) out.add_comment(strings.Intern(kEventComment + profile.event));
  out.add_comment(strings.Intern(kLostComment + std::to_string(profile.lost_samples)));

  // Mapping ids: module i → i + 1; kernel frames without a kernel module share one synthetic
  // "[kernel.kallsyms]" mapping; raw user addresses have no mapping (id 0).
  const uint64_t synthetic_kernel_id = profile.modules.size() + 1;
  auto mapping_of = [&](const ProfileFrame& frame) -> uint64_t {
    if (frame.kind == FrameKind::kUserRaw) return 0;
    if (frame.module < profile.modules.size()) {
      bool kernel_module = profile.modules[frame.module].kind == ProfileModuleKind::kKernel;
      if ((frame.kind == FrameKind::kKernel) == kernel_module) return frame.module + 1;
    }
    return frame.kind == FrameKind::kKernel ? synthetic_kernel_id : 0;
  };

  std::vector<MappingFacts> facts(profile.modules.size() + 2);
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    uint64_t id = mapping_of(frame);
    if (id == 0) continue;
    if (frame.kind == FrameKind::kUser && frame.address > kMaxNormalizedOffset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "pprof: file offset " + std::to_string(frame.address) + " of frame " +
                           std::to_string(i) + " is too large");
    }
    MappingFacts& f = facts[id];
    f.any_frame = true;
    f.min_address = std::min(f.min_address, frame.address);
    f.max_address = std::max(f.max_address, frame.address);
    const FrameSymbols* symbols =
        i < profile.symbols.size() && profile.symbols[i] ? &*profile.symbols[i] : nullptr;
    if (symbols == nullptr) {
      f.all_attempted = false;
      continue;
    }
    for (const SourceFrame& line : symbols->lines) {
      f.any_function |= !line.function.empty() || !line.raw_function.empty();
      f.any_file |= !line.file.empty();
      f.any_line |= line.line != 0;
    }
    f.any_inline |= symbols->lines.size() > 1;
  }

  auto fill_mapping = [&](uint64_t id, const std::string& path,
                          const std::vector<uint8_t>& build_id, bool kernel) {
    const MappingFacts& f = facts[id];
    pb::Mapping* m = out.add_mapping();
    m->set_id(id);
    if (kernel) {
      // Kernel addresses are real virtual addresses; the mapping just spans them.
      m->set_memory_start(f.any_frame ? f.min_address : 0);
      m->set_memory_limit(f.any_frame ? f.max_address + 1 : 0);
    } else {
      m->set_memory_start(id * kModuleSpacing);
      m->set_memory_limit(id * kModuleSpacing + (f.any_frame ? f.max_address + 1 : 0));
    }
    m->set_file_offset(0);
    m->set_filename(strings.Intern(path));
    if (!build_id.empty()) m->set_build_id(strings.Intern(HexBuildId(build_id)));
    // Claimed only when every frame was symbolized, so pprof does not skip frames that still
    // need symbols; line info implies DWARF was read, and with it the inline tree.
    bool attempted = f.any_frame && f.all_attempted;
    m->set_has_functions(attempted && f.any_function);
    m->set_has_filenames(attempted && f.any_file);
    m->set_has_line_numbers(attempted && f.any_line);
    m->set_has_inline_frames(attempted && (f.any_line || f.any_inline));
  };
  for (size_t i = 0; i < profile.modules.size(); ++i) {
    const ProfileModule& module = profile.modules[i];
    fill_mapping(i + 1, module.path, module.build_id, module.kind == ProfileModuleKind::kKernel);
  }
  if (facts[synthetic_kernel_id].any_frame) {
    fill_mapping(synthetic_kernel_id, "[kernel.kallsyms]", {}, true);
  }

  // Functions, deduplicated by (name, system name, file).
  std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t> function_ids;
  auto function_id = [&](const SourceFrame& line) {
    int64_t name = strings.Intern(!line.function.empty() ? line.function : line.raw_function);
    int64_t system = strings.Intern(!line.raw_function.empty() ? line.raw_function : line.function);
    int64_t file = strings.Intern(line.file);
    auto [it, inserted] = function_ids.try_emplace({name, system, file}, function_ids.size() + 1);
    if (inserted) {
      pb::Function* fn = out.add_function();
      fn->set_id(it->second);
      fn->set_name(name);
      fn->set_system_name(system);
      fn->set_filename(file);
    }
    return it->second;
  };

  // One Location per distinct frame: id = frame index + 1.
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    pb::Location* loc = out.add_location();
    loc->set_id(i + 1);
    uint64_t mapping = mapping_of(frame);
    loc->set_mapping_id(mapping);
    bool relocate = mapping != 0 && frame.kind == FrameKind::kUser;
    loc->set_address(relocate ? mapping * kModuleSpacing + frame.address : frame.address);
    if (i < profile.symbols.size() && profile.symbols[i]) {
      for (const SourceFrame& line : profile.symbols[i]->lines) {  // innermost first
        pb::Line* l = loc->add_line();
        l->set_function_id(function_id(line));
        l->set_line(line.line);
        l->set_column(line.column);
      }
    }
  }

  const int64_t pid_key = strings.Intern("pid");
  const int64_t tid_key = strings.Intern("tid");
  const int64_t comm_key = strings.Intern("comm");
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    const ProfileStack& stack = profile.stacks[s];
    uint64_t count = s < profile.counts.size() ? profile.counts[s] : 0;
    if (count == 0) continue;
    if (count > kMaxTotalSamples) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "pprof: stack " + std::to_string(s) + " has a count above 2^63-1");
    }
    pb::Sample* sample = out.add_sample();
    for (uint32_t frame : stack.frames) {
      if (frame >= profile.frames.size()) {
        return MakeError(ErrorCode::kInvalidArgument, "pprof: stack " + std::to_string(s) +
                                                          " refers to missing frame " +
                                                          std::to_string(frame));
      }
      sample->add_location_id(uint64_t{frame} + 1);  // leaf first, as pprof expects
    }
    sample->add_value(static_cast<int64_t>(count));
    sample->add_value(static_cast<int64_t>(count * profile.period_ns));
    pb::Label* pid = sample->add_label();
    pid->set_key(pid_key);
    pid->set_num(stack.pid);
    pb::Label* tid = sample->add_label();
    tid->set_key(tid_key);
    tid->set_num(stack.tid);
    pb::Label* comm = sample->add_label();
    comm->set_key(comm_key);
    comm->set_str(strings.Intern(stack.comm));
  }

  std::string bytes;
  if (!out.SerializeToString(&bytes)) {
    return MakeError(ErrorCode::kInternal, "pprof: protobuf serialization failed");
  }
  if (!gzip) return bytes;
  return output::GzipCompress(bytes);
}

Result<Profile> DecodePprof(std::span<const uint8_t> bytes) {
  std::string inflated;
  if (output::IsGzip(bytes)) {
    Result<std::string> r = output::GzipDecompress(bytes);
    if (!r) return std::move(r).error();
    inflated = std::move(*r);
    bytes = {reinterpret_cast<const uint8_t*>(inflated.data()), inflated.size()};
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return MakeError(ErrorCode::kUnsupported, "pprof: profile larger than 2 GiB");
  }
  pb::Profile in;
  // Bad input is reported through the Error below, not by protobuf logging to stderr.
  google::protobuf::LogSilencer quiet;
  if (!in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return MakeError(ErrorCode::kMalformed, "pprof: not a valid profile.proto message");
  }

  const int table_size = in.string_table_size();
  if (table_size > 0 && !in.string_table(0).empty()) {
    return MakeError(ErrorCode::kMalformed, "pprof: string_table[0] is not empty");
  }
  Error bad_string;
  bool string_error = false;
  auto str = [&](int64_t index, const char* what) -> const std::string& {
    static const std::string kEmpty;
    if (index == 0 && table_size == 0) return kEmpty;
    if (index < 0 || index >= table_size) {
      if (!string_error) {
        string_error = true;
        bad_string =
            MakeError(ErrorCode::kMalformed, std::string("pprof: ") + what + " string index " +
                                                 std::to_string(index) + " out of range");
      }
      return kEmpty;
    }
    return in.string_table(static_cast<int>(index));
  };

  Profile profile;
  // Which sample value is the count: "samples" if present, else the first.
  int count_index = 0;
  for (int i = 0; i < in.sample_type_size(); ++i) {
    if (str(in.sample_type(i).type(), "sample type") == "samples") {
      count_index = i;
      break;
    }
  }
  profile.period_ns = in.period() > 0 ? static_cast<uint64_t>(in.period()) : 0;
  profile.start_time_ns = in.time_nanos() > 0 ? static_cast<uint64_t>(in.time_nanos()) : 0;
  profile.duration_ns = in.duration_nanos() > 0 ? static_cast<uint64_t>(in.duration_nanos()) : 0;

  for (int64_t index : in.comment()) {
    const std::string& comment = str(index, "comment");
    if (comment.rfind(kEventComment, 0) == 0) {
      profile.event = comment.substr(kEventComment.size());
    } else if (comment.rfind(kLostComment, 0) == 0) {
      profile.lost_samples = std::strtoull(comment.c_str() + kLostComment.size(), nullptr, 10);
    }
  }

  struct MappingInfo {
    uint32_t module;
    bool kernel;
    const pb::Mapping* proto;
  };
  std::unordered_map<uint64_t, MappingInfo> mappings;
  for (const pb::Mapping& m : in.mapping()) {
    if (m.id() == 0) return MakeError(ErrorCode::kMalformed, "pprof: mapping with id 0");
    ProfileModule module;
    module.path = str(m.filename(), "mapping file name");
    bool kernel = IsKernelPath(module.path);
    module.kind = kernel                    ? ProfileModuleKind::kKernel
                  : module.path == "[vdso]" ? ProfileModuleKind::kVdso
                  : module.path.empty()     ? ProfileModuleKind::kUnknown
                  : module.path[0] == '['   ? ProfileModuleKind::kAnonymous
                                            : ProfileModuleKind::kElf;
    const std::string& build_id = str(m.build_id(), "mapping build id");
    if (!build_id.empty() && !ParseHexBuildId(build_id, &module.build_id)) {
      module.build_id.assign(build_id.begin(), build_id.end());  // not hex: keep the bytes
    }
    if (!mappings.try_emplace(m.id(), MappingInfo{0, kernel, &m}).second) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: duplicate mapping id " + std::to_string(m.id()));
    }
    mappings[m.id()].module = profile.AddModule(module);
  }

  std::unordered_map<uint64_t, const pb::Function*> functions;
  for (const pb::Function& f : in.function()) {
    if (f.id() == 0 || !functions.try_emplace(f.id(), &f).second) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: function id " + std::to_string(f.id()) + " is 0 or repeated");
    }
  }

  std::unordered_map<uint64_t, uint32_t> frame_of_location;
  for (const pb::Location& loc : in.location()) {
    if (loc.id() == 0) return MakeError(ErrorCode::kMalformed, "pprof: location with id 0");
    ProfileFrame frame;
    const MappingInfo* mapping = nullptr;
    if (loc.mapping_id() != 0) {
      auto it = mappings.find(loc.mapping_id());
      if (it == mappings.end()) {
        return MakeError(ErrorCode::kMalformed, "pprof: location " + std::to_string(loc.id()) +
                                                    " refers to missing mapping " +
                                                    std::to_string(loc.mapping_id()));
      }
      mapping = &it->second;
    }
    if (mapping == nullptr) {
      frame = {FrameKind::kUserRaw, 0, loc.address()};
    } else if (mapping->kernel) {
      frame = {FrameKind::kKernel, mapping->module, loc.address()};
    } else {
      // Unsigned arithmetic wraps for addresses below memory_start; such a location is
      // still kept (its offset is meaningless, as it was in the input).
      frame = {FrameKind::kUser, mapping->module,
               loc.address() - mapping->proto->memory_start() + mapping->proto->file_offset()};
    }
    std::optional<FrameSymbols> symbols;
    if (loc.line_size() > 0) {
      symbols.emplace();
      for (int i = 0; i < loc.line_size(); ++i) {
        const pb::Line& line = loc.line(i);
        auto fn = functions.find(line.function_id());
        if (fn == functions.end()) {
          return MakeError(ErrorCode::kMalformed, "pprof: location " + std::to_string(loc.id()) +
                                                      " refers to missing function " +
                                                      std::to_string(line.function_id()));
        }
        SourceFrame sf;
        sf.function = str(fn->second->name(), "function name");
        sf.raw_function = str(fn->second->system_name(), "function system name");
        sf.file = str(fn->second->filename(), "function file name");
        sf.line = static_cast<uint32_t>(std::clamp<int64_t>(line.line(), 0, UINT32_MAX));
        sf.column = static_cast<uint32_t>(std::clamp<int64_t>(line.column(), 0, UINT32_MAX));
        sf.inlined = i + 1 < loc.line_size();
        symbols->lines.push_back(std::move(sf));
      }
    } else if (mapping != nullptr && mapping->proto->has_functions()) {
      symbols.emplace();
      symbols->reason = Reason::kNoSymbol;  // symbolized, and nothing covered the address
    }
    size_t before = profile.frames.size();
    uint32_t index = profile.InternFrame(frame);
    if (profile.symbols.size() < profile.frames.size())
      profile.symbols.resize(profile.frames.size());
    if (profile.frames.size() > before || !profile.symbols[index]) {
      profile.symbols[index] = std::move(symbols);
    }
    if (!frame_of_location.try_emplace(loc.id(), index).second) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: duplicate location id " + std::to_string(loc.id()));
    }
  }

  // Equal stacks are merged by adding their counts; bounding the total keeps every merged
  // count within what pprof's int64 values can carry when the profile is written again.
  uint64_t total = 0;
  for (int s = 0; s < in.sample_size(); ++s) {
    const pb::Sample& sample = in.sample(s);
    ProfileStack stack;
    for (uint64_t id : sample.location_id()) {
      auto it = frame_of_location.find(id);
      if (it == frame_of_location.end()) {
        return MakeError(ErrorCode::kMalformed, "pprof: sample " + std::to_string(s) +
                                                    " refers to missing location " +
                                                    std::to_string(id));
      }
      stack.frames.push_back(it->second);
    }
    for (const pb::Label& label : sample.label()) {
      const std::string& key = str(label.key(), "label key");
      if (key == "pid") {
        stack.pid = static_cast<uint32_t>(label.num());
      } else if (key == "tid") {
        stack.tid = static_cast<uint32_t>(label.num());
      } else if (key == "comm" || key == "thread_name") {
        stack.comm = str(label.str(), "label value");
      }
    }
    int64_t value = count_index < sample.value_size() ? sample.value(count_index) : 0;
    if (value < 0) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: sample " + std::to_string(s) + " has a negative count");
    }
    total += static_cast<uint64_t>(value);  // both below 2^63: cannot wrap
    if (total > kMaxTotalSamples) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: sample counts add up to more than 2^63-1 "
                       "(at sample " +
                           std::to_string(s) + ")");
    }
    if (string_error) return bad_string;
    profile.AddSample(stack, static_cast<uint64_t>(value));
  }
  if (string_error) return bad_string;
  profile.symbols.resize(profile.frames.size());
  return profile;
}

}  // namespace stacksym
