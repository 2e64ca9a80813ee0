#include "index/index_builder.h"

#define ZDICT_STATIC_LINKING_ONLY  // ZDICT_trainFromBuffer_fastCover with fixed parameters
#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "base/flat_table.h"
#include "base/parallel.h"
#include "cache/checksum.h"
#include "dwarf/debug_info_source.h"
#include "elf/go_pclntab.h"
#include "elf/symbol_choice.h"
#include "index/index_format.h"
#include "index/index_identity.h"

namespace stacksym::index {

using cache::Crc32c;

namespace {

// Demangled names compress ~10x at level 3; higher levels gain little more.
constexpr int kStringZstdLevel = 3;

// The string stream as the strings it is made of, in order, each where it already lives (a
// demangle cache entry, the DWARF string section, a line table's path): copying the 50 MB of
// a big C++ library's names together cost a tenth of its cold build, most of that in
// faulting in the copy's pages. Its callers keep the strings alive.
class PieceStream {
 public:
  void Append(std::string_view s) {
    if (s.empty()) return;
    pieces_.push_back(s.data());
    starts_.push_back(size_);
    size_ += s.size();
  }
  void Append(const PieceStream& other) {
    for (size_t i = 0; i < other.pieces_.size(); ++i) {
      pieces_.push_back(other.pieces_[i]);
      starts_.push_back(size_ + other.starts_[i]);
    }
    size_ += other.size_;
  }
  size_t size() const { return size_; }
  // The bytes [from, from + size): in place when one piece holds them, else gathered into
  // `scratch`.
  const uint8_t* Range(size_t from, size_t size, std::vector<uint8_t>* scratch) const {
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), from) -
                                   starts_.begin()) -
               1;
    if (from + size <= End(i)) {
      return reinterpret_cast<const uint8_t*>(pieces_[i]) + (from - starts_[i]);
    }
    scratch->resize(size);
    for (size_t done = 0; done < size; ++i) {
      size_t at = from + done - starts_[i];
      size_t n = std::min<size_t>(size - done, End(i) - starts_[i] - at);
      std::memcpy(scratch->data() + done, pieces_[i] + at, n);
      done += n;
    }
    return scratch->data();
  }

 private:
  uint64_t End(size_t i) const { return i + 1 < starts_.size() ? starts_[i + 1] : size_; }
  std::vector<const char*> pieces_;
  std::vector<uint64_t> starts_;  // stream offset of each piece
  size_t size_ = 0;
};

// A dictionary trained on the string stream itself lets blocks a quarter the size of the
// undictionaried 8 KiB ones (so a lookup decompresses a quarter of the bytes per name)
// compress slightly better than those did. fastCover with fixed parameters (k 500, d 8) on
// about 2 MB of evenly spaced blocks trains in about 20 ms, as well as the parameter search
// that takes seconds; it is deterministic, so an index is still byte-identical from build to
// build.
//
// The stream trained on is the merged one, made a second time apart from the merge
// (StreamAsMerged): so the training runs on a thread of its own while the merge numbers the
// names, instead of after it (on libceph-common the two were 70 ms of one core's work while the
// other idled; now 52 ms on two).
constexpr size_t kStringDictSize = 64 << 10;
constexpr size_t kStringDictSamples = 2 << 20;
constexpr size_t kSmallSampleSet = 1 << 20;

// The dictionary for `stream` (at most a 32nd of it), trained on evenly spaced blocks of
// kStringBlockSize, or none (empty) when training fails (too few samples: the blocks are then
// compressed without one).
std::vector<uint8_t> TrainStringDictionary(const PieceStream& stream) {
  size_t block_count = (stream.size() + kStringBlockSize - 1) / kStringBlockSize;
  size_t dict_size = std::min(kStringDictSize, stream.size() / 32);
  if (dict_size < 1024) return {};
  // Every fourth block at most: on a small stream a dictionary trained on a quarter of it
  // compresses as well as one trained on all of it, in a third of the time (python3.11d's
  // 480 KB: 1.8 against 5.9 ms, the index 0.5 KB bigger).
  size_t step = std::max<size_t>(4, block_count / (kStringDictSamples / kStringBlockSize));
  std::vector<uint8_t> samples, scratch;
  std::vector<size_t> sizes;
  for (size_t k = 0; k < block_count; k += step) {
    size_t from = k * kStringBlockSize;
    size_t size = std::min<size_t>(kStringBlockSize, stream.size() - from);
    const uint8_t* bytes = stream.Range(from, size, &scratch);
    samples.insert(samples.end(), bytes, bytes + size);
    sizes.push_back(size);
  }
  ZDICT_fastCover_params_t params{};
  params.k = 500;
  params.d = 8;
  // The frequency table has 2^f entries (4 MiB at 20, the default). A small sample set leaves
  // most of it empty, and setting it up then costs more than the training itself (libc: 9.6
  // against 2.3 ms at 16, and the index no bigger).
  params.f = samples.size() < kSmallSampleSet ? 16 : 20;
  params.accel = 1;
  params.zParams.compressionLevel = kStringZstdLevel;
  std::vector<uint8_t> dict(dict_size);
  size_t n = ZDICT_trainFromBuffer_fastCover(dict.data(), dict.size(), samples.data(), sizes.data(),
                                             static_cast<unsigned>(sizes.size()), params);
  if (ZDICT_isError(n)) return {};
  dict.resize(n);
  return dict;
}

class StringTable {
 public:
  explicit StringTable(size_t expected) : by_bytes_(expected) {}

  // `bytes_hash`: HashBytes(s) when the caller has it (worked out on another thread), else 0.
  StrRef Add(std::string_view s, uint64_t bytes_hash = 0) {
    const uint64_t hash = bytes_hash != 0 ? bytes_hash : HashBytes(s);
    // Most names come again and again from the same storage (a demangle cache entry, the
    // DWARF string section): known by their address before their bytes are compared.
    Slot& slot = by_bytes_.Find(hash, [&](const Slot& b) {
      return b.ref.size == s.size() &&
             (b.data == s.data() || s.empty() || std::memcmp(b.data, s.data(), s.size()) == 0);
    });
    if (!slot.empty()) return slot.ref;
    StrRef ref = {static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(s.size())};
    slot = {hash, s.data(), ref};
    bytes_.Append(s);
    by_bytes_.Filled();  // may move the slots
    return ref;
  }
  const PieceStream& bytes() const { return bytes_; }
  void Reserve(size_t count) { by_bytes_.Reserve(count); }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;
    StrRef ref;
    bool empty() const { return hash == 0; }
  };

  PieceStream bytes_;
  FlatTable<Slot> by_bytes_;
};

void AppendUleb(uint64_t value, std::vector<uint8_t>* out) {
  do {
    uint8_t byte = value & 0x7f;
    value >>= 7;
    out->push_back(value != 0 ? byte | 0x80 : byte);
  } while (value != 0);
}

// `v`'s memory given back now (clear() keeps it).
template <class T>
void Release(T& v) {
  T().swap(v);
}

template <class T>
std::span<const uint8_t> AsBytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// A section of fixed-size blocks over encoded bytes (function segments, line rows), put
// together from the units' parts without copying them: each part's block offsets (into its
// own bytes) are rebased onto the bytes appended before it.
struct BlockedSection {
  std::vector<std::span<const uint8_t>> blocks, bytes;
  uint64_t block_count = 0, byte_count = 0;
  // False when the blocks or the bytes would pass what 32-bit records can number.
  template <class Block>
  bool Append(std::vector<Block>& part_blocks, const std::vector<uint8_t>& part_bytes) {
    const bool fits = block_count + part_blocks.size() <= 0xffffffffu &&
                      byte_count + part_bytes.size() <= 0xffffffffu;
    for (Block& block : part_blocks)
      block.offset = static_cast<uint32_t>(byte_count + block.offset);
    block_count += part_blocks.size();
    byte_count += part_bytes.size();
    blocks.push_back(AsBytes(part_blocks));
    bytes.push_back(AsBytes(part_bytes));
    return fits;
  }
};

// A unit's records before the merge: function segments relative to the unit's first, nodes
// with only the inlined bit in their name, and (for the first unit with its line table) the
// encoded rows with block offsets relative to `rows`.
struct UnitPart {
  dwarf::UnitTables tables;
  uint64_t segment_base = 0;
  bool too_big = false;
  // The function segments encoded in blocks, block offsets relative to segment_bytes.
  uint32_t segment_count = 0;
  std::vector<FunctionSegmentBlockRecord> segment_blocks;
  std::vector<uint8_t> segment_bytes;
  std::vector<NodeRecord> nodes;  // names: numbers of carriers until the merge packs them
  NodeWidths node_widths;         // of every field but the name (the merge numbers names)
  std::vector<RowBlockRecord> blocks;
  std::vector<uint8_t> rows;
  // 1 + the highest file index a row of the encoded line table / an inlined node's call site
  // names: the unit's paths past both are never read.
  size_t row_files = 0;
  size_t call_files = 0;
  uint32_t row_count = 0;  // of the line table this part encoded
  // The unit's distinct names, told apart by where their strings are stored (the instances of
  // one inline function share its resolved name), each once, so that the serial merge
  // numbers each name of a unit once; a node's NodeRecord::name holds the number of its own
  // until the merge. With them the byte hashes of their strings, worked out here, in
  // parallel, for the merge.
  struct Carrier {
    std::string_view raw, pretty, start_file;
    uint32_t start_line = 0;
    uint64_t pretty_hash = 0;
    uint64_t raw_hash = 0;  // 0: the linkage name is the demangled one
    uint64_t start_file_hash = 0;
  };
  std::vector<Carrier> carriers;
  std::vector<CallDiscriminatorRecord> call_discriminators;  // nodes numbered within the unit
  // Per file index of the line table: its path's byte hash.
  std::vector<uint64_t> path_hashes;
};

