// SampleAggregator — turns raw samples into Profile stacks while their processes live:
// user addresses are normalized at once (build ID + file offset), each module's ELF file is
// opened and kept, and equal (pid, tid, comm, stack) samples are counted together.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/sample_source.h"
#include "capture/user_normalizer.h"
#include "stacksym/elf.h"
#include "stacksym/profile.h"

namespace stacksym {

struct AggregatorCounters {
  uint64_t aggregated = 0;  // samples (with counts) added to the profile
  uint64_t user_stacks_empty = 0;
  uint64_t user_stacks_truncated = 0;
  uint64_t build_id_frames = 0;
  uint64_t build_id_fallbacks = 0;
  uint64_t frames_not_normalized = 0;
};

class SampleAggregator {
 public:
  SampleAggregator();
  void Add(const RawSample& sample);
  // Mappings may have changed since the VMA cache was filled: drop it (called periodically).
  void RevalidateMappings() { normalizer_.RevalidateAll(); }

  Profile& profile() { return profile_; }
  const std::vector<std::shared_ptr<ElfFile>>& module_files() const { return module_files_; }
  const AggregatorCounters& counters() const { return counters_; }

 private:
  uint32_t InternModule(pid_t pid, const UserModule& module);
  uint32_t KernelModule();
  void AppendUserFrames(const RawSample& s, std::vector<uint32_t>* frames);
  void AppendBuildIdFrames(const RawSample& s, std::vector<uint32_t>* frames);

  Profile profile_;
  std::vector<std::shared_ptr<ElfFile>> module_files_;      // parallel to profile_.modules
  std::unordered_map<std::string, uint32_t> module_index_;  // kind|path|build ID → index
  uint32_t kernel_module_ = UINT32_MAX;
  UserStackNormalizer normalizer_;
  AggregatorCounters counters_;
  // Reused buffers.
  std::vector<UserFrame> user_frames_;
  std::vector<UserModule> user_modules_;
  std::vector<uint64_t> addrs_;
  ProfileStack stack_;
};

}  // namespace stacksym
