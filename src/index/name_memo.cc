#include "index/name_memo.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cache/atomic_file.h"
#include "cache/checksum.h"

namespace stacksym::index {

using cache::Crc32c;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'K', 'S', 'Y', 'M', 'D', 'N'};
// A file bigger than a full memo can be is not read (its header would not parse either).
constexpr uint64_t kMaxFileBytes =
    sizeof(NameMemoHeader) + kNameMemoMaxText + (kNameMemoMaxText / 8) * sizeof(NameMemoEntry);

uint32_t HeaderCrc(NameMemoHeader header) {
  header.header_crc = 0;
  return Crc32c(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&header), sizeof(header)));
}

Error Damaged(const char* why) {
  return Error(ErrorCode::kInvalidArgument, std::string("damaged name memo: ") + why);
}

}  // namespace

Result<NameMemoView> ParseNameMemo(std::span<const uint8_t> bytes, const NameMemoBinding& binding,
                                   bool* stale, bool verify_checksums) {
  if (stale != nullptr) *stale = false;
  NameMemoHeader header;
  if (bytes.size() < sizeof(header)) return Damaged("shorter than its header");
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) return Damaged("no magic");
  if (verify_checksums && HeaderCrc(header) != header.header_crc) {
    return Damaged("header checksum");
  }
  if (header.version != kNameMemoVersion) {
    return Error(ErrorCode::kInvalidArgument,
                 "name memo of version " + std::to_string(header.version));
  }
  const uint64_t body = bytes.size() - sizeof(header);
  if (header.count > body / sizeof(NameMemoEntry) ||
      header.text_size != body - uint64_t{header.count} * sizeof(NameMemoEntry)) {
    return Damaged("sizes");
  }
  if (verify_checksums && Crc32c(bytes.subspan(sizeof(header))) != header.body_crc) {
    return Damaged("body checksum");
  }
  if (header.index_crc != binding.index_crc || header.index_size != binding.index_size) {
    if (stale != nullptr) *stale = true;
    return Error(ErrorCode::kInvalidArgument, "name memo of another index");
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(NameMemoEntry) != 0) {
    return Error(ErrorCode::kInvalidArgument, "name memo bytes not aligned");
  }
  NameMemoView view;
  view.entries = {reinterpret_cast<const NameMemoEntry*>(bytes.data() + sizeof(header)),
                  header.count};
  view.text = {reinterpret_cast<const char*>(bytes.data()) + sizeof(header) +
                   uint64_t{header.count} * sizeof(NameMemoEntry),
               static_cast<size_t>(header.text_size)};
  for (size_t i = 0; i < view.entries.size(); ++i) {
    const NameMemoEntry& e = view.entries[i];
    if (i > 0 && view.entries[i - 1].key >= e.key) return Damaged("keys out of order");
    if (e.offset > view.text.size() || e.size > view.text.size() - e.offset) {
      return Damaged("text out of bounds");
    }
  }
  return view;
}

namespace {

// The header of a memo whose body (entries, then text) sums to `body_crc`.
NameMemoHeader MemoHeader(uint32_t count, uint64_t text_size, uint32_t body_crc,
                          const NameMemoBinding& binding) {
  NameMemoHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kNameMemoVersion;
  header.count = count;
  header.index_size = binding.index_size;
  header.index_crc = binding.index_crc;
  header.text_size = text_size;
  header.body_crc = body_crc;
  header.header_crc = HeaderCrc(header);
  return header;
}

std::span<const uint8_t> BytesOf(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

}  // namespace

std::vector<uint8_t> EncodeNameMemo(std::span<const NameMemoEntry> entries, std::string_view text,
                                    const NameMemoBinding& binding) {
  const std::span<const uint8_t> entry_bytes(reinterpret_cast<const uint8_t*>(entries.data()),
                                             entries.size_bytes());
  const NameMemoHeader header = MemoHeader(static_cast<uint32_t>(entries.size()), text.size(),
                                           Crc32c(BytesOf(text), Crc32c(entry_bytes)), binding);
  std::vector<uint8_t> out(sizeof(header) + entry_bytes.size() + text.size());
  std::memcpy(out.data(), &header, sizeof(header));
  if (!entry_bytes.empty()) {
    std::memcpy(out.data() + sizeof(header), entry_bytes.data(), entry_bytes.size());
  }
  if (!text.empty()) {
    std::memcpy(out.data() + sizeof(header) + entry_bytes.size(), text.data(), text.size());
  }
  return out;
}

NameMemo::NameMemo(std::string path, const NameMemoBinding& binding)
    : path_(std::move(path)), binding_(binding) {}

NameMemo::~NameMemo() { Unmap(); }

void NameMemo::Unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
}