// Strings that records refer to by number (start files, paths): each distinct one once.
class DistinctStrings {
 public:
  uint32_t Id(StrRef ref) {
    const uint64_t key = uint64_t{ref.offset} << 32 | ref.size;
    const uint64_t hash = MixHash(key);
    Slot& slot = ids_.Find(hash, [&](const Slot& s) { return s.key == key; });
    if (!slot.empty()) return slot.id;
    uint32_t id = static_cast<uint32_t>(refs_.size());
    slot = {hash, key, id};
    ids_.Filled();
    refs_.push_back(ref);
    return id;
  }
  std::vector<StrRef>& refs() { return refs_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t key = 0;  // the StrRef
    uint32_t id = 0;   // index into refs_
    bool empty() const { return hash == 0; }
  };
  std::vector<StrRef> refs_;
  FlatTable<Slot> ids_;
};

// Each symbol's (linkage, demangled) name, in the symbol records' order, with their byte
// hashes (worked out in parallel, for both tables the names go into; raw_hash 0: the two are
// equal).
struct SymbolString {
  std::string_view raw, pretty;
  uint64_t pretty_hash = 0, raw_hash = 0;
};
using SymbolStrings = std::vector<SymbolString>;

// The strings of the Go pclntab's answers, in the order they were added (before the merge, on
// the symbol table's thread): files into the first region, names into the second.
struct GoStrings {
  struct Hashed {
    std::string_view text;
    uint64_t hash = 0;
  };
  std::vector<Hashed> files, names;
};

// How many names the units' parts carry, and how many of them are mangled (only those have
// a linkage name of their own): what the name tables are sized by.
struct NameCounts {
  size_t carriers = 0, mangled = 0;
};
NameCounts CountNames(const std::vector<UnitPart>& parts) {
  NameCounts counts;
  for (const UnitPart& part : parts) {
    counts.carriers += part.carriers.size();
    for (const UnitPart::Carrier& c : part.carriers) counts.mangled += c.raw_hash != 0;
  }
  return counts;
}

// The string stream IndexBuilder::Build's merge makes, made apart from it by the same tables
// fed the same strings in the same order (its three regions: start files and paths, demangled
// names, linkage names unlike them), for the dictionary to be trained while the merge runs.
// `merged_path_counts`: per part, how many of its paths the merge adds. The tables go with the
// call: the stream refers to the strings themselves.
PieceStream StreamAsMerged(const std::vector<UnitPart>& parts,
                           const std::vector<size_t>& merged_path_counts,
                           const SymbolStrings& symbols, const GoStrings& go) {
  NameCounts counts = CountNames(parts);
  counts.carriers += symbols.size() + go.names.size();
  for (const SymbolString& s : symbols) counts.mangled += s.raw_hash != 0;
  // Distinct names are fewer than the units' ones added up (units share most of them).
  StringTable files(1024), names(counts.carriers / 2), linkage(counts.mangled / 2);
  for (const GoStrings::Hashed& f : go.files) files.Add(f.text, f.hash);
  for (size_t i = 0; i < parts.size(); ++i) {
    const UnitPart& part = parts[i];
    if (!part.tables.ok) continue;
    for (const UnitPart::Carrier& c : part.carriers) {
      if (!c.start_file.empty()) files.Add(c.start_file, c.start_file_hash);
    }
    for (size_t p = 0; p < merged_path_counts[i]; ++p) {
      files.Add(part.tables.paths[p], part.path_hashes[p]);
    }
  }
  for (const SymbolString& s : symbols) names.Add(s.pretty, s.pretty_hash);
  for (const GoStrings::Hashed& n : go.names) names.Add(n.text, n.hash);
  for (const UnitPart& part : parts) {
    for (const UnitPart::Carrier& c : part.carriers) names.Add(c.pretty, c.pretty_hash);
  }
  for (const SymbolString& s : symbols) {
    if (s.raw_hash != 0) linkage.Add(s.raw, s.raw_hash);
  }
  for (const UnitPart& part : parts) {
    for (const UnitPart::Carrier& c : part.carriers) {
      if (c.raw_hash != 0) linkage.Add(c.raw, c.raw_hash);
    }
  }
  PieceStream stream;
  for (const StringTable* region : {&files, &names, &linkage}) stream.Append(region->bytes());
  return stream;
}

// Segments (address → node) in blocks of kSegmentsPerBlock (index_format.h), starts relative
// to the first one's.
void EncodeSegments(std::span<const dwarf::AddressSegment> segments, UnitPart* part) {
  part->segment_base = segments.empty() ? 0 : segments.front().start;
  part->too_big |= segments.size() > 0xffffffffu;
  part->segment_count = static_cast<uint32_t>(segments.size());
  part->segment_blocks.reserve((segments.size() + kSegmentsPerBlock - 1) / kSegmentsPerBlock);
  part->segment_bytes.reserve(segments.size() * 3);
  std::vector<uint8_t>& bytes = part->segment_bytes;
  uint64_t previous_start = 0;
  int64_t previous_node = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    const dwarf::AddressSegment& s = segments[k];
    part->too_big |= s.start < part->segment_base || s.start - part->segment_base > 0xffffffffu;
    const uint64_t start = s.start - part->segment_base;
    if (k % kSegmentsPerBlock == 0) {
      part->segment_blocks.push_back(
          {static_cast<uint32_t>(start), static_cast<uint32_t>(bytes.size())});
      AppendUleb(static_cast<uint64_t>(int64_t{s.id} + 1), &bytes);
    } else {
      AppendUleb(start - previous_start, &bytes);
      const int64_t delta = int64_t{s.id} - previous_node;
      AppendUleb((static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63), &bytes);
    }
    previous_start = start;
    previous_node = s.id;
  }
}

void EncodeFunctions(const dwarf::UnitTables& t, UnitPart* part) {
  EncodeSegments(t.segments, part);
  part->nodes.reserve(t.nodes.size());
  uint64_t max_distance = 0, max_line = 0, max_file = 0, max_column = 0;
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const dwarf::FunctionNode& f = t.nodes[k];
    NodeRecord r;
    r.parent = f.parent;
    // The walk numbers nodes depth first: a parent comes before its children.
    part->too_big |= f.call_file > 0xffff || f.parent >= static_cast<int64_t>(k);
    if (f.parent >= 0) max_distance = std::max<uint64_t>(max_distance, k - f.parent);
    if (f.inlined) part->call_files = std::max<size_t>(part->call_files, f.call_file + size_t{1});
    r.call_file = static_cast<uint16_t>(f.call_file);
    r.call_line = f.call_line;
    r.call_column = f.call_column;
    r.name = f.inlined ? kNodeInlined : 0;
    max_line = std::max<uint64_t>(max_line, r.call_line);
    max_file = std::max<uint64_t>(max_file, r.call_file);
    max_column = std::max<uint64_t>(max_column, r.call_column);
    part->nodes.push_back(r);
  }
  part->too_big |= max_distance > 0x7fffffff;
  part->node_widths.parent = static_cast<uint8_t>(std::bit_width(max_distance));
  part->node_widths.line = static_cast<uint8_t>(std::bit_width(max_line));
  part->node_widths.file = static_cast<uint8_t>(std::bit_width(max_file));
  part->node_widths.column = static_cast<uint8_t>(std::bit_width(max_column));
  struct NameSlot {
    uint64_t hash = 0;
    uint32_t node = 0;
    uint32_t number = 0;
    bool empty() const { return hash == 0; }
  };
  // The paths' hashes first: a name's start file is one of them.
  part->path_hashes.reserve(t.paths.size());
  for (std::string_view path : t.paths) part->path_hashes.push_back(HashBytes(path));
  FlatTable<NameSlot> numbers(t.nodes.size() / 4);
  for (uint32_t n = 0; n < t.nodes.size(); ++n) {
    const std::string_view raw = t.raw_names[n], pretty = t.pretty_names[n];
    const dwarf::UnitTables::NodeStart& start = t.starts[n];
    uint64_t hash = MixHash(reinterpret_cast<uintptr_t>(raw.data()) * 0x9e3779b97f4a7c15 ^
                            reinterpret_cast<uintptr_t>(pretty.data()) * 0xc2b2ae3d27d4eb4f ^
                            reinterpret_cast<uintptr_t>(start.file.data()) * 31 ^
                            (uint64_t{start.line} << 20) ^ raw.size());
    NameSlot& slot = numbers.Find(hash, [&](const NameSlot& other) {
      const std::string_view other_raw = t.raw_names[other.node];
      const std::string_view other_pretty = t.pretty_names[other.node];
      const dwarf::UnitTables::NodeStart& other_start = t.starts[other.node];
      return other_raw.data() == raw.data() && other_raw.size() == raw.size() &&
             other_pretty.data() == pretty.data() && other_pretty.size() == pretty.size() &&
             other_start.file.data() == start.file.data() &&
             other_start.file.size() == start.file.size() && other_start.line == start.line;
    });
    uint32_t number = static_cast<uint32_t>(part->carriers.size());
    if (slot.empty()) {
      slot = {hash, n, number};
      // Hashes the demangle cache worked out once for every unit naming the same function,
      // and the paths' of this unit, where known.
      const dwarf::UnitTables::NameHashes known =
          n < t.name_hashes.size() ? t.name_hashes[n] : dwarf::UnitTables::NameHashes{};
      const uint64_t raw_hash = raw == pretty ? 0 : (known.raw != 0 ? known.raw : HashBytes(raw));
      const uint64_t file_hash = !start.file.empty() && start.file_index < part->path_hashes.size()
                                     ? part->path_hashes[start.file_index]
                                     : HashBytes(start.file);
      part->carriers.push_back({raw, pretty, start.file, start.line,
                                known.pretty != 0 ? known.pretty : HashBytes(pretty), raw_hash,
                                file_hash});
      numbers.Filled();  // may move the slots: `slot` is not read after it
    } else {
      number = slot.number;
    }
    part->nodes[n].name |= number;
    if (start.call_discriminator != 0) {
      part->call_discriminators.push_back({n, start.call_discriminator});
    }
  }
}

