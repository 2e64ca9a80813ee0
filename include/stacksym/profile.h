// stacksym/profile.h — a profile: deduplicated stacks of normalized frames, with counts.
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
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "stacksym/frame.h"
#include "stacksym/module.h"
#include "stacksym/reason.h"

namespace stacksym {

enum class FrameKind : uint8_t {
  kUser,     // address = file offset inside module
  kUserRaw,  // could not be normalized: address = virtual address in the process
  kKernel,   // address = kernel virtual address
};

struct ProfileFrame {
  FrameKind kind = FrameKind::kUser;
  uint32_t module = 0;  // index into Profile::modules (ignored for kUserRaw)
  uint64_t address = 0;
  bool operator==(const ProfileFrame&) const = default;
};

struct ProfileStack {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;              // thread name
  std::vector<uint32_t> frames;  // indices into Profile::frames, leaf (innermost) first;
                                 // kernel frames come before user frames
  bool operator==(const ProfileStack&) const = default;
};

// The most samples a profile holds in all, so that every count, however stacks merge, fits
// pprof's int64 sample values. Readers refuse input beyond it.
inline constexpr uint64_t kMaxTotalSamples = uint64_t{INT64_MAX};

class ElfFile;  // stacksym/elf.h

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
  std::vector<ProfileFrame> frames;                  // distinct frames
  std::vector<ProfileStack> stacks;                  // distinct stacks
  std::vector<uint64_t> counts;                      // samples per stack, parallel to stacks
  std::vector<std::optional<FrameSymbols>> symbols;  // parallel to frames once symbolized

  uint64_t period_ns = 0;      // sampling period (1e9 / frequency)
  uint64_t start_time_ns = 0;  // wall clock, ns since the epoch
  uint64_t duration_ns = 0;
  uint64_t lost_samples = 0;  // samples the recorder knows it dropped (not in counts)
  std::string event;          // what was sampled ("cpu-clock", "cycles"); empty if unknown
  ModuleFiles files;          // files the recorder kept open (SymbolizeProfile looks here first)

  uint32_t AddModule(const Module& module);         // deduplicated by identity; keeps the identity
  uint32_t InternFrame(const ProfileFrame& frame);  // deduplicated
  void AddSample(const ProfileStack& stack, uint64_t count);  // aggregates equal stacks
  uint64_t total_samples() const;

 private:
  // Rebuilds the lookup indexes when the public vectors were filled directly.
  void RebuildIndexesIfStale();
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
