// stacksym/normalize.h — user addresses of a live process → (module, file offset).
//
// Normalization turns the virtual addresses of a running process into answers that stay valid
// after it exits: for each address the module it lies in (an ELF file with its GNU build ID,
// the vDSO, anonymous memory such as JIT code) and the offset inside that module. A profiler
// stores (build ID, file offset) and symbolizes later, here or on another machine.
//
//   Normalizer normalizer;                               // owns its caches
//   Result<NormalizedBatch> batch = normalizer.Normalize(pid, addrs);
//   if (!batch) return batch.error();                    // only for meaningless arguments
//   for (const NormalizedAddress& a : batch->addresses) {
//     if (!a.ok()) { printf("%s\n", ReasonName(a.reason)); continue; }
//     const Module& m = batch->modules[a.module];
//     printf("%s %s 0x%llx\n", m.path.c_str(), ToHex(m.build_id).c_str(), a.file_offset);
//   }
//
// VMAs come from the PROCMAP_QUERY ioctl on /proc/PID/maps (Linux 6.11+) or, where that is
// missing, from parsing the text of /proc/PID/maps; both give identical answers. What is public
// is what a caller of the Normalizer needs: its options (the VMA source to use among them),
// statistics and answers. The VMA sources and the sorted address/VMA walk are the library's
// own (src/normalize/vma_sources.h, vma_walk.h): only the Normalizer walks, and the library's
// other users of the sources (process symbolization, the recorder) include them from there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/module.h"
#include "stacksym/reason.h"
#include "stacksym/result.h"

namespace stacksym {

// ---------------------------------------------------------------------------------------------
// VMA sources

enum class VmaSourceKind : uint8_t {
  kAuto,   // PROCMAP_QUERY when the kernel has it, else text
  kIoctl,  // PROCMAP_QUERY only (Error kUnsupported when the kernel lacks it)
  kText,   // parse /proc/PID/maps
};
const char* VmaSourceKindName(VmaSourceKind kind);  // "auto", "ioctl", "text"
std::optional<VmaSourceKind> ParseVmaSourceKind(std::string_view name);

// ---------------------------------------------------------------------------------------------
// Normalizer

inline constexpr uint32_t kNoModule = 0xffffffffu;

struct NormalizedAddress {
  // kElf: offset in the file; kVdso: offset in the vDSO image; kAnonymous/kUnknown: offset
  // from the start of the VMA. Meaningless when !ok().
  uint64_t file_offset = 0;
  uint32_t module = kNoModule;        // index into NormalizedBatch::modules
  Reason reason = Reason::kUnmapped;  // meaningful only when module == kNoModule
  bool ok() const { return module != kNoModule; }
};

struct NormalizedBatch {
  pid_t pid = 0;
  VmaSourceKind source = VmaSourceKind::kAuto;  // the source that served (kIoctl or kText)
  std::vector<NormalizedAddress> addresses;     // one per input address, in input order
  std::vector<Module> modules;                  // in order of first appearance by address
};

struct NormalizerOptions {
  VmaSourceKind vma_source = VmaSourceKind::kAuto;
  bool build_ids = true;         // read build IDs (else build_id stays empty)
  bool kernel_build_ids = true;  // ioctl source: take build IDs from PROCMAP_QUERY
  bool executable_only = false;  // only executable VMAs count (others → kUnmapped)
  // The Normalizer remembers, per process, its open /proc/PID/maps and the VMAs it has looked
  // up with their modules. A later lookup that returns the same VMA (start, end, offset,
  // inode) reuses the module and build ID; one that contradicts remembered VMAs drops them.
  // With cache_vmas, an address inside a remembered VMA needs no lookup at all: call
  // Invalidate(pid) after the process maps or unmaps (e.g. on a perf MMAP event).
  bool cache_vmas = false;
  size_t vma_cache_processes = 64;  // processes remembered (LRU); 0: remember nothing
  // The addresses were sampled a little earlier (a recorder draining a ring buffer), so the
  // process may have exited, or unmapped them, since. An address the process no longer maps,
  // and every address of a process that is gone, is then answered from the VMA remembered
  // for it (counted in remembered_answers) instead of getting kUnmapped / kProcessGone. A gone
  // process stays remembered until the second RevalidateAll() after it went. So that a sample
  // read after its process exited still resolves when the process had never been looked up
  // at that address, the first lookup of a live process in each revalidation epoch also
  // remembers all its executable VMAs (counted in snapshot_vmas). Needs a VMA cache
  // (vma_cache_processes > 0).
  bool past_addresses = false;
  // Build-ID cache keyed by file identity (dev, inode, size, mtime), positive and negative.
  bool cache_build_ids = true;
  size_t build_id_cache_entries = 4096;  // LRU bound
};

// Counters that show each cache at work. Monotonic until ResetStats().
struct NormalizerStats {
  uint64_t calls = 0;
  uint64_t addresses = 0;
  uint64_t vma_lookups = 0;              // FindCoveringOrNext calls (ioctls or text searches)
  uint64_t maps_reads = 0;               // text source: read() calls on /proc/PID/maps
  uint64_t range_cache_hits = 0;         // address inside the last resolved VMA: no lookup
  uint64_t vma_cache_hits = 0;           // address inside a cached VMA from an earlier call
  uint64_t vma_cache_invalidations = 0;  // cached VMAs dropped (explicitly or on mismatch)
  // A looked-up VMA matched a remembered one (start, end, offset, inode): its module and
  // build ID were reused, and the ioctl skipped name and build ID.
  uint64_t vma_matches = 0;
  uint64_t same_file_hits = 0;       // another VMA of a file already seen in this call
  uint64_t kernel_build_ids = 0;     // build IDs taken from PROCMAP_QUERY
  uint64_t build_id_reads = 0;       // files opened and their notes read
  uint64_t build_id_cache_hits = 0;  // build ID found in the cache (positive)
  uint64_t negative_hits = 0;        // cache said "this file has no build ID"
  uint64_t remembered_answers = 0;   // past_addresses: answered from a VMA no longer there
  uint64_t snapshot_vmas = 0;        // past_addresses: executable VMAs remembered unasked
};

// Thread-safety: all methods may be called from several threads; calls are serialized by an
// internal lock (use one Normalizer per thread for parallel normalization).
class Normalizer {
 public:
  explicit Normalizer(NormalizerOptions options = {});
  ~Normalizer();
  Normalizer(const Normalizer&) = delete;
  Normalizer& operator=(const Normalizer&) = delete;

