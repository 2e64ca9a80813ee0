// The on-disk layout of a symbol index (docs/index-format.md): a header, a section table, and
// 8-byte aligned sections of fixed-size little-endian records. Every 4 KiB chunk of the
// sections has its CRC32C in the last section, checked when a lookup first reads the chunk.
// Every record is plain data, read in place from the mapping; every index inside a record is
// bounds-checked by the reader before use.
#pragma once

#include <cstdint>
#include <cstring>

namespace stacksym::index {

inline constexpr char kMagic[8] = {'S', 'T', 'K', 'S', 'Y', 'M', 'I', 'X'};
// Bumped whenever a record, a section or the meaning of a field changes: an index of another
// version is rebuilt, never read.
// 2: line rows delta-encoded in blocks; 3: checksums per 4 KiB chunk, verified on first use;
// 4: strings zstd-compressed in blocks, names shared by nodes through a name table, 16-byte
// nodes, 8-byte function segments relative to their unit; 5: where functions start (names
// carry the declaration's file and line) and discriminators (of rows, in blocks flagged for
// them; of inlined call sites, for the nodes that have one); 6: string blocks of 2 KiB
// compressed with a zstd dictionary trained on the strings (kStringDict); 7: rows in blocks
// of 64 behind a header byte with small address and line deltas and a file-changed bit; unit
// paths as numbers into the distinct paths (kPathStrings), up to the last one read; 8-byte
// line table records; 8: the string stream in three regions: paths and start files, then
// demangled names, then linkage names (a lookup that prints no linkage name reads none);
// 9: function segments delta-encoded in blocks of 16 (kFunctionSegmentBytes); 10: nodes
// bit-packed per unit (NodeWidths), parents as distances; 11: names stored as linkage names
// (NameMemo); 12: a stripped binary's symbols from its separate debug file's .symtab
// (ChooseSymbolTable), as the direct path now answers; 13: the PLT stubs' names ("puts@plt",
// elf::PltSymbolTable) in the symbol segments' remaining gaps, flagged as the debug file's are;
// 14: untyped symbols (STT_NOTYPE: assembly without .type) in the symbol table; without a
// debug file's .symtab, the MiniDebugInfo's (.gnu_debugdata) in those gaps
// (elf::FallbackSymbolTable), then absolute ones (elf::AbsoluteSymbolTable), as the direct
// path now answers; 15: DWARF 5 file paths in directory 0 without the compilation directory
// before it (llvm-symbolizer 16's join: ./stdlib/x.c where 14 printed ./stdlib/./stdlib/x.c).
// 16: the Go pclntab's answers (kGoUnit and the Go records), which the direct path asks after
// the symbol table and DWARF.
inline constexpr uint32_t kVersion = 16;

enum HeaderFlags : uint32_t {
  kSymbolTableEmpty = 1,  // the binary has no symbol table at all (Reason::kNoSymbols)
  // The Go pclntab's answers are in the index (kGoUnit...): the binary has a readable table,
  // and they are asked from here, not from the binary.
  kGoAnswers = 2,
};

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t section_count;
  uint64_t file_size;
  uint32_t header_crc;  // CRC32C of the header (with this field 0) and the section table
  uint32_t flags;       // HeaderFlags
  uint8_t build_id_size;
  uint8_t reserved[7];
  uint8_t build_id[64];
  uint8_t reserved2[24];
};
static_assert(sizeof(FileHeader) == 128);

