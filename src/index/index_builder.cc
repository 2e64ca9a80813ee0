#include "index/index_builder.h"

#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "base/demangle_cache.h"
#include "base/parallel.h"
#include "dwarf/debug_info_source.h"
#include "index/checksum.h"
#include "index/index_format.h"
#include "index/index_identity.h"

namespace stacksym::symindex {
namespace {

// Demangled names compress ~10x in 8 KiB blocks at level 3; higher levels gain little more.
constexpr int kStringZstdLevel = 3;

class StringTable {
 public:
  StrRef Add(std::string_view s) {
    // Most names come again and again from the same storage (a demangle cache entry, the
    // DWARF string section): known by their address first, without hashing their bytes.
    auto [known, fresh] = by_address_.try_emplace(s.data(), StrRef{});
    if (!fresh && known->second.size == s.size()) return known->second;
    StrRef ref = AddBytes(s);
    known->second = ref;
    return ref;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  StrRef AddBytes(std::string_view s) {
    auto [it, inserted] = refs_.try_emplace(s);
    if (inserted) {
      it->second = {static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(s.size())};
      bytes_.insert(bytes_.end(), s.begin(), s.end());
    }
    return it->second;
  }

  std::vector<uint8_t> bytes_;
  std::unordered_map<std::string_view, StrRef> refs_;  // views into the sources, alive here
  std::unordered_map<const char*, StrRef> by_address_;
};

void AppendUleb(uint64_t value, std::vector<uint8_t>* out) {
  do {
    uint8_t byte = value & 0x7f;
    value >>= 7;
    out->push_back(value != 0 ? byte | 0x80 : byte);
  } while (value != 0);
}

template <class T>
std::span<const uint8_t> AsBytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

Result<std::vector<uint8_t>> IndexBuilder::Build(const std::shared_ptr<ElfFile>& elf,
                                                 const SymbolizeOptions& options) {
  StringTable strings;
  std::vector<SymbolRecord> symbols;
  std::vector<SegmentRecord> symbol_segments, unit_segments;
  std::vector<FunctionSegmentRecord> function_segments;
  std::vector<UnitRecord> units;
  std::vector<NodeRecord> nodes;
  std::vector<NameRecord> names;
  std::vector<CallDiscriminatorRecord> call_discriminators;
  std::vector<StrRef> start_files;
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
      return std::hash<uint64_t>()(p.first * 0x9e3779b97f4a7c15 ^ p.second);
    }
  };
  std::unordered_map<uint64_t, uint32_t> start_file_ids;  // StrRef → index into start_files
  auto start_file_id = [&](std::string_view file) {
    if (file.empty()) return kNoStartFile;
    StrRef ref = strings.Add(file);
    auto [it, inserted] = start_file_ids.try_emplace(uint64_t{ref.offset} << 32 | ref.size,
                                                     static_cast<uint32_t>(start_files.size()));
    if (inserted) start_files.push_back(ref);
    return it->second;
  };
  // A name is its (raw, demangled) pair and where the function starts (file and line).
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, PairHash> name_ids;
  auto name_id = [&](StrRef raw, StrRef pretty, uint32_t start_file, uint32_t start_line) {
    auto key = std::make_pair(uint64_t{raw.offset} << 32 | raw.size,
                              uint64_t{pretty.offset} << 32 | pretty.size);
    key.first ^= uint64_t{start_file} * 0x9e3779b97f4a7c15;
    key.second ^= uint64_t{start_line} * 0xc2b2ae3d27d4eb4f;
    auto [it, inserted] = name_ids.try_emplace(key, static_cast<uint32_t>(names.size()));
    if (inserted) {
      names.push_back({raw, pretty, start_file, start_line});
    } else {
      // The key mixes the start in by hashing: confirm (a collision is a different name).
      const NameRecord& n = names[it->second];
      if (n.raw.offset != raw.offset || n.raw.size != raw.size ||
          n.pretty.offset != pretty.offset || n.pretty.size != pretty.size ||
          n.start_file != start_file || n.start_line != start_line) {
        names.push_back({raw, pretty, start_file, start_line});
        return static_cast<uint32_t>(names.size() - 1);
      }
    }
    return it->second;
  };
  bool too_big = false;
  std::vector<LineTableRecord> line_tables;
  std::vector<RowBlockRecord> row_blocks;
  std::vector<uint8_t> row_bytes;
  std::vector<StrRef> paths;