  // Errors only for meaningless arguments (pid <= 0). A process that is gone, unreadable or
  // exits during the call gives per-address Reasons (kProcessGone, kAccessDenied).
  Result<NormalizedBatch> Normalize(pid_t pid, std::span<const uint64_t> addrs);

  // The executable mapping of `pid` whose file has GNU build ID `build_id` — for frames the
  // kernel already gave as (build ID, offset) — as a module with one VMA to open it by;
  // nullopt when none has it (or the process is gone). Build IDs are read through the same
  // cache as Normalize's; the answer is remembered per (pid, build ID) until Invalidate(pid).
  std::optional<Module> FindModuleByBuildId(pid_t pid, std::span<const uint8_t> build_id);

  // Forgets the cached VMAs of `pid` (all processes for InvalidateAll).
  void Invalidate(pid_t pid);
  void InvalidateAll();
  // The cached VMAs of `pid` (all processes for RevalidateAll) stop answering without a
  // lookup: the next address inside one is looked up again, cheaply when the VMA is
  // unchanged. Unlike Invalidate, they are kept as the answer of last resort for
  // past_addresses. A recorder calls RevalidateAll periodically instead of relying on mmap
  // events.
  void Revalidate(pid_t pid);
  void RevalidateAll();
  // Forgets every remembered build ID (the build-ID cache and the remembered VMAs' modules).
  void ClearBuildIdCache();

  NormalizerStats stats() const;
  void ResetStats();
  const NormalizerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads the ELF image of a process's vDSO from its memory (/proc/PID/mem at the [vdso] VMA).
// Errors: kNotFound when the process has gone, kPermission, kMalformed for a bad image.
class ElfFile;
Result<std::shared_ptr<ElfFile>> ReadVdsoImage(pid_t pid, uint64_t vma_start, uint64_t vma_end);

}  // namespace stacksym
