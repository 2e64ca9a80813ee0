// pprof (profile.proto) encoding and decoding of a Profile.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "base/hex.h"
#include "output/flame_tree.h"
#include "output/gzip.h"
#include "output/pprof_dictionary.h"
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

// What a mapping claims (has_functions, ...) and spans, gathered from its frames.
struct MappingFacts {
  bool any_frame = false;
  uint64_t min_address = std::numeric_limits<uint64_t>::max();
  uint64_t max_address = 0;
  bool all_attempted = true;  // every frame went through symbolization
  bool any_function = false;
  bool any_file = false;
  bool any_line = false;
  bool any_inline = false;

  // `symbols`: null when the frame was not symbolized.
  void Add(uint64_t address, const FrameSymbols* symbols) {
    any_frame = true;
    min_address = std::min(min_address, address);
    max_address = std::max(max_address, address);
    if (symbols == nullptr) {
      all_attempted = false;
      return;
    }
    for (const SourceFrame& line : symbols->lines) {
      any_function |= !line.function.empty() || !line.raw_function.empty();
      any_file |= !line.file.empty();
      any_line |= line.line != 0;
    }
    any_inline |= symbols->lines.size() > 1;
  }
};

const std::string kEventComment = "stacksym event: ";
const std::string kLostComment = "stacksym lost samples: ";

bool IsKernelPath(const std::string& path) { return path.rfind("[kernel", 0) == 0; }

// A recording's anonymous memory (JIT code) is its process's: the mapping's build ID field says
// which ("pid:1234"), and its addresses are the process's own.
const std::string kPidBuildIdPrefix = "pid:";
// A Profile written as profile.proto, one function per message. Strings are numbered in the
// order the messages are written (header, mappings, locations with their functions, samples).
class PprofWriter {
 public:
  explicit PprofWriter(const Profile& profile)
      : profile_(profile),
        dictionary_(PprofDictionaryWriter::Fresh(&out_)),
        synthetic_kernel_id_(profile.modules.size() + 1),
        facts_(profile.modules.size() + 2) {}
  Result<std::string> Write(bool gzip);

 private:
  struct LabelKeys {
    int64_t pid, tid, comm;
    int64_t state;  // 0 when no stack is off CPU (the key is then not in the string table)
  };

  void WriteHeader();
  void WriteValueType(pb::ValueType* vt, const char* type, const char* unit);
  uint64_t MappingOf(const ProfileFrame& frame) const;
  const FrameSymbols* SymbolsOf(size_t frame) const;
  Result<void> GatherMappingFacts();
  std::optional<size_t> MainBinary() const;
  void WriteMappings();
  // How a mapping's addresses are laid out: at the module's synthetic base (file offsets),
  // or the real ones (kernel; JIT code, whose "file offsets" are those addresses too).
  enum class Layout { kSynthetic, kKernel, kJit };
  void WriteMapping(uint64_t id, const std::string& path, const std::string& build_id,
                    Layout layout);
  void WriteLocation(size_t frame);
  void WriteLine(const SourceFrame& line, pb::Line* out, bool python);
  Result<void> WriteSamples();
  Result<void> WriteSample(size_t s, const LabelKeys& keys);

  const Profile& profile_;
  pb::Profile out_;
  PprofDictionaryWriter dictionary_;  // out_'s strings and Functions
  // Mapping ids: module i → i + 1; kernel frames without a kernel module share one synthetic
  // "[kernel.kallsyms]" mapping; raw user addresses have no mapping (id 0).
  const uint64_t synthetic_kernel_id_;
  std::vector<MappingFacts> facts_;  // by mapping id
};

Result<std::string> PprofWriter::Write(bool gzip) {
  WriteHeader();
  if (Result<void> facts = GatherMappingFacts(); !facts) return std::move(facts).error();
  WriteMappings();
  // One Location per distinct frame: id = frame index + 1.
  for (size_t i = 0; i < profile_.frames.size(); ++i) WriteLocation(i);
  if (Result<void> samples = WriteSamples(); !samples) return std::move(samples).error();
  std::string bytes;
  if (!out_.SerializeToString(&bytes)) {
    return MakeError(ErrorCode::kInternal, "pprof: protobuf serialization failed");
  }
  if (!gzip) return bytes;
  return output::GzipCompress(bytes);
}

