// stacksym/process.h — addresses of a live process → symbols.
//
// ProcessSymbolizer normalizes the addresses (Normalizer: module + file offset per address)
// and then asks the right source for each module:
//   - ELF files: ElfSymbolizer (symbols + DWARF) on the file opened through
//     /proc/PID/map_files/START-END, so binaries in other mount namespaces (containers) and
//     deleted binaries still work; one ElfSymbolizer per (dev, inode) per call;
//   - the vDSO: its ELF image read from the process's own [vdso] pages (/proc/PID/mem);
//   - anonymous memory (JIT code): the process's /tmp/perf-PID.map (see PerfMap), looked up
//     in the process's mount namespace with its namespaced pid;
//   - anything else: a Reason.
// Each address gets an answer or a Reason; the batch never fails as a whole.
//
//   ProcessSymbolizer symbolizer;                   // default options
//   Result<std::vector<SymbolizedAddress>> r = symbolizer.Symbolize(pid, addrs);
//   if (!r) return r.error();                       // only for pid <= 0
//   for (const SymbolizedAddress& a : *r) puts(a.reason ? ReasonText(*a.reason) :
//   a.symbol.c_str());
//
// Thread-safety: one ProcessSymbolizer is used by one thread at a time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stacksym/normalize.h"
#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym {

struct ProcessSymbolizerOptions {
  SymbolizeOptions symbolize;  // demangling, DWARF, debug dirs for the mapped binaries
  NormalizerOptions normalize;
  bool perf_maps = true;  // consult /tmp/perf-PID.map for anonymous / non-ELF mappings
  // ElfSymbolizers kept across calls, keyed by the mapped file's identity (dev, inode, size,
  // mtime as stat() sees it through map_files); least recently used dropped first. 0: parse
  // per call only. The vDSO image and perf maps are kept too (re-read when they change).
  size_t cached_files = 64;
  // And by memory: after each call, least recently used ElfSymbolizers are dropped until the
  // kept ones hold at most this much heap (decompressed sections, symbol and DWARF tables;
  // ElfSymbolizer::memory_bytes). One big binary's tables can be hundreds of MB.
  size_t cached_bytes = size_t{1} << 30;
};

struct ProcessSymbolizerStats {
  uint64_t files_opened = 0;        // ELF files parsed into a new ElfSymbolizer
  uint64_t file_cache_hits = 0;     // an earlier call's ElfSymbolizer reused
  uint64_t vdso_reads = 0;          // vDSO images read from process memory
  uint64_t vdso_reuses = 0;         // a vDSO image identical to the cached one: symbolizer reused
  uint64_t perf_map_loads = 0;      // perf map files parsed
  uint64_t evicted_for_memory = 0;  // ElfSymbolizers dropped to stay within cached_bytes
  uint64_t cached_bytes = 0;        // heap held by the kept ElfSymbolizers after the last call
};

// Where an answer came from (ProcessSymbolizer::last_sources, for tests and diagnostics).
enum class SymbolSource : uint8_t { kNone, kElf, kVdso, kPerfMap };

struct ProcessSymbolizerCaches;  // internal

class ProcessSymbolizer {
 public:
  explicit ProcessSymbolizer(ProcessSymbolizerOptions options = {});
  ~ProcessSymbolizer();
  ProcessSymbolizer(const ProcessSymbolizer&) = delete;
  ProcessSymbolizer& operator=(const ProcessSymbolizer&) = delete;

  // One result per address, in input order. SymbolizedAddress::module is the path as the
  // process sees it ("[vdso]", or the perf map's path for JIT code); `vaddr` is the address
  // inside that module's ELF file. Errors only for pid <= 0.
  Result<std::vector<SymbolizedAddress>> Symbolize(pid_t pid, std::span<const uint64_t> addrs);

  // Symbolizes an already normalized batch of `pid` (addrs: the addresses that produced it).
  // The process must still be alive for map_files, the vDSO and its perf map.
  std::vector<SymbolizedAddress> SymbolizeNormalized(const NormalizedBatch& batch,
                                                     std::span<const uint64_t> addrs);

  // Per address of the last call: which source answered.
  const std::vector<SymbolSource>& last_sources() const { return last_sources_; }
  Normalizer& normalizer() { return normalizer_; }
  const ProcessSymbolizerStats& stats() const { return stats_; }
  // Drops every cached ElfSymbolizer, vDSO image and perf map.
  void ClearCaches();

 private:
  // To options_.cached_bytes; only entries used since clock `call_start` are re-measured.
  void TrimCaches(uint64_t call_start);
  ProcessSymbolizerOptions options_;
  Normalizer normalizer_;
  std::vector<SymbolSource> last_sources_;
  ProcessSymbolizerStats stats_;
  std::unique_ptr<ProcessSymbolizerCaches> caches_;  // across calls
};

}  // namespace stacksym
