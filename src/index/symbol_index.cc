#include "index/symbol_index.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "cache/checksum.h"
#include "dwarf/debug_info_source.h"
#include "stacksym/demangle.h"

namespace stacksym::index {

using cache::Crc32c;

const SegmentRecord* FindSegment(std::span<const SegmentRecord> segments, uint64_t address) {
  auto it = std::upper_bound(segments.begin(), segments.end(), address,
                             [](uint64_t a, const SegmentRecord& s) { return a < s.start; });
  return it == segments.begin() ? nullptr : &*(it - 1);
}

int32_t FindSegmentRecord(std::span<const SegmentRecord> segments, uint64_t address) {
  const SegmentRecord* segment = FindSegment(segments, address);
  return segment == nullptr ? -1 : segment->id;
}

namespace {

// A sub-range [begin, begin + count) of `all`, or false when it does not fit.
template <class T>
bool Slice(std::span<const T> all, uint64_t begin, uint64_t count, std::span<const T>* out) {
  if (begin > all.size() || count > all.size() - begin) return false;
  *out = all.subspan(begin, count);
  return true;
}

Error Corrupt(std::string message) { return Error(ErrorCode::kMalformed, std::move(message)); }

template <class Record>
Result<std::span<const Record>> Records(std::span<const uint8_t> section, const char* what) {
  if (section.size() % sizeof(Record) != 0) {
    return Corrupt(std::string(what) + " section size is not a multiple of its record size");
  }
  if (section.size() / sizeof(Record) > 0xffffffffu) {
    return Corrupt(std::string(what) + " section has too many records");
  }
  return std::span<const Record>(reinterpret_cast<const Record*>(section.data()),
                                 section.size() / sizeof(Record));
}

}  // namespace

Result<std::unique_ptr<SymbolIndex>> SymbolIndex::Open(const std::string& path,
                                                       const OpenOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, "stat " + path);
  }
  std::unique_ptr<SymbolIndex> index(new SymbolIndex());
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return ErrnoError(err, "mmap " + path);
    }
    // Advice only. When the index's pages were evicted, the faults of the next lookups read
    // them back in 2 MiB folios instead of small ones, which the kernel then maps with a fault
    // each: on libceph-common a warm run read back without it took 65 ms (1431 faults), with
    // it 42 ms (747), as when the index has just been written.
    ::madvise(p, static_cast<size_t>(st.st_size), MADV_HUGEPAGE);
    index->mapping_ = p;
    index->mapping_size_ = static_cast<size_t>(st.st_size);
    index->bytes_ = {static_cast<const uint8_t*>(p), index->mapping_size_};
  }
  ::close(fd);
  if (Result<void> r = index->Parse(options); !r) return std::move(r).error().WithFile(path);
  return index;
}

// Decompressed string blocks. A batch asks its addresses in order, so the blocks it needs next
// are mostly the ones it just used: kept 4-way set-associative, least recently used out (a
// direct-mapped cache kept evicting the hot blocks many addresses share). The stream's first
// blocks hold the paths and start files, which nearly every lookup reads: they are kept apart
// and never evicted (a warm libceph-common run decompressed 5106 blocks instead of 5237).
struct SymbolIndex::StringCache {
  static constexpr size_t kPinned = 64;  // the first 128 KiB of the stream
  static constexpr size_t kWays = 4;
  static constexpr size_t kSets = 64;  // 256 blocks, 512 KiB
  bool shared = false;                 // the index's own: used behind `mu`
  std::mutex mu;
  ZSTD_DCtx* context = nullptr;
  const ZSTD_DDict* dictionary = nullptr;  // none: the blocks were compressed without one
  uint64_t clock = 0;
  struct Slot {
    size_t block = SIZE_MAX;
    uint64_t used = 0;
    std::string bytes;
  } slots[kSets * kWays], pinned[kPinned];
  // The slot holding `block`, or (*hit false) the one to refill with it.
  Slot* Find(size_t block, bool* hit) {
    if (block < kPinned) {
      *hit = pinned[block].block == block;
      return &pinned[block];
    }
    Slot* set = &slots[(block % kSets) * kWays];
    Slot* victim = set;
    for (size_t w = 0; w < kWays; ++w) {
      if (set[w].block == block) {
        set[w].used = ++clock;
        *hit = true;
        return &set[w];
      }
      if (set[w].used < victim->used) victim = &set[w];
    }
    victim->used = ++clock;
    *hit = false;
    return victim;
  }
  ~StringCache() { ZSTD_freeDCtx(context); }
};

struct SymbolIndex::ZstdDictionary {
  ZSTD_DDict* dictionary = nullptr;
  ~ZstdDictionary() { ZSTD_freeDDict(dictionary); }
};

SymbolIndex::Reader::~Reader() = default;

std::unique_ptr<SymbolIndex::StringCache> SymbolIndex::NewStringCache(bool shared) const {
  auto cache = std::make_unique<StringCache>();
  cache->shared = shared;
  cache->context = ZSTD_createDCtx();
  if (cache->context == nullptr) return nullptr;
  cache->dictionary = dictionary_ != nullptr ? dictionary_->dictionary : nullptr;
  return cache;
}

std::unique_ptr<SymbolIndex::Reader> SymbolIndex::NewReader() const {
  std::unique_ptr<Reader> reader(new Reader());
  reader->cache_ = NewStringCache(false);
  if (reader->cache_ == nullptr) return nullptr;
  return reader;
}

SymbolIndex::SymbolIndex() = default;

SymbolIndex::~SymbolIndex() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
}

