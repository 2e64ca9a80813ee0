// SymbolIndex — a persisted symbol index (docs/index-format.md) read in place from its mapping.
//
// Open() checks the header, the section table, the chunk checksums and the small sections
// every lookup uses; a lookup then reads only the records one address needs (binary searches
// over sorted address tables), verifies each 4 KiB chunk it reads the first time it reads it
// (so a warm run reads, and sums, only the pages its addresses need), and checks every index
// it follows, so that an index whose checksums were forged or skipped (fuzzing) still cannot
// make a lookup read out of bounds. A chunk whose checksum fails makes the index `damaged()`:
// no answer comes from it any more (Answer() returns false), and the cache rebuilds it.
//
//   auto index = SymbolIndex::Open(path);
//   SymbolizedAddress a;  a.vaddr = vaddr;           // already checked against the segments
//   if (*index && (*index)->Answer(vaddr, options, a)) ... // a as ElfSymbolizer would fill it
//
// Thread-safety: const after Open(); any number of threads may call Answer(), and each may
// answer through a Reader of its own (NewReader) to share no lock with the others.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dwarf/function_run.h"
#include "elf/go_pclntab.h"
#include "index/index_format.h"
#include "index/index_options.h"
#include "index/name_memo.h"
#include "stacksym/frame.h"
#include "stacksym/result.h"

namespace stacksym::index {

// The Go pclntab's answer for an address as an index keeps it (SymbolIndex::AnswerGo): what
// elf::GoPclntab::Lookup gives, its strings held here. Reused from answer to answer: the
// first frame_count frames are this answer's, the rest storage for the next ones.
struct GoAnswer {
  struct Frame {
    std::string function, file;
    uint32_t line = 0;
    bool inlined = false;
  };
  bool found = false;  // false: no function there
  uint64_t entry = 0, end = 0;
  std::string name;
  std::vector<Frame> frames;  // innermost first
  size_t frame_count = 0;
  // The answer in Lookup's terms: views into this object.
  void Views(elf::GoFunction* function, std::vector<elf::GoFrame>* views) const;
};

class SymbolIndex {
  struct StringCache;  // decompressed string blocks and a zstd context (symbol_index.cc)

 public:
  struct OpenOptions {
    bool verify_checksums = true;  // false: fuzzing reaches the lookups with any bytes
    bool verify_all = false;       // every chunk on open (`cache list`), not on first use
  };
  static Result<std::unique_ptr<SymbolIndex>> Open(const std::string& path,
                                                   const OpenOptions& options);
  static Result<std::unique_ptr<SymbolIndex>> Open(const std::string& path) {
    return Open(path, OpenOptions{});
  }
  // Copies the bytes (tests, fuzzing, an index just built in memory).
  static Result<std::unique_ptr<SymbolIndex>> FromBytes(std::span<const uint8_t> bytes,
                                                        const OpenOptions& options);
  ~SymbolIndex();
  SymbolIndex(const SymbolIndex&) = delete;
  SymbolIndex& operator=(const SymbolIndex&) = delete;

  // Fills out.frames and the symbol fields (and out.reason when neither knows the address)
  // exactly as ElfSymbolizer's direct path does for out.vaddr. false when a record the
  // lookup needs is inconsistent or fails its checksum: `out` is then left as it was, for the
  // direct path.
  bool Answer(uint64_t vaddr, const AnswerOptions& options, SymbolizedAddress& out) const;

  // A lookup context for one thread at a time: its own cache of decompressed string blocks
  // (512 KiB at most) and zstd context.
  class Reader {
   public:
    ~Reader();

   private:
    friend class SymbolIndex;
    Reader() = default;
    std::unique_ptr<StringCache> cache_;
  };

