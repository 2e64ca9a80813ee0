#include "remote/symbol_service.h"

#include <algorithm>
#include <utility>

#include "stacksym/build_id.h"
#include "stacksym/elf.h"

namespace stacksym::remote {

struct SymbolService::Entry {
  std::mutex mutex;  // one request at a time on the symbolizer
  bool loaded = false;
  std::unique_ptr<ElfSymbolizer> symbolizer;  // null: not found or unusable
  std::string message;                        // why not
  std::chrono::steady_clock::time_point loaded_at;
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> last_used{0};
};

SymbolService::SymbolService(SymbolServiceOptions options) : options_(std::move(options)) {}
SymbolService::~SymbolService() = default;

std::shared_ptr<SymbolService::Entry> SymbolService::Acquire(const std::vector<uint8_t>& build_id,
                                                             bool demangle, bool inlines) {
  std::vector<uint8_t> key = build_id;
  key.push_back(demangle ? 1 : 0);
  key.push_back(inlines ? 1 : 0);
  std::lock_guard lock(mutex_);
  std::shared_ptr<Entry>& slot = entries_[key];
  if (!slot) slot = std::make_shared<Entry>();
  slot->last_used = ++clock_;
  return slot;
}

void SymbolService::Load(Entry& entry, const std::vector<uint8_t>& build_id, bool demangle,
                         bool inlines) {
  entry.loaded = true;
  entry.loaded_at = std::chrono::steady_clock::now();
  entry.symbolizer.reset();
  entry.message.clear();
  SymbolizeOptions options;
  options.demangle = demangle;
  options.inlines = inlines;
  options.debug_dirs = options_.debug_dirs;
  options.fetcher = options_.fetcher;
  options.threads = options_.symbolize_threads;
  options.cache_dir = options_.index_cache_dir;
  // The same order of files as a local symbolization (build_id.h), by build ID only here.
  Result<std::shared_ptr<ElfFile>> binary = OpenModuleBinary(build_id, "", nullptr, options);
  if (!binary) {
    entry.message = binary.error().message;
    return;
  }
  Result<std::unique_ptr<ElfSymbolizer>> symbolizer = ElfSymbolizer::FromElf(*binary, options);
  if (!symbolizer) {
    entry.message = symbolizer.error().ToString();
    return;
  }
  entry.symbolizer = *std::move(symbolizer);
}

Result<SymbolizeResponse> SymbolService::Symbolize(const SymbolizeRequest& request,
                                                   std::chrono::steady_clock::time_point deadline) {
  SymbolizeResponse response;
  response.modules.reserve(request.modules.size());
  for (const ModuleQuery& query : request.modules) {
    if (std::chrono::steady_clock::now() > deadline) {
      return MakeError(ErrorCode::kIo, "the request took longer than the server allows");
    }
    counters_.offsets += query.offsets.size();
    ModuleAnswer answer;
    answer.build_id = query.build_id;
    answer.offsets = query.offsets;
    std::shared_ptr<Entry> entry = Acquire(query.build_id, request.demangle, request.inlines);
    {
      std::lock_guard lock(entry->mutex);
      // A miss is remembered only for a while: the file may be installed later.
      bool stale = entry->loaded && !entry->symbolizer &&
                   std::chrono::steady_clock::now() - entry->loaded_at > options_.negative_ttl;
      if (!entry->loaded || stale) {
        ++counters_.cache_misses;
        Load(*entry, query.build_id, request.demangle, request.inlines);
      } else {
        ++counters_.cache_hits;
      }
      if (!entry->symbolizer) {
        answer.message = entry->message;
        answer.answers.assign(query.offsets.size(), FrameSymbols{Reason::kNotFound, {}});
      } else {
        std::vector<SymbolizedAddress> results =
            entry->symbolizer->SymbolizeBatch(query.offsets, query.kind);
        answer.answers.reserve(results.size());
        for (SymbolizedAddress& r : results) answer.answers.push_back(ToFrameSymbols(std::move(r)));
        entry->bytes = entry->symbolizer->memory_bytes();
      }
    }
    response.modules.push_back(std::move(answer));
  }
  Trim();
  return response;
}

void SymbolService::Trim() {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [key, entry] : entries_) total += entry->bytes;
  if (total > options_.cache_bytes) {
    // Least recently used first; an entry a request still holds is dropped from the map and
    // freed when that request lets go of it.
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> order;
    for (const auto& [key, entry] : entries_) order.emplace_back(entry->last_used.load(), key);
    std::sort(order.begin(), order.end());
    for (const auto& [used, key] : order) {
      if (total <= options_.cache_bytes) break;
      auto it = entries_.find(key);
      total -= std::min<uint64_t>(total, it->second->bytes);
      entries_.erase(it);
      ++counters_.evictions;
    }
  }
  counters_.cached_bytes = total;
}

}  // namespace stacksym::remote