Result<std::unique_ptr<SymbolIndex>> SymbolIndex::FromBytes(std::span<const uint8_t> bytes,
                                                            const OpenOptions& options) {
  std::unique_ptr<SymbolIndex> index(new SymbolIndex());
  index->owned_.resize((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(index->owned_.data(), bytes.data(), bytes.size());
  index->bytes_ = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(index->owned_.data()),
                                           bytes.size());
  if (Result<void> r = index->Parse(options); !r) return std::move(r).error();
  return index;
}

std::span<const uint8_t> SymbolIndex::build_id() const {
  return {header_->build_id, std::min<size_t>(header_->build_id_size, sizeof(header_->build_id))};
}

Result<void> SymbolIndex::Parse(const OpenOptions& options) {
  if (bytes_.size() < sizeof(FileHeader)) return Corrupt("shorter than the index header");
  // The mapping is page-aligned and FromBytes copies into 8-byte aligned storage.
  header_ = reinterpret_cast<const FileHeader*>(bytes_.data());
  if (std::memcmp(header_->magic, kMagic, sizeof(kMagic)) != 0) return Corrupt("not an index");
  if (header_->version != kVersion) {
    return Error(ErrorCode::kUnsupported, "index version " + std::to_string(header_->version) +
                                              ", expected " + std::to_string(kVersion));
  }
  if (header_->file_size != bytes_.size()) return Corrupt("file size differs from the header's");
  if (header_->build_id_size > sizeof(header_->build_id)) return Corrupt("build ID too long");
  if (header_->section_count > 64) return Corrupt("too many sections");
  size_t table_end = sizeof(FileHeader) + header_->section_count * sizeof(SectionEntry);
  if (table_end > bytes_.size()) return Corrupt("section table past the end");
  if (options.verify_checksums) {
    FileHeader copy;
    std::memcpy(&copy, header_, sizeof(copy));
    copy.header_crc = 0;
    uint32_t crc = Crc32c({reinterpret_cast<const uint8_t*>(&copy), sizeof(copy)});
    crc = Crc32c(bytes_.subspan(sizeof(FileHeader), table_end - sizeof(FileHeader)), crc);
    if (crc != header_->header_crc) return Corrupt("header checksum mismatch");
  }
  name_memo_ = std::make_unique<NameMemo>(std::string(), name_memo_binding());
  std::span<const uint8_t> sections[kSectionKindCount + 1];
  const SectionEntry* section_entries[kSectionKindCount + 1] = {};
  auto entries = reinterpret_cast<const SectionEntry*>(bytes_.data() + sizeof(FileHeader));
  for (uint32_t i = 0; i < header_->section_count; ++i) {
    const SectionEntry& e = entries[i];
    if (e.kind == 0 || e.kind > kSectionKindCount) continue;  // unknown kinds are skipped
    if (section_entries[e.kind] != nullptr) {
      return Corrupt("section " + std::to_string(e.kind) + " appears twice");
    }
    section_entries[e.kind] = &e;
    if (e.offset % 8 != 0 || e.offset < table_end || e.offset > bytes_.size() ||
        e.size > bytes_.size() - e.offset) {
      return Corrupt("section " + std::to_string(e.kind) + " out of bounds");
    }
    sections[e.kind] = bytes_.subspan(e.offset, e.size);
  }
  // The chunk checksums come last; every other section lies between the table and them.
  const SectionEntry* crcs = section_entries[static_cast<uint32_t>(SectionKind::kChunkCrcs)];
  if (crcs == nullptr) return Corrupt("no chunk checksums");
  chunks_begin_ = table_end;
  chunks_end_ = crcs->offset;
  for (uint32_t kind = 1; kind <= kSectionKindCount; ++kind) {
    const SectionEntry* e = section_entries[kind];
    if (e != nullptr && kind != static_cast<uint32_t>(SectionKind::kChunkCrcs) &&
        e->offset + e->size > chunks_end_) {
      return Corrupt("section " + std::to_string(kind) + " after the chunk checksums");
    }
  }
  size_t chunk_count = (chunks_end_ + kChunkSize - 1) / kChunkSize;
  if (crcs->size != chunk_count * sizeof(uint32_t)) return Corrupt("chunk checksums mis-sized");
  chunk_crcs_ = sections[static_cast<uint32_t>(SectionKind::kChunkCrcs)];
  verify_ = options.verify_checksums;
  if (verify_) {
    if (Crc32c(chunk_crcs_) != crcs->crc) return Corrupt("chunk checksums' checksum mismatch");
    chunk_state_ = std::make_unique<std::atomic<uint8_t>[]>(chunk_count);
    // What every lookup (or the cache, before any lookup) reads is checked now: the identity,
    // the symbols, the address → symbol and address → unit maps, the units and line tables.
    // All of it is small (proportional to symbols and units); the rest is checked on first use.
    for (SectionKind kind :
         {SectionKind::kIdentity, SectionKind::kSymbols, SectionKind::kSymbolSegments,
          SectionKind::kUnitSegments, SectionKind::kUnits, SectionKind::kLineTables,
          SectionKind::kStringBlocks, SectionKind::kStringDict}) {
      if (!Verified(sections[static_cast<uint32_t>(kind)])) return Corrupt(damage());
    }
    if (options.verify_all &&
        !Verified(bytes_.subspan(chunks_begin_, chunks_end_ - chunks_begin_))) {
      return Corrupt(damage());
    }
  }
  auto section = [&](SectionKind kind) { return sections[static_cast<uint32_t>(kind)]; };
  std::span<const uint8_t> identity = section(SectionKind::kIdentity);
  identity_ = std::string_view(reinterpret_cast<const char*>(identity.data()), identity.size());
  strings_ = section(SectionKind::kStrings);
  row_bytes_ = section(SectionKind::kRowBytes);
  function_segment_bytes_ = section(SectionKind::kFunctionSegmentBytes);
  nodes_ = section(SectionKind::kNodes);
#define STACKSYM_RECORDS(member, Type, kind, what)            \
  {                                                           \
    auto r = Records<Type>(section(SectionKind::kind), what); \
    if (!r) return std::move(r).error();                      \
    member = *r;                                              \
  }
  STACKSYM_RECORDS(symbols_, SymbolRecord, kSymbols, "symbols")
  STACKSYM_RECORDS(symbol_segments_, SegmentRecord, kSymbolSegments, "symbol segments")
  STACKSYM_RECORDS(unit_segments_, SegmentRecord, kUnitSegments, "unit segments")
  STACKSYM_RECORDS(units_, UnitRecord, kUnits, "units")
  STACKSYM_RECORDS(function_segments_, FunctionSegmentBlockRecord, kFunctionSegments,
                   "function segments")
  STACKSYM_RECORDS(names_, NameRecord, kNames, "names")
  STACKSYM_RECORDS(line_tables_, LineTableRecord, kLineTables, "line tables")
  STACKSYM_RECORDS(row_blocks_, RowBlockRecord, kRowBlocks, "row blocks")
  STACKSYM_RECORDS(paths_, uint32_t, kPaths, "paths")
  STACKSYM_RECORDS(path_strings_, StrRef, kPathStrings, "path strings")
  STACKSYM_RECORDS(start_files_, StrRef, kStartFiles, "start files")
  STACKSYM_RECORDS(call_discriminators_, CallDiscriminatorRecord, kCallDiscrims,
                   "call discriminators")
  STACKSYM_RECORDS(go_unit_, UnitRecord, kGoUnit, "Go unit")
  STACKSYM_RECORDS(go_contexts_, GoContextRecord, kGoContexts, "Go contexts")
  STACKSYM_RECORDS(go_functions_, GoFunctionRecord, kGoFunctions, "Go functions")
  STACKSYM_RECORDS(go_frames_, GoFrameRecord, kGoFrames, "Go frames")
#undef STACKSYM_RECORDS
  // The string stream: its size, then block_count + 1 offsets into the compressed bytes.
  std::span<const uint8_t> blocks = section(SectionKind::kStringBlocks);
  if (blocks.size() % 8 != 0) return Corrupt("string blocks section mis-sized");
  if (blocks.size() >= 8) {
    std::memcpy(&string_bytes_, blocks.data(), 8);
    string_blocks_ = blocks.subspan(8);
    string_block_count_ = string_blocks_.size() / 8 - (string_blocks_.empty() ? 0 : 1);
  }
  if (string_bytes_ > (uint64_t{string_block_count_}) * kStringBlockSize ||
      (string_block_count_ > 0 &&
       string_bytes_ <= uint64_t{string_block_count_ - 1} * kStringBlockSize)) {
    return Corrupt("string blocks do not match the string stream's size");
  }
  // Checked above; copied (64 KiB at most) as zstd digests it.
  dictionary_ = std::make_unique<ZstdDictionary>();
  std::span<const uint8_t> dictionary = section(SectionKind::kStringDict);
  if (!dictionary.empty()) {
    dictionary_->dictionary = ZSTD_createDDict(dictionary.data(), dictionary.size());
    if (dictionary_->dictionary == nullptr) return Corrupt("string dictionary unusable");
  }
  string_cache_ = NewStringCache(true);
  if (string_cache_ == nullptr) return Error(ErrorCode::kIo, "out of memory (zstd)");
  return {};
}

void SymbolIndex::ReleasePages() const {
  if (mapping_ != nullptr) ::madvise(mapping_, mapping_size_, MADV_DONTNEED);
}

bool SymbolIndex::Verified(std::span<const uint8_t> bytes) const {
  if (!verify_ || bytes.empty()) return true;
  size_t begin = static_cast<size_t>(bytes.data() - bytes_.data());
  size_t end = begin + bytes.size();
  // Outside the chunks: the header, the section table or the chunk checksums, checked on open.
  begin = std::max(begin, chunks_begin_);
  end = std::min(end, chunks_end_);
  if (begin >= end) return true;
  for (size_t chunk = begin / kChunkSize; chunk <= (end - 1) / kChunkSize; ++chunk) {
    std::atomic<uint8_t>& state = chunk_state_[chunk];
    uint8_t known = state.load(std::memory_order_acquire);
    if (known == 1) continue;
    if (known == 0) {
      // Two threads may both sum a chunk; they agree.
      size_t from = std::max(chunk * kChunkSize, chunks_begin_);
      size_t to = std::min((chunk + 1) * kChunkSize, chunks_end_);
      uint32_t want;
      std::memcpy(&want, chunk_crcs_.data() + chunk * sizeof(uint32_t), sizeof(want));
      known = Crc32c(bytes_.subspan(from, to - from)) == want ? 1 : 2;
      state.store(known, std::memory_order_release);
    }
    if (known == 2) {
      damaged_chunk_.store(chunk, std::memory_order_relaxed);
      damaged_.store(true, std::memory_order_release);
      return false;
    }
  }
  return true;
}

std::string SymbolIndex::damage() const {
  if (!damaged()) return {};
  size_t chunk = damaged_chunk_.load(std::memory_order_relaxed);
  return "checksum mismatch in chunk " + std::to_string(chunk) + " (bytes " +
         std::to_string(chunk * kChunkSize) + "+" + std::to_string(kChunkSize) + ")";
}

std::vector<uint64_t> SymbolIndex::function_segment_starts(size_t limit) const {
  std::vector<uint64_t> out;
  for (const UnitRecord& unit : units_) {
    std::span<const FunctionSegmentBlockRecord> blocks;
    if (!SegmentBlocks(unit, &blocks)) continue;
    for (size_t b = 0; b < blocks.size() && out.size() < limit; ++b) {
      if (!DecodeSegmentBlock(blocks, b, unit.segment_count, [&](uint64_t start, int32_t) {
            if (out.size() >= limit) return false;
            out.push_back(unit.segment_base + start);
            return true;
          })) {
        break;
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string_view, uint64_t>> SymbolIndex::section_sizes() const {
  static constexpr std::string_view kNames[kSectionKindCount + 1] = {
      "?",           "identity",          "strings",
      "symbols",     "symbol-segments",   "unit-segments",
      "units",       "function-segments", "nodes",
      "line-tables", "row-blocks",        "paths",
      "row-bytes",   "chunk-crcs",        "string-blocks",
      "names",       "start-files",       "call-discriminators",
      "string-dict", "path-strings",      "function-segment-bytes",
      "go-unit",     "go-contexts",       "go-functions",
      "go-frames"};
  std::vector<std::pair<std::string_view, uint64_t>> out;
  out.emplace_back("header", sizeof(FileHeader) + header_->section_count * sizeof(SectionEntry));
  auto entries = reinterpret_cast<const SectionEntry*>(bytes_.data() + sizeof(FileHeader));
  for (uint32_t i = 0; i < header_->section_count; ++i) {
    uint32_t kind = entries[i].kind;
    out.emplace_back(kind <= kSectionKindCount ? kNames[kind] : kNames[0], entries[i].size);
  }
  return out;
}

namespace {

bool ReadUleb(std::span<const uint8_t> bytes, size_t* pos, uint64_t* value) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*pos >= bytes.size()) return false;
    uint8_t b = bytes[(*pos)++];
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

}  // namespace

bool SymbolIndex::SegmentBlocks(const UnitRecord& unit,
                                std::span<const FunctionSegmentBlockRecord>* blocks) const {
  const uint64_t count = (uint64_t{unit.segment_count} + kSegmentsPerBlock - 1) / kSegmentsPerBlock;
  return Slice(function_segments_, unit.segment_begin, count, blocks);
}

template <class Each>
bool SymbolIndex::DecodeSegmentBlock(std::span<const FunctionSegmentBlockRecord> blocks,
                                     size_t block, uint64_t segment_count, const Each& each) const {
  const FunctionSegmentBlockRecord& record = blocks[block];
  if (!Verified(record)) return false;
  const uint64_t first = uint64_t{block} * kSegmentsPerBlock;
  if (first >= segment_count) return false;
  const size_t count =
      static_cast<size_t>(std::min<uint64_t>(kSegmentsPerBlock, segment_count - first));
  // The longest block the builder writes: a first node of at most 5 bytes, then per segment a
  // start delta (below 2^32) and a zigzag node delta (below 2^33) of at most 5 bytes each.
  // Decoding an intact block stays inside it; a damaged one still stops at the end of the
  // bytes.
  constexpr size_t kMaxBlockBytes = 5 + (kSegmentsPerBlock - 1) * 10;
  const std::span<const uint8_t> bytes = function_segment_bytes_;
  size_t pos = record.offset;
  if (pos > bytes.size() ||
      !Verified(bytes.subspan(pos, std::min(kMaxBlockBytes, bytes.size() - pos)))) {
    return false;
  }
  uint64_t first_node = 0;
  if (!ReadUleb(bytes, &pos, &first_node) || first_node > uint64_t{INT32_MAX} + 1) return false;
  int64_t node = static_cast<int64_t>(first_node) - 1;
  uint64_t start = record.first_start;
  if (!each(start, static_cast<int32_t>(node))) return true;
  for (size_t i = 1; i < count; ++i) {
    uint64_t delta = 0, zigzag = 0;
    if (!ReadUleb(bytes, &pos, &delta) || !ReadUleb(bytes, &pos, &zigzag) || delta > 0xffffffffu ||
        zigzag > (uint64_t{1} << 34)) {
      return false;
    }
    start += delta;
    node += static_cast<int64_t>(zigzag >> 1) ^ -static_cast<int64_t>(zigzag & 1);
    if (start > 0xffffffffu || node < -1 || node > INT32_MAX) return false;
    if (!each(start, static_cast<int32_t>(node))) return true;
  }
  return true;
}

bool SymbolIndex::FindRow(const LineTableRecord& table, uint64_t vaddr, Row* row,
                          bool* found) const {
  *found = false;
  const uint64_t block_count = (uint64_t{table.row_count} + kRowsPerBlock - 1) / kRowsPerBlock;
  if (table.block_begin > row_blocks_.size() ||
      block_count > row_blocks_.size() - table.block_begin) {
    return false;
  }
  std::span<const RowBlockRecord> blocks =
      row_blocks_.subspan(table.block_begin, static_cast<size_t>(block_count));
  size_t after = 0;
  if (!VerifiedUpperBound(
          blocks, vaddr, [](uint64_t a, const RowBlockRecord& b) { return a < b.first_address; },
          &after)) {
    return false;
  }
  if (after == 0) return true;  // before the first row
  auto it = blocks.begin() + static_cast<ptrdiff_t>(after - 1);
  size_t block = static_cast<size_t>(it - blocks.begin());
  size_t count = std::min<size_t>(kRowsPerBlock, table.row_count - block * kRowsPerBlock);
  size_t pos = it->offset;
  // The longest block the builder writes: a 10-byte discriminator mask, a first row of at
  // most 5 + 3 + 3 (+ 5) bytes and the next ones of at most 1 + 10 + 10 + 3 + 3 (+ 5).
  // Decoding an intact block stays inside it; a damaged one still stops at the end of the
  // row bytes.
  constexpr size_t kMaxBlockBytes = 10 + kRowsPerBlock * 32;
  if (pos > row_bytes_.size() ||
      !Verified(row_bytes_.subspan(pos, std::min(kMaxBlockBytes, row_bytes_.size() - pos)))) {
    return false;
  }
  uint64_t discriminator_mask = 0;  // the rows of the block with a discriminator
  if ((it->flags & kRowBlockDiscriminators) != 0 &&
      !ReadUleb(row_bytes_, &pos, &discriminator_mask)) {
    return false;
  }
  Row current, best;
  current.address = it->first_address;
  for (size_t i = 0; i < count; ++i) {
    uint64_t line = 0, column = 0, file = current.file, discriminator = 0;
    if (i == 0) {
      if (!ReadUleb(row_bytes_, &pos, &line) || line > 0xffffffff ||
          !ReadUleb(row_bytes_, &pos, &column) || !ReadUleb(row_bytes_, &pos, &file)) {
        return false;
      }
      current.line = static_cast<uint32_t>(line);
    } else {
      if (pos >= row_bytes_.size()) return false;
      uint8_t header = row_bytes_[pos++];
      uint64_t address_delta = header & 0x0f;
      uint64_t line_code = (header >> 4) & 7;
      if (address_delta == kRowAddressEscape && !ReadUleb(row_bytes_, &pos, &address_delta)) {
        return false;
      }
      int64_t line_delta = static_cast<int64_t>(line_code) - kRowLineBias;
      if (line_code == kRowLineEscape) {
        uint64_t zigzag = 0;
        if (!ReadUleb(row_bytes_, &pos, &zigzag)) return false;
        line_delta = static_cast<int64_t>(zigzag >> 1) ^ -static_cast<int64_t>(zigzag & 1);
      }
      if ((header & kRowFileChanged) != 0 && !ReadUleb(row_bytes_, &pos, &file)) return false;
      if (!ReadUleb(row_bytes_, &pos, &column)) return false;
      current.address += address_delta;
      current.line = static_cast<uint32_t>(current.line + static_cast<uint64_t>(line_delta));
    }
    if (column > 0xffff || file > 0xffff ||
        ((discriminator_mask >> i & 1) != 0 &&
         (!ReadUleb(row_bytes_, &pos, &discriminator) || discriminator > 0xffffffff))) {
      return false;
    }
    current.column = static_cast<uint16_t>(column);
    current.file = static_cast<uint16_t>(file);
    current.discriminator = static_cast<uint32_t>(discriminator);
    if (current.address > vaddr) break;
    best = current;
  }
  // The block starts at or before vaddr, so its first row is at or before it.
  if (best.file == kEndSequenceFile) return true;  // in a gap between sequences
  *row = best;
  *found = true;
  return true;
}

bool SymbolIndex::String(StrRef ref, std::string* out, StringCache& cache) const {
  out->clear();
  if (ref.size == 0) return true;
  uint64_t end = uint64_t{ref.offset} + ref.size;
  if (end > string_bytes_) return false;
  std::unique_lock<std::mutex> lock(cache.mu, std::defer_lock);
  if (cache.shared) lock.lock();
  for (uint64_t at = ref.offset; at < end;) {
    size_t block = static_cast<size_t>(at / kStringBlockSize);
    bool hit = false;
    StringCache::Slot* slot = cache.Find(block, &hit);
    if (!hit) {
      uint64_t from, to;
      std::memcpy(&from, string_blocks_.data() + block * 8, 8);
      std::memcpy(&to, string_blocks_.data() + block * 8 + 8, 8);
      if (from > to || to > strings_.size()) return false;
      std::span<const uint8_t> frame = strings_.subspan(from, to - from);
      if (!Verified(frame)) return false;  // before zstd reads a byte of it
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(kStringBlockSize, string_bytes_ - uint64_t{block} * kStringBlockSize));
      slot->block = SIZE_MAX;
      slot->bytes.resize(want);
      size_t got = cache.dictionary != nullptr
                       ? ZSTD_decompress_usingDDict(cache.context, slot->bytes.data(), want,
                                                    frame.data(), frame.size(), cache.dictionary)
                       : ZSTD_decompressDCtx(cache.context, slot->bytes.data(), want, frame.data(),
                                             frame.size());
      if (ZSTD_isError(got) || got != want) return false;
      slot->block = block;
    }
    uint64_t block_start = uint64_t{block} * kStringBlockSize;
    size_t from = static_cast<size_t>(at - block_start);
    size_t to = static_cast<size_t>(std::min<uint64_t>(end - block_start, slot->bytes.size()));
    out->append(slot->bytes, from, to - from);
    at = block_start + to;
  }
  return true;
}

bool SymbolIndex::Names(StrRef linkage, StrRef demangled, const AnswerOptions& options,
                        std::string* function, std::string* raw, StringCache& cache) const {
  if (options.linkage_names) {
    if (!String(linkage, raw, cache)) return false;
  } else {
    raw->clear();  // linkage names are stored apart: not even decompressed
  }
  if (!options.demangle || linkage.size == 0) return String(linkage, function, cache);
  // Indexes store linkage names only (docs/index-format.md): a demangled ref equal to the
  // linkage one is demangled here, once per name, through the memo.
  if (demangled.offset != linkage.offset || demangled.size != linkage.size) {
    return String(demangled, function, cache);
  }
  const uint64_t key = uint64_t{linkage.offset} << 32 | linkage.size;
  if (name_memo_->Find(key, function)) return true;
  if (options.linkage_names) {
    function->assign(*raw);
  } else if (!String(linkage, function, cache)) {
    return false;
  }
  if (!MaybeMangled(*function)) return true;  // its own demangled form
  std::string pretty = Demangle(*function);
  name_memo_->Add(key, pretty);
  *function = std::move(pretty);
  return true;
}

Result<void> SymbolIndex::AttachNameMemo(const std::string& path, bool* stale) {
  name_memo_ = std::make_unique<NameMemo>(path, name_memo_binding());
  return name_memo_->Load(stale);
}

Result<void> SymbolIndex::SaveNameMemo(size_t at_least) const {
  if (at_least > 0 && !name_memo_->WorthSaving(at_least)) return {};
  return name_memo_->Save();
}

bool SymbolIndex::Name(uint32_t name, const AnswerOptions& options, std::string* function,
                       std::string* raw, StringCache& cache) const {
  uint32_t id = name & ~kNodeInlined;
  if (id >= names_.size() || !Verified(names_[id])) return false;
  const NameRecord& record = names_[id];
  return Names(record.raw, record.pretty, options, function, raw, cache);
}

namespace {

// A cleared frame at the end of `frames`, taken from `spare` (storage and all) when it has one.
SourceFrame& NewFrame(std::vector<SourceFrame>* frames, std::vector<SourceFrame>* spare) {
  if (spare == nullptr || spare->empty()) return frames->emplace_back();
  SourceFrame& frame = frames->emplace_back(std::move(spare->back()));
  spare->pop_back();
  dwarf::ClearKeepingStorage(frame);
  return frame;
}

// Empties `frames`, keeping them in `spare` (when given) for NewFrame.
void RecycleFrames(std::vector<SourceFrame>* frames, std::vector<SourceFrame>* spare) {
  if (spare != nullptr) {
    for (SourceFrame& frame : *frames) spare->push_back(std::move(frame));
  }
  frames->clear();
}

}  // namespace

NodeRecord SymbolIndex::UnitNodes::Get(size_t n) const {
  uint64_t bit = n * bits_;
  NodeRecord r;
  const uint64_t distance = GetBits(bytes_, bit, widths_.parent);
  bit += widths_.parent;
  r.parent = distance == 0 ? -1 : static_cast<int32_t>(distance > n ? n : n - distance);
  r.name = Name(n);
  bit += widths_.name + 1u;
  r.call_line = static_cast<uint32_t>(GetBits(bytes_, bit, widths_.line));
  bit += widths_.line;
  r.call_file = static_cast<uint16_t>(GetBits(bytes_, bit, widths_.file));
  bit += widths_.file;
  r.call_column = static_cast<uint16_t>(GetBits(bytes_, bit, widths_.column));
  return r;
}

bool SymbolIndex::NodesOf(const UnitRecord& unit, UnitNodes* nodes) const {
  const NodeWidths widths = NodeWidths::Unpack(unit.node_widths);
  if (!widths.Valid() || unit.node_count >= uint64_t{1} << 31) return false;
  const uint64_t bits = widths.bits();
  const uint64_t size = (uint64_t{unit.node_count} * bits + 7) / 8;
  if (nodes_.size() < kNodePadding || unit.node_offset > nodes_.size() - kNodePadding ||
      size > nodes_.size() - kNodePadding - unit.node_offset) {
    return false;
  }
  nodes->bytes_ = nodes_.data() + unit.node_offset;
  nodes->count_ = unit.node_count;
  nodes->widths_ = widths;
  nodes->bits_ = bits;
  nodes->inlined_at_ = uint64_t{widths.parent} + widths.name;
  return true;
}

bool SymbolIndex::Start(uint32_t name, SourceFrame* frame, StringCache& cache) const {
  uint32_t id = name & ~kNodeInlined;
  if (id >= names_.size() || !Verified(names_[id])) return false;
  const NameRecord& record = names_[id];
  frame->start_line = record.start_line;
  frame->start_file.clear();
  if (record.start_file != kNoStartFile) {
    if (record.start_file >= start_files_.size() || !Verified(start_files_[record.start_file]) ||
        !String(start_files_[record.start_file], &frame->start_file, cache)) {
      return false;
    }
  }
  return true;
}

bool SymbolIndex::CallDiscriminator(uint32_t node, uint32_t* out) const {
  *out = 0;
  size_t lo = 0, hi = call_discriminators_.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (!Verified(call_discriminators_[mid])) return false;
    uint32_t at = call_discriminators_[mid].node;
    if (at == node) {
      *out = call_discriminators_[mid].discriminator;
      return true;
    }
    if (at < node) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return true;
}

bool SymbolIndex::BlocksFrom(std::span<const FunctionSegmentBlockRecord> blocks, uint64_t offset,
                             size_t* after) const {
  return VerifiedUpperBound(
      blocks, offset,
      [](uint64_t a, const FunctionSegmentBlockRecord& b) { return a < b.first_start; }, after);
}

bool SymbolIndex::FindNode(const UnitRecord& unit, uint64_t vaddr, int32_t* node) const {
  *node = -1;
  std::span<const FunctionSegmentBlockRecord> segment_blocks;
  if (!SegmentBlocks(unit, &segment_blocks)) return false;
  if (vaddr < unit.segment_base) return true;
  const uint64_t offset = std::min<uint64_t>(vaddr - unit.segment_base, 0xffffffffu);
  size_t after = 0;
  if (!BlocksFrom(segment_blocks, offset, &after)) return false;
  return after == 0 || DecodeSegmentBlock(segment_blocks, after - 1, unit.segment_count,
                                          [&](uint64_t start, int32_t n) {
                                            if (start > offset) return false;
                                            *node = n;
                                            return true;
                                          });
}

bool SymbolIndex::OutermostRun(uint64_t vaddr, dwarf::FunctionRun* run) const {
  *run = {};
  const int32_t unit_id = FindSegmentRecord(unit_segments_, vaddr);
  if (unit_id < 0) return true;
  if (static_cast<uint32_t>(unit_id) >= units_.size()) return false;
  const UnitRecord& unit = units_[static_cast<size_t>(unit_id)];
  if (unit.ok == 0 || vaddr < unit.segment_base) return true;
  std::span<const FunctionSegmentBlockRecord> blocks;
  UnitNodes nodes;
  if (!SegmentBlocks(unit, &blocks) || !NodesOf(unit, &nodes)) return false;
  // Segments are read a block at a time: the last block decoded is kept.
  struct Segment {
    uint64_t start;
    int32_t node;
  };
  Segment decoded[kSegmentsPerBlock];
  size_t decoded_block = SIZE_MAX, decoded_count = 0;
  auto decode = [&](size_t block) {
    if (block == decoded_block) return true;
    decoded_count = 0;
    decoded_block = SIZE_MAX;
    if (!DecodeSegmentBlock(blocks, block, unit.segment_count, [&](uint64_t start, int32_t n) {
          decoded[decoded_count++] = {start, n};
          return decoded_count < kSegmentsPerBlock;
        })) {
      return false;
    }
    decoded_block = block;
    return true;
  };
  auto at = [&](size_t i, uint64_t* start, int32_t* node) {
    if (!decode(i / kSegmentsPerBlock) || i % kSegmentsPerBlock >= decoded_count) return false;
    *start = unit.segment_base + decoded[i % kSegmentsPerBlock].start;
    *node = decoded[i % kSegmentsPerBlock].node;
    return *node >= -1 && (*node < 0 || static_cast<size_t>(*node) < nodes.size());
  };
  // A node's out-of-line function; parents come before their children (LookupFrames).
  auto outer = [&](int32_t n) {
    while (n >= 0) {
      if (!Verified(nodes.RecordBytes(static_cast<size_t>(n)))) return dwarf::kNoId - 1;
      if (!nodes.Inlined(static_cast<size_t>(n))) return n;
      const int32_t parent = nodes.Get(static_cast<size_t>(n)).parent;
      if (parent >= n) return dwarf::kNoId - 1;
      n = parent;
    }
    return n;
  };
  const uint64_t offset = std::min<uint64_t>(vaddr - unit.segment_base, 0xffffffffu);
  size_t after = 0;
  if (!BlocksFrom(blocks, offset, &after)) return false;
  if (after == 0) return true;
  const size_t block = after - 1;
  if (!decode(block)) return false;
  size_t found = block * kSegmentsPerBlock;
  for (size_t k = 1; k < decoded_count && decoded[k].start <= offset; ++k) ++found;
  return dwarf::OutermostRun(found, unit.segment_count, at, outer, run);
}

// Mirrors DebugInfoSource::LookupInUnit over the persisted tables.
bool SymbolIndex::LookupFrames(uint64_t vaddr, const AnswerOptions& options, bool name_outermost,
                               std::vector<SourceFrame>* frames, std::vector<SourceFrame>* spare,
                               StringCache& cache, bool* corrupt) const {
  int32_t unit_id = FindSegmentRecord(unit_segments_, vaddr);
  if (unit_id < 0) return false;
  if (static_cast<uint32_t>(unit_id) >= units_.size()) return !(*corrupt = true);
  const UnitRecord& unit = units_[static_cast<size_t>(unit_id)];
  if (unit.ok == 0) return false;
  std::span<const FunctionSegmentBlockRecord> segment_blocks;
  UnitNodes nodes;
  std::span<const uint32_t> paths;
  if (!SegmentBlocks(unit, &segment_blocks) || !NodesOf(unit, &nodes) ||
      !Slice(paths_, unit.path_begin, unit.path_count, &paths)) {
    return !(*corrupt = true);
  }
  const LineTableRecord* table = nullptr;
  if (unit.line_table != kNoLineTable) {
    if (unit.line_table >= line_tables_.size()) return !(*corrupt = true);
    table = &line_tables_[unit.line_table];
  }
  int32_t node = -1;
  if (!FindNode(unit, vaddr, &node)) return !(*corrupt = true);
  if (node < -1 || (node >= 0 && static_cast<size_t>(node) >= nodes.size())) {
    return !(*corrupt = true);
  }
  Row found_row;
  bool has_row = false;
  if (table != nullptr && !FindRow(*table, vaddr, &found_row, &has_row)) return !(*corrupt = true);
  const Row* row = has_row ? &found_row : nullptr;
  if (node < 0 && row == nullptr) return false;

  // Nodes and paths are checked one record at a time: a big unit has thousands.
  auto valid_node = [&](int32_t n) {
    return n >= -1 && (n < 0 || (static_cast<size_t>(n) < nodes.size() &&
                                 Verified(nodes.RecordBytes(static_cast<size_t>(n)))));
  };
  if (!valid_node(node)) return !(*corrupt = true);
  auto inlined = [&](int32_t n) { return nodes.Inlined(static_cast<size_t>(n)); };
  // The outermost frame is named from the symbol table when a symbol covers the address
  // (Answer): its DWARF name is then not even read. `n` has been checked.
  auto name_frame = [&](SourceFrame& frame, int32_t n) {
    if (n < 0) return true;
    if (!inlined(n) && !name_outermost) return true;  // the last frame: see the loop below
    return Name(nodes.Name(static_cast<size_t>(n)), options, &frame.function, &frame.raw_function,
                cache);
  };
  auto path = [&](uint64_t file, std::string* out) {
    out->clear();
    if (file >= paths.size()) return true;
    if (!Verified(paths[file])) return false;
    uint32_t id = paths[file];
    return id < path_strings_.size() && Verified(path_strings_[id]) &&
           String(path_strings_[id], out, cache);
  };
  auto start = [&](SourceFrame& frame, int32_t n) {
    return n < 0 || Start(nodes.Name(static_cast<size_t>(n)), &frame, cache);
  };
  // A node's parent comes before it (the walk numbers nodes in DIE order): a parent at or
  // after its child is damage, so a chain can neither loop nor outgrow the unit's nodes.
  auto valid_parent = [&](int32_t child, int32_t parent) {
    return parent < child && valid_node(parent);
  };
  if (!options.inlines) {
    int32_t outer = node;
    while (outer >= 0 && inlined(outer)) {
      int32_t parent = nodes.Get(static_cast<size_t>(outer)).parent;
      if (!valid_parent(outer, parent)) return !(*corrupt = true);
      outer = parent;
    }
    SourceFrame& frame = NewFrame(frames, spare);
    int32_t named = outer >= 0 ? outer : node;
    if (name_outermost && named >= 0 &&
        !Name(nodes.Name(static_cast<size_t>(named)), options, &frame.function, &frame.raw_function,
              cache)) {
      return !(*corrupt = true);
    }
    if (!start(frame, named)) return !(*corrupt = true);
    if (row != nullptr) {
      if (!path(row->file, &frame.file)) return !(*corrupt = true);
      frame.line = row->line;
      frame.column = row->column;
      frame.discriminator = row->discriminator;
    }
    return true;
  }
  {
    SourceFrame& first = NewFrame(frames, spare);
    if (!name_frame(first, node) || !start(first, node)) return !(*corrupt = true);
    if (row != nullptr) {
      if (!path(row->file, &first.file)) return !(*corrupt = true);
      first.line = row->line;
      first.column = row->column;
      first.discriminator = row->discriminator;
    }
  }
  int32_t current = node;
  size_t guard = 0;
  while (current >= 0 && inlined(current) && ++guard < 4096) {
    const NodeRecord callee = nodes.Get(static_cast<size_t>(current));
    if (!valid_parent(current, callee.parent)) return !(*corrupt = true);
    frames->back().inlined = true;
    SourceFrame& caller = NewFrame(frames, spare);
    if (!name_frame(caller, callee.parent) || !path(callee.call_file, &caller.file) ||
        !start(caller, callee.parent) ||
        !CallDiscriminator(unit.node_begin + static_cast<uint32_t>(current),
                           &caller.discriminator)) {
      return !(*corrupt = true);
    }
    caller.line = callee.call_line;
    caller.column = callee.call_column;
    current = callee.parent;
  }
  return true;
}

bool SymbolIndex::Answer(uint64_t vaddr, const AnswerOptions& options,
                         SymbolizedAddress& out) const {
  SymbolizedAddress answer;
  if (!AnswerReusing(vaddr, options, answer, nullptr)) return false;
  out.reason = answer.reason;
  out.symbol = std::move(answer.symbol);
  out.raw_symbol = std::move(answer.raw_symbol);
  out.symbol_address = answer.symbol_address;
  out.symbol_size = answer.symbol_size;
  out.offset = answer.offset;
  out.frames = std::move(answer.frames);
  return true;
}

bool SymbolIndex::AnswerReusing(uint64_t vaddr, const AnswerOptions& options,
                                SymbolizedAddress& out, std::vector<SourceFrame>* spare,
                                Reader* reader) const {
  StringCache& cache = reader != nullptr ? *reader->cache_ : *string_cache_;
  RecycleFrames(&out.frames, spare);
  out.reason.reset();
  out.symbol.clear();
  out.raw_symbol.clear();
  out.symbol_address = 0;
  out.symbol_size = 0;
  out.offset = 0;
  if (damaged()) return false;
  // Mirrors ElfSymbolizer::FillFromSymbolTable.
  const SegmentRecord* segment = FindSegment(symbol_segments_, vaddr);
  int32_t symbol_id = segment == nullptr ? -1 : segment->id;
  const SymbolRecord* symbol = nullptr;
  if (symbol_id >= 0) {
    if (static_cast<size_t>(symbol_id) >= symbols_.size()) return false;
    symbol = &symbols_[static_cast<size_t>(symbol_id)];
  } else if (symbol_id < -1) {
    return false;
  }
  // A stripped binary's debug-file symbol names only what DWARF does not.
  bool only_without_frames = symbol != nullptr && (segment->flags & kSegmentOnlyWithoutFrames) != 0;
  bool corrupt = false;
  if (!LookupFrames(vaddr, options, symbol == nullptr || only_without_frames, &out.frames, spare,
                    cache, &corrupt)) {
    RecycleFrames(&out.frames, spare);
  }
  if (corrupt) return false;
  if (only_without_frames && !out.frames.empty()) symbol = nullptr;
  if (symbol != nullptr) {
    if (!Names(symbol->raw, symbol->pretty, options, &out.symbol, &out.raw_symbol, cache)) {
      RecycleFrames(&out.frames, spare);
      out.raw_symbol.clear();
      out.symbol.clear();
      return false;
    }
    out.symbol_address = symbol->address;
    out.symbol_size = symbol->size;
    out.offset = vaddr - symbol->address;
    if (!out.frames.empty()) {
      SourceFrame& outermost = out.frames.back();
      outermost.function = out.symbol;
      outermost.raw_function = out.raw_symbol;
    }
  }
  if (symbol == nullptr && !out.frames.empty()) {
    // Mirrors ElfSymbolizer::FillFromFunctionRun: a function only DWARF names.
    dwarf::FunctionRun run;
    if (!OutermostRun(vaddr, &run)) {
      RecycleFrames(&out.frames, spare);
      return false;
    }
    dwarf::NameFromRun(run, vaddr, &out);
  }
  if (symbol == nullptr && out.frames.empty()) {
    out.reason = (header_->flags & kSymbolTableEmpty) != 0 ? Reason::kNoSymbols : Reason::kNoSymbol;
  }
  return true;
}

void GoAnswer::Views(elf::GoFunction* function, std::vector<elf::GoFrame>* views) const {
  *function = elf::GoFunction{entry, end, name, 0};
  views->clear();
  for (size_t k = 0; k < frame_count; ++k) {
    const Frame& f = frames[k];
    views->push_back(elf::GoFrame{f.function, f.file, f.line, f.inlined});
  }
}

bool SymbolIndex::AnswerGo(uint64_t vaddr, bool inlines, GoAnswer* out, Reader* reader) const {
  StringCache& cache = reader != nullptr ? *reader->cache_ : *string_cache_;
  out->found = false;
  out->frame_count = 0;
  if (damaged()) return false;
  if (go_unit_.empty()) return true;
  if (!Verified(go_unit_[0])) return false;
  const UnitRecord& unit = go_unit_[0];
  // The segments give the answer's function and chain but for the innermost frame's place,
  // which the rows give.
  int32_t node = -1;
  std::span<const uint32_t> paths;
  if (!FindNode(unit, vaddr, &node) || node < -1 ||
      !Slice(paths_, unit.path_begin, unit.path_count, &paths)) {
    return false;
  }
  if (node < 0) return true;  // no function there
  if (static_cast<size_t>(node) >= go_contexts_.size() || !Verified(go_contexts_[node]) ||
      unit.line_table >= line_tables_.size()) {
    return false;
  }
  const GoContextRecord& context = go_contexts_[static_cast<size_t>(node)];
  Row row;
  bool has_row = false;
  if (!FindRow(line_tables_[unit.line_table], vaddr, &row, &has_row) || !has_row) return false;
  if (context.function >= go_functions_.size() || !Verified(go_functions_[context.function])) {
    return false;
  }
  const GoFunctionRecord& function = go_functions_[context.function];
  if (function.name.size == 0 || !String(function.name, &out->name, cache)) return false;
  out->entry = function.entry;
  out->end = function.end;
  auto next_frame = [&]() -> GoAnswer::Frame& {
    if (out->frame_count == out->frames.size()) out->frames.emplace_back();
    return out->frames[out->frame_count++];
  };
  auto file = [&](uint64_t number, std::string* path) {
    path->clear();
    if (number >= paths.size() || !Verified(paths[number])) return false;
    const uint32_t id = paths[number];
    return id < path_strings_.size() && Verified(path_strings_[id]) &&
           String(path_strings_[id], path, cache);
  };
  GoAnswer::Frame& innermost = next_frame();
  if (!file(row.file, &innermost.file)) return false;
  innermost.line = row.line;
  if (!inlines) {
    // Lookup without inlines: the function itself, at the innermost frame's place.
    innermost.function = out->name;
    innermost.inlined = false;
    out->found = true;
    return true;
  }
  if (!String(context.name, &innermost.function, cache)) return false;
  innermost.inlined = (context.flags & kGoFrameInlined) != 0;
  // Outward; a caller's record comes before its callee's, so the walk ends.
  for (uint32_t id = context.outer, callee = kNoGoFrame; id != kNoGoFrame;
       callee = id, id = go_frames_[callee].outer) {
    if (id >= go_frames_.size() || (callee != kNoGoFrame && id >= callee) ||
        !Verified(go_frames_[id])) {
      return false;
    }
    const GoFrameRecord& record = go_frames_[id];
    GoAnswer::Frame& frame = next_frame();
    if (!file(record.file, &frame.file) || !String(record.function, &frame.function, cache)) {
      return false;
    }
    frame.line = record.line;
    frame.inlined = (record.flags & kGoFrameInlined) != 0;
  }
  out->found = true;
  return true;
}

}  // namespace stacksym::index
