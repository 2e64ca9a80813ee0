#include "dwarf/line_table.h"

#include <algorithm>

#include "base/byte_cursor.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"
#include "dwarf/dwarf_form.h"

namespace stacksym::dwarf {

namespace {

constexpr const char* kSection = ".debug_line";

// A string-valued field of a v5 directory/file entry.
bool EntryString(const AttrValue& v, const LineSections& s, uint8_t offset_size,
                 std::string_view* out) {
  switch (v.kind) {
    case ValueKind::kInlineString:
      *out = std::string_view(reinterpret_cast<const char*>(v.data), v.value);
      return true;
    case ValueKind::kLineStrOffset:
      return StringAt(s.line_str, v.value, out);
    case ValueKind::kStrOffset:
      return StringAt(s.str, v.value, out);
    case ValueKind::kStrIndex: {
      uint64_t pos = s.str_offsets_base + v.value * offset_size;
      if (v.value > s.str_offsets.size() || pos + offset_size > s.str_offsets.size()) return false;
      ByteCursor c(s.str_offsets);
      c.Seek(pos);
      uint64_t off = c.UN(offset_size);
      return c.ok() && StringAt(s.str, off, out);
    }
    default:
      return false;
  }
}

struct EntryFormat {
  uint64_t content = 0;
  uint16_t form = 0;
};

// Reads a v5 entry-format list followed by the entries it describes.
template <class OnEntry>
bool ReadV5Entries(ByteCursor& c, const FormContext& ctx, OnEntry on_entry) {
  uint8_t format_count = c.U8();
  EntryFormat formats[32];
  if (format_count > 32) return false;
  for (uint8_t i = 0; i < format_count; ++i) {
    formats[i].content = c.Uleb128();
    uint64_t form = c.Uleb128();
    if (form > 0xffff) return false;
    formats[i].form = static_cast<uint16_t>(form);
  }
  uint64_t count = c.Uleb128();
  if (!c.ok()) return false;
  // A meaningful entry has a path, which takes at least one byte, so a count above the bytes
  // left is corrupt — including formats whose forms are all zero-sized (flag_present) or
  // empty, which would otherwise let a huge count add entries without consuming input.
  if (count > c.remaining()) return false;
  for (uint64_t n = 0; n < count; ++n) {
    LineTable::FileEntry entry;
    for (uint8_t i = 0; i < format_count; ++i) {
      AttrValue v;
      if (!ReadAttrValue(c, formats[i].form, 0, ctx, &v)) return false;
      if (formats[i].content == DW_LNCT_path) {
        if (!on_entry.string(v, &entry.name)) return false;
      } else if (formats[i].content == DW_LNCT_directory_index) {
        entry.dir_index = v.value;
      } else if (formats[i].content == DW_LNCT_LLVM_source) {
        // Not a string it can read: no source, as LLVM takes it (not a bad table).
        entry.has_source = on_entry.string(v, &entry.source);
      }
    }
    on_entry.add(entry);
  }
  return c.ok();
}

}  // namespace

void AppendPath(std::string* path, std::string_view part) {
  if (part.empty()) return;
  if (!path->empty() && path->back() != '/' && part.front() != '/') path->push_back('/');
  path->append(part);
}

// The unit header, the directories and the files (into `table`), the program's parameters
// (into `header`); the cursor returned stands at the first opcode, bounded by the unit.
Result<ByteCursor> LineTable::ParseHeader(const LineSections& s, uint64_t offset,
                                          uint8_t address_size, LineTable* table,
                                          ProgramHeader* header) {
  if (offset >= s.line.size()) return Malformed(kSection, offset, "line table offset past the end");
  ByteCursor whole(s.line);
  whole.Seek(static_cast<size_t>(offset));
  uint64_t length = whole.U32();
  uint8_t offset_size = 4;
  if (length == 0xffffffffu) {
    length = whole.U64();
    offset_size = 8;
  } else if (length >= 0xfffffff0u) {
    return Malformed(kSection, offset, "reserved unit length " + HexU64(length));
  }
  if (!whole.ok() || length > whole.remaining()) {
    return Malformed(kSection, offset, "line table extends past the end of the section");
  }
  ByteCursor c = whole.Sub(static_cast<size_t>(length));
  table->version_ = c.U16();
  if (table->version_ < 2 || table->version_ > 5) {
    return MakeError(ErrorCode::kUnsupported,
                     "line table version " + std::to_string(table->version_))
        .WithSection(kSection)
        .WithOffset(offset);
  }
  FormContext ctx;
  ctx.version = table->version_;
  ctx.offset_size = offset_size;
  ctx.address_size = address_size;
  if (table->version_ >= 5) {
    ctx.address_size = c.U8();
    c.U8();  // segment selector size
  }
  uint64_t header_length = c.UN(offset_size);
  if (!c.ok() || header_length > c.remaining()) {
    return Malformed(kSection, offset, "line table header length past the end");
  }
  size_t program_start = c.offset() + static_cast<size_t>(header_length);
  header->min_inst_length = c.U8();
  uint8_t max_ops = 1;
  if (table->version_ >= 4) max_ops = c.U8();
  (void)max_ops;  // VLIW op_index is not tracked: x86-64 and aarch64 always have 1
  bool default_is_stmt = c.U8() != 0;
  (void)default_is_stmt;
  header->line_base = c.S8();
  header->line_range = c.U8();
  header->opcode_base = c.U8();
  if (!c.ok()) return Malformed(kSection, offset, "truncated line table header");
  if (header->line_range == 0) return Malformed(kSection, offset, "line_range is 0");
  if (header->opcode_base == 0) return Malformed(kSection, offset, "opcode_base is 0");
  for (int i = 1; i < header->opcode_base; ++i) header->opcode_lengths[i] = c.U8();

  if (table->version_ >= 5) {
    struct DirSink {
      LineTable* t;
      const LineSections* s;
      uint8_t os;
      bool string(const AttrValue& v, std::string_view* out) { return EntryString(v, *s, os, out); }
      void add(const FileEntry& entry) { t->dirs_.push_back(entry.name); }
    } dirs{table, &s, offset_size};
    if (!ReadV5Entries(c, ctx, dirs)) {
      return Malformed(kSection, offset, "bad directory table");
    }
    struct FileSink {
      LineTable* t;
      const LineSections* s;
      uint8_t os;
      bool string(const AttrValue& v, std::string_view* out) { return EntryString(v, *s, os, out); }
      void add(const FileEntry& entry) { t->files_.push_back(entry); }
    } files{table, &s, offset_size};
    if (!ReadV5Entries(c, ctx, files)) return Malformed(kSection, offset, "bad file name table");
  } else {
    while (true) {
      std::string_view dir = c.CStr();
      if (!c.ok()) return Malformed(kSection, offset, "truncated include directories");
      if (dir.empty()) break;
      table->dirs_.push_back(dir);
    }
    while (true) {
      std::string_view name = c.CStr();
      if (!c.ok()) return Malformed(kSection, offset, "truncated file names");
      if (name.empty()) break;
      uint64_t dir = c.Uleb128();
      c.SkipLeb128();  // mtime
      c.SkipLeb128();  // length
      table->files_.push_back({name, dir, {}, false});
    }
  }
  if (!c.ok()) return Malformed(kSection, offset, "truncated line table header");
  if (program_start > c.size()) return Malformed(kSection, offset, "program start past the end");
  c.Seek(program_start);
  return c;
}

// Runs the line program: rows go to a scratch vector per sequence (the thread's own, reused
// table after table: an index build parses thousands on each thread, and a vector grown once is
// not faulted in anew for every line program), sequences are noted with their bounds.
Result<void> LineTable::RunProgram(ByteCursor& c, const ProgramHeader& header, uint64_t offset,
                                   ProgramRows* out) {
  const uint8_t min_inst_length = header.min_inst_length;
  const int8_t line_base = header.line_base;
  const uint8_t line_range = header.line_range;
  const uint8_t opcode_base = header.opcode_base;
  const uint8_t* opcode_lengths = header.opcode_lengths;
  std::vector<LineRow>& scratch = *out->rows;
  std::vector<Sequence>& sequences = out->sequences;
  uint64_t address = 0;
  uint64_t file = 1;
  uint64_t line = 1;
  uint64_t column = 0;
  uint64_t discriminator = 0;
  size_t seq_first = 0;
  // scratch_discriminators[i]: the discriminator of scratch[i] (most are 0).
  std::vector<uint32_t>& scratch_discriminators = *out->discriminators;
  auto reset = [&] {
    address = 0;
    file = 1;
    line = 1;
    column = 0;
    discriminator = 0;
  };
  auto emit = [&](bool end) {
    LineRow row;
    row.address = address;
    row.line = static_cast<uint32_t>(line);
    row.column = static_cast<uint16_t>(std::min<uint64_t>(column, 0xffff));
    row.file =
        end ? LineRow::kEndSequence : static_cast<uint16_t>(std::min<uint64_t>(file, 0xfffe));
    uint32_t row_discriminator =
        end ? 0 : static_cast<uint32_t>(std::min<uint64_t>(discriminator, 0xffffffff));
    discriminator = 0;  // reset after every row (DWARF 5 6.2.5.1)
    // Within a sequence keep only the last row per address (the one lookups return).
    // A row at the very end address covers nothing; the end marker replaces it.
    if (scratch.size() > seq_first && scratch.back().address == address) {
      scratch.back() = row;
      scratch_discriminators.back() = row_discriminator;
    } else {
      scratch.push_back(row);
      scratch_discriminators.push_back(row_discriminator);
    }
  };

  while (!c.at_end()) {
    uint8_t op = c.U8();
    if (op >= opcode_base) {
      uint8_t adjusted = static_cast<uint8_t>(op - opcode_base);
      address += static_cast<uint64_t>(adjusted / line_range) * min_inst_length;
      line += static_cast<int64_t>(line_base) + adjusted % line_range;
      emit(false);
      continue;
    }
    switch (op) {
      case 0: {  // extended opcode
        uint64_t len = c.Uleb128();
        if (!c.ok() || len == 0 || len > c.remaining()) {
          return Malformed(kSection, offset + c.offset(), "bad extended opcode length");
        }
        ByteCursor ext = c.Sub(static_cast<size_t>(len));
        uint8_t sub = ext.U8();
        switch (sub) {
          case DW_LNE_end_sequence: {
            emit(true);
            uint64_t low = scratch.size() > seq_first ? scratch[seq_first].address : 0;
            if (scratch.size() - seq_first >= 2 && low < address) {
              sequences.push_back({seq_first, scratch.size(), low, address});
            } else {
              scratch.resize(seq_first);  // empty sequence: covers nothing
              scratch_discriminators.resize(seq_first);
            }
            seq_first = scratch.size();
            reset();
            break;
          }
          case DW_LNE_set_address:
            address = ext.UN(len - 1);
            if (!ext.ok()) return Malformed(kSection, offset + c.offset(), "bad set_address");
            break;
          case DW_LNE_set_discriminator:
            discriminator = ext.Uleb128();
            break;
          default:  // define_file, vendor opcodes: nothing we keep
            break;
        }
        break;
      }
      case DW_LNS_copy:
        emit(false);
        break;
      case DW_LNS_advance_pc:
        address += c.Uleb128() * min_inst_length;
        break;
      case DW_LNS_advance_line:
        line += static_cast<uint64_t>(c.Sleb128());
        break;
      case DW_LNS_set_file:
        file = c.Uleb128();
        break;
      case DW_LNS_set_column:
        column = c.Uleb128();
        break;
      case DW_LNS_negate_stmt:
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin:
        break;
      case DW_LNS_const_add_pc:
        address += static_cast<uint64_t>((255 - opcode_base) / line_range) * min_inst_length;
        break;
      case DW_LNS_fixed_advance_pc:
        address += c.U16();
        break;
      default:  // set_isa and unknown standard opcodes: skip their LEB128 operands
        for (int i = 0; i < opcode_lengths[op]; ++i) c.SkipLeb128();
        break;
    }
    if (!c.ok()) return Malformed(kSection, offset + c.offset(), "truncated line program");
  }
  // Rows after the last end_sequence belong to no sequence and are dropped (as LLVM does).
  scratch.resize(seq_first);
  scratch_discriminators.resize(seq_first);
  return {};
}

// The sequences in address order into the table's rows (the linker may place them in any
// order), with their discriminators.
void LineTable::TakeSequences(ProgramRows& program) {
  const std::vector<LineRow>& scratch = *program.rows;
  const std::vector<uint32_t>& scratch_discriminators = *program.discriminators;
  std::vector<Sequence>& sequences = program.sequences;
  LineTable& table = *this;
  std::stable_sort(sequences.begin(), sequences.end(),
                   [](const Sequence& a, const Sequence& b) { return a.low < b.low; });
  table.rows_.reserve(scratch.size());
  uint64_t covered_until = 0;
  bool any = false;
  for (const Sequence& seq : sequences) {
    // Overlapping sequences (code the linker discarded, relocated to 0) would break the sort
    // order; the first one at an address wins.
    if (any && seq.low < covered_until) continue;
    any = true;
    covered_until = seq.high;
    if (!table.rows_.empty() && table.rows_.back().address == seq.low) {
      table.rows_.pop_back();
      if (!table.discriminators_.empty() &&
          table.discriminators_.back().row == table.rows_.size()) {
        table.discriminators_.pop_back();
      }
    }
    for (size_t i = seq.first; i < seq.end; ++i) {
      if (scratch_discriminators[i] != 0) {
        table.discriminators_.push_back(
            {static_cast<uint32_t>(table.rows_.size() + (i - seq.first)),
             scratch_discriminators[i]});
      }
    }
    table.rows_.insert(table.rows_.end(), scratch.begin() + static_cast<ptrdiff_t>(seq.first),
                       scratch.begin() + static_cast<ptrdiff_t>(seq.end));
  }
  // (rows_ was reserved for the rows of every sequence: the few an overlap drops leave a
  // tail that is never touched, so it is not copied to fit.)
  table.discriminators_.shrink_to_fit();
  table.index_.Build(table.rows_.size(), [&](size_t i) { return table.rows_[i].address; });
}

Result<LineTable> LineTable::Parse(const LineSections& s, uint64_t offset, uint8_t address_size) {
  LineTable table;
  ProgramHeader header;
  Result<ByteCursor> program = ParseHeader(s, offset, address_size, &table, &header);
  if (!program) return std::move(program).error();
  static thread_local std::vector<LineRow> scratch;
  static thread_local std::vector<uint32_t> scratch_discriminators;
  scratch.clear();
  scratch_discriminators.clear();
  ProgramRows rows{&scratch, &scratch_discriminators, {}};
  if (Result<void> ran = RunProgram(*program, header, offset, &rows); !ran) {
    return std::move(ran).error();
  }
  table.TakeSequences(rows);
  return table;
}

const LineRow* LineTable::Find(uint64_t address) const {
  auto [lo, hi] = index_.Candidates(address);
  auto it = std::upper_bound(rows_.begin() + lo, rows_.begin() + hi, address,
                             [](uint64_t a, const LineRow& r) { return a < r.address; });
  if (it == rows_.begin()) return nullptr;
  --it;
  if (it->is_end()) return nullptr;
  return &*it;
}

uint32_t LineTable::Discriminator(const LineRow* row) const {
  if (row == nullptr || discriminators_.empty()) return 0;
  uint32_t index = static_cast<uint32_t>(row - rows_.data());
  auto it = std::lower_bound(discriminators_.begin(), discriminators_.end(), index,
                             [](const RowDiscriminator& d, uint32_t i) { return d.row < i; });
  return it != discriminators_.end() && it->row == index ? it->value : 0;
}

std::optional<std::string_view> LineTable::FileSource(uint64_t index) const {
  // (DW_LNCT_LLVM_source exists in DWARF 5 tables only: entries are numbered from 0.)
  if (version_ < 5 || index >= files_.size() || !files_[index].has_source) return std::nullopt;
  return files_[index].source;
}

bool LineTable::FilePath(uint64_t index, std::string_view comp_dir, std::string* out,
                         bool relative) const {
  const FileEntry* entry = nullptr;
  if (version_ >= 5) {
    if (index < files_.size()) entry = &files_[index];
  } else if (index >= 1 && index <= files_.size()) {
    entry = &files_[index - 1];
  }
  if (entry == nullptr) return false;
  out->clear();
  if (!entry->name.empty() && entry->name.front() == '/') {
    out->assign(entry->name);
    return true;
  }
  std::string_view dir;
  if (version_ >= 5) {
    if (entry->dir_index < dirs_.size()) dir = dirs_[entry->dir_index];
  } else if (entry->dir_index >= 1 && entry->dir_index <= dirs_.size()) {
    dir = dirs_[entry->dir_index - 1];
  }
  // DWARF 5's directory 0 is the compilation directory itself: LLVM 15+ joins nothing before
  // it. llvm-symbolizer 14 prepends the compilation directory to every relative include
  // directory, so a relative comp_dir such as Debian's "./stdlib" appeared twice.
  bool dir_absolute = !dir.empty() && dir.front() == '/';
  bool dir0 = version_ >= 5 && entry->dir_index == 0;
  if (relative) {
    if (dir0) dir = {};
    comp_dir = {};
  }
  if (!comp_dir.empty() && !dir_absolute && !dir0) {
    AppendPath(out, comp_dir);
  }
  AppendPath(out, dir);
  AppendPath(out, entry->name);
  return true;
}

}  // namespace stacksym::dwarf