Result<void> NameMemo::Load(bool* stale) {
  if (stale != nullptr) *stale = false;
  loaded_ = {};
  saved_count_ = 0;
  Unmap();
  if (path_.empty()) return {};
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};  // not written yet
    return ErrnoError(errno, "open " + path_);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < sizeof(NameMemoHeader) ||
      static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    ::close(fd);
    return Damaged("not a name memo's size").WithFile(path_);
  }
  // Mapped (page-aligned), its pages populated at once: the checks read every byte, and a
  // copy would cost fresh pages.
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int error = errno;
  ::close(fd);
  if (p == MAP_FAILED) return ErrnoError(error, "map " + path_);
  mapping_ = p;
  mapping_size_ = size;
  auto view = ParseNameMemo(std::span<const uint8_t>(static_cast<const uint8_t*>(p), size),
                            binding_, stale);
  if (!view) {
    Unmap();
    return std::move(view).error().WithFile(path_);
  }
  loaded_ = *view;
  saved_count_ = loaded_.entries.size();
  return {};
}

bool NameMemo::Find(uint64_t key, std::string* out) const {
  auto it = std::lower_bound(loaded_.entries.begin(), loaded_.entries.end(), key,
                             [](const NameMemoEntry& e, uint64_t k) { return e.key < k; });
  if (it != loaded_.entries.end() && it->key == key) {
    out->assign(loaded_.text.substr(it->offset, it->size));
    return true;
  }
  const Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto added = shard.names.find(key);
  if (added == shard.names.end()) return false;
  out->assign(added->second);
  return true;
}

void NameMemo::Add(uint64_t key, std::string_view text) {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Another thread's equal text may be there first.
  if (shard.names.try_emplace(key, text).second) unsaved_.fetch_add(1, std::memory_order_relaxed);
}

size_t NameMemo::added() const { return unsaved_.load(std::memory_order_relaxed); }

bool NameMemo::WorthSaving(size_t at_least) const {
  const size_t unsaved = added();
  return unsaved > 0 && unsaved >= at_least && unsaved * 16 >= saved_count_;
}

Result<void> NameMemo::Save() {
  // (No Find or Add runs meanwhile: the shards are read without their locks.)
  if (unsaved_.exchange(0) == 0) return {};
  // Every name demangled since loading, by key, as many as fit under the bound (which ones
  // fit does not vary by run); the others stay in memory only.
  std::vector<std::pair<uint64_t, const std::string*>> names;
  for (const Shard& shard : shards_) {
    for (const auto& [key, name] : shard.names) names.emplace_back(key, &name);
  }
  std::sort(names.begin(), names.end());
  uint64_t text_size = loaded_.text.size();
  size_t kept = 0;
  for (const auto& [key, name] : names) {
    if (text_size + name->size() > kNameMemoMaxText) continue;
    text_size += name->size();
    names[kept++] = {key, name};
  }
  names.resize(kept);
  const size_t count = loaded_.entries.size() + names.size();
  if (count == saved_count_) return {};  // nothing new fits: the file holds the rest
  // The file written from where its pieces are: the loaded entries merged by key with the new
  // ones (a loaded key is never added: Find answers it first), the loaded text, each new name.
  // Nothing is copied together first: fresh pages cost more than the writes on these VMs.
  std::vector<NameMemoEntry> entries(loaded_.entries.begin(), loaded_.entries.end());
  entries.reserve(count);
  std::vector<std::span<const uint8_t>> pieces;
  pieces.reserve(3 + names.size());
  uint64_t at = loaded_.text.size();
  for (const auto& [key, name] : names) {
    entries.push_back({key, static_cast<uint32_t>(at), static_cast<uint32_t>(name->size())});
    at += name->size();
  }
  std::inplace_merge(entries.begin(), entries.begin() + static_cast<long>(loaded_.entries.size()),
                     entries.end(),
                     [](const NameMemoEntry& a, const NameMemoEntry& b) { return a.key < b.key; });
  const std::span<const uint8_t> entry_bytes(reinterpret_cast<const uint8_t*>(entries.data()),
                                             entries.size() * sizeof(NameMemoEntry));
  uint32_t crc = Crc32c(BytesOf(loaded_.text), Crc32c(entry_bytes));
  for (const auto& [key, name] : names) crc = Crc32c(BytesOf(*name), crc);
  const NameMemoHeader header = MemoHeader(static_cast<uint32_t>(count), text_size, crc, binding_);
  pieces.push_back({reinterpret_cast<const uint8_t*>(&header), sizeof(header)});
  pieces.push_back(entry_bytes);
  pieces.push_back(BytesOf(loaded_.text));
  for (const auto& [key, name] : names) pieces.push_back(BytesOf(*name));
  saved_count_ = count;
  if (path_.empty()) return {};
  const std::string dir = path_.substr(0, path_.find_last_of('/') + 1);
  cache::AtomicFile out(dir.empty() ? "." : dir, path_, cache::AtomicFile::Durability::kRenameOnly);
  return out.Commit(pieces);
}

}  // namespace stacksym::index
