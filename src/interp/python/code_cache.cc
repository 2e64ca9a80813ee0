#include "interp/python/code_cache.h"

namespace stacksym::interp::python {

const CodeCache::Entry& CodeCache::Get(uint32_t pid, uint64_t address, MemoryReader& memory,
                                       const Layout& layout, const TypeAddresses& types,
                                       int64_t instruction, std::optional<uint16_t> check) {
  ++stats_.lookups;
  auto& entries = processes_[pid];
  Key key{address, check ? *check : kUnchecked};
  auto it = entries.find(key);
  if (it != entries.end()) {
    const Entry& e = it->second;
    bool stale = e.code ? e.code->code_units > 0 && instruction >= e.code->code_units
                        : clock_() - e.failed_at >= kRetryFailedSeconds;
    if (!stale) return e;
    ++stats_.rereads;
  } else if (entries.size() >= max_per_process_) {
    entries.clear();
  }
  ++stats_.reads;
  CodeRead read = ReadCodeObject(memory, layout, types, address);
  Entry entry;
  entry.error = read.error;
  if (read.code && check && read.code->Check() != *check) {
    entry.error = CodeError::kReplaced;
  } else if (read.code) {
    entry.code = std::make_shared<const CodeObject>(std::move(*read.code));
  }
  if (!entry.code) {
    ++stats_.failures[static_cast<size_t>(entry.error)];
    entry.failed_at = clock_();
  }
  Entry& slot = entries[key];
  slot = std::move(entry);
  return slot;
}

size_t CodeCache::size() const {
  size_t n = 0;
  for (const auto& [pid, entries] : processes_) n += entries.size();
  return n;
}

}  // namespace stacksym::interp::python