  // Answer() for a caller that reuses one `out` from address to address (a streamed batch):
  // every answer field of `out` is overwritten (cleared first), names are copied into the
  // storage its strings already have, and its old frames go to `spare` (frames kept for
  // reuse, strings and all) and come back from there, so that answer after answer allocates
  // next to nothing. On false the answer fields are cleared (for the direct path).
  // `reader` (nullable): the calling thread's own (NewReader), so that threads answering from
  // one index share no lock; without one, lookups share the index's behind a lock.
  bool AnswerReusing(uint64_t vaddr, const AnswerOptions& options, SymbolizedAddress& out,
                     std::vector<SourceFrame>* spare, Reader* reader = nullptr) const;
  // Null when zstd cannot allocate a context.
  std::unique_ptr<Reader> NewReader() const;

  // Whether the index holds the Go pclntab's answers (the binary has a readable table): they
  // are then asked here (AnswerGo), not from the binary.
  bool has_go_answers() const { return (header_->flags & kGoAnswers) != 0; }
  // The Go pclntab's answer for `vaddr`, as elf::GoPclntab::Lookup(vaddr, inlines) gives it
  // (ElfSymbolizer asks it where the symbol table and DWARF — Answer — give no frames): true
  // with `out` filled, out->found false where no function covers `vaddr`; false when a record
  // is inconsistent or damaged. `reader` as for AnswerReusing.
  bool AnswerGo(uint64_t vaddr, bool inlines, GoAnswer* out, Reader* reader = nullptr) const;

  // Unmaps from this process the pages lookups have read so far (they stay in the page cache
  // and come back on the next read): a batch calls it now and then, so that its resident size
  // follows what it reads now, not the whole index (the kernel maps big page-cache folios
  // whole). Safe beside concurrent lookups, which just fault the pages in again.
  void ReleasePages() const;

  // Names are stored as linkage names and demangled by the lookups that print them, each
  // once (NameMemo). With a memo file at `path` attached (before any lookup), the names it
  // holds are read from it; an error when it is there but unusable (then ignored), `*stale`
  // set when it belongs to another index.
  Result<void> AttachNameMemo(const std::string& path, bool* stale = nullptr);
  // Writes the names demangled since the memo was attached or saved to its file (none
  // attached: nothing). `at_least` > 0: only when they are that many and many against those
  // it holds (NameMemo::WorthSaving), so that a long-lived caller does not rewrite it for a
  // few names; 0: whenever there are any. Not concurrently with lookups.
  Result<void> SaveNameMemo(size_t at_least = 0) const;

  // A chunk failed its checksum (then every later Answer() is false): why, or "" when intact.
  bool damaged() const { return damaged_.load(std::memory_order_acquire); }
  std::string damage() const;

  std::span<const uint8_t> build_id() const;
  // What a name memo of this index is bound to (its header checksum and size).
  NameMemoBinding name_memo_binding() const { return {header_->header_crc, bytes_.size()}; }
  std::string_view identity() const { return identity_; }  // "key value" lines
  size_t file_size() const { return bytes_.size(); }
  // Record counts, for `stacksym cache list` and tests.
  size_t symbol_count() const { return symbols_.size(); }
  size_t unit_count() const { return units_.size(); }
  size_t line_block_count() const { return row_blocks_.size(); }
  // Each section's name and size in bytes, in file order (`stacksym cache list --sections`).
  std::vector<std::pair<std::string_view, uint64_t>> section_sizes() const;
  // The address tables' starts (fuzzing and tests ask addresses where answers change).
  std::span<const SegmentRecord> symbol_segments() const { return symbol_segments_; }
  // The absolute starts of the function segments (at most `limit`), unit by unit.
  std::vector<uint64_t> function_segment_starts(size_t limit) const;