// Sample and period types, period, times, and as comments what pprof has no field for. A
// profile without off-CPU time has the two CPU types only, so that its file stays what it was.
void PprofWriter::WriteHeader() {
  WriteValueType(out_.add_sample_type(), "samples", "count");
  WriteValueType(out_.add_sample_type(), "cpu", "nanoseconds");
  if (profile_.has_off_cpu()) WriteValueType(out_.add_sample_type(), "off_cpu", "nanoseconds");
  WriteValueType(out_.mutable_period_type(), "cpu", "nanoseconds");
  out_.set_period(static_cast<int64_t>(profile_.period_ns));
  out_.set_time_nanos(static_cast<int64_t>(profile_.start_time_ns));
  out_.set_duration_nanos(static_cast<int64_t>(profile_.duration_ns));
  // Shown by `pprof -comments`.
  if (!profile_.event.empty()) out_.add_comment(dictionary_.String(kEventComment + profile_.event));
  out_.add_comment(dictionary_.String(kLostComment + std::to_string(profile_.lost_samples)));
}

void PprofWriter::WriteValueType(pb::ValueType* vt, const char* type, const char* unit) {
  vt->set_type(dictionary_.String(type));
  vt->set_unit(dictionary_.String(unit));
}

uint64_t PprofWriter::MappingOf(const ProfileFrame& frame) const {
  if (frame.kind == FrameKind::kUserRaw) return 0;
  if (frame.module < profile_.modules.size()) {
    bool kernel_module = profile_.modules[frame.module].kind == ModuleKind::kKernel;
    if ((frame.kind == FrameKind::kKernel) == kernel_module) return frame.module + 1;
  }
  return frame.kind == FrameKind::kKernel ? synthetic_kernel_id_ : 0;
}

const FrameSymbols* PprofWriter::SymbolsOf(size_t frame) const {
  return frame < profile_.symbols.size() && profile_.symbols[frame] ? &*profile_.symbols[frame]
                                                                    : nullptr;
}

// What each mapping spans and claims, from its frames; fails on a file offset the module
// layout cannot hold.
Result<void> PprofWriter::GatherMappingFacts() {
  for (size_t i = 0; i < profile_.frames.size(); ++i) {
    const ProfileFrame& frame = profile_.frames[i];
    uint64_t id = MappingOf(frame);
    if (id == 0) continue;
    if (frame.kind == FrameKind::kUser && frame.address > kMaxNormalizedOffset &&
        !profile_.modules[frame.module].IsJitCode()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "pprof: file offset " + std::to_string(frame.address) + " of frame " +
                           std::to_string(i) + " is too large");
    }
    facts_[id].Add(frame.address, SymbolsOf(i));
  }
  return {};
}

// The module pprof should name as the profile's binary ("File:" in `go tool pprof`, and what
// Pyroscope and pprof take the main binary to be): the first mapping. It is the executable of
// the process with the most samples (off-CPU time when there are none) when the profile knows
// it and frames lie in it, else the first ELF module frames lie in; nullopt when none does.
std::optional<size_t> PprofWriter::MainBinary() const {
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> weight;  // pid → samples, off CPU
  for (size_t s = 0; s < profile_.stacks.size(); ++s) {
    auto& [samples, off_cpu] = weight[profile_.stacks[s].pid];
    samples += profile_.Value(s, SampleType::kSamples);
    off_cpu += profile_.Value(s, SampleType::kOffCpu);
  }
  const ProfileProcess* heaviest = nullptr;
  std::pair<uint64_t, uint64_t> most{0, 0};
  for (const ProfileProcess& process : profile_.processes) {
    auto it = weight.find(process.pid);
    if (it == weight.end() || process.executable.empty()) continue;
    if (heaviest == nullptr || it->second > most) heaviest = &process, most = it->second;
  }
  std::optional<size_t> first_elf;
  for (size_t i = 0; i < profile_.modules.size(); ++i) {
    const Module& module = profile_.modules[i];
    if (module.kind != ModuleKind::kElf || module.path == kPythonModulePath ||
        !facts_[i + 1].any_frame) {
      continue;
    }
    if (heaviest != nullptr && module.path == heaviest->executable) return i;
    if (!first_elf) first_elf = i;
  }
  return first_elf;
}

