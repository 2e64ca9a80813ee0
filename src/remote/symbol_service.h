// SymbolService — what the server does with a parsed request, without HTTP: finds each build
// ID's binary (debug dirs, then the fetcher), keeps the parsed files (one ElfSymbolizer per
// build ID and options) across requests, bounded in bytes, least recently used dropped first,
// and answers like a local `symbolize-profile` would.
//
// Thread-safety: Symbolize() is called from any number of threads; requests for the same
// build ID take turns on its symbolizer, others run in parallel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote/symbolize_api.h"
#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym::remote {

struct SymbolServiceOptions {
  std::vector<std::string> debug_dirs = {kDefaultDebugDir};
  std::shared_ptr<const BuildIdFetcher> fetcher;
  size_t cache_bytes = size_t{1} << 30;
  unsigned symbolize_threads = 0;
  std::string
      index_cache_dir;  // persisted symbol indexes (SymbolizeOptions::cache_dir); empty: none
  // A build ID that was not found is looked for again after this long.
  std::chrono::seconds negative_ttl{60};
};

struct SymbolServiceCounters {
  std::atomic<uint64_t> cache_hits{0};    // a module served by a symbolizer already open
  std::atomic<uint64_t> cache_misses{0};  // a module that had to be found and opened
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> offsets{0};
  std::atomic<uint64_t> cached_bytes{0};  // after the last trim
};

class SymbolService {
 public:
  explicit SymbolService(SymbolServiceOptions options);
  ~SymbolService();

  // Error (kIo) when the deadline passed before every module was answered.
  Result<SymbolizeResponse> Symbolize(const SymbolizeRequest& request,
                                      std::chrono::steady_clock::time_point deadline);

  const SymbolServiceCounters& counters() const { return counters_; }

 private:
  struct Entry;
  std::shared_ptr<Entry> Acquire(const std::vector<uint8_t>& build_id, bool demangle, bool inlines);
  void Load(Entry& entry, const std::vector<uint8_t>& build_id, bool demangle, bool inlines);
  void Trim();

  SymbolServiceOptions options_;
  SymbolServiceCounters counters_;
  std::mutex mutex_;                                                // guards entries_ and clock_
  std::map<std::vector<uint8_t>, std::shared_ptr<Entry>> entries_;  // key: build ID + 2 flags
  uint64_t clock_ = 0;
};

}  // namespace stacksym::remote