enum class SectionKind : uint32_t {
  kIdentity = 1,          // text: where the index came from (see index_cache.cc)
  kStrings,               // bytes: zstd frames, one per kStringBlockSize of the string stream
  kSymbols,               // SymbolRecord[]
  kSymbolSegments,        // SegmentRecord[]: address → symbol (flattened SymbolTable::Find)
  kUnitSegments,          // SegmentRecord[]: address → unit
  kUnits,                 // UnitRecord[]
  kFunctionSegments,      // FunctionSegmentBlockRecord[]: per unit, address → innermost node
  kNodes,                 // bytes: each unit's nodes, bit-packed (NodeWidths), then padding
  kLineTables,            // LineTableRecord[]
  kRowBlocks,             // RowBlockRecord[]: per line table, blocks of kRowsPerBlock rows
  kPaths,                 // uint32_t[]: per unit, file index → number into kPathStrings
  kRowBytes,              // bytes: the encoded rows of every block
  kChunkCrcs,             // uint32_t[]: CRC32C of each kChunkSize chunk of the file (below); last
  kStringBlocks,          // uint64_t[]: the string stream's size, then each frame's offset, end
  kNames,                 // NameRecord[]: the distinct (raw, demangled, start) names of nodes
  kStartFiles,            // StrRef[]: the distinct declaration files names refer to
  kCallDiscrims,          // CallDiscriminatorRecord[]: the nodes with one, by node
  kStringDict,            // bytes: the zstd dictionary of the string blocks (empty: none)
  kPathStrings,           // StrRef[]: the distinct paths of units (empty: unknown)
  kFunctionSegmentBytes,  // bytes: the encoded function segments of every block
  kGoUnit,                // UnitRecord[1]: the Go pclntab's answers as a unit (or none)
  kGoContexts,            // GoContextRecord[]: what its segments map addresses to
  kGoFunctions,           // GoFunctionRecord[]: the functions those answers name
  kGoFrames,              // GoFrameRecord[]: their inline chains' outer frames
};
inline constexpr uint32_t kSectionKindCount = 24;

// Strings (names, paths) form one stream that StrRef points into; it is cut into blocks of
// kStringBlockSize bytes, each compressed as one zstd frame with the dictionary of
// kStringDict (demangled C++ names compress about 10x even in blocks this small, with a
// dictionary trained on them). A lookup decompresses the blocks its names are in; the reader
// keeps the last few.
inline constexpr uint32_t kStringBlockSize = 2048;

// Chunk k covers the file's bytes [k * kChunkSize, (k + 1) * kChunkSize) that lie after the
// section table and before the chunk CRC section (which must come last): the header and the
// section table are covered by header_crc, the chunk CRCs by their section entry's crc, both
// checked on open; a chunk is checked the first time a lookup reads a byte of it.
inline constexpr uint32_t kChunkSize = 4096;

struct SectionEntry {
  uint32_t kind;  // SectionKind
  uint32_t crc;   // chunk CRCs: CRC32C of the section, checked on open; others 0 (chunked)
  uint64_t offset;
  uint64_t size;
};
static_assert(sizeof(SectionEntry) == 24);

struct StrRef {
  uint32_t offset = 0;
  uint32_t size = 0;
};

// [start, next record's start) → id; id -1: a gap. Sorted by start.
struct SegmentRecord {
  uint64_t start = 0;
  int32_t id = -1;
  uint32_t flags = 0;  // kSegmentOnlyWithoutFrames (symbol segments); 0 elsewhere
};
// A symbol segment of a stripped binary's debug-file .symtab (FallbackSymbolTable): it names
// an address only where DWARF has no function either, as the direct path does.
inline constexpr uint32_t kSegmentOnlyWithoutFrames = 1;
static_assert(sizeof(SegmentRecord) == 16);

struct SymbolRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  StrRef raw;     // as in the symbol table
  StrRef pretty;  // demangled
};
static_assert(sizeof(SymbolRecord) == 32);

inline constexpr uint32_t kNoLineTable = 0xffffffff;

struct UnitRecord {
  uint64_t segment_base = 0;  // function segments' starts are relative to it
  uint32_t ok = 0;            // 0: the unit could not be read (answers nothing, as the direct path)
  // Its function segments: segment_count of them, in the blocks
  // [segment_begin, segment_begin + ceil(segment_count / kSegmentsPerBlock)).
  uint32_t segment_begin = 0;
  uint32_t segment_count = 0;
  uint32_t node_begin = 0;
  uint32_t node_count = 0;
  uint32_t line_table = kNoLineTable;
  uint32_t path_begin = 0;
  uint32_t path_count = 0;
  uint32_t node_offset = 0;  // where its packed nodes start in kNodes
  uint32_t node_widths = 0;  // NodeWidths::Packed()
};
static_assert(sizeof(UnitRecord) == 48);

