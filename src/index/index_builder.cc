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
#include "dwarf/debug_info_source.h"
#include "index/checksum.h"
#include "index/index_format.h"
#include "index/index_identity.h"

namespace stacksym::symindex {
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
             (b.data == s.data() || std::memcmp(b.data, s.data(), s.size()) == 0);
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

template <class T>
void Release(std::vector<T>& v) {
  std::vector<T>().swap(v);
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
                           const SymbolStrings& symbols) {
  NameCounts counts = CountNames(parts);
  counts.carriers += symbols.size();
  for (const SymbolString& s : symbols) counts.mangled += s.raw_hash != 0;
  // Distinct names are fewer than the units' ones added up (units share most of them).
  StringTable files(1024), names(counts.carriers / 2), linkage(counts.mangled / 2);
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

void EncodeFunctions(const dwarf::UnitTables& t, UnitPart* part) {
  part->segment_base = t.segments.empty() ? 0 : t.segments.front().start;
  part->too_big |= t.segments.size() > 0xffffffffu;
  part->segment_count = static_cast<uint32_t>(t.segments.size());
  part->segment_blocks.reserve((t.segments.size() + kSegmentsPerBlock - 1) / kSegmentsPerBlock);
  part->segment_bytes.reserve(t.segments.size() * 3);
  std::vector<uint8_t>& bytes = part->segment_bytes;
  uint64_t previous_start = 0;
  int64_t previous_node = 0;
  for (size_t k = 0; k < t.segments.size(); ++k) {
    const dwarf::AddressSegment& s = t.segments[k];
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

}  // namespace

Result<IndexImage> IndexBuilder::Build(const std::shared_ptr<ElfFile>& elf,
                                       const IndexOptions& options,
                                       std::unique_ptr<DebugInfoSource>* dwarf, IndexSink* sink) {
  // The string stream in three regions, each its own table until they are joined: the paths
  // and start files (few, and read by almost every lookup: their blocks stay cached), the
  // demangled names, then the linkage names (read only by callers that print them, so the
  // other lookups decompress blocks packed with what they need). While building, a ref's
  // top two bits say its region.
  // (Sized for the symbol table once it is read, on the thread that reads it.)
  StringTable files(1024), strings(0), linkage(0);
  enum Region : uint32_t { kFileRegion, kNameRegion, kLinkageRegion };
  constexpr uint32_t kRegionShift = 30, kLocalMask = (1u << kRegionShift) - 1;
  auto tagged = [](StrRef ref, Region region) {
    ref.offset |= uint32_t{region} << kRegionShift;
    return ref;
  };
  auto add_file = [&](std::string_view s, uint64_t hash = 0) {
    return tagged(files.Add(s, hash), kFileRegion);
  };
  auto add_name = [&](std::string_view s, uint64_t hash = 0) {
    return tagged(strings.Add(s, hash), kNameRegion);
  };
  // `same`: the two are equal (C names, and names that do not demangle): one string serves.
  auto linkage_ref = [&](std::string_view raw, bool same, StrRef pretty_ref, uint64_t hash = 0) {
    return same ? pretty_ref : tagged(linkage.Add(raw, hash), kLinkageRegion);
  };
  std::vector<SymbolRecord> symbols;
  std::vector<SegmentRecord> symbol_segments, unit_segments;
  std::vector<UnitRecord> units;
  // Sections written from the units' parts, one piece per unit (or line table).
  std::vector<UnitPart> parts;
  BlockedSection function_segments, rows;
  std::vector<uint8_t> packed_nodes;  // kNodes
  size_t node_count = 0;
  std::vector<NameRecord> names;
  std::vector<CallDiscriminatorRecord> call_discriminators;
  DistinctStrings start_files;
  auto start_file_id = [&](std::string_view file, uint64_t hash = 0) {
    return file.empty() ? kNoStartFile : start_files.Id(add_file(file, hash));
  };
  // A name is its (raw, demangled) pair and where the function starts (file and line).
  struct NameSlot {
    uint64_t hash = 0;
    uint32_t id = 0;  // into names
    bool empty() const { return hash == 0; }
  };
  FlatTable<NameSlot> name_ids;
  auto name_id = [&](StrRef raw, StrRef pretty, uint32_t start_file, uint32_t start_line) {
    uint64_t key_hash = MixHash((uint64_t{raw.offset} << 32 | raw.size) * 0x9e3779b97f4a7c15 ^
                                (uint64_t{pretty.offset} << 32 | pretty.size) ^
                                (uint64_t{start_file} << 32 | start_line) * 0xc2b2ae3d27d4eb4f);
    auto same = [&](const NameSlot& slot) {
      const NameRecord& n = names[slot.id];
      return n.raw.offset == raw.offset && n.raw.size == raw.size &&
             n.pretty.offset == pretty.offset && n.pretty.size == pretty.size &&
             n.start_file == start_file && n.start_line == start_line;
    };
    NameSlot& slot = name_ids.Find(key_hash, same);
    if (!slot.empty()) return slot.id;
    uint32_t id = static_cast<uint32_t>(names.size());
    slot = {key_hash, id};
    names.push_back({raw, pretty, start_file, start_line});
    name_ids.Filled();
    return id;
  };
  bool too_big = false;
  std::vector<LineTableRecord> line_tables;
  std::vector<uint32_t> paths;   // per unit, file index → number into path_strings
  DistinctStrings path_strings;  // units share most of their headers

  // DWARF: the source the direct path would open, every unit built in full. Opened first: a
  // compressed .debug_info inflates on a thread of its own from then on.
  dwarf::DwarfOptions dwarf_options;
  dwarf_options.search = options.search;
  // Linkage names only: demangling all of a big C++ binary's names was a third of a build,
  // and a lookup demangles the few it prints (SymbolIndex::AttachNameMemo).
  dwarf_options.demangle = false;
  dwarf_options.inlines = true;
  std::unique_ptr<DebugInfoSource> source;
  if (auto opened = DebugInfoSource::Open(elf, dwarf_options); opened) source = std::move(*opened);

  SymbolStrings symbol_strings;  // for the dictionary's samples
  // The string dictionary, trained on the strings in merge order: on a thread of its own
  // while the merge runs when there are units to merge, else after.
  std::vector<uint8_t> dictionary;
  // Per part: how many of its paths the merge adds (set before the training starts).
  std::vector<size_t> merged_path_counts;
  auto train_dictionary = [&] {
    dictionary = TrainStringDictionary(StreamAsMerged(parts, merged_path_counts, symbol_strings));
  };
  std::unique_ptr<SpreadThread> trainer;
  bool trained = false;
  // Symbol table: Find() is constant between consecutive symbol starts and ends (its resume
  // points are among them), so asking it at each of those boundaries flattens it exactly.
  // The names are the first the string table numbers (nothing else adds any before the merge).
  auto index_symbols = [&] {
    const SymbolTable& table = elf->symbols();
    strings.Reserve(table.symbols().size());
    linkage.Reserve(table.symbols().size() / 4);
    std::vector<uint64_t> bounds;
    for (const ElfSymbol& s : table.symbols()) {
      bounds.push_back(s.address);
      if (s.size != 0 && s.address + s.size > s.address) bounds.push_back(s.address + s.size);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<int32_t> record_of(table.symbols().size(), -1);
    int32_t previous = -1;
    SymbolTable::AscendingFinder finder(table);
    for (size_t i = 0; i < bounds.size(); ++i) {
      const ElfSymbol* s = finder.Find(bounds[i]);
      int32_t id = s == nullptr ? -1 : static_cast<int32_t>(s - table.symbols().data());
      if (id >= 0 && record_of[static_cast<size_t>(id)] < 0) {
        record_of[static_cast<size_t>(id)] = static_cast<int32_t>(symbols.size());
        symbols.push_back({s->address, s->size, {}, {}});
      }
      int32_t record = id < 0 ? -1 : record_of[static_cast<size_t>(id)];
      if (i == 0 ? record >= 0 : record != previous) {
        symbol_segments.push_back({bounds[i], record, 0});
      }
      previous = record;
    }
    // Names: stored as they are (linkage names: lookups demangle what they print), hashed on
    // all cores.
    std::vector<const ElfSymbol*> by_record(symbols.size());
    for (size_t i = 0; i < record_of.size(); ++i) {
      if (record_of[i] >= 0) by_record[static_cast<size_t>(record_of[i])] = &table.symbols()[i];
    }
    symbol_strings.resize(symbols.size());
    unsigned threads = ThreadCount(options.threads, symbols.size() / 512);
    RunOnThreads(threads, [&](unsigned t) {
      for (size_t k = t; k < by_record.size(); k += threads) {
        SymbolString& s = symbol_strings[k];
        s.raw = s.pretty = by_record[k]->name;
        s.pretty_hash = HashBytes(s.pretty);
        s.raw_hash = 0;  // the same string
      }
    });
    for (size_t k = 0; k < symbols.size(); ++k) {
      const SymbolString& s = symbol_strings[k];
      symbols[k].pretty = add_name(s.pretty, s.pretty_hash);
      symbols[k].raw = linkage_ref(s.raw, s.raw_hash == 0, symbols[k].pretty, s.raw_hash);
    }
  };
  // On a thread of its own, while the DWARF's units are walked and exported: on a binary
  // whose .debug_info is not compressed (python3.11d) it would otherwise hold both cores'
  // work back by its own (reading, sorting and naming 26 000 symbols, a quarter of the build).
  // Joined before the merge, the first to read what it makes.
  std::unique_ptr<SpreadThread> symbol_worker;
  if (ThreadCount(options.threads, 2) > 1) {
    symbol_worker = std::make_unique<SpreadThread>(index_symbols);
  } else {
    index_symbols();
  }

  std::vector<SourceFile> source_files;
  // Function tables of the units whose bytes have arrived, while the rest of a streamed
  // .debug_info is still being inflated (the cores are otherwise idle until then).
  if (source) source->units().PrebuildEveryUnit(options.threads);
  size_t unit_total = source ? source->units().unit_count() : 0;  // waits for the stream
  if (unit_total > 0) {
    dwarf::UnitCache& src = source->units();
    // Each unit is exported and encoded on the thread that takes it; the merge after only
    // appends the parts in unit order and adds the names (the one shared table).
    parts.resize(unit_total);
    std::mutex encoded_mutex;
    std::unordered_map<const dwarf::LineTable*, size_t> encoded_by;  // line table → part
    auto export_unit = [&](size_t i) {
      UnitPart& part = parts[i];
      part.tables = src.ExportUnit(i);
      if (!part.tables.ok) return;
      EncodeFunctions(part.tables, &part);
      // Per node, only what the parts now hold: dropped unit by unit, not after them all,
      // the unit's function table included (its memory then serves the next units' parts).
      Release(part.tables.raw_names);
      Release(part.tables.pretty_names);
      Release(part.tables.starts);
      part.tables.segments = {};
      part.tables.nodes = {};
      src.ReleaseUnitFunctions(i);
      if (part.tables.line == nullptr) return;
      {
        std::lock_guard<std::mutex> lock(encoded_mutex);
        if (!encoded_by.try_emplace(part.tables.line, i).second) return;  // another unit's
      }
      EncodeRows(part.tables.line->rows(), part.tables.line->discriminators(), &part);
    };
    std::vector<size_t> parallel, serial;
    for (size_t i = 0; i < unit_total; ++i) (src.IsSplitUnit(i) ? serial : parallel).push_back(i);
    // Biggest units first (their size is the best guess of their cost): the threads then
    // finish together instead of one exporting a big unit while the other idles.
    std::stable_sort(parallel.begin(), parallel.end(),
                     [&](size_t a, size_t b) { return src.UnitSize(a) > src.UnitSize(b); });
    std::atomic<size_t> next{0};
    RunOnThreads(ThreadCount(options.threads, parallel.size()), [&](unsigned) {
      for (size_t k = next.fetch_add(1); k < parallel.size(); k = next.fetch_add(1)) {
        export_unit(parallel[k]);
      }
    });
    for (size_t i : serial) export_unit(i);
    if (symbol_worker) symbol_worker->Join();
    merged_path_counts.assign(parts.size(), 0);
    for (size_t i = 0; i < parts.size(); ++i) {
      const dwarf::UnitTables& t = parts[i].tables;
      if (!t.ok || t.line == nullptr) continue;
      const UnitPart& encoded = parts[encoded_by.at(t.line)];
      merged_path_counts[i] =
          std::min(std::max(encoded.row_files, parts[i].call_files), t.paths.size());
    }
    // Most of the DWARF's memory (the decompressed .debug_info above all) is not read again:
    // given back now, it serves the merge, the compression and the file's pages instead of
    // fresh ones (on libceph-common peak RSS 553 -> 480 MB, and 2-3 % off the cold run on
    // the 2-vCPU VM, where a fresh page costs several times a reused one). Nothing from here
    // on reads those sections: on the training's thread, before it trains, the 10-12 ms the
    // kernel takes to free them overlap the merge instead of delaying it.
    auto release_then_train = [&] {
      src.ReleaseExportedSections();
      train_dictionary();
    };
    // The training starts first: it overlaps all of the merge, the tables' set-up included.
    if (ThreadCount(options.threads, 2) > 1) {
      trainer = std::make_unique<SpreadThread>(release_then_train);
    } else {
      src.ReleaseExportedSections();
    }
    for (const dwarf::AddressSegment& s : src.unit_map())
      unit_segments.push_back({s.start, s.id, 0});
    // Distinct names are fewer than the units' ones added up (units share most of them). A
    // C binary's linkage table stays empty (sized like the names', it was 1.5 MB of fresh
    // pages on python3.11d).
    const NameCounts counts = CountNames(parts);
    name_ids.Reserve(counts.carriers / 2);
    strings.Reserve(counts.carriers / 2);
    linkage.Reserve(counts.mangled / 2);
    // The parts' records become the file's in place (node names, row block offsets): the
    // sections are written from them, without a merged copy.
    std::unordered_map<const dwarf::LineTable*, uint32_t> table_ids;
    std::vector<uint32_t> name_numbers;  // a unit's distinct names → name records
    // Room for every unit's packed nodes at their widest (names of 31 bits), so that they are
    // packed in place, never moved (the pages past what they take are never touched).
    uint64_t packed_bound = kNodePadding;
    for (const UnitPart& part : parts) {
      packed_bound += (part.nodes.size() * (part.node_widths.bits() + 31) + 7) / 8 + kNodePadding;
    }
    packed_nodes.reserve(packed_bound);
    for (UnitPart& part : parts) {
      const dwarf::UnitTables& t = part.tables;
      UnitRecord unit;
      if (!t.ok) {
        units.push_back(unit);
        continue;
      }
      unit.ok = 1;
      too_big |= part.too_big;
      unit.segment_begin = static_cast<uint32_t>(function_segments.block_count);
      unit.segment_base = part.segment_base;
      unit.segment_count = part.segment_count;
      too_big |= !function_segments.Append(part.segment_blocks, part.segment_bytes);
      unit.node_begin = static_cast<uint32_t>(node_count);
      name_numbers.clear();
      for (const UnitPart::Carrier& c : part.carriers) {
        StrRef pretty = add_name(c.pretty, c.pretty_hash);
        StrRef raw = linkage_ref(c.raw, c.raw_hash == 0, pretty, c.raw_hash);
        name_numbers.push_back(
            name_id(raw, pretty, start_file_id(c.start_file, c.start_file_hash), c.start_line));
      }
      // The unit's nodes packed as wide as its values need, names now numbered.
      NodeWidths widths = part.node_widths;
      uint32_t max_name = 0;
      for (uint32_t id : name_numbers) max_name = std::max(max_name, id);
      widths.name = static_cast<uint8_t>(std::bit_width(max_name));
      const uint64_t node_bits = widths.bits(), packed_at = packed_nodes.size();
      const uint64_t packed_size = (part.nodes.size() * node_bits + 7) / 8;
      too_big |= packed_at + packed_size > 0xffffffffu;
      unit.node_offset = static_cast<uint32_t>(packed_at);
      unit.node_widths = widths.Packed();
      // Room for the last fields' 8-byte writes; the bytes past the unit stay zero.
      packed_nodes.resize(packed_at + packed_size + kNodePadding);
      uint8_t* packed = packed_nodes.data() + packed_at;
      const unsigned name_at = widths.parent, inlined_at = name_at + widths.name,
                     line_at = inlined_at + 1, file_at = line_at + widths.line,
                     column_at = file_at + widths.file;
      for (size_t k = 0; k < part.nodes.size(); ++k) {
        const NodeRecord& r = part.nodes[k];
        const uint64_t fields[] = {r.parent < 0 ? 0 : k - static_cast<uint64_t>(r.parent),
                                   name_numbers[r.name & ~kNodeInlined],
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
      packed_nodes.resize(packed_at + packed_size);
      for (const CallDiscriminatorRecord& d : part.call_discriminators) {
        call_discriminators.push_back(
            {static_cast<uint32_t>(node_count + d.node), d.discriminator});
      }
      unit.node_count = static_cast<uint32_t>(part.nodes.size());
      node_count += part.nodes.size();
      Release(part.nodes);
      if (t.line != nullptr) {
        auto [it, inserted] =
            table_ids.try_emplace(t.line, static_cast<uint32_t>(line_tables.size()));
        UnitPart& encoded = parts[encoded_by.at(t.line)];
        if (inserted) {
          LineTableRecord record;
          record.block_begin = static_cast<uint32_t>(rows.block_count);
          record.row_count = static_cast<uint32_t>(t.line->rows().size());
          too_big |= !rows.Append(encoded.blocks, encoded.rows);
          line_tables.push_back(record);
        }
        unit.line_table = it->second;
        // Only the paths a row or a call site names are ever read: the file table's tail past
        // the last of them is left out (a lookup past the end reads an unknown path, which
        // no lookup asks for).
        size_t path_count = merged_path_counts[static_cast<size_t>(&part - parts.data())];
        unit.path_begin = static_cast<uint32_t>(paths.size());
        for (size_t p = 0; p < path_count; ++p) {
          paths.push_back(path_strings.Id(add_file(t.paths[p], part.path_hashes[p])));
        }
        unit.path_count = static_cast<uint32_t>(paths.size() - unit.path_begin);
      }
      units.push_back(unit);
    }
    // What only the merge read: freed before the strings are compressed (which then reuses
    // the memory instead of faulting in more). The training reads it too.
    if (trainer) {
      trainer->Join();
    } else {
      train_dictionary();
    }
    trained = true;
    for (UnitPart& part : parts) {
      part.tables = {};
      Release(part.carriers);
      Release(part.call_discriminators);
      Release(part.path_hashes);
    }
  }
  if (symbol_worker) symbol_worker->Join();  // no units to merge: joined here
  if (source) {
    for (const auto& f : source->files().files_read())
      source_files.push_back({f->path(), f->identity()});
  }
  // The regions joined: every ref loses its tag and moves by its region's start.
  const uint64_t region_base[] = {0, files.bytes().size(),
                                  files.bytes().size() + strings.bytes().size()};
  too_big |= files.bytes().size() > kLocalMask || strings.bytes().size() > kLocalMask ||
             linkage.bytes().size() > kLocalMask;
  auto place = [&](StrRef& ref) {
    ref.offset =
        static_cast<uint32_t>(region_base[ref.offset >> kRegionShift] + (ref.offset & kLocalMask));
  };
  for (SymbolRecord& symbol : symbols) place(symbol.raw), place(symbol.pretty);
  for (NameRecord& name : names) place(name.raw), place(name.pretty);
  for (StrRef& ref : start_files.refs()) place(ref);
  for (StrRef& ref : path_strings.refs()) place(ref);
  PieceStream stream;
  for (const StringTable* region : {&files, &strings, &linkage}) stream.Append(region->bytes());
  if (rows.byte_count > 0xffffffffu || node_count > 0xffffffffu || stream.size() > 0xffffffffu ||
      names.size() >= kNodeInlined || too_big) {
    return Error(ErrorCode::kUnsupported,
                 "binary too big for an index (over 2^32 records, a unit over 4 GiB or a call "
                 "file index over 65535)")
        .WithFile(elf->path());
  }
  IndexImage image;
  std::string& identity = image.Keep(
      DescribeSources(*elf, options.search, source ? source->path() : std::string(), source_files));
  auto one = [](std::span<const uint8_t> bytes) {
    return std::vector<std::span<const uint8_t>>{bytes};
  };
  auto kept = [&](auto&& storage) { return one(AsBytes(image.Keep(std::move(storage)))); };
  image.Keep(std::move(parts));  // the pieces of several sections

  // Layout: header, section table, then each section 8-byte aligned: first those final now
  // (handed to the sink while the strings are compressed), then the strings' three.
  struct Section {
    SectionKind kind;
    std::vector<std::span<const uint8_t>> pieces;
  };
  std::vector<Section> sections;
  sections.push_back({SectionKind::kIdentity,
                      one({reinterpret_cast<const uint8_t*>(identity.data()), identity.size()})});
  sections.push_back({SectionKind::kNames, kept(std::move(names))});
  sections.push_back({SectionKind::kSymbols, kept(std::move(symbols))});
  sections.push_back({SectionKind::kSymbolSegments, kept(std::move(symbol_segments))});
  sections.push_back({SectionKind::kUnitSegments, kept(std::move(unit_segments))});
  sections.push_back({SectionKind::kUnits, kept(std::move(units))});
  sections.push_back({SectionKind::kFunctionSegments, std::move(function_segments.blocks)});
  sections.push_back({SectionKind::kFunctionSegmentBytes, std::move(function_segments.bytes)});
  packed_nodes.resize(packed_nodes.size() + kNodePadding);  // every field one 8-byte load
  sections.push_back({SectionKind::kNodes, kept(std::move(packed_nodes))});
  sections.push_back({SectionKind::kLineTables, kept(std::move(line_tables))});
  sections.push_back({SectionKind::kRowBlocks, std::move(rows.blocks)});
  sections.push_back({SectionKind::kPaths, kept(std::move(paths))});
  sections.push_back({SectionKind::kRowBytes, std::move(rows.bytes)});
  sections.push_back({SectionKind::kStartFiles, kept(std::move(start_files.refs()))});
  sections.push_back({SectionKind::kCallDiscrims, kept(std::move(call_discriminators))});
  sections.push_back({SectionKind::kPathStrings, kept(std::move(path_strings.refs()))});
  const size_t early_sections = sections.size();
  constexpr size_t kCount = kSectionKindCount;  // the strings' three and the chunk checksums
  static constexpr uint8_t kZeros[8] = {};
  std::vector<uint8_t>& head =
      image.Keep(std::vector<uint8_t>(sizeof(FileHeader) + kCount * sizeof(SectionEntry)));
  std::vector<SectionEntry> entries;
  // (file offset, bytes) of every piece after the head, in file order.
  std::vector<std::pair<uint64_t, std::span<const uint8_t>>> placed;
  uint64_t offset = head.size();
  auto lay_out = [&](const Section& section) {
    if (uint64_t padded = (offset + 7) & ~uint64_t{7}; padded != offset) {
      placed.push_back({offset, {kZeros, padded - offset}});
      offset = padded;
    }
    uint64_t size = 0;
    for (std::span<const uint8_t> piece : section.pieces) {
      if (piece.empty()) continue;
      placed.push_back({offset + size, piece});
      size += piece.size();
    }
    entries.push_back({static_cast<uint32_t>(section.kind), 0, offset, size});
    offset += size;
  };
  for (const Section& section : sections) lay_out(section);
  if (sink != nullptr) {
    std::vector<std::span<const uint8_t>> early;
    for (const auto& [at, bytes] : placed) early.push_back(bytes);
    sink->WriteEarly(head.size(), std::move(early));
  }
  const size_t early_pieces = placed.size();

  // The string stream, compressed block by block on all cores, with a dictionary trained on
  // it. Blocks are taken in runs, each run's frames appended to one buffer of its own: a
  // buffer per frame would hold twice its bytes (room for the worst case) until copied out.
  const size_t block_total = (stream.size() + kStringBlockSize - 1) / kStringBlockSize;
  if (!trained) train_dictionary();
  const std::vector<uint8_t>& kept_dictionary = image.Keep(std::move(dictionary));
  ZSTD_CDict* cdict =
      kept_dictionary.empty()
          ? nullptr
          : ZSTD_createCDict(kept_dictionary.data(), kept_dictionary.size(), kStringZstdLevel);
  if (!kept_dictionary.empty() && cdict == nullptr) {
    return Error(ErrorCode::kIo, "out of memory (zstd dictionary)");
  }
  // Runs of up to 256 blocks, but at least four per thread, so that a small stream (python3.11d:
  // 240 blocks) is compressed on all cores too.
  const unsigned compress_threads = ThreadCount(options.threads, block_total);
  const size_t blocks_per_run =
      std::clamp<size_t>(block_total / (size_t{4} * compress_threads), 16, 256);
  const size_t run_count = (block_total + blocks_per_run - 1) / blocks_per_run;
  std::vector<std::vector<uint8_t>>& runs =
      image.Keep(std::vector<std::vector<uint8_t>>(run_count));
  std::vector<uint32_t> frame_sizes(block_total);
  std::atomic<bool> compress_failed{false};
  std::atomic<size_t> next_run{0};
  RunOnThreads(ThreadCount(options.threads, run_count), [&](unsigned) {
    ZSTD_CCtx* context = ZSTD_createCCtx();
    // The reader knows its one dictionary: frames need not name it (4 bytes each).
    if (context == nullptr ||
        ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, kStringZstdLevel)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_dictIDFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_refCDict(context, cdict))) {
      compress_failed = true;
    }
    std::vector<uint8_t> scratch;
    for (size_t r = next_run.fetch_add(1); r < run_count && !compress_failed;
         r = next_run.fetch_add(1)) {
      std::vector<uint8_t>& out = runs[r];
      const size_t first = r * blocks_per_run, last = std::min(block_total, first + blocks_per_run);
      // Blocks of names compress about tenfold: a quarter of the input is room enough for
      // most runs; a frame that finds too little grows the buffer first.
      out.reserve((last - first) * kStringBlockSize / 4);
      for (size_t k = first; k < last; ++k) {
        size_t from = k * kStringBlockSize;
        size_t size = std::min<size_t>(kStringBlockSize, stream.size() - from);
        size_t bound = ZSTD_compressBound(size), at = out.size();
        if (out.capacity() - at < bound) out.reserve(std::max(out.capacity() * 2, at + bound));
        out.resize(at + bound);
        size_t n = ZSTD_compress2(context, out.data() + at, bound,
                                  stream.Range(from, size, &scratch), size);
        if (ZSTD_isError(n)) {
          compress_failed = true;
          break;
        }
        out.resize(at + n);
        frame_sizes[k] = static_cast<uint32_t>(n);
      }
    }
    ZSTD_freeCCtx(context);
  });
  ZSTD_freeCDict(cdict);
  if (compress_failed) return Error(ErrorCode::kIo, "zstd could not compress the strings");
  std::vector<uint64_t>& string_blocks = image.Keep(std::vector<uint64_t>{stream.size()});
  string_blocks.reserve(block_total + 2);
  uint64_t compressed_size = 0;
  for (uint32_t n : frame_sizes) {
    string_blocks.push_back(compressed_size);
    compressed_size += n;
  }
  if (block_total > 0) string_blocks.push_back(compressed_size);
  std::vector<std::span<const uint8_t>> compressed;
  for (const std::vector<uint8_t>& run : runs) compressed.push_back(AsBytes(run));
  sections.push_back({SectionKind::kStringDict, one(AsBytes(kept_dictionary))});
  sections.push_back({SectionKind::kStringBlocks, one(AsBytes(string_blocks))});
  sections.push_back({SectionKind::kStrings, std::move(compressed)});
  for (size_t i = early_sections; i < sections.size(); ++i) lay_out(sections[i]);
  if (uint64_t padded = (offset + 7) & ~uint64_t{7}; padded != offset) {
    placed.push_back({offset, {kZeros, padded - offset}});
    offset = padded;
  }
  if (entries.size() + 1 != kCount) return Error(ErrorCode::kIo, "index sections miscounted");
  const uint64_t chunks_end = offset;
  const uint64_t table_end = head.size();
  const size_t chunk_count = (chunks_end + kChunkSize - 1) / kChunkSize;
  // Checksums per chunk (docs/index-format.md): a reader sums only the chunks it reads. A
  // chunk may span pieces: each is summed on from the one before.
  std::vector<uint32_t>& chunk_crcs = image.Keep(std::vector<uint32_t>(chunk_count));
  // On the serial path (4.5 ms for libceph-common's 29 MB on one thread): a thread per
  // 512 KiB, so every index of more than 1 MiB is summed on all cores.
  unsigned crc_threads = ThreadCount(options.threads, chunk_count / 128);
  RunOnThreads(crc_threads, [&](unsigned t) {
    const size_t first = chunk_count * t / crc_threads, last = chunk_count * (t + 1) / crc_threads;
    if (first == last) return;
    // The first piece ending past the first chunk's start.
    uint64_t begin = std::max<uint64_t>(first * uint64_t{kChunkSize}, table_end);
    size_t p = static_cast<size_t>(
        std::partition_point(
            placed.begin(), placed.end(),
            [&](const auto& piece) { return piece.first + piece.second.size() <= begin; }) -
        placed.begin());
    for (size_t k = first; k < last; ++k) {
      uint64_t from = std::max<uint64_t>(k * uint64_t{kChunkSize}, table_end);
      uint64_t to = std::min<uint64_t>((k + 1) * uint64_t{kChunkSize}, chunks_end);
      uint32_t crc = 0;
      bool any = false;
      while (from < to && p < placed.size()) {
        const auto& [at, bytes] = placed[p];
        uint64_t lo = std::max(from, at), hi = std::min(to, at + bytes.size());
        crc = Crc32c(bytes.subspan(lo - at, hi - lo), crc);
        any = true;
        from = hi;
        if (hi == at + bytes.size()) ++p;
      }
      chunk_crcs[k] = any ? crc : 0;
    }
  });
  entries.push_back({static_cast<uint32_t>(SectionKind::kChunkCrcs), Crc32c(AsBytes(chunk_crcs)),
                     chunks_end, chunk_count * sizeof(uint32_t)});
  std::memcpy(head.data() + sizeof(FileHeader), entries.data(), kCount * sizeof(SectionEntry));
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.section_count = kCount;
  header.file_size = chunks_end + chunk_count * sizeof(uint32_t);
  header.flags = elf->symbols().empty() ? uint32_t{kSymbolTableEmpty} : 0u;
  std::span<const uint8_t> build_id = elf->build_id();
  header.build_id_size = static_cast<uint8_t>(std::min(build_id.size(), sizeof(header.build_id)));
  std::memcpy(header.build_id, build_id.data(), header.build_id_size);
  header.header_crc = 0;
  uint32_t crc = Crc32c({reinterpret_cast<const uint8_t*>(&header), sizeof(header)});
  header.header_crc = Crc32c(
      std::span<const uint8_t>(head).subspan(sizeof(FileHeader), kCount * sizeof(SectionEntry)),
      crc);
  std::memcpy(head.data(), &header, sizeof(header));
  image.Append(head);
  for (const auto& [at, bytes] : placed) image.Append(bytes);
  image.Append(AsBytes(chunk_crcs));
  // Pieces are appended as placed, none empty: the head is piece 0, the early ones follow.
  if (sink != nullptr) image.MarkEarly(1, 1 + early_pieces);
  if (dwarf != nullptr) *dwarf = std::move(source);
  return image;
}

void IndexImage::Append(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) pieces_.push_back(bytes);
}

}  // namespace stacksym::symindex