 private:
  SymbolIndex();
  Result<void> Parse(const OpenOptions& options);
  // name_outermost false: the outermost frame's names are left empty (a symbol names it).
  // `frames` is empty; new frames come from `spare` when it has some (nullable).
  bool LookupFrames(uint64_t vaddr, const AnswerOptions& options, bool name_outermost,
                    std::vector<SourceFrame>* frames, std::vector<SourceFrame>* spare,
                    StringCache& cache, bool* corrupt) const;
  // The string `ref` points at, decompressed through `cache`: false when out of bounds or
  // damaged.
  bool String(StrRef ref, std::string* out, StringCache& cache) const;
  // A function's name from its linkage and demangled refs, as `options` ask: `function` the
  // demangled one (or with demangling off, or none stored, the linkage one); `raw` the linkage
  // one, or empty without linkage names (that region is then not read at all).
  bool Names(StrRef linkage, StrRef demangled, const AnswerOptions& options, std::string* function,
             std::string* raw, StringCache& cache) const;
  bool Name(uint32_t name, const AnswerOptions& options, std::string* function, std::string* raw,
            StringCache& cache) const;
  // SourceFrame's start_file and start_line of the function named by name record `name`;
  // false when a record is inconsistent or damaged.
  bool Start(uint32_t name, SourceFrame* frame, StringCache& cache) const;
  // A unit's nodes, read out of their packed records (index_format.h: NodeWidths).
  class UnitNodes {
   public:
    size_t size() const { return count_; }
    // Node n (below size()) decoded; its parent is n itself when the record's distance
    // reaches before the unit's first node (damage, as a parent at or after its child).
    NodeRecord Get(size_t n) const;
    bool Inlined(size_t n) const { return GetBits(bytes_, n * bits_ + inlined_at_, 1) != 0; }
    // Node n's name number (kNodeInlined set when inlined), without the other fields.
    uint32_t Name(size_t n) const {
      const uint32_t name =
          static_cast<uint32_t>(GetBits(bytes_, n * bits_ + widths_.parent, widths_.name));
      return Inlined(n) ? name | kNodeInlined : name;
    }
    // The bytes node n's fields are read from (its record and the 8-byte loads past it).
    std::span<const uint8_t> RecordBytes(size_t n) const {
      return {bytes_ + n * bits_ / 8, (bits_ + 7) / 8 + kNodePadding};
    }

