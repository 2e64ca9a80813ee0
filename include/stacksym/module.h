// stacksym/module.h — the one module record, from normalization to the profile.
//
// A user address lies in a module: an ELF file (with its GNU build ID), the vDSO, anonymous
// memory (heap, stack, JIT code) — and kernel frames lie in the kernel. The Normalizer answers
// addresses with Modules, the recorder interns them into a Profile, pprof writes them as
// Mappings, and the symbolizers find their files by them. A module's identity is its kind, path
// and build ID (and, for a recording's anonymous memory, its process): that is what a profile
// keeps and persists. The other fields say where a live
// process maps it (filled by the Normalizer; empty in a profile).
//
//   const Module& m = batch.modules[address.module];
//   if (m.kind == ModuleKind::kElf) printf("%s %s\n", m.path.c_str(), ToHex(m.build_id).c_str());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stacksym/reason.h"

namespace stacksym {

enum class ModuleKind : uint8_t {
  kElf,        // a file-backed mapping (normally ELF; build_id_reason says when it is not)
  kVdso,       // [vdso]; file offsets are offsets in the vDSO image
  kAnonymous,  // heap, stack, [anon:NAME], unnamed anonymous memory (JIT code lives here)
  kKernel,     // the kernel ([kernel.kallsyms]): kernel frames' addresses are its own
  kUnknown,    // other special mappings ([vvar], [uprobes], ...)
};
// "elf", "vdso", "anonymous", "kernel", "unknown".
constexpr const char* ModuleKindName(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::kElf:
      return "elf";
    case ModuleKind::kVdso:
      return "vdso";
    case ModuleKind::kAnonymous:
      return "anonymous";
    case ModuleKind::kKernel:
      return "kernel";
    case ModuleKind::kUnknown:
      break;
  }
  return "unknown";
}

struct Module {
  // Identity.
  ModuleKind kind = ModuleKind::kUnknown;
  // Path as the process sees it (without " (deleted)"), or the bracketed name, or empty.
  std::string path;
  // GNU build ID; empty when there is none, it was not asked for, or it could not be read.
  std::vector<uint8_t> build_id;
  // An anonymous module of a recording (kAnonymous): the process whose memory it is. Its
  // frames' addresses are then virtual addresses in that process, so that its JIT code can be
  // named from the process's perf map or jitdump (see symbolize_profile.h). 0 everywhere else.
  uint32_t pid = 0;

  // Where a live process maps it (the Normalizer's; not part of its identity). Every member
  // has an initializer, so that {kind, path, build_id} initializations stay warning-free.
  bool deleted = false;
  uint64_t dev = 0;
  uint64_t inode = 0;
  // Why build_id is empty when build IDs were asked for: kNoBuildId, kFileUnavailable,
  // kAccessDenied, kProcessGone. Unset when build_id is present or was not asked for.
  std::optional<Reason> build_id_reason{};
  // The lowest VMA of this module seen in the batch, to open its file through
  // /proc/PID/map_files/START-END (it opens deleted files and files of other mount namespaces
  // too) and, for the vDSO, to read its pages from /proc/PID/mem.
  uint64_t map_start = 0;
  uint64_t map_end = 0;
  uint64_t map_offset = 0;

  // JIT code: a recording's anonymous memory, named from its process's perf map or jitdump.
  bool IsJitCode() const { return kind == ModuleKind::kAnonymous && pid != 0; }

  // The identity alone (what a profile keeps).
  Module Identity() const { return Module{kind, path, build_id, pid}; }
  bool SameIdentity(const Module& other) const {
    return kind == other.kind && path == other.path && build_id == other.build_id &&
           pid == other.pid;
  }
  bool operator==(const Module&) const = default;
};

// What JIT runtimes wrote of the code they made in one recorded process, read by the recorder
// through the process's own root (so a container's /tmp) with its namespaced pid, at the end
// of the recording: its perf map's text (/tmp/perf-PID.map) and its jitdump's bytes
// (jit-PID.dump). Either may be empty. SymbolizeProfile names the process's anonymous frames
// from them. Not persisted.
struct JitFiles {
  std::string perf_map_path;  // where it was read (empty: none)
  std::string perf_map;
  std::string jitdump_path;
  std::string jitdump;
};

}  // namespace stacksym
