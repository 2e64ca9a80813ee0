// UserStackNormalizer — the capture module's narrow view of the Normalizer: the only capture
// file that includes stacksym/normalize.h, so the sampling code sees just the few plain
// structs it needs (kind, path, build ID, kept file) and not the normalizer's whole API.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stacksym/reason.h"

namespace stacksym {

enum class UserModuleKind : uint8_t { kElf, kVdso, kAnonymous, kUnknown };

struct UserModule {
  UserModuleKind kind = UserModuleKind::kUnknown;
  std::string path;
  std::vector<uint8_t> build_id;
  bool deleted = false;
  uint64_t map_start = 0;  // one VMA of the module (to open it through map_files)
  uint64_t map_end = 0;
};

struct UserFrame {
  bool ok = false;
  Reason reason = Reason::kUnmapped;  // when !ok
  uint32_t module = 0;                // index into the modules vector of the call
  uint64_t file_offset = 0;
};

class UserStackNormalizer {
 public:
  UserStackNormalizer();
  ~UserStackNormalizer();
  // One result per address. Never fails: a gone process gives Reason::kProcessGone.
  void Normalize(pid_t pid, std::span<const uint64_t> addrs, std::vector<UserFrame>* frames,
                 std::vector<UserModule>* modules);
  // The mapped file of `pid` whose build ID is `build_id` (for frames the kernel already
  // normalized): its path and one VMA. nullopt when no executable mapping has it.
  std::optional<UserModule> FindModuleByBuildId(pid_t pid, std::span<const uint8_t> build_id);
  // Mappings may have changed: check remembered VMAs again before trusting them. They stay
  // as the answer for samples of processes that have exited (or unmapped the address) by
  // the time their sample is read.
  void RevalidateAll();
  // pid exec'd: everything remembered of it (VMAs, the kept maps source, which may still
  // read the old image) is of no use to its later samples.
  void Forget(pid_t pid);
  // "/proc/PID/map_files/START-END".
  static std::string MapFilesPath(pid_t pid, uint64_t start, uint64_t end);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stacksym