// A unit's function segments, [segment_base + start, next one's start) → innermost node
// (unit-local; -1: none), sorted by start, go in blocks of kSegmentsPerBlock. A block's bytes,
// at `offset` in the function segment bytes, hold its segments one after the other. The
// first: ULEB128 node + 1 (its start is first_start). Each next one: ULEB128 start delta,
// then the node's delta from the one before, zigzag ULEB128. (Nodes are numbered depth first,
// so neighbouring segments' nodes are close: about 2.7 bytes a segment on libceph-common and
// 3.1 on libc, block records included, against 8 for a fixed record.) A lookup
// binary-searches the unit's blocks and decodes one.
inline constexpr uint32_t kSegmentsPerBlock = 16;
struct FunctionSegmentBlockRecord {
  uint32_t first_start = 0;  // relative to the unit's segment_base
  uint32_t offset = 0;       // into kFunctionSegmentBytes
};
static_assert(sizeof(FunctionSegmentBlockRecord) == 8);

inline constexpr uint32_t kNoStartFile = 0xffffffff;
struct NameRecord {
  StrRef raw;                          // linkage name as in the DWARF (empty: unnamed)
  StrRef pretty;                       // demangled
  uint32_t start_file = kNoStartFile;  // index into the start files (SourceFrame::start_file)
  uint32_t start_line = 0;             // DW_AT_decl_line (SourceFrame::start_line)
};
static_assert(sizeof(NameRecord) == 24);

// An inlined node's call-site discriminator (DW_AT_GNU_discriminator), for nonzero ones only.
struct CallDiscriminatorRecord {
  uint32_t node = 0;  // global node index; sorted
  uint32_t discriminator = 0;
};
static_assert(sizeof(CallDiscriminatorRecord) == 8);

// A node of the inline tree as the builder makes it and a lookup reads it.
inline constexpr uint32_t kNodeInlined = 0x80000000;  // in NodeRecord::name
struct NodeRecord {
  int32_t parent = -1;  // unit-local node index, -1 at the top
  uint32_t name = 0;    // NameRecord index, | kNodeInlined for an inlined subroutine
  uint32_t call_line = 0;
  uint16_t call_file = 0;
  uint16_t call_column = 0;
};

// On disk a unit's nodes are bit-packed records, one after the other from the unit's
// node_offset in kNodes (each unit from a byte boundary; the section ends with kNodePadding
// bytes, so that reading any field is one unaligned 8-byte load). A record holds, from its
// lowest bit: the parent's distance (the node's unit-local index minus its parent's: at least
// 1, since nodes are numbered depth first; 0: none), the name number, the inlined bit, the
// call line, file and column, each field as wide as the unit's largest value of it needs (0
// bits when all are 0). On libceph-common 53 bits a node, against 128 in version 8's records.
inline constexpr uint64_t kNodePadding = 8;
struct NodeWidths {
  uint8_t parent = 0, name = 0, line = 0, file = 0, column = 0;
  // 6 bits a width, parent first.
  uint32_t Packed() const {
    return uint32_t{parent} | uint32_t{name} << 6 | uint32_t{line} << 12 | uint32_t{file} << 18 |
           uint32_t{column} << 24;
  }
  static NodeWidths Unpack(uint32_t v) {
    return {static_cast<uint8_t>(v & 63), static_cast<uint8_t>(v >> 6 & 63),
            static_cast<uint8_t>(v >> 12 & 63), static_cast<uint8_t>(v >> 18 & 63),
            static_cast<uint8_t>(v >> 24 & 63)};
  }
  // What the fields' values can need (an index's widths beyond them are damage).
  bool Valid() const {
    return parent <= 31 && name <= 31 && line <= 32 && file <= 16 && column <= 16;
  }
  uint32_t bits() const { return parent + name + 1u + line + file + column; }
};

// The `width` bits at bit `bit` of `bytes` (width at most 32; 8 bytes readable from bit / 8).
inline uint64_t GetBits(const uint8_t* bytes, uint64_t bit, unsigned width) {
  uint64_t word;
  std::memcpy(&word, bytes + bit / 8, sizeof(word));
  return width == 0 ? 0 : (word >> (bit % 8)) & ((uint64_t{1} << width) - 1);
}
// ORs `value` (below 2^57: shifted by bit % 8 it stays in one word) in at bit `bit` of `bytes`
// (8 bytes writable from bit / 8).
inline void PutBits(uint8_t* bytes, uint64_t bit, uint64_t value) {
  uint64_t word;
  std::memcpy(&word, bytes + bit / 8, sizeof(word));
  word |= value << (bit % 8);
  std::memcpy(bytes + bit / 8, &word, sizeof(word));
}