void PprofWriter::WriteMappings() {
  // Mapping ids stay module index + 1; only the order of the messages changes.
  std::optional<size_t> main = MainBinary();
  auto write = [&](size_t i) {
    const Module& module = profile_.modules[i];
    bool jit = module.IsJitCode();
    WriteMapping(i + 1, module.path,
                 jit ? kPidBuildIdPrefix + std::to_string(module.pid) : ToHex(module.build_id),
                 jit                                  ? Layout::kJit
                 : module.kind == ModuleKind::kKernel ? Layout::kKernel
                                                      : Layout::kSynthetic);
  };
  if (main) write(*main);
  for (size_t i = 0; i < profile_.modules.size(); ++i) {
    if (i != main) write(i);
  }
  if (facts_[synthetic_kernel_id_].any_frame) {
    WriteMapping(synthetic_kernel_id_, "[kernel.kallsyms]", {}, Layout::kKernel);
  }
}

void PprofWriter::WriteMapping(uint64_t id, const std::string& path, const std::string& build_id,
                               Layout layout) {
  const MappingFacts& f = facts_[id];
  pb::Mapping* m = out_.add_mapping();
  m->set_id(id);
  if (layout != Layout::kSynthetic) {
    // Kernel and JIT addresses are real virtual addresses; the mapping just spans them. A JIT
    // mapping's "file offsets" are those addresses too, so that readers get them back.
    m->set_memory_start(f.any_frame ? f.min_address : 0);
    m->set_memory_limit(f.any_frame ? f.max_address + 1 : 0);
    m->set_file_offset(layout == Layout::kJit ? m->memory_start() : 0);
  } else {
    m->set_memory_start(id * kModuleSpacing);
    m->set_memory_limit(id * kModuleSpacing + (f.any_frame ? f.max_address + 1 : 0));
    m->set_file_offset(0);
  }
  m->set_filename(dictionary_.String(path));
  if (!build_id.empty()) m->set_build_id(dictionary_.String(build_id));
  // Claimed only when every frame was symbolized, so pprof does not skip frames that still
  // need symbols; line info implies DWARF was read, and with it the inline tree.
  bool attempted = f.any_frame && f.all_attempted;
  m->set_has_functions(attempted && f.any_function);
  m->set_has_filenames(attempted && f.any_file);
  m->set_has_line_numbers(attempted && f.any_line);
  m->set_has_inline_frames(attempted && (f.any_line || f.any_inline));
}

void PprofWriter::WriteLocation(size_t frame_index) {
  const ProfileFrame& frame = profile_.frames[frame_index];
  pb::Location* loc = out_.add_location();
  loc->set_id(frame_index + 1);
  uint64_t mapping = MappingOf(frame);
  loc->set_mapping_id(mapping);
  bool relocate = mapping != 0 &&
                  (frame.kind == FrameKind::kUser || frame.kind == FrameKind::kPython) &&
                  !profile_.modules[frame.module].IsJitCode();
  loc->set_address(relocate ? mapping * kModuleSpacing + frame.address : frame.address);
  // Lines innermost first.
  if (const FrameSymbols* symbols = SymbolsOf(frame_index)) {
    bool python = frame.kind == FrameKind::kPython;
    for (const SourceFrame& line : symbols->lines) WriteLine(line, loc->add_line(), python);
  }
}

void PprofWriter::WriteLine(const SourceFrame& line, pb::Line* out, bool python) {
  out->set_function_id(dictionary_.Function(line, python));
  out->set_line(line.line);
  out->set_column(line.column);
}

Result<void> PprofWriter::WriteSamples() {
  LabelKeys keys;
  keys.pid = dictionary_.String("pid");
  keys.tid = dictionary_.String("tid");
  keys.comm = dictionary_.String("comm");
  keys.state = 0;
  for (const ProfileStack& stack : profile_.stacks) {
    if (stack.state != ThreadState::kRunning) {
      keys.state = dictionary_.String("thread_state");
      break;
    }
  }
  for (size_t s = 0; s < profile_.stacks.size(); ++s) {
    if (Result<void> sample = WriteSample(s, keys); !sample) return sample;
  }
  return {};
}