// Rows in blocks of kRowsPerBlock (index_format.h); a block with discriminators is flagged and
// starts with the mask of its rows that have one.
void EncodeRows(std::span<const dwarf::LineRow> rows,
                std::span<const dwarf::RowDiscriminator> discriminators, UnitPart* part) {
  size_t next_discriminator = 0;  // into discriminators
  part->blocks.reserve((rows.size() + kRowsPerBlock - 1) / kRowsPerBlock);
  part->rows.reserve(rows.size() * 4);
  std::vector<uint8_t>& out = part->rows;
  for (size_t k = 0; k < rows.size(); ++k) {
    const dwarf::LineRow& row = rows[k];
    if (!row.is_end()) part->row_files = std::max<size_t>(part->row_files, row.file + size_t{1});
    if (k % kRowsPerBlock == 0) {
      uint64_t mask = 0;
      for (size_t d = next_discriminator;
           d < discriminators.size() && discriminators[d].row < k + kRowsPerBlock; ++d) {
        mask |= uint64_t{1} << (discriminators[d].row - k);
      }
      part->blocks.push_back({row.address, static_cast<uint32_t>(out.size()),
                              mask != 0 ? kRowBlockDiscriminators : 0});
      if (mask != 0) AppendUleb(mask, &out);
      AppendUleb(row.line, &out);
      AppendUleb(row.column, &out);
      AppendUleb(row.file, &out);
    } else {
      const dwarf::LineRow& previous = rows[k - 1];
      uint64_t address_delta = row.address - previous.address;
      int64_t line_delta = int64_t{row.line} - int64_t{previous.line};
      bool file_changed = row.file != previous.file;
      uint8_t header = address_delta < kRowAddressEscape ? static_cast<uint8_t>(address_delta)
                                                         : kRowAddressEscape;
      bool small_line = line_delta >= -int64_t{kRowLineBias} &&
                        line_delta < int64_t{kRowLineEscape} - int64_t{kRowLineBias};
      header |= static_cast<uint8_t>(
          (small_line ? static_cast<uint8_t>(line_delta + kRowLineBias) : kRowLineEscape) << 4);
      if (file_changed) header |= kRowFileChanged;
      out.push_back(header);
      if (address_delta >= kRowAddressEscape) AppendUleb(address_delta, &out);
      if (!small_line) {
        AppendUleb(
            (static_cast<uint64_t>(line_delta) << 1) ^ static_cast<uint64_t>(line_delta >> 63),
            &out);
      }
      if (file_changed) AppendUleb(row.file, &out);
      AppendUleb(row.column, &out);
    }
    if (next_discriminator < discriminators.size() && discriminators[next_discriminator].row == k) {
      AppendUleb(discriminators[next_discriminator++].value, &out);
    }
  }
  part->too_big |= out.size() > 0xffffffffu;
}

// The flattened symbol table, a piece at a time: from `start` on, `symbol` covers the addresses
// (null: none does) up to the next piece's start. `fallback`: a stripped binary's debug-file
// symbol, which names an address only where DWARF has no function either.
struct SymbolPiece {
  uint64_t start = 0;
  const ElfSymbol* symbol = nullptr;
  bool fallback = false;
};