// Its blocks are [block_begin, block_begin + ceil(row_count / kRowsPerBlock)).
struct LineTableRecord {
  uint32_t block_begin = 0;
  uint32_t row_count = 0;
};
static_assert(sizeof(LineTableRecord) == 8);

// Line rows (sorted by address; one per address) go in blocks of kRowsPerBlock. A block's
// bytes, at `offset` in the row bytes, hold its rows one after the other. The first: ULEB128
// line, column, file (its address is first_address). Each next one: a header byte, then the
// fields it does not hold, then ULEB128 column:
//   bits 0-3  address delta, 15: a ULEB128 delta follows
//   bits 4-6  line delta + 3 (-3..3), 7: a zigzag ULEB128 delta follows
//   bit 7     the file changed: its ULEB128 number follows (after the address and line)
// (on libc about 2.5 bytes a row, against 4.3 with every field a ULEB128). A lookup
// binary-searches the blocks and decodes one.
// A block flagged kRowBlockDiscriminators (one of its rows has a nonzero discriminator)
// starts with a ULEB128 mask of its rows that have one (bit k: row k), and each of those rows
// ends with its ULEB128 discriminator.
inline constexpr uint32_t kRowsPerBlock = 64;
inline constexpr uint32_t kRowBlockDiscriminators = 1;
inline constexpr uint8_t kRowAddressEscape = 15;
inline constexpr uint8_t kRowLineEscape = 7;
inline constexpr uint8_t kRowLineBias = 3;
inline constexpr uint8_t kRowFileChanged = 0x80;
struct RowBlockRecord {
  uint64_t first_address = 0;
  uint32_t offset = 0;
  uint32_t flags = 0;  // kRowBlockDiscriminators
};
static_assert(sizeof(RowBlockRecord) == 16);
inline constexpr uint16_t kEndSequenceFile = 0xffff;  // a row's file: end of a sequence

// The Go pclntab's answers (elf::GoPclntab::Lookup with inlines, which ElfSymbolizer asks for
// what the symbol table and DWARF leave without frames), for every address, as one more unit
// (kGoUnit, kept apart from the DWARF's units: one UnitRecord, no nodes), whose function
// segments and line rows are in the sections the units' are in, encoded alike:
//   - its segments: address → context (below; -1: no answer there), the answer's function and
//     chain without the innermost frame's place;
//   - its line rows: address → the innermost frame's file (a number into the unit's paths,
//     whose first is the unknown file, "") and line; column and discriminators 0;
// the answer being the same for every address between two of the table's bounds
// (elf::GoPclntab::LookupBounds), so that the two encode the table's answers exactly.
struct GoContextRecord {
  StrRef name;                  // the innermost frame's function
  uint32_t function = 0;        // GoFunctionRecord index
  uint32_t outer = 0xffffffff;  // the innermost frame's caller (GoFrameRecord), or kNoGoFrame
  uint32_t flags = 0;           // kGoFrameInlined: the innermost frame is an inlined call
  uint32_t reserved = 0;
};
static_assert(sizeof(GoContextRecord) == 24);

struct GoFunctionRecord {
  uint64_t entry = 0;
  uint64_t end = 0;
  StrRef name;  // never empty (Lookup's answers without a name are no answers)
};
static_assert(sizeof(GoFunctionRecord) == 24);

// An outer frame of a chain (innermost first): each names the next one out, its caller, whose
// record comes before it (so a chain cannot loop).
inline constexpr uint32_t kNoGoFrame = 0xffffffff;
inline constexpr uint32_t kGoFrameInlined = 1;
struct GoFrameRecord {
  StrRef function;
  uint32_t file = 0;  // a number into the Go unit's paths (0: unknown)
  uint32_t line = 0;
  uint32_t outer = kNoGoFrame;  // the caller's frame; kNoGoFrame: the last
  uint32_t flags = 0;           // kGoFrameInlined
};
static_assert(sizeof(GoFrameRecord) == 24);

}  // namespace stacksym::index