// Stack `s` as a Sample (none when it has neither count nor off-CPU time): its locations leaf
// first, as pprof expects, its count, CPU time and off-CPU time (when the profile has it), and
// its thread (and a state other than running) as labels.
Result<void> PprofWriter::WriteSample(size_t s, const LabelKeys& keys) {
  const ProfileStack& stack = profile_.stacks[s];
  uint64_t count = profile_.Value(s, SampleType::kSamples);
  uint64_t off_cpu = profile_.Value(s, SampleType::kOffCpu);
  if (count == 0 && off_cpu == 0) return {};
  if (count > kMaxTotalSamples || off_cpu > kMaxTotalSamples) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "pprof: stack " + std::to_string(s) +
                         (count > kMaxTotalSamples ? " has a count" : " has off-CPU time") +
                         " above 2^63-1");
  }
  pb::Sample* sample = out_.add_sample();
  for (uint32_t frame : stack.frames) {
    if (frame >= profile_.frames.size()) {
      return MakeError(ErrorCode::kInvalidArgument, "pprof: stack " + std::to_string(s) +
                                                        " refers to missing frame " +
                                                        std::to_string(frame));
    }
    sample->add_location_id(uint64_t{frame} + 1);
  }
  sample->add_value(static_cast<int64_t>(count));
  sample->add_value(static_cast<int64_t>(count * profile_.period_ns));
  if (profile_.has_off_cpu()) sample->add_value(static_cast<int64_t>(off_cpu));
  pb::Label* pid = sample->add_label();
  pid->set_key(keys.pid);
  pid->set_num(stack.pid);
  pb::Label* tid = sample->add_label();
  tid->set_key(keys.tid);
  tid->set_num(stack.tid);
  pb::Label* comm = sample->add_label();
  comm->set_key(keys.comm);
  comm->set_str(dictionary_.String(stack.comm));
  if (stack.state != ThreadState::kRunning) {
    pb::Label* state = sample->add_label();
    state->set_key(keys.state);
    state->set_str(dictionary_.String(ThreadStateName(stack.state)));
  }
  return {};
}

// A parsed profile.proto message read into a Profile, one function per message. A string
// index out of range is reported once the sample being read is done (or at the end), the
// first one found; every other error at once.
class PprofReader {
 public:
  explicit PprofReader(const pb::Profile& in) : in_(in), table_size_(in.string_table_size()) {}
  Result<Profile> Read();

 private:
  struct MappingInfo {
    uint32_t module;
    bool kernel;
    const pb::Mapping* proto;
    bool python = false;  // kPythonModulePath: its frames are Python functions
  };

  const std::string& Str(int64_t index, const char* what);
  void ReadHeader();
  Result<void> ReadMapping(const pb::Mapping& m);
  Result<void> ReadFunctions();
  Result<void> ReadLocation(const pb::Location& loc);
  static ProfileFrame FrameOf(const pb::Location& loc, const MappingInfo* mapping);
  Result<std::optional<FrameSymbols>> ReadLines(const pb::Location& loc,
                                                const MappingInfo* mapping);
  SourceFrame ReadLine(const pb::Line& line, const pb::Function& function, bool inlined);
  Result<void> ReadSample(int s);
  Result<uint64_t> ReadValue(int s, const pb::Sample& sample, int index, const char* what,
                             uint64_t* total);
  void ReadLabel(const pb::Label& label, ProfileStack* stack);

  const pb::Profile& in_;
  const int table_size_;
  Error bad_string_;
  bool string_error_ = false;
  Profile profile_;
  int count_index_ = -1;    // which sample value is the count (-1: none)
  int off_cpu_index_ = -1;  // which is the off-CPU time (-1: none)
  // Equal stacks are merged by adding their values; bounding the totals keeps every merged
  // value within what pprof's int64 values can carry when the profile is written again.
  uint64_t total_count_ = 0;
  uint64_t total_off_cpu_ = 0;
  std::unordered_map<uint64_t, MappingInfo> mappings_;
  std::unordered_map<uint64_t, const pb::Function*> functions_;
  std::unordered_map<uint64_t, uint32_t> frame_of_location_;
};

