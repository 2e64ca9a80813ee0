// Python frames in a recording (issue 32): which sampled processes run a CPython interpreter,
// their registration with the BPF program (which then walks each sample's Python frames), and,
// in the aggregator, the frames named from their code objects and placed where the native
// `_PyEval_EvalFrameDefault` frames that run them stand.
//
//   auto python = std::make_shared<PythonProcesses>();
//   python->SetRegistrar(write_python_procs_entry);   // the BPF source
//   python->Seen(pid);                                // every sample's pid
//   python->ExamineWanted();                          // after each batch of samples
//   PythonStacks stacks(python);                      // the aggregator's
//   stacks.Splice(sample, user_begin, profile, &frames);
//
// A process is examined once, on its first sample, and again after an exec: its mapped files
// named like an interpreter (`python*`, `libpython*`) and its executable are looked at for
// `_PyRuntime`; an interpreter's layout (interp/python/layout.h) is loaded once per binary.
// Code objects are read from the process's memory when its first sample that shows them is
// aggregated (a fraction of a second later), each once (CodeCache); a process that is gone by
// then gets frames named by the reason.
// Not thread-safe: the recorder's thread calls it.
#pragma once

#include <linux/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/bpf/sample_event.h"
#include "capture/sample_source.h"
#include "dwarf/dwarf_options.h"
#include "interp/python/code_cache.h"
#include "interp/python/interpreter.h"
#include "interp/python/layout.h"
#include "stacksym/capture.h"
#include "stacksym/profile.h"

namespace stacksym::capture {

struct PythonBinary;

// What the recording counted of Python (RecordStats' python_* fields are made from it).
struct PythonCounters {
  uint64_t processes = 0;               // processes found running a supported CPython
  uint64_t processes_unsupported = 0;   // CPython found, but no layout for it (version, damage)
  uint64_t samples = 0;                 // samples of those processes (that user space saw)
  uint64_t frames = 0;                  // Python frames those samples carried
  uint64_t samples_in_interpreter = 0;  // samples whose native stack holds an evaluator frame
  uint64_t samples_named = 0;    // of those: every evaluator frame stands for named Python frames
  uint64_t frames_unnamed = 0;   // Python frames whose code object could not be read
  uint64_t groups_unplaced = 0;  // evaluator calls' frames with no native frame to stand in
  uint64_t walk_ends[STACKSYM_PY_END_COUNT] = {};
  uint64_t code_objects_read = 0;
  std::array<uint64_t, interp::python::kCodeErrorCount> code_failures{};
  // Quick layouts (built-in table, debug offsets) the DWARF read later disagreed with.
  uint64_t layouts_corrected = 0;
  std::string first_problem;  // why the first interpreter found could not be used
};

class PythonProcesses {
 public:
  // One registration of a process with the BPF program, or its removal (null); false when it
  // could not be written.
  using Registrar = std::function<bool(uint32_t pid, const stacksym_python_proc*)>;
  explicit PythonProcesses(dwarf::DebugFileSearch search = {});
  ~PythonProcesses();

  void SetRegistrar(Registrar registrar) { registrar_ = std::move(registrar); }
  // A sample of `pid` was read: examined at the next ExamineWanted when it is new.
  void Seen(uint32_t pid);
  // `pid` exec'd: what was known of it is forgotten, and it is examined again.
  void Exec(uint32_t pid);
  void ExamineWanted();
  // Whether a process waits for its libpython to be mapped: the source polls sooner.
  bool WantsSoon() const { return !soon_.empty(); }

  // A process running CPython, as examined.
  struct Process {
    std::shared_ptr<PythonBinary> binary;
    uint64_t bias = 0;
    std::unique_ptr<interp::python::ProcessMemory> memory;
    interp::python::TypeAddresses types;
  };
  const Process* Find(uint32_t pid) const;
  // The interpreter binary a profile module is, by build ID (or path without one): its
  // evaluator's file-offset ranges; null when the module is no interpreter seen.
  const std::vector<std::pair<uint64_t, uint64_t>>* EvaluatorOffsets(const Module& module) const;
  // The code object a sample's frame names in `pid`: from the cache, or read now.
  const interp::python::CodeCache::Entry& Code(uint32_t pid, const RawPythonFrame& frame);

  // Changes when an interpreter binary is found (so that "not an interpreter" answers given
  // before are asked again).
  uint64_t generation() const { return generation_; }
  PythonCounters& counters() { return counters_; }
  const PythonCounters& counters() const { return counters_; }
  void AddCodeStats();  // the code cache's reads and failures into counters()
  // "3.11.2 (dwarf)": each interpreter binary and where its layout came from.
  std::string Versions() const;

