#include "capture/python_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>

#include "base/clock.h"
#include "base/hex.h"
#include "dwarf/debug_file_finder.h"
#include "normalize/maps_text.h"
#include "normalize/process_files.h"

namespace stacksym::capture {

namespace py = interp::python;
using normalize::FindMappedFile;
using normalize::MappedFileRef;
using normalize::MappingRef;
using normalize::MapsEntry;
using normalize::MapsNameOf;
using normalize::MapsParseStats;
using normalize::ParseMapsLines;

namespace {

// The whole of a small /proc file ("" when it cannot be read).
std::string ReadProcFile(const std::string& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && out.size() < (64u << 20)) {
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// Files worth a look: named like an interpreter, or the process's executable (a renamed or
// embedding program whose own binary holds the interpreter).
bool MayBeInterpreter(std::string_view path, std::string_view exe) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.find("python") != std::string_view::npos || path == exe;
}

// What the BPF program reads of a layout; false when a frame field lies past its one read.
bool ToRegistration(const py::Layout& l, uint64_t runtime, stacksym_python_proc* r) {
  if (l.FrameBytes() > STACKSYM_PY_FRAME_READ) return false;
  *r = {};
  r->interpreters_head = runtime + l.runtime_interpreters_head;
  r->tstate_current =
      l.runtime_tstate_current == py::kAbsent ? 0 : runtime + l.runtime_tstate_current;
  r->gil_last_holder =
      l.runtime_gil_last_holder == py::kAbsent ? 0 : runtime + l.runtime_gil_last_holder;
  r->interp_next = l.interp_next;
  r->interp_threads_head = l.interp_threads_head;
  r->tstate_next = l.tstate_next;
  r->tstate_native_thread_id = l.tstate_native_thread_id;
  r->tstate_cframe = l.tstate_cframe == py::kAbsent ? STACKSYM_PY_ABSENT : l.tstate_cframe;
  r->current_frame = l.current_frame;
  r->code_adaptive = l.code_adaptive;
  r->frame_code = static_cast<__u8>(l.frame_code);
  r->frame_previous = static_cast<__u8>(l.frame_previous);
  r->frame_instr = static_cast<__u8>(l.frame_instr);
  r->frame_owner = static_cast<__u8>(l.frame_owner);
  r->frame_is_entry = l.frame_is_entry == py::kAbsent ? 0xff : static_cast<__u8>(l.frame_is_entry);
  r->shim_owner = l.shim_owner;
  r->code_tag_bits = l.code_tag_bits;
  // The fingerprint's two fields, read at once: when they lie too far apart for one read, frames
  // go unchecked.
  uint32_t start = std::min(l.code_firstlineno, l.code_qualname);
  uint32_t first_line = l.code_firstlineno - start, qualname = l.code_qualname - start;
  bool fits = std::max(first_line, qualname) <= 63;
  r->code_check_start = start;
  r->check_first_line = fits ? static_cast<__u8>(first_line) : 0xff;
  r->check_qualname = fits ? static_cast<__u8>(qualname) : 0xff;
  return true;
}

}  // namespace

PythonProcesses::PythonProcesses(dwarf::DebugFileSearch search) : search_(std::move(search)) {}
PythonProcesses::~PythonProcesses() = default;

void PythonProcesses::Seen(uint32_t pid) {
  if (pid != 0 && !processes_.contains(pid)) wanted_.insert(pid);
}

void PythonProcesses::Exec(uint32_t pid) {
  processes_.erase(pid);
  codes_.ForgetProcess(pid);
  watched_.erase(pid);
  soon_.erase(pid);
  Seen(pid);
}

void PythonProcesses::ExamineWanted() {
  if (!reading_dwarf_.empty()) TakeDwarfLayouts();
  if (!soon_.empty()) {
    double now = MonotonicSeconds();
    std::vector<std::pair<uint32_t, double>> soon(soon_.begin(), soon_.end());
    for (const auto& [pid, deadline] : soon) {
      if (now > deadline) {
        soon_.erase(pid);
      } else if (!Examine(pid)) {
        soon_.erase(pid);
        if (processes_.contains(pid)) {
          watched_.erase(pid);
        } else {
          watched_[pid].next = std::numeric_limits<double>::infinity();
        }
      }
    }
  }
  if (wanted_.empty() && watched_.empty() && processes_.empty()) return;
  double now = MonotonicSeconds();
  for (uint32_t pid : wanted_) {
    if (processes_.contains(pid)) continue;  // registered since it was seen
    // A process not (yet) running Python is looked at again, less and less often: a program
    // linked with libpython maps it a moment after its exec, and one may load it later.
    Watch& w = watched_[pid];
    if (now < w.next) continue;
    if (!Examine(pid)) {
      // Registered (no longer watched), or unusable: not looked at again until an exec.
      if (processes_.contains(pid)) {
        watched_.erase(pid);
      } else {
        w.next = std::numeric_limits<double>::infinity();
      }
    } else {
      w.next = now + w.interval;
      w.interval = std::min(w.interval * 2, kMaxExamineInterval);
    }
  }
  wanted_.clear();
  if (now - last_sweep_ < 1.0) return;
  last_sweep_ = now;
  auto gone = [](uint32_t pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; };
  // Processes that are gone: their registration's slot is freed, and a new process with the
  // same pid is examined afresh.
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (gone(it->first)) {
      if (registrar_) registrar_(it->first, nullptr);
      codes_.ForgetProcess(it->first);
      it = processes_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(watched_, [&](const auto& entry) { return gone(entry.first); });
}

std::string PythonProcesses::BinaryKey(const std::vector<uint8_t>& build_id,
                                       const std::string& path) {
  return build_id.empty() ? "path:" + path : ToHex(build_id);
}

// The interpreter binary `path` maps, examined once per file.
std::shared_ptr<PythonBinary> PythonProcesses::BinaryOf(uint32_t pid, const std::string& path,
                                                        uint64_t start, uint64_t end,
                                                        uint64_t inode) {
  std::string file_key = path + "\n" + std::to_string(inode);
  if (auto it = files_.find(file_key); it != files_.end()) return it->second;
  // A host that builds and runs new programs all day brings new files without end: past the
  // bound, what was learnt of those that are not CPython is forgotten (looked at again if
  // they run again).
  if (files_.size() >= kMaxFiles) {
    std::erase_if(files_, [](const auto& entry) { return !entry.second->interpreter; });
  }
  auto binary = std::make_shared<PythonBinary>();
  binary->path = path;
  files_[file_key] = binary;
  Result<MappedFileRef> found =
      FindMappedFile(static_cast<pid_t>(pid), MappingRef{start, end, path, inode, false});
  if (!found) return binary;
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(found->path);
  if (!elf) return binary;
  binary->elf = *elf;
  binary->build_id.assign((*elf)->build_id().begin(), (*elf)->build_id().end());
  Result<std::optional<py::Interpreter>> interpreter = py::FindInterpreter(**elf);
  if (!interpreter || !*interpreter) {
    if (!interpreter) binary->problem = interpreter.error().ToString();
    // A program linked with libpython: the interpreter is mapped a moment after the exec.
    Result<std::span<const uint8_t>> dynstr = (*elf)->SectionData(".dynstr");
    if (dynstr) {
      std::string_view names(reinterpret_cast<const char*>(dynstr->data()), dynstr->size());
      binary->needs_libpython = names.find("libpython") != std::string_view::npos;
    }
    // Every program a host runs comes here once: only what it was is kept, not the file.
    binary->elf.reset();
    return binary;
  }
  binary->interpreter = **interpreter;
  // A stripped binary's symbol table lacks the evaluator's split parts: its debug file has them.
  std::vector<py::CodeRange> ranges = (*interpreter)->eval_frames;
  if (!(*elf)->symbols().has_symtab()) {
    Result<std::shared_ptr<ElfFile>> debug =
        dwarf::DebugFileFinder(search_).FindSeparateDebugFile(**elf);
    if (debug && *debug) {
      for (const py::CodeRange& r : py::EvaluatorRanges(**debug)) {
        if (std::find(ranges.begin(), ranges.end(), r) == ranges.end()) ranges.push_back(r);
      }
    }
  }
  for (const py::CodeRange& r : ranges) {
    std::optional<uint64_t> offset = (*elf)->VaddrToFileOffset(r.start);
    if (offset) binary->eval_offsets.emplace_back(*offset, *offset + (r.end - r.start));
  }
  // The quick layout now, the DWARF's on a thread (the binary is only read from there on).
  std::string notes;
  Result<py::Layout> quick = py::LoadQuickLayout(**elf, **interpreter, &notes);
  if (quick) {
    binary->layout = *quick;
  } else {
    binary->quick_problem = path + ": " + quick.error().message;
  }
  binary->dwarf = std::async(std::launch::async, [elf = *elf, i = **interpreter, s = search_]() {
    PythonBinary::DwarfAnswer a{Error(ErrorCode::kNotFound, ""), ""};
    a.layout = py::LoadDwarfLayout(elf, i, s, &a.notes);
    return a;
  });
  reading_dwarf_.push_back(binary);
  binaries_[BinaryKey(binary->build_id, path)] = binary;
  ++generation_;
  return binary;
}

std::string PythonProcesses::Versions() const {
  std::string out;
  for (const auto& [key, b] : binaries_) {
    if (!b->layout) continue;
    out += (out.empty() ? "" : ", ") + b->interpreter->version.ToString() + " (" +
           py::LayoutSourceName(b->layout->source) + (b->dwarf.valid() ? ", reading DWARF" : "") +
           ")";
  }
  return out;
}

void PythonProcesses::TakeDwarfLayouts() {
  for (auto it = reading_dwarf_.begin(); it != reading_dwarf_.end();) {
    PythonBinary& b = **it;
    if (b.dwarf.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++it;
      continue;
    }
    PythonBinary::DwarfAnswer a = b.dwarf.get();
    if (a.layout) {
      bool had = b.layout.has_value();
      bool changed = !had || !py::SameOffsets(*b.layout, *a.layout);
      b.layout = *a.layout;
      if (changed) {
        // The quick layout was wrong for this build (or there was none): its processes are
        // registered again, and what was read through it is read again.
        if (had) ++counters_.layouts_corrected;
        for (auto& [pid, p] : processes_) {
          if (p.binary.get() != &b) continue;
          codes_.ForgetProcess(pid);
          (void)Register(pid, p);
        }
      }
    } else if (!b.layout) {
      b.problem = b.quick_problem + "; " + a.notes;
    }
    it = reading_dwarf_.erase(it);
  }
}

bool PythonProcesses::Register(uint32_t pid, Process& p) {
  stacksym_python_proc reg;
  if (!ToRegistration(*p.binary->layout, p.binary->interpreter->runtime + p.bias, &reg)) {
    return false;
  }
  if (!registrar_ || !registrar_(pid, &reg)) {
    if (counters_.first_problem.empty()) {
      counters_.first_problem = "pid " + std::to_string(pid) +
                                ": could not register its interpreter with the BPF program";
    }
    return false;
  }
  return true;
}

bool PythonProcesses::Examine(uint32_t pid) {
  std::string prefix = "/proc/" + std::to_string(pid);
  std::string text = ReadProcFile(prefix + "/maps");
  if (text.empty()) return false;  // gone
  char exe_buf[4096];
  ssize_t exe_len = readlink((prefix + "/exe").c_str(), exe_buf, sizeof(exe_buf));
  std::string_view exe = exe_len > 0 ? std::string_view(exe_buf, static_cast<size_t>(exe_len)) : "";
  std::vector<MapsEntry> entries;
  MapsParseStats stats;
  ParseMapsLines(std::span<char>(text.data(), text.size()), 0, true, {.executable_only = true},
                 &entries, &stats);
  bool soon = false;
  for (const MapsEntry& e : entries) {
    std::string path(MapsNameOf(e, text));
    if (path.empty() || path[0] != '/' || !MayBeInterpreter(path, exe)) continue;
    std::shared_ptr<PythonBinary> binary = BinaryOf(pid, path, e.start, e.end, e.inode);
    soon = soon || binary->needs_libpython;
    if (!binary->interpreter) continue;
    if (!binary->layout) {
      if (binary->dwarf.valid()) return true;  // its DWARF is being read: ask again
      ++counters_.processes_unsupported;
      if (counters_.first_problem.empty()) counters_.first_problem = binary->problem;
      return false;
    }
    std::optional<uint64_t> bias = py::LoadBias(*binary->elf, e.start, e.offset);
    Result<std::unique_ptr<py::ProcessMemory>> memory = py::ProcessMemory::Open(pid);
    if (!bias || !memory) return false;
    Process p;
    p.binary = binary;
    p.bias = *bias;
    p.memory = std::move(*memory);
    auto at = [&](uint64_t vaddr) { return vaddr == 0 ? 0 : vaddr + *bias; };
    const py::Interpreter& i = *binary->interpreter;
    p.types = {at(i.code_type), at(i.unicode_type), at(i.bytes_type)};
    if (!Register(pid, p)) return false;
    processes_[pid] = std::move(p);
    ++counters_.processes;
    return false;
  }
  // No interpreter yet. One that the executable needs is looked for again at once.
  if (soon && !soon_.contains(pid)) soon_[pid] = MonotonicSeconds() + kSoonSeconds;
  return true;
}

const PythonProcesses::Process* PythonProcesses::Find(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

const std::vector<std::pair<uint64_t, uint64_t>>* PythonProcesses::EvaluatorOffsets(
    const Module& module) const {
  auto it = binaries_.find(BinaryKey(module.build_id, module.path));
  if (it == binaries_.end() || !it->second->layout) return nullptr;
  return &it->second->eval_offsets;
}

const py::CodeCache::Entry& PythonProcesses::Code(uint32_t pid, const RawPythonFrame& frame) {
  const Process* p = Find(pid);
  if (p == nullptr) {
    static const py::CodeCache::Entry gone{nullptr, py::CodeError::kProcessGone};
    return gone;
  }
  return codes_.Get(pid, frame.code, *p->memory, *p->binary->layout, p->types, frame.instruction,
                    CheckOf(frame));
}

void PythonProcesses::AddCodeStats() {
  counters_.code_objects_read = codes_.stats().reads;
  counters_.code_failures = codes_.stats().failures;
}

// --- PythonStacks ---

bool PythonStacks::IsEvaluator(const Profile& profile, uint32_t frame) {
  const ProfileFrame& f = profile.frames[frame];
  if (f.kind != FrameKind::kUser || f.module >= profile.modules.size()) return false;
  auto it = evaluators_.find(f.module);
  if (it == evaluators_.end() ||
      (it->second.ranges == nullptr && it->second.generation != processes_->generation())) {
    // Unknown, or not an interpreter when last asked and interpreters were found since.
    Evaluator e{processes_->EvaluatorOffsets(profile.modules[f.module]), processes_->generation()};
    it = evaluators_.insert_or_assign(f.module, e).first;
  }
  const auto* ranges = it->second.ranges;
  if (ranges == nullptr) return false;
  for (const auto& [start, end] : *ranges) {
    if (f.address >= start && f.address < end) return true;
  }
  return false;
}

uint32_t PythonStacks::PythonFrame(uint32_t pid, const RawPythonFrame& raw, Profile& profile,
                                   bool* named) {
  const py::CodeCache::Entry& e = processes_->Code(pid, raw);
  SourceFrame sf;
  *named = e.code != nullptr;
  if (e.code) {
    sf.function = e.code->qualname;
    sf.raw_function = e.code->name;
    sf.file = e.code->filename;
    sf.line = static_cast<uint32_t>(std::max(0, e.code->Line(raw.instruction)));
    sf.start_line = static_cast<uint32_t>(std::max(0, e.code->first_line));
  } else {
    // Still a frame, in its place: named by why its code object could not be read.
    sf.function = std::string("[python: ") + py::CodeErrorName(e.error) + "]";
  }
  std::string key = sf.function;
  for (const std::string* part : {&sf.raw_function, &sf.file}) key.append(1, '\0').append(*part);
  key.append(1, '\0').append(std::to_string(sf.start_line)).append(1, ':');
  key.append(std::to_string(sf.line));
  auto [it, inserted] = python_frames_.try_emplace(std::move(key), 0);
  if (inserted) it->second = next_python_frame_++;
  if (module_ == UINT32_MAX) {
    module_ = profile.AddModule({ModuleKind::kAnonymous, std::string(kPythonModulePath), {}});
  }
  uint32_t index = profile.InternFrame({FrameKind::kPython, module_, it->second});
  if (profile.symbols.size() < profile.frames.size()) profile.symbols.resize(profile.frames.size());
  if (!profile.symbols[index]) profile.symbols[index] = FrameSymbols{std::nullopt, {sf}};
  return index;
}

void PythonStacks::Splice(const RawSample& s, size_t user_begin, Profile& profile,
                          std::vector<uint32_t>* frames) {
  PythonCounters& c = processes_->counters();
  c.samples += s.count;
  c.frames += s.python_frames.size() * s.count;
  if (s.python_end >= 0 && s.python_end < STACKSYM_PY_END_COUNT) {
    c.walk_ends[s.python_end] += s.count;
  }
  size_t evaluators = 0;
  for (size_t i = user_begin; i < frames->size(); ++i)
    evaluators += IsEvaluator(profile, (*frames)[i]);
  if (evaluators > 0) c.samples_in_interpreter += s.count;
  if (s.python_frames.empty()) return;
  // Each evaluator frame, innermost first, stands for the Python frames of one evaluator call:
  // up to and including the next frame marked as its call's outermost.
  std::span<const RawPythonFrame> py = s.python_frames;
  size_t next = 0;
  bool all_named = true;
  auto emit_call = [&]() {
    while (next < py.size()) {
      const RawPythonFrame& f = py[next++];
      bool named = false;
      spliced_.push_back(PythonFrame(s.pid, f, profile, &named));
      if (!named) c.frames_unnamed += s.count;
      all_named = all_named && named;
      if (f.flags & kRawPythonEntry) break;
    }
  };
  spliced_.assign(frames->begin(), frames->begin() + static_cast<std::ptrdiff_t>(user_begin));
  size_t placed = 0;
  for (size_t i = user_begin; i < frames->size(); ++i) {
    uint32_t f = (*frames)[i];
    if (next < py.size() && IsEvaluator(profile, f)) {
      emit_call();
      ++placed;
    } else {
      spliced_.push_back(f);
    }
  }
  // Calls whose evaluator frames the native stack does not reach (it was cut short): outermost.
  while (next < py.size()) {
    emit_call();
    c.groups_unplaced += s.count;
  }
  if (evaluators > 0 && placed == evaluators && all_named) c.samples_named += s.count;
  frames->swap(spliced_);
}

}  // namespace stacksym::capture