   private:
    friend class SymbolIndex;
    const uint8_t* bytes_ = nullptr;
    size_t count_ = 0;
    NodeWidths widths_;
    uint64_t bits_ = 1;
    uint64_t inlined_at_ = 0;
  };
  // False when the unit's record puts its nodes outside the section or with impossible widths.
  bool NodesOf(const UnitRecord& unit, UnitNodes* nodes) const;
  std::unique_ptr<StringCache> NewStringCache(bool shared) const;
  // The call-site discriminator of inlined node `node` (global index; 0 when it has none).
  bool CallDiscriminator(uint32_t node, uint32_t* out) const;
  // Whether the chunks holding `bytes` (a part of bytes_) are intact, summing those not yet
  // summed; false (and damaged()) when one is not. Always true without checksum checking.
  bool Verified(std::span<const uint8_t> bytes) const;
  template <class T>
  bool Verified(std::span<const T> records) const {
    return Verified(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(records.data()),
                                             records.size_bytes()));
  }
  template <class T>
  bool Verified(const T& record) const {
    return Verified(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&record), sizeof(T)));
  }
  // std::upper_bound over `records` by `key`, each record it probes checked before it is read
  // (a lookup reads a dozen records of a table that may span a hundred chunks); false when a
  // probed record is damaged.
  template <class T, class Key, class Less>
  bool VerifiedUpperBound(std::span<const T> records, const Key& key, const Less& less,
                          size_t* position) const {
    size_t first = 0, count = records.size();
    while (count > 0) {
      size_t half = count / 2, mid = first + half;
      if (!Verified(records[mid])) return false;
      if (less(key, records[mid])) {
        count = half;
      } else {
        first = mid + 1;
        count -= half + 1;
      }
    }
    *position = first;
    return true;
  }
  struct Row {
    uint64_t address = 0;
    uint32_t line = 0;
    uint16_t column = 0;
    uint16_t file = 0;
    uint32_t discriminator = 0;
  };
  // The innermost node (-1: none) of `unit`'s function segments at `vaddr`; false when the
  // unit's records or bytes are inconsistent.
  bool FindNode(const UnitRecord& unit, uint64_t vaddr, int32_t* node) const;
  // The code of the out-of-line function around `vaddr` (dwarf::OutermostRun's one rule, over
  // the persisted segments): false when the records or bytes are inconsistent.
  bool OutermostRun(uint64_t vaddr, dwarf::FunctionRun* run) const;
  // How many of a unit's segment blocks start at or before `offset` (from the unit's segment
  // base): the one the offset is in is *after - 1; false when a probed record is damaged.
  bool BlocksFrom(std::span<const FunctionSegmentBlockRecord> blocks, uint64_t offset,
                  size_t* after) const;
  // A unit's function segment blocks: false when its record points outside them.
  bool SegmentBlocks(const UnitRecord& unit,
                     std::span<const FunctionSegmentBlockRecord>* blocks) const;
  // Decodes block `block` of a unit's `blocks` (`segment_count`: the unit's segments), calling
  // each(start, node) segment after segment until it returns false; false when the block's
  // bytes are inconsistent.
  template <class Each>
  bool DecodeSegmentBlock(std::span<const FunctionSegmentBlockRecord> blocks, size_t block,
                          uint64_t segment_count, const Each& each) const;
  // The row of line table `table` covering `vaddr`: true with *found set or cleared (no row);
  // false when the table's records or bytes are inconsistent.
  bool FindRow(const LineTableRecord& table, uint64_t vaddr, Row* row, bool* found) const;

  void* mapping_ = nullptr;  // when opened from a path (private read-only mmap)
  size_t mapping_size_ = 0;
  std::vector<uint64_t> owned_;  // when copied from bytes (8-byte aligned)
  std::span<const uint8_t> bytes_;
  const FileHeader* header_ = nullptr;
  std::string_view identity_;
  std::span<const uint8_t> strings_;        // compressed
  uint64_t string_bytes_ = 0;               // the stream's size, decompressed
  std::span<const uint8_t> string_blocks_;  // kStringBlocks after its first word
  size_t string_block_count_ = 0;
  std::span<const NameRecord> names_;
  std::span<const StrRef> start_files_;
  std::span<const CallDiscriminatorRecord> call_discriminators_;
  // The last blocks decompressed, and the zstd context, behind one lock (lookups without a
  // Reader of their own).
  std::unique_ptr<StringCache> string_cache_;
  struct ZstdDictionary;
  std::unique_ptr<ZstdDictionary> dictionary_;  // shared by every cache (zstd allows it)
  std::span<const SymbolRecord> symbols_;
  std::span<const SegmentRecord> symbol_segments_;
  std::span<const SegmentRecord> unit_segments_;
  std::span<const UnitRecord> units_;
  std::span<const FunctionSegmentBlockRecord> function_segments_;
  std::span<const uint8_t> function_segment_bytes_;
  std::span<const uint8_t> nodes_;  // packed, every unit's
  std::span<const LineTableRecord> line_tables_;
  std::span<const RowBlockRecord> row_blocks_;
  std::span<const uint8_t> row_bytes_;
  std::span<const UnitRecord> go_unit_;  // one, or none
  std::span<const GoContextRecord> go_contexts_;
  std::span<const GoFunctionRecord> go_functions_;
  std::span<const GoFrameRecord> go_frames_;
  std::span<const uint32_t> paths_;
  std::span<const StrRef> path_strings_;
  // Chunk checksums: chunk k is bytes_ [k * kChunkSize, (k + 1) * kChunkSize) clipped to
  // [chunks_begin_, chunks_end_). State per chunk: 0 not summed yet, 1 intact, 2 damaged.
  bool verify_ = false;
  size_t chunks_begin_ = 0;
  size_t chunks_end_ = 0;
  std::span<const uint8_t> chunk_crcs_;
  std::unique_ptr<std::atomic<uint8_t>[]> chunk_state_;
  mutable std::atomic<bool> damaged_{false};
  std::unique_ptr<NameMemo> name_memo_;  // set by Parse
  mutable std::atomic<size_t> damaged_chunk_{0};
};

// The last segment starting at or before `address`: its id, or -1 (before the first one).
int32_t FindSegmentRecord(std::span<const SegmentRecord> segments, uint64_t address);

}  // namespace stacksym::index