 private:
  // false: nothing more to learn (registered, unusable or gone); true: no interpreter yet, or
  // its layout not known yet.
  bool Examine(uint32_t pid);
  // Layouts read from DWARF since the last call: taken in use; a process whose layout changes
  // is registered again and its code objects read again.
  void TakeDwarfLayouts();
  bool Register(uint32_t pid, Process& p);

  std::shared_ptr<PythonBinary> BinaryOf(uint32_t pid, const std::string& path, uint64_t start,
                                         uint64_t end, uint64_t inode);
  static std::string BinaryKey(const std::vector<uint8_t>& build_id, const std::string& path);

  dwarf::DebugFileSearch search_;
  Registrar registrar_;
  // Processes seen since the last ExamineWanted, and those examined and found without a usable
  // interpreter: when to look again.
  static constexpr double kMaxExamineInterval = 5.0;
  struct Watch {
    double next = 0;
    double interval = 0.1;
  };
  std::unordered_set<uint32_t> wanted_;
  // Processes whose executable needs libpython, not mapped yet when examined (at their exec):
  // examined at every ExamineWanted until it is, or until the deadline.
  static constexpr double kSoonSeconds = 0.5;
  std::unordered_map<uint32_t, double> soon_;
  std::unordered_map<uint32_t, Watch> watched_;
  std::unordered_map<uint32_t, Process> processes_;
  // Interpreter binaries by BinaryKey; every file examined by path and inode.
  std::unordered_map<std::string, std::shared_ptr<PythonBinary>> binaries_;
  std::unordered_map<std::string, std::shared_ptr<PythonBinary>> files_;
  static constexpr size_t kMaxFiles = 4096;
  std::vector<std::shared_ptr<PythonBinary>> reading_dwarf_;
  uint64_t generation_ = 0;
  double last_sweep_ = 0;
  interp::python::CodeCache codes_;
  PythonCounters counters_;
};

// An interpreter binary, examined once per recording.
struct PythonBinary {
  std::string path;
  std::vector<uint8_t> build_id;
  std::shared_ptr<ElfFile> elf;
  std::optional<interp::python::Interpreter> interpreter;  // none: not CPython
  // The layout in use: the debug offsets' or the built-in table's at first, the DWARF's once
  // read (dwarf: its thread's answer, while it reads). None: unusable (problem says why), or
  // not known until the DWARF is read.
  std::optional<interp::python::Layout> layout;
  struct DwarfAnswer {
    Result<interp::python::Layout> layout;
    std::string notes;
  };
  std::future<DwarfAnswer> dwarf;
  std::string quick_problem;     // why no quick layout
  bool needs_libpython = false;  // not CPython, but linked with libpython (DT_NEEDED)
  std::string problem;
  std::vector<std::pair<uint64_t, uint64_t>> eval_offsets;  // file offsets [start, end)
};

// The splice of one sample's Python frames into its stack, for the aggregator.
class PythonStacks {
 public:
  explicit PythonStacks(std::shared_ptr<PythonProcesses> processes)
      : processes_(std::move(processes)) {}
  // `frames` holds the sample's kernel frames, then from `user_begin` its user frames,
  // innermost first: each evaluator frame is replaced by the Python frames it ran.
  void Splice(const RawSample& s, size_t user_begin, Profile& profile,
              std::vector<uint32_t>* frames);
  // The aggregator starts a new profile (a window): what refers to the old one is forgotten.
  // Frame numbers go on from where they were, so that frames carried over into the new profile
  // (open off-CPU intervals) never share one with a new frame.
  void StartProfile() {
    module_ = UINT32_MAX;
    evaluators_.clear();
    python_frames_.clear();
  }

 private:
  bool IsEvaluator(const Profile& profile, uint32_t frame);
  uint32_t PythonFrame(uint32_t pid, const RawPythonFrame& raw, Profile& profile, bool* named);

  std::shared_ptr<PythonProcesses> processes_;
  uint32_t module_ = UINT32_MAX;  // the profile's "[python]" module
  // Per profile module: its evaluator ranges (null: not an interpreter, as of `generation`).
  struct Evaluator {
    const std::vector<std::pair<uint64_t, uint64_t>>* ranges = nullptr;
    uint64_t generation = 0;
  };
  std::unordered_map<uint32_t, Evaluator> evaluators_;
  // (qualname, name, file, first line, line) → the frame's address (its number).
  std::unordered_map<std::string, uint32_t> python_frames_;
  uint32_t next_python_frame_ = 0;
  std::vector<uint32_t> spliced_;
};

}  // namespace stacksym::capture