// Find() is constant between consecutive symbol starts and ends (its resume points are among
// them), so asking it at each of those boundaries flattens the table exactly.
std::vector<SymbolPiece> FlattenSymbols(const SymbolTable& table) {
  std::vector<uint64_t> bounds;
  for (const ElfSymbol& s : table.symbols()) {
    bounds.push_back(s.address);
    if (s.size != 0 && s.address + s.size > s.address) bounds.push_back(s.address + s.size);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<SymbolPiece> pieces;
  SymbolTable::AscendingFinder finder(table);
  for (uint64_t bound : bounds) {
    const ElfSymbol* s = finder.Find(bound);
    if (pieces.empty() ? s != nullptr : s != pieces.back().symbol) pieces.push_back({bound, s});
  }
  return pieces;
}

// `own` with the gaps (where no symbol covers) filled from `fallback`'s pieces, marked.
std::vector<SymbolPiece> OverlayGaps(const std::vector<SymbolPiece>& own,
                                     std::vector<SymbolPiece> fallback) {
  for (SymbolPiece& piece : fallback) piece.fallback = true;
  std::vector<uint64_t> bounds;
  for (const SymbolPiece& p : own) bounds.push_back(p.start);
  for (const SymbolPiece& p : fallback) bounds.push_back(p.start);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<SymbolPiece> merged;
  size_t in_own = 0, in_fallback = 0;  // pieces starting at or before the bound
  for (uint64_t bound : bounds) {
    while (in_own < own.size() && own[in_own].start <= bound) ++in_own;
    while (in_fallback < fallback.size() && fallback[in_fallback].start <= bound) ++in_fallback;
    SymbolPiece piece{bound, nullptr, false};
    if (in_own > 0 && own[in_own - 1].symbol != nullptr) {
      piece.symbol = own[in_own - 1].symbol;
      piece.fallback = own[in_own - 1].fallback;  // `own` may be an overlay already
    } else if (in_fallback > 0 && fallback[in_fallback - 1].symbol != nullptr) {
      piece.symbol = fallback[in_fallback - 1].symbol;
      piece.fallback = true;
    }
    bool same = merged.empty() ? piece.symbol == nullptr
                               : piece.symbol == merged.back().symbol &&
                                     piece.fallback == merged.back().fallback;
    if (!same) merged.push_back(piece);
  }
  return merged;
}

// While the index is built its strings stay in three tables (regions) until JoinRegions: a
// ref's top two bits say which.
enum Region : uint32_t { kFileRegion, kNameRegion, kLinkageRegion };
constexpr uint32_t kRegionShift = 30, kLocalMask = (1u << kRegionShift) - 1;

StrRef Tagged(StrRef ref, Region region) {
  ref.offset |= uint32_t{region} << kRegionShift;
  return ref;
}

// A section of the file as the pieces it is written from.
struct Section {
  SectionKind kind;
  std::vector<std::span<const uint8_t>> pieces;
};

std::vector<std::span<const uint8_t>> OnePiece(std::span<const uint8_t> bytes) {
  return std::vector<std::span<const uint8_t>>{bytes};
}

// One index build: IndexBuilder::Build's stages, in the order Run calls them, the members
// what each hands on to the next. What runs beside what (tuned on 2 cores, see the git log
// and docs/index-format.md, "How a build spends its time"):
//   the symbol table read and named (IndexSymbols)  | the units exported (ExportUnits)
//   the dictionary trained (StartTraining)          | the names merged (MergeUnits)
//   the records written by the sink (LayOutRecords) | the strings compressed (CompressStrings)
class IndexBuild {
 public:
  IndexBuild(const std::shared_ptr<ElfFile>& elf, const IndexOptions& options)
      : elf_(elf), options_(options) {}
  Result<IndexImage> Run(std::unique_ptr<dwarf::DebugInfoSource>* dwarf, IndexSink* sink);

 private:
  // A name is its (raw, demangled) pair and where the function starts (file and line).
  struct NameSlot {
    uint64_t hash = 0;
    uint32_t id = 0;  // into names_
    bool empty() const { return hash == 0; }
  };

  void OpenDwarf();
  void StartSymbolTable();
  void IndexSymbols();
  std::vector<const ElfSymbol*> FlattenSymbolTable();
  void NameSymbols(const std::vector<const ElfSymbol*>& by_record);
  void IndexGoAnswers();
  uint32_t GoContextId(uint32_t function, const elf::GoFrame& innermost, uint32_t outer);
  uint32_t GoFrameId(const elf::GoFrame& frame, uint32_t outer);
  StrRef GoName(std::string_view name);
  uint32_t GoFile(std::string_view file);
  void DropGoAnswers();
  void AddGoUnit();
  bool ExportUnits();
  void ExportUnit(size_t i);
  void CountMergedPaths();
  void StartTraining();
  void TrainDictionary();
  void MergeUnits();
  UnitRecord MergeUnit(size_t i);
  void NumberNames(const UnitPart& part);
  void PackNodes(const UnitPart& part, UnitRecord* unit);
  void AddLineTable(size_t i, UnitRecord* unit);
  void FinishMerge();
  Result<void> JoinRegions();
  void LayOutRecords(IndexSink* sink);
  void LayOut(const Section& section);
  void PadOffset();
  Result<void> CompressStrings();
  bool CompressBlocks(const ZSTD_CDict* cdict, std::vector<uint32_t>* frame_sizes,
                      std::vector<std::span<const uint8_t>>* compressed);
  Result<void> LayOutStrings();
  void SumChunks();
  void WriteHead(IndexSink* sink);

  StrRef AddFile(std::string_view s, uint64_t hash = 0) {
    return Tagged(files_.Add(s, hash), kFileRegion);
  }
  StrRef AddName(std::string_view s, uint64_t hash = 0) {
    return Tagged(strings_.Add(s, hash), kNameRegion);
  }
  // `same`: the two are equal (C names, and names that do not demangle): one string serves.
  StrRef LinkageRef(std::string_view raw, bool same, StrRef pretty_ref, uint64_t hash = 0) {
    return same ? pretty_ref : Tagged(linkage_.Add(raw, hash), kLinkageRegion);
  }
  uint32_t StartFileId(std::string_view file, uint64_t hash = 0) {
    return file.empty() ? kNoStartFile : start_files_.Id(AddFile(file, hash));
  }
  uint32_t NameId(StrRef raw, StrRef pretty, uint32_t start_file, uint32_t start_line);
  // The sections' pieces kept by the image: one, the bytes of `storage`.
  template <class T>
  std::vector<std::span<const uint8_t>> Kept(std::vector<T>&& storage) {
    return OnePiece(AsBytes(image_.Keep(std::move(storage))));
  }

  const std::shared_ptr<ElfFile>& elf_;
  const IndexOptions& options_;
  // DWARF: the source the direct path would open, every unit built in full.
  std::unique_ptr<dwarf::DebugInfoSource> source_;
  // A stripped binary's debug-file symbols, for what its own and DWARF do not name (or null).
  const SymbolTable* fallback_symbols_ = nullptr;

  // The string stream in three regions, each its own table until they are joined: the paths
  // and start files (few, and read by almost every lookup: their blocks stay cached), the
  // demangled names, then the linkage names (read only by callers that print them, so the
  // other lookups decompress blocks packed with what they need).
  // (Sized for the symbol table once it is read, on the thread that reads it.)
  StringTable files_{1024}, strings_{0}, linkage_{0};
  std::vector<SymbolRecord> symbols_;
  std::vector<SegmentRecord> symbol_segments_, unit_segments_;
  SymbolStrings symbol_strings_;  // for the dictionary's samples
  std::unique_ptr<SpreadThread> symbol_worker_;

  // The Go pclntab's answers (IndexGoAnswers, on the symbol table's thread), when the binary
  // has a readable table; `go_table_` kept while the strings refer into its bytes.
  std::unique_ptr<elf::GoPclntab> go_table_;
  UnitPart go_part_;  // the answers' segments and rows, encoded as a unit's
  std::vector<UnitRecord> go_unit_;
  std::vector<GoContextRecord> go_contexts_;
  std::vector<GoFunctionRecord> go_functions_;
  std::vector<GoFrameRecord> go_frames_;
  std::vector<uint32_t> go_paths_;  // the Go unit's paths: numbers into path_strings_
  GoStrings go_strings_;            // for the dictionary's samples
  // Go's names and files are views into the table, the same view for each use of one: known by
  // where they are before their bytes are hashed.
  std::unordered_map<const char*, StrRef> go_names_;
  std::unordered_map<const char*, uint32_t> go_files_;
  struct GoRecordSlot {
    uint64_t hash = 0;
    uint32_t id = 0;  // into go_contexts_ or go_frames_
    bool empty() const { return hash == 0; }
  };
  FlatTable<GoRecordSlot> go_context_ids_, go_frame_ids_;

  // Sections written from the units' parts, one piece per unit (or line table).
  std::vector<UnitPart> parts_;
  std::mutex encoded_mutex_;
  std::unordered_map<const dwarf::LineTable*, size_t> encoded_by_;  // line table → part
  // Per part: how many of its paths the merge adds (set before the training starts).
  std::vector<size_t> merged_path_counts_;
  // The string dictionary, trained on the strings in merge order: on a thread of its own
  // while the merge runs when there are units to merge, else after.
  std::vector<uint8_t> dictionary_;
  std::unique_ptr<SpreadThread> trainer_;
  bool trained_ = false;

  std::vector<UnitRecord> units_;
  BlockedSection function_segments_, rows_;
  std::vector<uint8_t> packed_nodes_;  // kNodes
  size_t node_count_ = 0;
  std::vector<NameRecord> names_;
  FlatTable<NameSlot> name_ids_;
  std::vector<uint32_t> name_numbers_;  // the merged unit's distinct names → name records
  std::vector<CallDiscriminatorRecord> call_discriminators_;
  DistinctStrings start_files_;
  std::unordered_map<const dwarf::LineTable*, uint32_t> line_table_ids_;
  std::vector<LineTableRecord> line_tables_;
  std::vector<uint32_t> paths_;   // per unit, file index → number into path_strings_
  DistinctStrings path_strings_;  // units share most of their headers
  bool too_big_ = false;

  PieceStream stream_;  // the regions joined
  IndexImage image_;
  // Layout: header, section table, then each section 8-byte aligned: first those final after
  // the merge (handed to the sink while the strings are compressed), then the strings' three.
  std::vector<Section> sections_;
  std::vector<uint8_t>* head_ = nullptr;  // kept by image_
  std::vector<SectionEntry> entries_;
  // (file offset, bytes) of every piece after the head, in file order.
  std::vector<std::pair<uint64_t, std::span<const uint8_t>>> placed_;
  uint64_t offset_ = 0;
  size_t early_sections_ = 0, early_pieces_ = 0;
  std::vector<uint32_t>* chunk_crcs_ = nullptr;  // kept by image_
};

Result<IndexImage> IndexBuild::Run(std::unique_ptr<dwarf::DebugInfoSource>* dwarf,
                                   IndexSink* sink) {
  OpenDwarf();
  StartSymbolTable();
  if (ExportUnits()) {
    if (symbol_worker_) symbol_worker_->Join();  // the merge is the first to read its tables
    CountMergedPaths();
    StartTraining();
    MergeUnits();
    FinishMerge();
  }
  if (symbol_worker_) symbol_worker_->Join();  // no units to merge: joined here
  AddGoUnit();
  if (Result<void> joined = JoinRegions(); !joined) return std::move(joined).error();
  LayOutRecords(sink);
  if (Result<void> compressed = CompressStrings(); !compressed) {
    return std::move(compressed).error();
  }
  if (Result<void> laid = LayOutStrings(); !laid) return std::move(laid).error();
  SumChunks();
  WriteHead(sink);
  if (dwarf != nullptr) *dwarf = std::move(source_);
  return std::move(image_);
}

// The DWARF opened first: a compressed .debug_info inflates on a thread of its own from then
// on, while the symbol table is read.
void IndexBuild::OpenDwarf() {
  dwarf::DwarfOptions dwarf_options;
  dwarf_options.search = options_.search;
  // Linkage names only: demangling all of a big C++ binary's names was a third of a build,
  // and a lookup demangles the few it prints (SymbolIndex::AttachNameMemo).
  dwarf_options.demangle = false;
  dwarf_options.inlines = true;
  dwarf::DebugInfoSource::OpenTuning tuning;
  tuning.stream_info_from = options_.stream_info_from;
  if (auto opened = dwarf::DebugInfoSource::Open(elf_, dwarf_options, tuning); opened) {
    source_ = std::move(*opened);
  }
  // Where a stripped binary's missing symbols come from, as the direct path finds them.
  fallback_symbols_ =
      elf::FallbackSymbolTable(*elf_, source_ ? source_->files().debug_file().get() : nullptr);
}

// The symbol table on a thread of its own, while the DWARF's units are walked and exported:
// on a binary whose .debug_info is not compressed (python3.11d) it would otherwise hold both
// cores' work back by its own (reading, sorting and naming 26 000 symbols, a quarter of the
// build). Joined before the merge, the first to read what it makes.
void IndexBuild::StartSymbolTable() {
  if (ThreadCount(options_.threads, 2) > 1) {
    symbol_worker_ = std::make_unique<SpreadThread>([this] { IndexSymbols(); });
  } else {
    IndexSymbols();
  }
}

// The symbol records, their address segments and names (on the symbol table's thread).
void IndexBuild::IndexSymbols() {
  size_t count = elf_->symbols().symbols().size() + elf_->plt_symbols().symbols().size() +
                 elf_->absolute_symbols().symbols().size();
  if (fallback_symbols_ != nullptr) count += fallback_symbols_->symbols().size();
  strings_.Reserve(count);
  linkage_.Reserve(count / 4);
  NameSymbols(FlattenSymbolTable());
  IndexGoAnswers();
}

// The symbol segments and records: the binary's table flattened (FlattenSymbols), a stripped
// binary's debug-file (or MiniDebugInfo) symbols in its gaps (OverlayGaps), then its absolute
// symbols and the PLT stubs' names in the gaps left, as the direct path asks them
// (ElfSymbolizer::FillFromSymbolTable). Returns each record's symbol.
std::vector<const ElfSymbol*> IndexBuild::FlattenSymbolTable() {
  std::vector<SymbolPiece> pieces = FlattenSymbols(elf_->symbols());
  if (fallback_symbols_ != nullptr)
    pieces = OverlayGaps(pieces, FlattenSymbols(*fallback_symbols_));
  if (const SymbolTable* absolute = elf::AbsoluteSymbolTable(*elf_); absolute != nullptr)
    pieces = OverlayGaps(pieces, FlattenSymbols(*absolute));
  if (const SymbolTable* plt = elf::PltSymbolTable(*elf_); plt != nullptr)
    pieces = OverlayGaps(pieces, FlattenSymbols(*plt));
  std::unordered_map<const ElfSymbol*, int32_t> record_of;
  std::vector<const ElfSymbol*> by_record;
  // Sized once: grown by doubling, the segments of a big symbol table held 1.5 times their
  // bytes at the build's peak.
  symbol_segments_.reserve(pieces.size());
  for (const SymbolPiece& piece : pieces) {
    int32_t record = -1;
    if (piece.symbol != nullptr) {
      auto [it, added] = record_of.try_emplace(piece.symbol, static_cast<int32_t>(symbols_.size()));
      if (added) {
        symbols_.push_back({piece.symbol->address, piece.symbol->size, {}, {}});
        by_record.push_back(piece.symbol);
      }
      record = it->second;
    }
    uint32_t flags = piece.fallback ? kSegmentOnlyWithoutFrames : 0;
    symbol_segments_.push_back({piece.start, record, flags});
  }
  return by_record;
}

// Names stored as they are (linkage names: lookups demangle what they print), hashed on all
// cores; the first the string table numbers (nothing else adds any before the merge).
void IndexBuild::NameSymbols(const std::vector<const ElfSymbol*>& by_record) {
  symbol_strings_.resize(symbols_.size());
  unsigned threads = ThreadCount(options_.threads, symbols_.size() / 512);
  RunOnThreads(threads, [&](unsigned t) {
    for (size_t k = t; k < by_record.size(); k += threads) {
      SymbolString& s = symbol_strings_[k];
      s.raw = s.pretty = by_record[k]->name;
      s.pretty_hash = HashBytes(s.pretty);
      s.raw_hash = 0;  // the same string
    }
  });
  for (size_t k = 0; k < symbols_.size(); ++k) {
    const SymbolString& s = symbol_strings_[k];
    symbols_[k].pretty = AddName(s.pretty, s.pretty_hash);
    symbols_[k].raw = LinkageRef(s.raw, s.raw_hash == 0, symbols_[k].pretty, s.raw_hash);
  }
}

// The Go pclntab's answers for every address, where the binary has a table, as the direct path
// reads them from it (ElfSymbolizer asks them for what the symbol table and DWARF leave
// without frames; so does it from the index): the table asked once per piece of addresses
// that it answers alike (GoPclntab::LookupBounds), with inlines (the answer without them is
// the function at the innermost frame's place), and the pieces encoded as one more unit's
// segments (→ the chain without the innermost place) and rows (→ that place), neighbouring
// pieces joined where they map to the same.
void IndexBuild::IndexGoAnswers() {
  auto found = elf::FindGoPclntab(*elf_);
  // A table that cannot be read answers nothing on the direct path either (LoadGoPclntab).
  if (!found || !*found) return;
  go_table_ = std::move(**found);
  const elf::GoPclntab& table = *go_table_;
  std::vector<uint64_t> bounds = table.LookupBounds();
  if (bounds.empty() || bounds.front() != 0) bounds.insert(bounds.begin(), 0);
  go_paths_.push_back(path_strings_.Id(AddFile("")));  // file 0: unknown
  std::vector<dwarf::AddressSegment> segments;
  std::vector<dwarf::LineRow> rows;
  std::vector<elf::GoFrame> frames;
  elf::GoFunction function, previous;
  elf::GoPclntab::LookupMemo memo;  // each function's tables decoded once
  for (uint64_t start : bounds) {
    dwarf::AddressSegment segment{start, -1};
    dwarf::LineRow row{start, 0, 0, dwarf::LineRow::kEndSequence};
    if (table.Lookup(start, true, &frames, &function, &memo) && !function.name.empty() &&
        !frames.empty()) {
      const bool same_function = !go_functions_.empty() && function.entry == previous.entry &&
                                 function.end == previous.end &&
                                 function.name.data() == previous.name.data() &&
                                 function.name.size() == previous.name.size();
      if (!same_function) {
        go_functions_.push_back({function.entry, function.end, GoName(function.name)});
        previous = function;
      }
      uint32_t outer = kNoGoFrame;
      for (size_t k = frames.size(); k-- > 1;) outer = GoFrameId(frames[k], outer);
      const uint32_t context =
          GoContextId(static_cast<uint32_t>(go_functions_.size() - 1), frames[0], outer);
      segment.id = static_cast<int32_t>(std::min<uint32_t>(context, INT32_MAX));
      row.line = frames[0].line;
      row.file = static_cast<uint16_t>(std::min<uint32_t>(GoFile(frames[0].file), 0xffff));
    } else if (segments.empty()) {
      continue;  // before the first answer: the unit starts there
    }
    if (segments.empty() || segments.back().id != segment.id) segments.push_back(segment);
    if (rows.empty() || rows.back().file != row.file || rows.back().line != row.line) {
      rows.push_back(row);
    }
  }
  if (go_contexts_.size() > INT32_MAX || go_frames_.size() >= kNoGoFrame ||
      go_paths_.size() >= dwarf::LineRow::kEndSequence) {
    DropGoAnswers();  // more than the records can number: the binary's table answers
    return;
  }
  EncodeSegments(segments, &go_part_);
  EncodeRows(rows, {}, &go_part_);
  go_part_.row_count = static_cast<uint32_t>(rows.size());
  if (go_part_.too_big || rows.size() > 0xffffffffu) DropGoAnswers();
}

// No Go answers in the index after all (the strings added stay, unread).
void IndexBuild::DropGoAnswers() {
  go_table_.reset();
  go_part_ = {};
  go_contexts_.clear();
  go_functions_.clear();
  go_frames_.clear();
  go_paths_.clear();
}

StrRef IndexBuild::GoName(std::string_view name) {
  if (name.empty()) return {};
  auto [it, added] = go_names_.try_emplace(name.data());
  if (added || it->second.size != name.size()) {
    const uint64_t hash = HashBytes(name);
    it->second = AddName(name, hash);
    go_strings_.names.push_back({name, hash});
  }
  return it->second;
}

// The file's number in the Go unit's paths (0: unknown).
uint32_t IndexBuild::GoFile(std::string_view file) {
  if (file.empty()) return 0;
  auto [it, added] = go_files_.try_emplace(file.data());
  if (added) {
    const uint64_t hash = HashBytes(file);
    it->second = static_cast<uint32_t>(go_paths_.size());
    go_paths_.push_back(path_strings_.Id(AddFile(file, hash)));
    go_strings_.files.push_back({file, hash});
  }
  return it->second;
}

// The context's record (each distinct one once: the pieces of a function's code share them).
uint32_t IndexBuild::GoContextId(uint32_t function, const elf::GoFrame& innermost, uint32_t outer) {
  GoContextRecord record{GoName(innermost.function), function, outer,
                         innermost.inlined ? kGoFrameInlined : 0u, 0};
  const uint64_t hash =
      MixHash((uint64_t{record.name.offset} << 32 | record.name.size) * 0x9e3779b97f4a7c15 ^
              (uint64_t{record.function} << 32 | record.outer) * 0xc2b2ae3d27d4eb4f ^ record.flags);
  GoRecordSlot& slot = go_context_ids_.Find(hash, [&](const GoRecordSlot& s) {
    const GoContextRecord& r = go_contexts_[s.id];
    return r.name.offset == record.name.offset && r.name.size == record.name.size &&
           r.function == record.function && r.outer == record.outer && r.flags == record.flags;
  });
  if (!slot.empty()) return slot.id;
  const uint32_t id = static_cast<uint32_t>(go_contexts_.size());
  slot = {hash, id};
  go_context_ids_.Filled();
  go_contexts_.push_back(record);
  return id;
}

// An outer frame's record, `outer` its caller's (each distinct frame once).
uint32_t IndexBuild::GoFrameId(const elf::GoFrame& frame, uint32_t outer) {
  GoFrameRecord record{GoName(frame.function), GoFile(frame.file), frame.line, outer,
                       frame.inlined ? kGoFrameInlined : 0u};
  const uint64_t hash =
      MixHash((uint64_t{record.function.offset} << 32 | record.function.size) * 0x9e3779b97f4a7c15 ^
              (uint64_t{record.file} << 32 | record.line) * 0xc2b2ae3d27d4eb4f ^
              (uint64_t{record.outer} << 1 | record.flags));
  GoRecordSlot& slot = go_frame_ids_.Find(hash, [&](const GoRecordSlot& s) {
    const GoFrameRecord& r = go_frames_[s.id];
    return r.function.offset == record.function.offset && r.function.size == record.function.size &&
           r.file == record.file && r.line == record.line && r.outer == record.outer &&
           r.flags == record.flags;
  });
  if (!slot.empty()) return slot.id;
  const uint32_t id = static_cast<uint32_t>(go_frames_.size());
  slot = {hash, id};
  go_frame_ids_.Filled();
  go_frames_.push_back(record);
  return id;
}

// The Go answers' unit, after the DWARF's: its segments and rows appended to theirs, its line
// table and paths added.
void IndexBuild::AddGoUnit() {
  if (go_table_ == nullptr) return;
  UnitRecord unit;
  unit.ok = 1;
  unit.segment_begin = static_cast<uint32_t>(function_segments_.block_count);
  unit.segment_base = go_part_.segment_base;
  unit.segment_count = go_part_.segment_count;
  too_big_ |= !function_segments_.Append(go_part_.segment_blocks, go_part_.segment_bytes);
  unit.line_table = static_cast<uint32_t>(line_tables_.size());
  line_tables_.push_back(
      {static_cast<uint32_t>(rows_.block_count), static_cast<uint32_t>(go_part_.row_count)});
  too_big_ |= !rows_.Append(go_part_.blocks, go_part_.rows);
  unit.path_begin = static_cast<uint32_t>(paths_.size());
  paths_.insert(paths_.end(), go_paths_.begin(), go_paths_.end());
  unit.path_count = static_cast<uint32_t>(go_paths_.size());
  go_unit_.push_back(unit);
}

// Every unit exported and encoded on the thread that takes it (the merge after only appends
// the parts in unit order and adds the names, the one shared table), beside the symbol
// table's thread. False when there is no unit.
bool IndexBuild::ExportUnits() {
  if (source_) {
    // The units whose bytes have arrived, while the rest of a streamed .debug_info is still
    // being inflated (the cores are otherwise idle until then): exported, and their bytes
    // given back, where the stream allows it; else their function tables built.
    dwarf::UnitCache& units = source_->units();
    if (size_t room = units.BeginStreamedExport(); room > 0) {
      parts_.resize(room);
      units.ExportWhileStreaming(options_.threads, [this](size_t i) { ExportUnit(i); });
    } else {
      units.PrebuildEveryUnit(options_.threads);
    }
  }
  const size_t unit_total = source_ ? source_->units().unit_count() : 0;  // waits for the stream
  parts_.resize(unit_total);
  if (unit_total == 0) return false;
  dwarf::UnitCache& src = source_->units();
  std::vector<size_t> parallel, serial;
  for (size_t i = 0; i < unit_total; ++i) {
    if (src.exported_while_streaming(i)) continue;
    (src.IsSplitUnit(i) ? serial : parallel).push_back(i);
  }
  // Biggest units first (their size is the best guess of their cost): the threads then
  // finish together instead of one exporting a big unit while the other idles.
  std::stable_sort(parallel.begin(), parallel.end(),
                   [&](size_t a, size_t b) { return src.UnitSize(a) > src.UnitSize(b); });
  std::atomic<size_t> next{0};
  RunOnThreads(ThreadCount(options_.threads, parallel.size()), [&](unsigned) {
    for (size_t k = next.fetch_add(1); k < parallel.size(); k = next.fetch_add(1)) {
      ExportUnit(parallel[k]);
    }
  });
  for (size_t i : serial) ExportUnit(i);
  return true;
}

// Unit `i`'s part: its function segments, nodes and distinct names, and its line table's
// rows if no other unit encoded them (on an exporting thread).
void IndexBuild::ExportUnit(size_t i) {
  UnitPart& part = parts_[i];
  part.tables = source_->units().ExportUnit(i);
  if (!part.tables.ok) return;
  EncodeFunctions(part.tables, &part);
  // Per node, only what the parts now hold: dropped unit by unit, not after them all,
  // the unit's function table included (its memory then serves the next units' parts).
  Release(part.tables.raw_names);
  Release(part.tables.pretty_names);
  Release(part.tables.starts);
  part.tables.segments = {};
  part.tables.nodes = {};
  source_->units().ReleaseUnitFunctions(i);
  if (part.tables.line == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(encoded_mutex_);
    if (!encoded_by_.try_emplace(part.tables.line, i).second) return;  // another unit's
  }
  EncodeRows(part.tables.line->rows(), part.tables.line->discriminators(), &part);
  part.row_count = static_cast<uint32_t>(part.tables.line->rows().size());
  // Encoded now: while the units stream in, their rows go (21 MB on libceph-common).
  source_->units().ReleaseLineRows(part.tables.line);
}

// Per part, how many of its paths the merge adds: before the training starts, which reads
// them too.
void IndexBuild::CountMergedPaths() {
  merged_path_counts_.assign(parts_.size(), 0);
  for (size_t i = 0; i < parts_.size(); ++i) {
    const dwarf::UnitTables& t = parts_[i].tables;
    if (!t.ok || t.line == nullptr) continue;
    const UnitPart& encoded = parts_[encoded_by_.at(t.line)];
    merged_path_counts_[i] =
        std::min(std::max(encoded.row_files, parts_[i].call_files), t.paths.size());
  }
}

// The training started before the merge, on a thread of its own: it overlaps all of the
// merge, the tables' set-up included.
void IndexBuild::StartTraining() {
  // Most of the DWARF's memory (the decompressed .debug_info above all) is not read again:
  // given back now, it serves the merge, the compression and the file's pages instead of
  // fresh ones (on libceph-common peak RSS 553 -> 480 MB, and 2-3 % off the cold run on
  // the 2-vCPU VM, where a fresh page costs several times a reused one). Nothing from here
  // on reads those sections: on the training's thread, before it trains, the 10-12 ms the
  // kernel takes to free them overlap the merge instead of delaying it.
  if (ThreadCount(options_.threads, 2) > 1) {
    trainer_ = std::make_unique<SpreadThread>([this] {
      source_->units().ReleaseExportedSections();
      TrainDictionary();
    });
  } else {
    source_->units().ReleaseExportedSections();
  }
}

// The dictionary trained on the stream the merge makes (or made), made apart from it.
void IndexBuild::TrainDictionary() {
  dictionary_ = TrainStringDictionary(
      StreamAsMerged(parts_, merged_path_counts_, symbol_strings_, go_strings_));
}

// The merge, on the main thread beside the training: the units' parts appended in unit
// order, their names numbered in the one shared table.
void IndexBuild::MergeUnits() {
  for (const dwarf::AddressSegment& s : source_->units().unit_map()) {
    unit_segments_.push_back({s.start, s.id, 0});
  }
  // Distinct names are fewer than the units' ones added up (units share most of them). A
  // C binary's linkage table stays empty (sized like the names', it was 1.5 MB of fresh
  // pages on python3.11d).
  const NameCounts counts = CountNames(parts_);
  name_ids_.Reserve(counts.carriers / 2);
  strings_.Reserve(counts.carriers / 2);
  linkage_.Reserve(counts.mangled / 2);
  // Room for every unit's packed nodes at their widest (names of 31 bits), so that they are
  // packed in place, never moved (the pages past what they take are never touched).
  uint64_t packed_bound = kNodePadding;
  for (const UnitPart& part : parts_) {
    packed_bound += (part.nodes.size() * (part.node_widths.bits() + 31) + 7) / 8 + kNodePadding;
  }
  packed_nodes_.reserve(packed_bound);
  for (size_t i = 0; i < parts_.size(); ++i) units_.push_back(MergeUnit(i));
}

// Part `i` merged: the parts' records become the file's in place (node names, row block
// offsets), so that the sections are written from them, without a merged copy.
UnitRecord IndexBuild::MergeUnit(size_t i) {
  UnitPart& part = parts_[i];
  UnitRecord unit;
  if (!part.tables.ok) return unit;
  unit.ok = 1;
  too_big_ |= part.too_big;
  unit.segment_begin = static_cast<uint32_t>(function_segments_.block_count);
  unit.segment_base = part.segment_base;
  unit.segment_count = part.segment_count;
  too_big_ |= !function_segments_.Append(part.segment_blocks, part.segment_bytes);
  unit.node_begin = static_cast<uint32_t>(node_count_);
  NumberNames(part);
  PackNodes(part, &unit);
  for (const CallDiscriminatorRecord& d : part.call_discriminators) {
    call_discriminators_.push_back({static_cast<uint32_t>(node_count_ + d.node), d.discriminator});
  }
  unit.node_count = static_cast<uint32_t>(part.nodes.size());
  node_count_ += part.nodes.size();
  Release(part.nodes);
  if (part.tables.line != nullptr) AddLineTable(i, &unit);
  return unit;
}

// The unit's distinct names numbered in the name records (name_numbers_).
void IndexBuild::NumberNames(const UnitPart& part) {
  name_numbers_.clear();
  for (const UnitPart::Carrier& c : part.carriers) {
    StrRef pretty = AddName(c.pretty, c.pretty_hash);
    StrRef raw = LinkageRef(c.raw, c.raw_hash == 0, pretty, c.raw_hash);
    name_numbers_.push_back(
        NameId(raw, pretty, StartFileId(c.start_file, c.start_file_hash), c.start_line));
  }
}

uint32_t IndexBuild::NameId(StrRef raw, StrRef pretty, uint32_t start_file, uint32_t start_line) {
  uint64_t key_hash = MixHash((uint64_t{raw.offset} << 32 | raw.size) * 0x9e3779b97f4a7c15 ^
                              (uint64_t{pretty.offset} << 32 | pretty.size) ^
                              (uint64_t{start_file} << 32 | start_line) * 0xc2b2ae3d27d4eb4f);
  auto same = [&](const NameSlot& slot) {
    const NameRecord& n = names_[slot.id];
    return n.raw.offset == raw.offset && n.raw.size == raw.size &&
           n.pretty.offset == pretty.offset && n.pretty.size == pretty.size &&
           n.start_file == start_file && n.start_line == start_line;
  };
  NameSlot& slot = name_ids_.Find(key_hash, same);
  if (!slot.empty()) return slot.id;
  uint32_t id = static_cast<uint32_t>(names_.size());
  slot = {key_hash, id};
  names_.push_back({raw, pretty, start_file, start_line});
  name_ids_.Filled();
  return id;
}

// The unit's nodes packed as wide as its values need, names now numbered.
void IndexBuild::PackNodes(const UnitPart& part, UnitRecord* unit) {
  NodeWidths widths = part.node_widths;
  uint32_t max_name = 0;
  for (uint32_t id : name_numbers_) max_name = std::max(max_name, id);
  widths.name = static_cast<uint8_t>(std::bit_width(max_name));
  const uint64_t node_bits = widths.bits(), packed_at = packed_nodes_.size();
  const uint64_t packed_size = (part.nodes.size() * node_bits + 7) / 8;
  too_big_ |= packed_at + packed_size > 0xffffffffu;
  unit->node_offset = static_cast<uint32_t>(packed_at);
  unit->node_widths = widths.Packed();
  // Room for the last fields' 8-byte writes; the bytes past the unit stay zero.
  packed_nodes_.resize(packed_at + packed_size + kNodePadding);
  uint8_t* packed = packed_nodes_.data() + packed_at;
  const unsigned name_at = widths.parent, inlined_at = name_at + widths.name,
                 line_at = inlined_at + 1, file_at = line_at + widths.line,
                 column_at = file_at + widths.file;
  for (size_t k = 0; k < part.nodes.size(); ++k) {
    const NodeRecord& r = part.nodes[k];
    const uint64_t fields[] = {r.parent < 0 ? 0 : k - static_cast<uint64_t>(r.parent),
                               name_numbers_[r.name & ~kNodeInlined],
                               (r.name & kNodeInlined) != 0 ? 1u : 0u,
                               r.call_line,
                               r.call_file,
                               r.call_column};
    const unsigned field_at[] = {0, name_at, inlined_at, line_at, file_at, column_at};
    const uint64_t bit = k * node_bits;
    if (node_bits <= 57) {
      // The whole record in one word: with the bit offset in its first byte (below 8) it
      // still fits one 8-byte write.
      uint64_t record = 0;
      for (size_t f = 0; f < 6; ++f) record |= fields[f] << field_at[f];
      PutBits(packed, bit, record);
    } else {
      for (size_t f = 0; f < 6; ++f) {
        if (fields[f] != 0) PutBits(packed, bit + field_at[f], fields[f]);
      }
    }
  }
  packed_nodes_.resize(packed_at + packed_size);
}

// Part `i`'s line table (its rows appended when first named) and paths.
void IndexBuild::AddLineTable(size_t i, UnitRecord* unit) {
  const dwarf::UnitTables& t = parts_[i].tables;
  auto [it, inserted] =
      line_table_ids_.try_emplace(t.line, static_cast<uint32_t>(line_tables_.size()));
  UnitPart& encoded = parts_[encoded_by_.at(t.line)];
  if (inserted) {
    LineTableRecord record;
    record.block_begin = static_cast<uint32_t>(rows_.block_count);
    record.row_count = encoded.row_count;
    too_big_ |= !rows_.Append(encoded.blocks, encoded.rows);
    line_tables_.push_back(record);
  }
  unit->line_table = it->second;
  // Only the paths a row or a call site names are ever read: the file table's tail past the
  // last of them is left out (a lookup past the end reads an unknown path, which no lookup
  // asks for).
  const size_t path_count = merged_path_counts_[i];
  unit->path_begin = static_cast<uint32_t>(paths_.size());
  for (size_t p = 0; p < path_count; ++p) {
    paths_.push_back(path_strings_.Id(AddFile(t.paths[p], parts_[i].path_hashes[p])));
  }
  unit->path_count = static_cast<uint32_t>(paths_.size() - unit->path_begin);
}

// The training joined (or run, on one thread), then what only the merge and the training
// read freed before the strings are compressed (which then reuses the memory instead of
// faulting in more).
void IndexBuild::FinishMerge() {
  if (trainer_) {
    trainer_->Join();
  } else {
    TrainDictionary();
  }
  trained_ = true;
  for (UnitPart& part : parts_) {
    part.tables = {};
    Release(part.carriers);
    Release(part.call_discriminators);
    Release(part.path_hashes);
  }
  Release(encoded_by_);
  Release(line_table_ids_);
  Release(name_numbers_);
}

// The regions joined into one stream once every string is in: every ref loses its tag and
// moves by its region's start. Fails when the index could not number what it holds.
Result<void> IndexBuild::JoinRegions() {
  const uint64_t region_base[] = {0, files_.bytes().size(),
                                  files_.bytes().size() + strings_.bytes().size()};
  too_big_ |= files_.bytes().size() > kLocalMask || strings_.bytes().size() > kLocalMask ||
              linkage_.bytes().size() > kLocalMask;
  auto place = [&](StrRef& ref) {
    ref.offset =
        static_cast<uint32_t>(region_base[ref.offset >> kRegionShift] + (ref.offset & kLocalMask));
  };
  for (SymbolRecord& symbol : symbols_) place(symbol.raw), place(symbol.pretty);
  for (NameRecord& name : names_) place(name.raw), place(name.pretty);
  for (GoContextRecord& context : go_contexts_) place(context.name);
  for (GoFunctionRecord& function : go_functions_) place(function.name);
  for (GoFrameRecord& frame : go_frames_) place(frame.function);
  for (StrRef& ref : start_files_.refs()) place(ref);
  for (StrRef& ref : path_strings_.refs()) place(ref);
  for (const StringTable* region : {&files_, &strings_, &linkage_}) {
    stream_.Append(region->bytes());
  }
  if (rows_.byte_count > 0xffffffffu || node_count_ > 0xffffffffu || stream_.size() > 0xffffffffu ||
      names_.size() >= kNodeInlined || too_big_) {
    return Error(ErrorCode::kUnsupported,
                 "binary too big for an index (over 2^32 records, a unit over 4 GiB or a call "
                 "file index over 65535)")
        .WithFile(elf_->path());
  }
  return {};
}

// Every section but the strings' laid out and handed to the sink: final now, they are written
// while the strings compress.
void IndexBuild::LayOutRecords(IndexSink* sink) {
  std::vector<SourceFile> source_files;
  if (source_) {
    for (const auto& f : source_->files().files_read())
      source_files.push_back({f->path(), f->identity()});
  }
  const std::string& identity = image_.Keep(DescribeSources(
      *elf_, options_.search, source_ ? source_->path() : std::string(), source_files));
  image_.Keep(std::move(parts_));  // the pieces of several sections
  sections_.push_back(
      {SectionKind::kIdentity,
       OnePiece({reinterpret_cast<const uint8_t*>(identity.data()), identity.size()})});
  sections_.push_back({SectionKind::kNames, Kept(std::move(names_))});
  sections_.push_back({SectionKind::kSymbols, Kept(std::move(symbols_))});
  sections_.push_back({SectionKind::kSymbolSegments, Kept(std::move(symbol_segments_))});
  sections_.push_back({SectionKind::kUnitSegments, Kept(std::move(unit_segments_))});
  sections_.push_back({SectionKind::kUnits, Kept(std::move(units_))});
  sections_.push_back({SectionKind::kFunctionSegments, std::move(function_segments_.blocks)});
  sections_.push_back({SectionKind::kFunctionSegmentBytes, std::move(function_segments_.bytes)});
  packed_nodes_.resize(packed_nodes_.size() + kNodePadding);  // every field one 8-byte load
  sections_.push_back({SectionKind::kNodes, Kept(std::move(packed_nodes_))});
  sections_.push_back({SectionKind::kLineTables, Kept(std::move(line_tables_))});
  sections_.push_back({SectionKind::kRowBlocks, std::move(rows_.blocks)});
  sections_.push_back({SectionKind::kPaths, Kept(std::move(paths_))});
  sections_.push_back({SectionKind::kRowBytes, std::move(rows_.bytes)});
  sections_.push_back({SectionKind::kStartFiles, Kept(std::move(start_files_.refs()))});
  sections_.push_back({SectionKind::kCallDiscrims, Kept(std::move(call_discriminators_))});
  sections_.push_back({SectionKind::kPathStrings, Kept(std::move(path_strings_.refs()))});
  image_.Keep(std::move(go_part_));  // its segments and rows are pieces of sections above
  sections_.push_back({SectionKind::kGoUnit, Kept(std::move(go_unit_))});
  sections_.push_back({SectionKind::kGoContexts, Kept(std::move(go_contexts_))});
  sections_.push_back({SectionKind::kGoFunctions, Kept(std::move(go_functions_))});
  sections_.push_back({SectionKind::kGoFrames, Kept(std::move(go_frames_))});
  early_sections_ = sections_.size();
  // The strings' three and the chunk checksums still to come.
  head_ = &image_.Keep(
      std::vector<uint8_t>(sizeof(FileHeader) + kSectionKindCount * sizeof(SectionEntry)));
  offset_ = head_->size();
  for (const Section& section : sections_) LayOut(section);
  if (sink != nullptr) {
    std::vector<std::span<const uint8_t>> early;
    for (const auto& [at, bytes] : placed_) early.push_back(bytes);
    sink->WriteEarly(head_->size(), std::move(early));
  }
  early_pieces_ = placed_.size();
}

void IndexBuild::LayOut(const Section& section) {
  PadOffset();
  uint64_t size = 0;
  for (std::span<const uint8_t> piece : section.pieces) {
    if (piece.empty()) continue;
    placed_.push_back({offset_ + size, piece});
    size += piece.size();
  }
  entries_.push_back({static_cast<uint32_t>(section.kind), 0, offset_, size});
  offset_ += size;
}

// Zeros up to the next 8-byte boundary.
void IndexBuild::PadOffset() {
  static constexpr uint8_t kZeros[8] = {};
  if (uint64_t padded = (offset_ + 7) & ~uint64_t{7}; padded != offset_) {
    placed_.push_back({offset_, {kZeros, padded - offset_}});
    offset_ = padded;
  }
}

// The string stream compressed block by block on all cores with the dictionary (trained here
// when there was no merge to train it beside), while the sink writes the records.
Result<void> IndexBuild::CompressStrings() {
  const size_t block_total = (stream_.size() + kStringBlockSize - 1) / kStringBlockSize;
  if (!trained_) TrainDictionary();
  const std::vector<uint8_t>& dictionary = image_.Keep(std::move(dictionary_));
  ZSTD_CDict* cdict =
      dictionary.empty() ? nullptr
                         : ZSTD_createCDict(dictionary.data(), dictionary.size(), kStringZstdLevel);
  if (!dictionary.empty() && cdict == nullptr) {
    return Error(ErrorCode::kIo, "out of memory (zstd dictionary)");
  }
  std::vector<uint32_t> frame_sizes(block_total);
  std::vector<std::span<const uint8_t>> compressed;
  const bool ok = CompressBlocks(cdict, &frame_sizes, &compressed);
  ZSTD_freeCDict(cdict);
  if (!ok) return Error(ErrorCode::kIo, "zstd could not compress the strings");
  std::vector<uint64_t>& string_blocks = image_.Keep(std::vector<uint64_t>{stream_.size()});
  string_blocks.reserve(block_total + 2);
  uint64_t compressed_size = 0;
  for (uint32_t n : frame_sizes) {
    string_blocks.push_back(compressed_size);
    compressed_size += n;
  }
  if (block_total > 0) string_blocks.push_back(compressed_size);
  sections_.push_back({SectionKind::kStringDict, OnePiece(AsBytes(dictionary))});
  sections_.push_back({SectionKind::kStringBlocks, OnePiece(AsBytes(string_blocks))});
  sections_.push_back({SectionKind::kStrings, std::move(compressed)});
  return {};
}

// Blocks are taken in runs, each run's frames appended to one buffer of its own: a buffer per
// frame would hold twice its bytes (room for the worst case) until copied out. False when
// zstd fails.
bool IndexBuild::CompressBlocks(const ZSTD_CDict* cdict, std::vector<uint32_t>* frame_sizes,
                                std::vector<std::span<const uint8_t>>* compressed) {
  const size_t block_total = frame_sizes->size();
  // Runs of up to 256 blocks, but at least four per thread, so that a small stream (python3.11d:
  // 240 blocks) is compressed on all cores too.
  const unsigned compress_threads = ThreadCount(options_.threads, block_total);
  const size_t blocks_per_run =
      std::clamp<size_t>(block_total / (size_t{4} * compress_threads), 16, 256);
  const size_t run_count = (block_total + blocks_per_run - 1) / blocks_per_run;
  std::vector<std::vector<uint8_t>>& runs =
      image_.Keep(std::vector<std::vector<uint8_t>>(run_count));
  std::atomic<bool> failed{false};
  std::atomic<size_t> next_run{0};
  RunOnThreads(ThreadCount(options_.threads, run_count), [&](unsigned) {
    ZSTD_CCtx* context = ZSTD_createCCtx();
    // The reader knows its one dictionary: frames need not name it (4 bytes each).
    if (context == nullptr ||
        ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, kStringZstdLevel)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_dictIDFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_refCDict(context, cdict))) {
      failed = true;
    }
    std::vector<uint8_t> scratch;
    for (size_t r = next_run.fetch_add(1); r < run_count && !failed; r = next_run.fetch_add(1)) {
      std::vector<uint8_t>& out = runs[r];
      const size_t first = r * blocks_per_run, last = std::min(block_total, first + blocks_per_run);
      // Blocks of names compress about tenfold: a quarter of the input is room enough for
      // most runs; a frame that finds too little grows the buffer first.
      out.reserve((last - first) * kStringBlockSize / 4);
      for (size_t k = first; k < last; ++k) {
        size_t from = k * kStringBlockSize;
        size_t size = std::min<size_t>(kStringBlockSize, stream_.size() - from);
        size_t bound = ZSTD_compressBound(size), at = out.size();
        if (out.capacity() - at < bound) out.reserve(std::max(out.capacity() * 2, at + bound));
        out.resize(at + bound);
        size_t n = ZSTD_compress2(context, out.data() + at, bound,
                                  stream_.Range(from, size, &scratch), size);
        if (ZSTD_isError(n)) {
          failed = true;
          break;
        }
        out.resize(at + n);
        (*frame_sizes)[k] = static_cast<uint32_t>(n);
      }
    }
    ZSTD_freeCCtx(context);
  });
  for (const std::vector<uint8_t>& run : runs) compressed->push_back(AsBytes(run));
  return !failed;
}

