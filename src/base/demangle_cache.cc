#include "base/demangle_cache.h"

#include "stacksym/demangle.h"

namespace stacksym {

const std::string& DemangleCache::Get(std::string_view raw) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = names_.find(raw.data());
    if (it != names_.end()) return it->second;
  }
  std::string pretty = Demangle(raw);
  std::lock_guard<std::mutex> lock(mu_);
  // Another thread may have demangled the same name meanwhile: the first entry stays.
  return names_.try_emplace(raw.data(), std::move(pretty)).first->second;
}

size_t DemangleCache::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = names_.bucket_count() * sizeof(void*);
  for (const auto& [key, name] : names_) total += sizeof(std::string) + name.capacity() + 32;
  return total;
}

}  // namespace stacksym