Result<Profile> PprofReader::Read() {
  if (table_size_ > 0 && !in_.string_table(0).empty()) {
    return MakeError(ErrorCode::kMalformed, "pprof: string_table[0] is not empty");
  }
  ReadHeader();
  for (const pb::Mapping& m : in_.mapping()) {
    if (Result<void> mapping = ReadMapping(m); !mapping) return std::move(mapping).error();
  }
  if (Result<void> functions = ReadFunctions(); !functions) return std::move(functions).error();
  for (const pb::Location& loc : in_.location()) {
    if (Result<void> location = ReadLocation(loc); !location) return std::move(location).error();
  }
  for (int s = 0; s < in_.sample_size(); ++s) {
    if (Result<void> sample = ReadSample(s); !sample) return std::move(sample).error();
  }
  if (string_error_) return bad_string_;
  profile_.symbols.resize(profile_.frames.size());
  return std::move(profile_);
}

// string_table[index]; out of range: "" (and the error noted, if it is the first).
const std::string& PprofReader::Str(int64_t index, const char* what) {
  static const std::string kEmpty;
  if (index == 0 && table_size_ == 0) return kEmpty;
  if (index < 0 || index >= table_size_) {
    if (!string_error_) {
      string_error_ = true;
      bad_string_ =
          MakeError(ErrorCode::kMalformed, std::string("pprof: ") + what + " string index " +
                                               std::to_string(index) + " out of range");
    }
    return kEmpty;
  }
  return in_.string_table(static_cast<int>(index));
}

// Which sample value is the count ("samples" if present, else the first that is not off-CPU
// time) and which the off-CPU time (off_cpu/nanoseconds, if present), period, times, and what
// the comments carry.
void PprofReader::ReadHeader() {
  int first_other = -1;
  for (int i = 0; i < in_.sample_type_size(); ++i) {
    const std::string& type = Str(in_.sample_type(i).type(), "sample type");
    if (type == "off_cpu" && Str(in_.sample_type(i).unit(), "sample unit") == "nanoseconds") {
      if (off_cpu_index_ < 0) off_cpu_index_ = i;
    } else if (type == "samples") {
      if (count_index_ < 0) count_index_ = i;
    } else if (first_other < 0) {
      first_other = i;
    }
  }
  // A file that declares no types at all still has its first values read as counts.
  if (count_index_ < 0) count_index_ = in_.sample_type_size() == 0 ? 0 : first_other;
  // Measured, even if every stack's value is 0 or there is no sample at all.
  profile_.off_cpu_recorded = off_cpu_index_ >= 0;
  profile_.period_ns = in_.period() > 0 ? static_cast<uint64_t>(in_.period()) : 0;
  profile_.start_time_ns = in_.time_nanos() > 0 ? static_cast<uint64_t>(in_.time_nanos()) : 0;
  profile_.duration_ns = in_.duration_nanos() > 0 ? static_cast<uint64_t>(in_.duration_nanos()) : 0;
  for (int64_t index : in_.comment()) {
    const std::string& comment = Str(index, "comment");
    if (comment.rfind(kEventComment, 0) == 0) {
      profile_.event = comment.substr(kEventComment.size());
    } else if (comment.rfind(kLostComment, 0) == 0) {
      profile_.lost_samples = std::strtoull(comment.c_str() + kLostComment.size(), nullptr, 10);
    }
  }
}

// A pid as written in a mapping's build ID: decimal, 1 to 2^32-1.
bool ParsePid(std::string_view digits, uint64_t* pid) {
  if (digits.empty() || digits.size() > 10) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v > UINT32_MAX) return false;
  *pid = v;
  return true;
}