// The strings' three sections laid out after the records.
Result<void> IndexBuild::LayOutStrings() {
  for (size_t i = early_sections_; i < sections_.size(); ++i) LayOut(sections_[i]);
  PadOffset();
  if (entries_.size() + 1 != kSectionKindCount) {
    return Error(ErrorCode::kIo, "index sections miscounted");
  }
  return {};
}

// Checksums per chunk (docs/index-format.md): a reader sums only the chunks it reads. A chunk
// may span pieces: each is summed on from the one before. On the serial path (4.5 ms for
// libceph-common's 29 MB on one thread): a thread per 512 KiB, so every index of more than
// 1 MiB is summed on all cores.
void IndexBuild::SumChunks() {
  const uint64_t chunks_end = offset_, table_end = head_->size();
  const size_t chunk_count = (chunks_end + kChunkSize - 1) / kChunkSize;
  std::vector<uint32_t>& chunk_crcs = image_.Keep(std::vector<uint32_t>(chunk_count));
  chunk_crcs_ = &chunk_crcs;
  unsigned crc_threads = ThreadCount(options_.threads, chunk_count / 128);
  RunOnThreads(crc_threads, [&](unsigned t) {
    const size_t first = chunk_count * t / crc_threads, last = chunk_count * (t + 1) / crc_threads;
    if (first == last) return;
    // The first piece ending past the first chunk's start.
    uint64_t begin = std::max<uint64_t>(first * uint64_t{kChunkSize}, table_end);
    size_t p = static_cast<size_t>(
        std::partition_point(
            placed_.begin(), placed_.end(),
            [&](const auto& piece) { return piece.first + piece.second.size() <= begin; }) -
        placed_.begin());
    for (size_t k = first; k < last; ++k) {
      uint64_t from = std::max<uint64_t>(k * uint64_t{kChunkSize}, table_end);
      uint64_t to = std::min<uint64_t>((k + 1) * uint64_t{kChunkSize}, chunks_end);
      uint32_t crc = 0;
      bool any = false;
      while (from < to && p < placed_.size()) {
        const auto& [at, bytes] = placed_[p];
        uint64_t lo = std::max(from, at), hi = std::min(to, at + bytes.size());
        crc = Crc32c(bytes.subspan(lo - at, hi - lo), crc);
        any = true;
        from = hi;
        if (hi == at + bytes.size()) ++p;
      }
      chunk_crcs[k] = any ? crc : 0;
    }
  });
  entries_.push_back({static_cast<uint32_t>(SectionKind::kChunkCrcs), Crc32c(AsBytes(chunk_crcs)),
                      chunks_end, chunk_count * sizeof(uint32_t)});
}

