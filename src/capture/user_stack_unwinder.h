// UserStackUnwinder — turns a sample's user registers + stack copy into a frame-pointer-like
// chain of pcs while the process lives: each pc is resolved to its executable mapping
// through the recorder's normalizer, the mapping's ELF file to its unwind table (shared by
// build ID), and the walk itself is stacksym::UnwindStack.
//
// Walks are remembered: a later sample of the same thread position (same RIP, RSP, RBP) whose
// stack holds the same values at the words the earlier walk read unwinds to the same frames,
// so it is answered without walking — exact reuse, not a hash that could collide.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "capture/sample_source.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"
#include "stacksym/stack_unwind.h"
#include "stacksym/unwind.h"

namespace stacksym::capture {

class UserStackUnwinder {
 public:
  // Opens the ELF file of a module of process pid (null when it cannot be had).
  using OpenModuleFile = std::function<std::shared_ptr<ElfFile>(pid_t, const Module&)>;

  // tables: shared with whoever else builds unwind tables during the recording (the BPF
  // loader); null: a private cache.
  UserStackUnwinder(Normalizer* normalizer, OpenModuleFile open_file,
                    std::shared_ptr<UnwindTableCache> tables);

  // pcs gets the sampled pc and then return addresses, innermost first.
  UnwindEnd Unwind(pid_t pid, const RawUserStack& stack, std::vector<uint64_t>* pcs,
                   bool* from_memo);
  // Mappings may have changed: forget resolved mappings and remembered walks.
  void Revalidate();
  // pid exec'd: forget its mappings and its remembered walks.
  void Forget(pid_t pid);

  uint64_t fp_frames() const { return fp_frames_; }
  const UnwindTableCache& tables() const { return *tables_; }

 private:
  struct Mapping {
    uint64_t start = 0, end = 0;
    std::shared_ptr<const UnwindTable> table;  // null: no CFI (frame pointers)
    uint64_t bias = 0;
  };
  struct MemoKey {
    pid_t pid;
    uint64_t ip, sp, bp;
    bool operator==(const MemoKey&) const = default;
  };
  struct MemoKeyHash {
    size_t operator()(const MemoKey& k) const;
  };
  struct MemoEntry {
    std::vector<StackWord> words;
    std::vector<uint64_t> pcs;
    UnwindEnd end;
  };

  bool Lookup(pid_t pid, uint64_t pc, UnwindModule* out);
  const Mapping* Resolve(pid_t pid, uint64_t pc);

  Normalizer* normalizer_;
  OpenModuleFile open_file_;
  std::shared_ptr<UnwindTableCache> tables_;
  std::unordered_map<pid_t, std::vector<Mapping>> mappings_;  // sorted by start, disjoint
  std::unordered_map<MemoKey, std::vector<MemoEntry>, MemoKeyHash> memo_;
  size_t memo_entries_ = 0;
  uint64_t fp_frames_ = 0;
  // Reused buffers.
  std::vector<StackWord> words_;
};

}  // namespace stacksym::capture