// A Mapping as a module, its kind told by its path (or by a pid: a recording's anonymous memory).
Result<void> PprofReader::ReadMapping(const pb::Mapping& m) {
  if (m.id() == 0) return MakeError(ErrorCode::kMalformed, "pprof: mapping with id 0");
  Module module;
  module.path = Str(m.filename(), "mapping file name");
  bool kernel = IsKernelPath(module.path);
  module.kind = kernel                    ? ModuleKind::kKernel
                : module.path == "[vdso]" ? ModuleKind::kVdso
                : module.path.empty()     ? ModuleKind::kUnknown
                : module.path[0] == '['   ? ModuleKind::kAnonymous
                                          : ModuleKind::kElf;
  const std::string& build_id = Str(m.build_id(), "mapping build id");
  uint64_t pid = 0;
  if (build_id.starts_with(kPidBuildIdPrefix) && !kernel &&
      ParsePid(std::string_view(build_id).substr(kPidBuildIdPrefix.size()), &pid)) {
    module.kind = ModuleKind::kAnonymous;
    module.pid = static_cast<uint32_t>(pid);
  } else if (!build_id.empty()) {
    std::optional<std::vector<uint8_t>> bytes = FromHex(build_id);
    if (bytes) {
      module.build_id = std::move(*bytes);
    } else {
      module.build_id.assign(build_id.begin(), build_id.end());  // not hex: keep the bytes
    }
  }
  if (!mappings_.try_emplace(m.id(), MappingInfo{0, kernel, &m}).second) {
    return MakeError(ErrorCode::kMalformed,
                     "pprof: duplicate mapping id " + std::to_string(m.id()));
  }
  mappings_[m.id()].python = module.path == kPythonModulePath;
  mappings_[m.id()].module = profile_.AddModule(module);
  return {};
}

// The Functions by id, for the lines to name.
Result<void> PprofReader::ReadFunctions() {
  for (const pb::Function& f : in_.function()) {
    if (f.id() == 0 || !functions_.try_emplace(f.id(), &f).second) {
      return MakeError(ErrorCode::kMalformed,
                       "pprof: function id " + std::to_string(f.id()) + " is 0 or repeated");
    }
  }
  return {};
}

// A Location as a frame (locations of one frame share it) with its symbols.
Result<void> PprofReader::ReadLocation(const pb::Location& loc) {
  if (loc.id() == 0) return MakeError(ErrorCode::kMalformed, "pprof: location with id 0");
  const MappingInfo* mapping = nullptr;
  if (loc.mapping_id() != 0) {
    auto it = mappings_.find(loc.mapping_id());
    if (it == mappings_.end()) {
      return MakeError(ErrorCode::kMalformed, "pprof: location " + std::to_string(loc.id()) +
                                                  " refers to missing mapping " +
                                                  std::to_string(loc.mapping_id()));
    }
    mapping = &it->second;
  }
  Result<std::optional<FrameSymbols>> symbols = ReadLines(loc, mapping);
  if (!symbols) return std::move(symbols).error();
  size_t before = profile_.frames.size();
  uint32_t index = profile_.InternFrame(FrameOf(loc, mapping));
  if (profile_.symbols.size() < profile_.frames.size()) {
    profile_.symbols.resize(profile_.frames.size());
  }
  if (profile_.frames.size() > before || !profile_.symbols[index]) {
    profile_.symbols[index] = std::move(*symbols);
  }
  if (!frame_of_location_.try_emplace(loc.id(), index).second) {
    return MakeError(ErrorCode::kMalformed,
                     "pprof: duplicate location id " + std::to_string(loc.id()));
  }
  return {};
}

// The frame a location's address is, by its mapping (none: a raw address).
ProfileFrame PprofReader::FrameOf(const pb::Location& loc, const MappingInfo* mapping) {
  if (mapping == nullptr) return {FrameKind::kUserRaw, 0, loc.address()};
  if (mapping->kernel) return {FrameKind::kKernel, mapping->module, loc.address()};
  // Python functions (stacksym's recordings): named, never symbolized again.
  FrameKind kind = mapping->python ? FrameKind::kPython : FrameKind::kUser;
  // Unsigned arithmetic wraps for addresses below memory_start; such a location is still
  // kept (its offset is meaningless, as it was in the input).
  return {kind, mapping->module,
          loc.address() - mapping->proto->memory_start() + mapping->proto->file_offset()};
}

// The location's symbols: its Lines, innermost first; none when it has no lines and its
// mapping does not claim functions.
Result<std::optional<FrameSymbols>> PprofReader::ReadLines(const pb::Location& loc,
                                                           const MappingInfo* mapping) {
  std::optional<FrameSymbols> symbols;
  if (loc.line_size() > 0) {
    symbols.emplace();
    for (int i = 0; i < loc.line_size(); ++i) {
      const pb::Line& line = loc.line(i);
      auto fn = functions_.find(line.function_id());
      if (fn == functions_.end()) {
        return MakeError(ErrorCode::kMalformed, "pprof: location " + std::to_string(loc.id()) +
                                                    " refers to missing function " +
                                                    std::to_string(line.function_id()));
      }
      symbols->lines.push_back(ReadLine(line, *fn->second, i + 1 < loc.line_size()));
    }
  } else if (mapping != nullptr && mapping->proto->has_functions()) {
    symbols.emplace();
    symbols->reason = Reason::kNoSymbol;  // symbolized, and nothing covered the address
  }
  return symbols;
}

