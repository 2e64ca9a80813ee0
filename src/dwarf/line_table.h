// A .debug_line program (versions 2–5) run once into a compact sorted row table.
//
// Rows of all sequences are merged into one array sorted by address; the end of each sequence
// is kept as a marker row, so "which row covers address A" is one binary search: the last row
// at or below A, unless that row is an end marker (A is in a gap between sequences). Among rows
// at the same address only the last is kept, which is the row llvm-symbolizer reports.
//
//   Result<LineTable> t = LineTable::Parse(sections, offset, {});
//   if (const LineRow* row = t->Find(addr)) t->FilePath(row->file, comp_dir, &path);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_cursor.h"
#include "dwarf/address_index.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

// Sections a line program's header may point into (v5 string forms).
struct LineSections {
  std::span<const uint8_t> line;
  std::span<const uint8_t> line_str;
  std::span<const uint8_t> str;
  std::span<const uint8_t> str_offsets;
  uint64_t str_offsets_base = 0;  // for DW_FORM_strx* file names (rare)
};

// 16 bytes; a flat array of these can be written to disk and mapped back as is.
struct LineRow {
  uint64_t address = 0;
  uint32_t line = 0;
  uint16_t column = 0;  // saturated at 65535
  uint16_t file = 0;    // file index as in the program; kEndSequence marks a sequence end
  static constexpr uint16_t kEndSequence = 0xffff;
  bool is_end() const { return file == kEndSequence; }
};

// The discriminator of row `row` of a LineTable (only nonzero ones are kept).
struct RowDiscriminator {
  uint32_t row = 0;
  uint32_t value = 0;
};

class LineTable {
 public:
  struct FileEntry {
    std::string_view name;
    uint64_t dir_index = 0;
    std::string_view source;  // DW_LNCT_LLVM_source: the file's text embedded (clang)
    bool has_source = false;  // (an empty one is still the file's text)
  };

  // `address_size` is the unit's (used only when a v2–v4 program needs it; v5 headers carry it).
  static Result<LineTable> Parse(const LineSections& sections, uint64_t offset,
                                 uint8_t address_size);

  // The row covering `address`, or nullptr.
  const LineRow* Find(uint64_t address) const;
  // The discriminator of a row of this table (DW_LNE_set_discriminator; 0 when none).
  uint32_t Discriminator(const LineRow* row) const;

  // Path of file `index` the way llvm-symbolizer 16 prints it (absolute-path mode): absolute
  // names as they are, otherwise comp_dir / include directory / name joined with '/', where
  // DWARF 5's directory 0, the compilation directory itself, gets no comp_dir before it
  // (llvm-symbolizer 14 put it there too).
  // `relative` (llvm-symbolizer --relativenames): without the compilation directory, neither
  // `comp_dir` nor DWARF 5's directory 0; other include directories stay (absolute ones too).
  bool FilePath(uint64_t index, std::string_view comp_dir, std::string* out,
                bool relative = false) const;

  // The text of file `index` embedded in the table (DWARF 5's DW_LNCT_LLVM_source, clang's
  // -gembed-source), which llvm-symbolizer prints source context from instead of the file;
  // nullopt when the entry has none.
  std::optional<std::string_view> FileSource(uint64_t index) const;

  uint16_t version() const { return version_; }
  std::span<const LineRow> rows() const { return rows_; }
  // Frees the rows (and their index and discriminators); the file table stays. For an index
  // build that has encoded them, on a source that answers nothing more.
  void ReleaseRows() {
    std::vector<LineRow>().swap(rows_);
    std::vector<RowDiscriminator>().swap(discriminators_);
    index_ = AddressIndex();
  }
  // The rows with a nonzero discriminator, by row index (sorted).
  std::span<const RowDiscriminator> discriminators() const { return discriminators_; }
  std::span<const FileEntry> files() const { return files_; }
  std::span<const std::string_view> directories() const { return dirs_; }
  size_t memory_bytes() const {
    return rows_.capacity() * sizeof(LineRow) + index_.memory_bytes() +
           discriminators_.capacity() * sizeof(RowDiscriminator) +
           files_.capacity() * sizeof(FileEntry) + dirs_.capacity() * sizeof(std::string_view);
  }

 private:
  struct ProgramHeader {
    uint8_t min_inst_length = 1;
    int8_t line_base = 0;
    uint8_t line_range = 1;
    uint8_t opcode_base = 1;
    uint8_t opcode_lengths[256] = {};
  };
  struct Sequence {
    size_t first = 0;  // index into the scratch row vector
    size_t end = 0;    // one past the end marker
    uint64_t low = 0;
    uint64_t high = 0;
  };
  struct ProgramRows {
    std::vector<LineRow>* rows;             // per sequence, in program order
    std::vector<uint32_t>* discriminators;  // parallel to rows (most are 0)
    std::vector<Sequence> sequences;
  };
  static Result<ByteCursor> ParseHeader(const LineSections& s, uint64_t offset,
                                        uint8_t address_size, LineTable* table,
                                        ProgramHeader* header);
  static Result<void> RunProgram(ByteCursor& c, const ProgramHeader& header, uint64_t offset,
                                 ProgramRows* out);
  void TakeSequences(ProgramRows& program);

  uint16_t version_ = 0;
  std::vector<std::string_view> dirs_;
  std::vector<FileEntry> files_;
  std::vector<LineRow> rows_;
  std::vector<RowDiscriminator> discriminators_;  // sorted by row
  AddressIndex index_;                            // over rows_
};

// Joins path components the way LLVM's sys::path::append does: a '/' between parts unless
// one is already there; empty parts are skipped.
void AppendPath(std::string* path, std::string_view part);

}  // namespace stacksym::dwarf
