// IndexBuilder — the symbol index of one binary, for the whole binary: its symbol table
// flattened into address segments, and every DWARF unit's function segments, inline nodes
// (names demangled once), line rows and file paths, exactly as the direct path
// (ElfSymbolizer + DebugInfoSource) would compute them for any address. Units are parsed on
// IndexOptions::threads threads.
//
//   Result<IndexImage> image = IndexBuilder::Build(elf, options);
//   ... write image->pieces() in order (StoreAtomically); SymbolIndex::Open() reads them back ...
//
// With an IndexSink, most of the file (every section but the strings) is handed over as soon
// as it is final, before the strings are compressed, so that writing it overlaps that work;
// the image still lists every piece, and says which ones went early.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "index/index_options.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {
class DebugInfoSource;
}

namespace stacksym::index {

// An index file as the pieces it is written from, in order: the builder's own buffers rather
// than one copy of them (which would cost as much memory again, every page of it new).
class IndexImage {
 public:
  std::span<const std::span<const uint8_t>> pieces() const { return pieces_; }
  // pieces()[early_begin(), early_end()) went to the sink, if any (else an empty range).
  size_t early_begin() const { return early_begin_; }
  size_t early_end() const { return early_end_; }

  // For the builder: `bytes` next (they must outlive the image, or be kept by it).
  void Append(std::span<const uint8_t> bytes);
  void MarkEarly(size_t begin, size_t end) { early_begin_ = begin, early_end_ = end; }
  // Keeps `storage` alive as long as the image (its buffers stay where they are).
  template <class T>
  T& Keep(T storage) {
    auto kept = std::make_shared<T>(std::move(storage));
    owned_.push_back(kept);
    return *kept;
  }

 private:
  std::vector<std::span<const uint8_t>> pieces_;
  std::vector<std::shared_ptr<const void>> owned_;
  size_t early_begin_ = 0, early_end_ = 0;
};

// Where a build's sections go once they are final (IndexBuilder::Build).
class IndexSink {
 public:
  virtual ~IndexSink() = default;
  // `pieces`, one after the other, belong in the file from `offset` on; they stay valid until
  // Build returns.
  virtual void WriteEarly(uint64_t offset, std::vector<std::span<const uint8_t>> pieces) = 0;
};

class IndexBuilder {
 public:
  // The DWARF is the one the direct path finds under `options.search` (debug dirs, known
  // path); an index serves every demangling and inline setting.
  // Names are stored as linkage names, never demangled here (SymbolIndex demangles what it
  // prints). `dwarf` (nullable) receives the DWARF source the index was built from, opened with
  // `options` but demangling off and inlines on, instead of its being torn down here (tens of
  // milliseconds on a big binary, which a caller about to exit need not pay).
  // `sink` (nullable) gets the sections that are final before the strings are compressed.
  static Result<IndexImage> Build(const std::shared_ptr<ElfFile>& elf, const IndexOptions& options,
                                  std::unique_ptr<dwarf::DebugInfoSource>* dwarf = nullptr,
                                  IndexSink* sink = nullptr);
};

}  // namespace stacksym::index