SourceFrame PprofReader::ReadLine(const pb::Line& line, const pb::Function& function,
                                  bool inlined) {
  SourceFrame sf;
  sf.function = Str(function.name(), "function name");
  sf.raw_function = Str(function.system_name(), "function system name");
  sf.file = Str(function.filename(), "function file name");
  sf.line = static_cast<uint32_t>(std::clamp<int64_t>(line.line(), 0, UINT32_MAX));
  sf.start_line = static_cast<uint32_t>(std::clamp<int64_t>(function.start_line(), 0, UINT32_MAX));
  sf.column = static_cast<uint32_t>(std::clamp<int64_t>(line.column(), 0, UINT32_MAX));
  sf.inlined = inlined;
  return sf;
}

// Sample `s` added to the profile: its count, and its off-CPU time when the file has it.
Result<void> PprofReader::ReadSample(int s) {
  const pb::Sample& sample = in_.sample(s);
  ProfileStack stack;
  for (uint64_t id : sample.location_id()) {
    auto it = frame_of_location_.find(id);
    if (it == frame_of_location_.end()) {
      return MakeError(ErrorCode::kMalformed, "pprof: sample " + std::to_string(s) +
                                                  " refers to missing location " +
                                                  std::to_string(id));
    }
    stack.frames.push_back(it->second);
  }
  for (const pb::Label& label : sample.label()) ReadLabel(label, &stack);
  Result<uint64_t> count = ReadValue(s, sample, count_index_, "count", &total_count_);
  if (!count) return std::move(count).error();
  Result<uint64_t> off_cpu = ReadValue(s, sample, off_cpu_index_, "off-CPU time", &total_off_cpu_);
  if (!off_cpu) return std::move(off_cpu).error();
  if (string_error_) return bad_string_;
  profile_.AddSample(stack, *count);
  if (off_cpu_index_ >= 0) profile_.AddOffCpu(stack, *off_cpu);
  return {};
}

// Value `index` of sample `s` (0 when the sample or the file has none), added to `total`,
// which is bounded by kMaxTotalSamples.
Result<uint64_t> PprofReader::ReadValue(int s, const pb::Sample& sample, int index,
                                        const char* what, uint64_t* total) {
  int64_t value = index >= 0 && index < sample.value_size() ? sample.value(index) : 0;
  if (value < 0) {
    return MakeError(ErrorCode::kMalformed,
                     "pprof: sample " + std::to_string(s) + " has a negative " + what);
  }
  *total += static_cast<uint64_t>(value);  // both below 2^63: cannot wrap
  if (*total > kMaxTotalSamples) {
    return MakeError(ErrorCode::kMalformed, std::string("pprof: sample ") + what +
                                                "s add up to more than 2^63-1 (at sample " +
                                                std::to_string(s) + ")");
  }
  return static_cast<uint64_t>(value);
}

// The thread a Label names (pid, tid, comm or thread_name) and its state (thread_state: a
// name this reader does not know is another off-CPU state); other labels are ignored.
void PprofReader::ReadLabel(const pb::Label& label, ProfileStack* stack) {
  const std::string& key = Str(label.key(), "label key");
  if (key == "pid") {
    stack->pid = static_cast<uint32_t>(label.num());
  } else if (key == "tid") {
    stack->tid = static_cast<uint32_t>(label.num());
  } else if (key == "comm" || key == "thread_name") {
    stack->comm = Str(label.str(), "label value");
  } else if (key == "thread_state") {
    stack->state = ParseThreadState(Str(label.str(), "label value")).value_or(ThreadState::kOther);
  }
}

}  // namespace

Result<std::string> EncodePprof(const Profile& profile, bool gzip) {
  return PprofWriter(profile).Write(gzip);
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
  return PprofReader(in).Read();
}

}  // namespace stacksym