// The header and section table written last (they sum everything), then the image's pieces
// in file order.
void IndexBuild::WriteHead(IndexSink* sink) {
  constexpr size_t kCount = kSectionKindCount;
  std::vector<uint8_t>& head = *head_;
  std::memcpy(head.data() + sizeof(FileHeader), entries_.data(), kCount * sizeof(SectionEntry));
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.section_count = kCount;
  header.file_size = offset_ + chunk_crcs_->size() * sizeof(uint32_t);
  bool no_symbols = elf_->symbols().empty() && fallback_symbols_ == nullptr &&
                    elf::AbsoluteSymbolTable(*elf_) == nullptr &&
                    elf::PltSymbolTable(*elf_) == nullptr;
  header.flags = (no_symbols ? uint32_t{kSymbolTableEmpty} : 0u) |
                 (go_table_ != nullptr ? uint32_t{kGoAnswers} : 0u);
  std::span<const uint8_t> build_id = elf_->build_id();
  header.build_id_size = static_cast<uint8_t>(std::min(build_id.size(), sizeof(header.build_id)));
  // A Go binary may have no GNU build ID: an empty span's data() may be null.
  if (header.build_id_size > 0) std::memcpy(header.build_id, build_id.data(), header.build_id_size);
  header.header_crc = 0;
  uint32_t crc = Crc32c({reinterpret_cast<const uint8_t*>(&header), sizeof(header)});
  header.header_crc = Crc32c(
      std::span<const uint8_t>(head).subspan(sizeof(FileHeader), kCount * sizeof(SectionEntry)),
      crc);
  std::memcpy(head.data(), &header, sizeof(header));
  image_.Append(head);
  for (const auto& [at, bytes] : placed_) image_.Append(bytes);
  image_.Append(AsBytes(*chunk_crcs_));
  // Pieces are appended as placed, none empty: the head is piece 0, the early ones follow.
  if (sink != nullptr) image_.MarkEarly(1, 1 + early_pieces_);
}

}  // namespace

Result<IndexImage> IndexBuilder::Build(const std::shared_ptr<ElfFile>& elf,
                                       const IndexOptions& options,
                                       std::unique_ptr<dwarf::DebugInfoSource>* dwarf,
                                       IndexSink* sink) {
  return IndexBuild(elf, options).Run(dwarf, sink);
}

void IndexImage::Append(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) pieces_.push_back(bytes);
}

}  // namespace stacksym::index