  // Symbol table: Find() is constant between consecutive symbol starts and ends (its resume
  // points are among them), so asking it at each of those boundaries flattens it exactly.
  const SymbolTable& table = elf->symbols();
  DemangleCache symbol_names;
  {
    std::vector<uint64_t> bounds;
    for (const ElfSymbol& s : table.symbols()) {
      bounds.push_back(s.address);
      if (s.size != 0 && s.address + s.size > s.address) bounds.push_back(s.address + s.size);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<int32_t> found(bounds.size(), -1);
    std::vector<int32_t> record_of(table.symbols().size(), -1);
    int32_t previous = -1;
    for (size_t i = 0; i < bounds.size(); ++i) {
      const ElfSymbol* s = table.Find(bounds[i]);
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
    // Names: demangled on all cores (the cost of big C++ symbol tables), each once.
    std::vector<const ElfSymbol*> by_record(symbols.size());
    for (size_t i = 0; i < record_of.size(); ++i) {
      if (record_of[i] >= 0) by_record[static_cast<size_t>(record_of[i])] = &table.symbols()[i];
    }
    std::vector<const std::string*> pretty(symbols.size());
    unsigned threads = ThreadCount(options.threads, symbols.size() / 512);
    RunOnThreads(threads, [&](unsigned t) {
      for (size_t k = t; k < by_record.size(); k += threads) {
        pretty[k] = &symbol_names.Get(by_record[k]->name);
      }
    });
    for (size_t k = 0; k < symbols.size(); ++k) {
      symbols[k].raw = strings.Add(by_record[k]->name);
      symbols[k].pretty = strings.Add(*pretty[k]);
    }
  }

  // DWARF: the source the direct path would open, every unit built in full.
  SymbolizeOptions dwarf_options = options;
  dwarf_options.demangle = true;
  dwarf_options.inlines = true;
  dwarf_options.use_debug_info = true;
  std::unique_ptr<DebugInfoSource> source;
  if (auto opened = DebugInfoSource::Open(elf, dwarf_options); opened) source = std::move(*opened);
  std::vector<SourceFile> source_files;
  size_t unit_total = source ? source->unit_count() : 0;  // waits for a streamed .debug_info
  if (unit_total > 0) {
    DebugInfoSource& src = *source;
    std::vector<size_t> parallel, serial;
    for (size_t i = 0; i < unit_total; ++i) (src.IsSplitUnit(i) ? serial : parallel).push_back(i);
    std::vector<DebugInfoSource::UnitTables> tables(unit_total);
    std::atomic<size_t> next{0};
    RunOnThreads(ThreadCount(options.threads, parallel.size()), [&](unsigned) {
      for (size_t k = next.fetch_add(1); k < parallel.size(); k = next.fetch_add(1)) {
        tables[parallel[k]] = src.ExportUnit(parallel[k]);
      }
    });
    for (size_t i : serial) tables[i] = src.ExportUnit(i);

    for (const dwarf::AddressSegment& s : src.unit_map())
      unit_segments.push_back({s.start, s.id, 0});
    std::unordered_map<const dwarf::LineTable*, uint32_t> table_ids;
    for (const DebugInfoSource::UnitTables& t : tables) {
      UnitRecord unit;
      if (!t.ok) {
        units.push_back(unit);
        continue;
      }
      unit.ok = 1;
      unit.segment_begin = static_cast<uint32_t>(function_segments.size());
      unit.segment_base = t.segments.empty() ? 0 : t.segments.front().start;
      for (const dwarf::AddressSegment& s : t.segments) {
        too_big |= s.start < unit.segment_base || s.start - unit.segment_base > 0xffffffffu;
        function_segments.push_back({static_cast<uint32_t>(s.start - unit.segment_base), s.id});
      }
      unit.segment_count = static_cast<uint32_t>(function_segments.size() - unit.segment_begin);
      unit.node_begin = static_cast<uint32_t>(nodes.size());
      for (size_t n = 0; n < t.nodes.size(); ++n) {
        const dwarf::FunctionNode& f = t.nodes[n];
        NodeRecord r;
        r.parent = f.parent;
        too_big |= f.call_file > 0xffff;
        r.call_file = static_cast<uint16_t>(f.call_file);
        r.call_line = f.call_line;
        r.call_column = f.call_column;
        // Raw and demangled name side by side in the stream: one block holds both.
        StrRef raw = strings.Add(t.raw_names[n]);
        const DebugInfoSource::UnitTables::NodeStart& start = t.starts[n];
        r.name =
            name_id(raw, strings.Add(t.pretty_names[n]), start_file_id(start.file), start.line);
        if (f.inlined) r.name |= kNodeInlined;
        if (start.call_discriminator != 0) {
          call_discriminators.push_back(
              {static_cast<uint32_t>(nodes.size()), start.call_discriminator});
        }
        nodes.push_back(r);
      }
      unit.node_count = static_cast<uint32_t>(nodes.size() - unit.node_begin);
      if (t.line != nullptr) {
        auto [it, inserted] =
            table_ids.try_emplace(t.line, static_cast<uint32_t>(line_tables.size()));
        if (inserted) {
          LineTableRecord record;
          std::span<const dwarf::LineRow> table_rows = t.line->rows();
          record.block_begin = static_cast<uint32_t>(row_blocks.size());
          record.row_count = static_cast<uint32_t>(table_rows.size());
          std::span<const dwarf::RowDiscriminator> discriminators = t.line->discriminators();
          size_t next_discriminator = 0;  // into discriminators
          for (size_t k = 0; k < table_rows.size(); ++k) {
            const dwarf::LineRow& row = table_rows[k];
            if (k % kRowsPerBlock == 0) {
              // Flagged, with a mask of its rows that have one, when a row of the block has a
              // discriminator.
              uint64_t mask = 0;
              for (size_t d = next_discriminator;
                   d < discriminators.size() && discriminators[d].row < k + kRowsPerBlock; ++d) {
                mask |= uint64_t{1} << (discriminators[d].row - k);
              }
              row_blocks.push_back({row.address, static_cast<uint32_t>(row_bytes.size()),
                                    mask != 0 ? kRowBlockDiscriminators : 0});
              if (mask != 0) AppendUleb(mask, &row_bytes);
            } else {
              const dwarf::LineRow& previous = table_rows[k - 1];
              AppendUleb(row.address - previous.address, &row_bytes);
            }
            if (k % kRowsPerBlock == 0) {
              AppendUleb(row.line, &row_bytes);
            } else {
              int64_t delta = int64_t{row.line} - int64_t{table_rows[k - 1].line};
              AppendUleb((static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63),
                         &row_bytes);
            }
            AppendUleb(row.column, &row_bytes);
            AppendUleb(row.file, &row_bytes);
            if (next_discriminator < discriminators.size() &&
                discriminators[next_discriminator].row == k) {
              AppendUleb(discriminators[next_discriminator++].value, &row_bytes);
            }
          }
          record.block_count = static_cast<uint32_t>(row_blocks.size() - record.block_begin);
          line_tables.push_back(record);
        }
        unit.line_table = it->second;
        unit.path_begin = static_cast<uint32_t>(paths.size());
        for (std::string_view p : t.paths) paths.push_back(strings.Add(p));
        unit.path_count = static_cast<uint32_t>(paths.size() - unit.path_begin);
      }
      units.push_back(unit);
    }
  }
  if (source) {
    for (const auto& f : source->files_read()) source_files.push_back({f->path(), f->identity()});
  }
  if (row_bytes.size() > 0xffffffffu || nodes.size() > 0xffffffffu ||
      strings.bytes().size() > 0xffffffffu || names.size() >= kNodeInlined || too_big) {
    return Error(ErrorCode::kUnsupported,
                 "binary too big for an index (over 2^32 records, a unit over 4 GiB or a call "
                 "file index over 65535)")
        .WithFile(elf->path());
  }
  // The string stream, compressed block by block on all cores.
  const std::vector<uint8_t>& stream = strings.bytes();
  size_t block_count = (stream.size() + kStringBlockSize - 1) / kStringBlockSize;
  std::vector<std::vector<uint8_t>> frames(block_count);
  std::atomic<bool> compress_failed{false};
  unsigned zstd_threads = ThreadCount(options.threads, block_count / 64);
  RunOnThreads(zstd_threads, [&](unsigned t) {
    ZSTD_CCtx* context = ZSTD_createCCtx();
    for (size_t k = t; k < block_count && context != nullptr; k += zstd_threads) {
      size_t from = k * kStringBlockSize;
      size_t size = std::min<size_t>(kStringBlockSize, stream.size() - from);
      frames[k].resize(ZSTD_compressBound(size));
      size_t n = ZSTD_compressCCtx(context, frames[k].data(), frames[k].size(),
                                   stream.data() + from, size, kStringZstdLevel);
      if (ZSTD_isError(n)) compress_failed = true;
      frames[k].resize(ZSTD_isError(n) ? 0 : n);
    }
    if (context == nullptr) compress_failed = true;
    ZSTD_freeCCtx(context);
  });
  if (compress_failed) return Error(ErrorCode::kIo, "zstd could not compress the strings");
  std::vector<uint8_t> compressed;
  std::vector<uint64_t> string_blocks = {stream.size()};
  for (const std::vector<uint8_t>& f : frames) {
    string_blocks.push_back(compressed.size());
    compressed.insert(compressed.end(), f.begin(), f.end());
  }
  if (block_count > 0) string_blocks.push_back(compressed.size());
  frames.clear();
  std::string identity =
      DescribeSources(*elf, options, source ? source->path() : std::string(), source_files);

  // Layout: header, section table, then each section 8-byte aligned.
  struct Piece {
    SectionKind kind;
    std::span<const uint8_t> bytes;
  };
  const Piece pieces[] = {
      {SectionKind::kIdentity,
       {reinterpret_cast<const uint8_t*>(identity.data()), identity.size()}},
      {SectionKind::kStrings, AsBytes(compressed)},
      {SectionKind::kStringBlocks, AsBytes(string_blocks)},
      {SectionKind::kNames, AsBytes(names)},
      {SectionKind::kSymbols, AsBytes(symbols)},
      {SectionKind::kSymbolSegments, AsBytes(symbol_segments)},
      {SectionKind::kUnitSegments, AsBytes(unit_segments)},
      {SectionKind::kUnits, AsBytes(units)},
      {SectionKind::kFunctionSegments, AsBytes(function_segments)},
      {SectionKind::kNodes, AsBytes(nodes)},
      {SectionKind::kLineTables, AsBytes(line_tables)},
      {SectionKind::kRowBlocks, AsBytes(row_blocks)},
      {SectionKind::kPaths, AsBytes(paths)},
      {SectionKind::kRowBytes, AsBytes(row_bytes)},
      {SectionKind::kStartFiles, AsBytes(start_files)},
      {SectionKind::kCallDiscrims, AsBytes(call_discriminators)},
  };
  constexpr size_t kPieces = sizeof(pieces) / sizeof(pieces[0]);
  constexpr size_t kCount = kPieces + 1;  // and the chunk checksums, last
  static_assert(kCount == kSectionKindCount);
  std::vector<SectionEntry> entries(kCount);
  const size_t table_end = sizeof(FileHeader) + kCount * sizeof(SectionEntry);
  size_t offset = table_end;
  for (size_t i = 0; i < kPieces; ++i) {
    offset = (offset + 7) & ~size_t{7};
    entries[i] = {static_cast<uint32_t>(pieces[i].kind), 0, offset, pieces[i].bytes.size()};
    offset += pieces[i].bytes.size();
  }
  const size_t chunks_end = (offset + 7) & ~size_t{7};
  const size_t chunk_count = (chunks_end + kChunkSize - 1) / kChunkSize;
  std::vector<uint8_t> out(chunks_end + chunk_count * sizeof(uint32_t), 0);
  for (size_t i = 0; i < kPieces; ++i) {
    if (!pieces[i].bytes.empty()) {
      std::memcpy(out.data() + entries[i].offset, pieces[i].bytes.data(), pieces[i].bytes.size());
    }
  }
  // Checksums per chunk (docs/index-format.md): a reader sums only the chunks it reads.
  std::vector<uint32_t> chunk_crcs(chunk_count);
  unsigned crc_threads = ThreadCount(options.threads, chunk_count / 4096);
  RunOnThreads(crc_threads, [&](unsigned t) {
    for (size_t k = t; k < chunk_count; k += crc_threads) {
      size_t from = std::max(k * kChunkSize, table_end);
      size_t to = std::min((k + 1) * kChunkSize, chunks_end);
      chunk_crcs[k] =
          from < to ? Crc32c(std::span<const uint8_t>(out).subspan(from, to - from)) : 0;
    }
  });
  std::memcpy(out.data() + chunks_end, chunk_crcs.data(), chunk_count * sizeof(uint32_t));
  entries[kPieces] = {static_cast<uint32_t>(SectionKind::kChunkCrcs), Crc32c(AsBytes(chunk_crcs)),
                      chunks_end, chunk_count * sizeof(uint32_t)};
  std::memcpy(out.data() + sizeof(FileHeader), entries.data(), kCount * sizeof(SectionEntry));
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.section_count = kCount;
  header.file_size = out.size();
  header.flags = table.empty() ? uint32_t{kSymbolTableEmpty} : 0u;
  std::span<const uint8_t> build_id = elf->build_id();
  header.build_id_size = static_cast<uint8_t>(std::min(build_id.size(), sizeof(header.build_id)));
  std::memcpy(header.build_id, build_id.data(), header.build_id_size);
  header.header_crc = 0;
  uint32_t crc = Crc32c({reinterpret_cast<const uint8_t*>(&header), sizeof(header)});
  header.header_crc = Crc32c(
      std::span<const uint8_t>(out).subspan(sizeof(FileHeader), kCount * sizeof(SectionEntry)),
      crc);
  std::memcpy(out.data(), &header, sizeof(header));
  return out;
}

}  // namespace stacksym::symindex
