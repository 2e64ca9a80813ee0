#include "elf/go_pclntab.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "base/byte_cursor.h"

namespace stacksym::elf {

namespace {

constexpr uint32_t kMagic12 = 0xfffffffb;
constexpr uint32_t kMagic116 = 0xfffffffa;
constexpr uint32_t kMagic118 = 0xfffffff0;
constexpr uint32_t kMagic120 = 0xfffffff1;

// runtime/symtab.go's _PCDATA_InlTreeIndex and _FUNCDATA_InlTree: Go 1.9–1.12, 1.13–1.15 and
// from 1.16 on (ChooseInlineLayout).
constexpr uint32_t kPcdataInlTreeIndex19 = 1;
constexpr uint32_t kFuncdataInlTree19 = 2;
constexpr uint32_t kPcdataInlTreeIndex113 = 2;
constexpr uint32_t kFuncdataInlTree113 = 4;
constexpr uint32_t kPcdataInlTreeIndex116 = 2;
constexpr uint32_t kFuncdataInlTree116 = 3;
// An inline chain deeper than this is a cycle in a corrupt tree.
constexpr size_t kMaxInlineDepth = 256;
constexpr uint32_t kNoEntry = ~uint32_t{0};

// The moduledata words read (Go 1.18+): pcHeader, funcnametab.ptr, text, gofunc.
constexpr size_t kModuleText = 22;
constexpr size_t kModuleGofunc118 = 38;
constexpr size_t kModuleGofunc120 = 40;  // covctrs, ecovctrs came before it in Go 1.20

Error Malformed(const std::string& what) {
  return Error(ErrorCode::kMalformed, "Go pclntab: " + what);
}

// Reads an unsigned integer of `size` bytes at `offset`, bounds-checked.
std::optional<uint64_t> ReadAt(std::span<const uint8_t> bytes, uint64_t offset, size_t size) {
  if (offset > bytes.size()) return std::nullopt;
  ByteCursor c(bytes);
  c.Seek(static_cast<size_t>(offset));
  uint64_t v = c.UN(size);
  if (!c.ok()) return std::nullopt;
  return v;
}

std::string_view CStringAt(std::span<const uint8_t> bytes, uint64_t offset) {
  if (offset >= bytes.size()) return {};
  ByteCursor c(bytes);
  c.Seek(static_cast<size_t>(offset));
  std::string_view s = c.CStr();
  return c.ok() ? s : std::string_view{};
}

}  // namespace

const char* GoPclntabVersionName(GoPclntabVersion version) {
  switch (version) {
    case GoPclntabVersion::k1_2:
      return "1.2";
    case GoPclntabVersion::k1_16:
      return "1.16";
    case GoPclntabVersion::k1_18:
      return "1.18";
    case GoPclntabVersion::k1_20:
      return "1.20";
  }
  return "?";
}

// A function's _func record, the fields this reader uses.
struct GoPclntab::FuncRecord {
  uint64_t offset = 0;  // of the record in table_
  uint64_t entry = 0;
  uint64_t end = 0;
  int32_t name_offset = 0;
  uint32_t pcsp = 0;
  uint32_t pcfile = 0;
  uint32_t pcln = 0;
  uint32_t npcdata = 0;
  uint32_t cu_offset = 0;
  uint32_t nfuncdata = 0;
  uint8_t flag = 0;
  uint64_t pcdata = 0;  // offset of pcdata[0] in table_
};

// A node of an inline tree (runtime's inlinedCall), the fields of its layout.
struct GoPclntab::InlineNode {
  int32_t name_offset = -1;  // the inlined function's name
  int32_t parent = -1;       // Go 1.9–1.11: the caller's node, < 0: the function itself
  int32_t file = -1;         // Go 1.9–1.11: the call site's file number ...
  int32_t line = 0;          // ... and line
  int32_t parent_pc = -1;    // Go 1.12 on: an instruction of the caller's, from the entry
};

Result<std::unique_ptr<GoPclntab>> GoPclntab::Parse(std::span<const uint8_t> table,
                                                    uint64_t table_vaddr,
                                                    std::vector<GoSegment> image,
                                                    uint32_t go_minor) {
  std::unique_ptr<GoPclntab> t(new GoPclntab());
  t->table_ = table;
  t->table_vaddr_ = table_vaddr;
  t->image_ = std::move(image);
  t->go_minor_ = go_minor;
  if (Result<void> header = t->ParseHeader(); !header) return std::move(header).error();
  t->ChooseInlineLayout();
  if (t->version_ >= GoPclntabVersion::k1_18) t->FindGofunc();
  return t;
}

void GoPclntab::ChooseInlineLayout() {
  switch (version_) {
    case GoPclntabVersion::k1_16:
      inline_layout_ = InlineLayout::kGo116;
      break;
    case GoPclntabVersion::k1_18:
      inline_layout_ = InlineLayout::kGo118;
      break;
    case GoPclntabVersion::k1_20:
      inline_layout_ = InlineLayout::kGo120;
      break;
    case GoPclntabVersion::k1_2:
      // The magic does not tell; the release does. Unknown, before 1.9 (no inline trees) or one
      // that writes a later magic: no inline frames rather than a chain read in a wrong layout.
      if (go_minor_ >= 9 && go_minor_ <= 11) {
        inline_layout_ = InlineLayout::kGo19;
      } else if (go_minor_ == 12) {
        inline_layout_ = InlineLayout::kGo112;
      } else if (go_minor_ >= 13 && go_minor_ <= 15) {
        inline_layout_ = InlineLayout::kGo113;
      }
      break;
  }
  switch (inline_layout_) {
    case InlineLayout::kNone:
      break;
    case InlineLayout::kGo19:
    case InlineLayout::kGo112:
      pcdata_inline_index_ = kPcdataInlTreeIndex19;
      funcdata_inline_tree_ = kFuncdataInlTree19;
      break;
    case InlineLayout::kGo113:
      pcdata_inline_index_ = kPcdataInlTreeIndex113;
      funcdata_inline_tree_ = kFuncdataInlTree113;
      break;
    case InlineLayout::kGo116:
    case InlineLayout::kGo118:
    case InlineLayout::kGo120:
      pcdata_inline_index_ = kPcdataInlTreeIndex116;
      funcdata_inline_tree_ = kFuncdataInlTree116;
      break;
  }
}

Result<void> GoPclntab::ParseHeader() {
  ByteCursor c(table_);
  uint32_t magic = c.U32();
  uint8_t pad1 = c.U8();
  uint8_t pad2 = c.U8();
  quantum_ = c.U8();
  pointer_size_ = c.U8();
  if (!c.ok()) return Malformed("header truncated");
  switch (magic) {
    case kMagic12:
      version_ = GoPclntabVersion::k1_2;
      break;
    case kMagic116:
      version_ = GoPclntabVersion::k1_16;
      break;
    case kMagic118:
      version_ = GoPclntabVersion::k1_18;
      break;
    case kMagic120:
      version_ = GoPclntabVersion::k1_20;
      break;
    default:
      return Error(ErrorCode::kUnsupported, "Go pclntab: unknown magic " + std::to_string(magic));
  }
  if (pad1 != 0 || pad2 != 0 || (quantum_ != 1 && quantum_ != 2 && quantum_ != 4) ||
      (pointer_size_ != 4 && pointer_size_ != 8)) {
    return Malformed("header fields out of range");
  }
  const size_t p = pointer_size_;
  uint64_t nfunc = c.UN(p);
  size_t entry_size = 2 * p;
  if (version_ == GoPclntabVersion::k1_2) {
    functab_ = 8 + p;
    if (!c.ok() || nfunc > table_.size() / entry_size) return Malformed("header truncated");
    // After the functab and its end pc: the uint32 offset of the file table.
    std::optional<uint64_t> filetab = ReadAt(table_, functab_ + nfunc * entry_size + p, 4);
    if (!filetab) return Malformed("function table truncated");
    filetab_ = *filetab;
  } else {
    c.UN(p);  // nfiles: the cutab entries say which exist
    if (version_ >= GoPclntabVersion::k1_18) {
      text_start_ = c.UN(p);
      entry_size = 8;  // two uint32: entry offset from text start, func offset
    }
    funcnametab_ = c.UN(p);
    cutab_ = c.UN(p);
    filetab_ = c.UN(p);
    pctab_ = c.UN(p);
    functab_ = c.UN(p);
    if (!c.ok()) return Malformed("header truncated");
  }
  if (nfunc == 0 || functab_ > table_.size() ||
      nfunc >= (table_.size() - functab_) / entry_size) {  // the end pc follows the last pair
    return Malformed("function table (" + std::to_string(nfunc) +
                     " functions) runs past the table's end");
  }
  if (filetab_ > table_.size() || funcnametab_ > table_.size() || cutab_ > table_.size() ||
      pctab_ > table_.size()) {
    return Malformed("a sub-table's offset is past the table's end");
  }
  function_count_ = static_cast<size_t>(nfunc);
  return {};
}

std::optional<uint64_t> GoPclntab::EntryAt(size_t i) const {
  if (version_ >= GoPclntabVersion::k1_18) {
    std::optional<uint64_t> off = ReadAt(table_, functab_ + uint64_t{i} * 8, 4);
    if (!off) return std::nullopt;
    return text_start_ + *off;
  }
  return ReadAt(table_, functab_ + uint64_t{i} * 2 * pointer_size_, pointer_size_);
}

std::optional<GoPclntab::FuncRecord> GoPclntab::RecordAt(size_t i) const {
  if (i >= function_count_) return std::nullopt;
  const bool v118 = version_ >= GoPclntabVersion::k1_18;
  const size_t pair = v118 ? 8 : 2 * pointer_size_;
  const size_t word = v118 ? 4 : pointer_size_;
  std::optional<uint64_t> entry = EntryAt(i);
  std::optional<uint64_t> end = EntryAt(i + 1);
  std::optional<uint64_t> func_offset = ReadAt(table_, functab_ + uint64_t{i} * pair + word, word);
  if (!entry || !end || !func_offset || *end < *entry) return std::nullopt;
  FuncRecord f;
  f.entry = *entry;
  f.end = *end;
  // 1.2: relative to the table; later: to the function table.
  f.offset = *func_offset + (version_ == GoPclntabVersion::k1_2 ? 0 : functab_);
  if (f.offset >= table_.size()) return std::nullopt;
  ByteCursor c(table_);
  c.Seek(static_cast<size_t>(f.offset));
  uint64_t record_entry = v118 ? text_start_ + c.U32() : c.UN(pointer_size_);
  f.name_offset = c.S32();
  c.Skip(8);  // args, deferreturn
  f.pcsp = c.U32();
  f.pcfile = c.U32();
  f.pcln = c.U32();
  f.npcdata = c.U32();
  if (version_ != GoPclntabVersion::k1_2) {
    f.cu_offset = c.U32();
    if (version_ == GoPclntabVersion::k1_20) c.Skip(4);  // startLine
    c.Skip(1);                                           // funcID
    f.flag = c.U8();                                     // 0 before Go 1.17
    c.Skip(1);                                           // pad
    f.nfuncdata = c.U8();
    f.pcdata = c.offset();
  } else {
    // Go 1.2–1.11 end the record in an int32 nfuncdata; 1.12–1.15 in {funcID, two unused bytes,
    // nfuncdata uint8}. Bytes that contradict the release's layout (a release misnamed, a
    // corrupt record) leave the function without funcdata, so without inline frames.
    uint8_t tail[4];
    for (uint8_t& b : tail) b = c.U8();
    f.pcdata = c.offset();
    if (inline_layout_ == InlineLayout::kGo19 && tail[1] == 0 && tail[2] == 0 && tail[3] == 0) {
      f.nfuncdata = tail[0];
    } else if ((inline_layout_ == InlineLayout::kGo112 || inline_layout_ == InlineLayout::kGo113) &&
               tail[1] == 0 && tail[2] == 0) {
      f.nfuncdata = tail[3];
    }
  }
  // The record names its own entry: a mismatch is a corrupt or misread table.
  if (!c.ok() || record_entry != f.entry) return std::nullopt;
  return f;
}

std::optional<GoFunction> GoPclntab::FunctionAt(size_t i) const {
  std::optional<FuncRecord> f = RecordAt(i);
  if (!f) return std::nullopt;
  return GoFunction{f->entry, f->end, FuncName(f->name_offset), f->flag};
}

std::optional<size_t> GoPclntab::FindIndex(uint64_t pc) const {
  // The last function whose entry is <= pc (entries ascend; a corrupt read ends the search).
  size_t lo = 0;
  size_t hi = function_count_;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    std::optional<uint64_t> entry = EntryAt(mid);
    if (!entry) return std::nullopt;
    if (*entry <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  std::optional<uint64_t> end = EntryAt(lo);
  if (!end || pc >= *end) return std::nullopt;
  return lo - 1;
}

std::optional<size_t> GoPclntab::FindIndex(uint64_t pc, LookupMemo* memo) const {
  if (memo == nullptr) return FindIndex(pc);
  if (memo->ascending_entries_ < 0) {
    memo->ascending_entries_ = 1;
    std::optional<uint64_t> previous = 0;
    for (size_t i = 0; i <= function_count_ && memo->ascending_entries_ == 1; ++i) {
      std::optional<uint64_t> entry = EntryAt(i);
      memo->ascending_entries_ = entry && *entry >= *previous;
      previous = entry;
    }
  }
  if (memo->ascending_entries_ == 1 && memo->function_ != SIZE_MAX && pc >= memo->entry_ &&
      pc < memo->end_) {
    return memo->function_;
  }
  std::optional<size_t> i = FindIndex(pc);
  if (i && memo->ascending_entries_ == 1) {
    // (Readable: every entry was read above.)
    memo->function_ = *i;
    memo->entry_ = EntryAt(*i).value_or(0);
    memo->end_ = EntryAt(*i + 1).value_or(0);
  }
  return i;
}

std::optional<GoFunction> GoPclntab::FindFunction(uint64_t pc) const {
  std::optional<size_t> i = FindIndex(pc);
  if (!i) return std::nullopt;
  return FunctionAt(*i);
}

bool GoPclntab::ForEachPcValue(uint64_t table_offset, uint64_t entry,
                               const std::function<bool(uint64_t, uint64_t, int32_t)>& run) const {
  if (table_offset == 0) return false;  // no table
  uint64_t start = (version_ == GoPclntabVersion::k1_2 ? 0 : pctab_) + table_offset;
  if (start >= table_.size()) return false;
  ByteCursor c(table_);
  c.Seek(static_cast<size_t>(start));
  // Pairs of (zig-zag value delta, pc delta in quanta), both unsigned varints; a zero value
  // delta after the first pair ends the table. Each value holds from its pc to the next one.
  int32_t value = -1;
  uint64_t at = entry;
  for (bool first = true;; first = false) {
    uint64_t value_delta = c.Uleb128();
    if (c.failed() || value_delta > 0xffffffff) return false;
    if (value_delta == 0 && !first) return true;
    uint32_t v = static_cast<uint32_t>(value_delta);
    int32_t delta = (v & 1) ? static_cast<int32_t>(~(v >> 1)) : static_cast<int32_t>(v >> 1);
    uint64_t pc_delta = c.Uleb128();
    if (c.failed() || pc_delta > 0xffffffff) return false;
    value = static_cast<int32_t>(static_cast<uint32_t>(value) + static_cast<uint32_t>(delta));
    uint64_t from = at;
    at += pc_delta * quantum_;
    if (!run(from, at, value)) return true;
  }
}

std::optional<int32_t> GoPclntab::PcValue(uint64_t table_offset, uint64_t entry, uint64_t pc,
                                          LookupMemo* memo) const {
  if (memo != nullptr) {
    auto same = [&](const LookupMemo::Table& t) {
      return t.offset == table_offset && t.entry == entry;
    };
    auto it = std::find_if(memo->tables_.begin(), memo->tables_.end(), same);
    if (it == memo->tables_.end()) {
      // A function's tables are asked together: a few are enough.
      if (memo->tables_.size() >= 8) memo->tables_.clear();
      LookupMemo::Table& t = memo->tables_.emplace_back();
      t.offset = table_offset;
      t.entry = entry;
      ForEachPcValue(table_offset, entry, [&](uint64_t from, uint64_t to, int32_t value) {
        t.ascending = t.ascending && to >= from;
        t.runs.push_back({from, to, value});
        return true;
      });
      it = memo->tables_.end() - 1;
    }
    const std::vector<LookupMemo::Run>& runs = it->runs;
    if (it->ascending) {
      // Each run starts where the one before ended: the first ending past pc holds it (the
      // scan below, by binary search).
      if (runs.empty() || pc < runs.front().from) return std::nullopt;
      auto run = std::partition_point(runs.begin(), runs.end(),
                                      [&](const LookupMemo::Run& r) { return r.to <= pc; });
      if (run == runs.end()) return std::nullopt;
      return run->value;
    }
    for (const LookupMemo::Run& r : runs) {
      if (pc < r.from) return std::nullopt;
      if (pc < r.to) return r.value;
    }
    return std::nullopt;
  }
  std::optional<int32_t> found;
  ForEachPcValue(table_offset, entry, [&](uint64_t from, uint64_t to, int32_t value) {
    if (pc < from) return false;  // before the function's first run
    if (pc < to) {
      found = value;
      return false;
    }
    return true;
  });
  return found;
}

bool GoPclntab::StackDeltas(size_t i, std::vector<GoStackDelta>* runs) const {
  runs->clear();
  std::optional<FuncRecord> f = RecordAt(i);
  if (!f) return false;
  bool ok = ForEachPcValue(f->pcsp, f->entry, [&](uint64_t from, uint64_t to, int32_t value) {
    if (from >= f->end || value < 0 || to < from) return false;
    if (to == from) return true;  // an empty run (a corrupt table): nothing to describe
    runs->push_back({from, std::min(to, f->end), value});
    return to < f->end;
  });
  return ok && !runs->empty();
}

std::string_view GoPclntab::FuncName(int64_t name_offset) const {
  if (name_offset < 0) return {};
  return CStringAt(table_, funcnametab_ + static_cast<uint64_t>(name_offset));
}

std::string_view GoPclntab::FileName(const FuncRecord& f, int32_t file_number) const {
  if (file_number < 0) return {};
  uint64_t n = static_cast<uint64_t>(file_number);
  std::optional<uint64_t> name_offset;
  if (version_ == GoPclntabVersion::k1_2) {
    // filetab[0] is the number of files; file numbers index it directly.
    std::optional<uint64_t> count = ReadAt(table_, filetab_, 4);
    if (!count || n == 0 || n >= *count) return {};
    name_offset = ReadAt(table_, filetab_ + 4 * n, 4);
    if (!name_offset) return {};
    return CStringAt(table_, *name_offset);
  }
  name_offset = ReadAt(table_, cutab_ + (uint64_t{f.cu_offset} + n) * 4, 4);
  if (!name_offset || *name_offset == kNoEntry) return {};
  return CStringAt(table_, filetab_ + *name_offset);
}

std::span<const uint8_t> GoPclntab::ImageBytes(uint64_t vaddr, size_t size) const {
  for (const GoSegment& s : image_) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr <= s.bytes.size() &&
        s.bytes.size() - (vaddr - s.vaddr) >= size) {
      return s.bytes.subspan(static_cast<size_t>(vaddr - s.vaddr), size);
    }
  }
  return {};
}

std::optional<uint64_t> GoPclntab::InlineTree(const FuncRecord& f) const {
  if (inline_layout_ == InlineLayout::kNone || f.nfuncdata <= funcdata_inline_tree_) {
    return std::nullopt;
  }
  uint64_t funcdata = f.pcdata + uint64_t{f.npcdata} * 4;
  if (version_ >= GoPclntabVersion::k1_18) {
    // uint32 offsets from the moduledata's gofunc.
    std::optional<uint64_t> off = ReadAt(table_, funcdata + funcdata_inline_tree_ * 4, 4);
    if (!off || *off == kNoEntry || gofunc_ == 0) return std::nullopt;
    return gofunc_ + *off;
  }
  // Go 1.2–1.17: pointers, aligned to the pointer size in memory.
  if ((table_vaddr_ + funcdata) % pointer_size_ != 0) funcdata += 4;
  std::optional<uint64_t> address =
      ReadAt(table_, funcdata + funcdata_inline_tree_ * pointer_size_, pointer_size_);
  if (!address || *address == 0) return std::nullopt;
  return address;
}

std::optional<uint64_t> GoPclntab::InlineIndexTable(const FuncRecord& f) const {
  if (inline_layout_ == InlineLayout::kNone || f.npcdata <= pcdata_inline_index_) {
    return std::nullopt;
  }
  return ReadAt(table_, f.pcdata + uint64_t{pcdata_inline_index_} * 4, 4);
}

std::optional<GoPclntab::InlineNode> GoPclntab::NodeAt(uint64_t tree, int32_t index) const {
  if (index < 0 || inline_layout_ == InlineLayout::kNone) return std::nullopt;
  const bool small =
      inline_layout_ == InlineLayout::kGo19 || inline_layout_ == InlineLayout::kGo120;
  const size_t size = small ? 16 : 20;
  std::span<const uint8_t> bytes = ImageBytes(tree + static_cast<uint64_t>(index) * size, size);
  if (bytes.empty()) return std::nullopt;
  ByteCursor c(bytes);
  InlineNode node;
  switch (inline_layout_) {
    case InlineLayout::kGo19:  // parent, file, line, func
      node.parent = c.S32();
      node.file = c.S32();
      node.line = c.S32();
      node.name_offset = c.S32();
      break;
    case InlineLayout::kGo120:  // funcID, padding, nameOff, parentPc, startLine
      c.Skip(4);
      node.name_offset = c.S32();
      node.parent_pc = c.S32();
      break;
    default:  // parent int16, funcID, padding, file, line, func, parentPc
      node.parent = c.S16();
      c.Skip(2);
      node.file = c.S32();
      node.line = c.S32();
      node.name_offset = c.S32();
      node.parent_pc = c.S32();
      break;
  }
  if (!c.ok()) return std::nullopt;
  return node;
}

void GoPclntab::AppendParentChain(const FuncRecord& f, uint64_t tree, int32_t index,
                                  const GoFunction& function, std::vector<GoFrame>* frames) const {
  // Go 1.9–1.11's traceback: the caller of node i is at node i's file:line, and is node i's
  // parent, or the function itself where the parent is < 0. The linker adds a node's parent
  // before it, so a parent at or after its child is a corrupt tree: the chain stops there at
  // the function, its place unknown.
  std::optional<InlineNode> node = NodeAt(tree, index);
  for (size_t depth = 0; node; ++depth) {
    GoFrame caller;
    caller.file = FileName(f, node->file);
    caller.line = node->line > 0 ? static_cast<uint32_t>(node->line) : 0;
    if (node->parent < 0) break;
    std::optional<InlineNode> parent;
    if (node->parent < index && depth < kMaxInlineDepth) parent = NodeAt(tree, node->parent);
    if (!parent) break;
    caller.function = FuncName(parent->name_offset);
    caller.inlined = true;
    frames->push_back(caller);
    index = node->parent;
    node = parent;
  }
  // The function itself: at the outermost node's call site, or (a corrupt tree) unknown.
  GoFrame outer{function.name, {}, 0, false};
  if (node && node->parent < 0) {
    outer.file = FileName(f, node->file);
    outer.line = node->line > 0 ? static_cast<uint32_t>(node->line) : 0;
  }
  frames->push_back(outer);
}

bool GoPclntab::Lookup(uint64_t pc, bool inlines, std::vector<GoFrame>* frames,
                       GoFunction* function, LookupMemo* memo) const {
  frames->clear();
  std::optional<size_t> index = FindIndex(pc, memo);
  if (!index) return false;
  std::optional<FuncRecord> f = RecordAt(*index);
  if (!f) return false;
  *function = GoFunction{f->entry, f->end, FuncName(f->name_offset), f->flag};
  std::optional<uint64_t> tree = inlines ? InlineTree(*f) : std::nullopt;
  std::optional<uint64_t> inline_index_table = tree ? InlineIndexTable(*f) : std::nullopt;
  const uint64_t tree_vaddr = tree.value_or(0);  // (read only where inline_index_table is)
  // From the innermost inlined function out: each frame's file:line is the pc-value tables'
  // at `at`; from Go 1.12 on, its caller's position is that of the instruction at the node's
  // parentPc, and so on out (Go 1.9–1.11: AppendParentChain).
  uint64_t at = pc;
  for (size_t depth = 0;; ++depth) {
    GoFrame frame;
    if (std::optional<int32_t> file = PcValue(f->pcfile, f->entry, at, memo)) {
      frame.file = FileName(*f, *file);
    }
    if (std::optional<int32_t> line = PcValue(f->pcln, f->entry, at, memo); line && *line > 0) {
      frame.line = static_cast<uint32_t>(*line);
    }
    std::optional<int32_t> index;
    if (inline_index_table && depth < kMaxInlineDepth) {
      index = PcValue(*inline_index_table, f->entry, at, memo);
    }
    std::optional<InlineNode> node = index ? NodeAt(tree_vaddr, *index) : std::nullopt;
    if (!node) {
      frame.function = function->name;
      frames->push_back(frame);
      return true;
    }
    frame.function = FuncName(node->name_offset);
    frame.inlined = true;
    frames->push_back(frame);
    if (inline_layout_ == InlineLayout::kGo19) {
      AppendParentChain(*f, tree_vaddr, *index, *function, frames);
      return true;
    }
    if (node->parent_pc < 0) {  // a corrupt node: the function itself, at the address
      frames->push_back(GoFrame{function->name, {}, 0, false});
      return true;
    }
    at = f->entry + static_cast<uint64_t>(node->parent_pc);
  }
}

std::vector<uint64_t> GoPclntab::LookupBounds() const {
  std::vector<uint64_t> bounds;
  // Each entry, then its function's bounds. A function's tables are read only for the pcs of
  // [entry, end) (FindIndex finds it for no others, whatever the entries): their bounds elsewhere
  // change nothing. A run starts where the one before it ended, the first at the entry (above).
  std::vector<uint64_t> own;
  for (size_t i = 0; i <= function_count_; ++i) {
    if (std::optional<uint64_t> entry = EntryAt(i)) bounds.push_back(*entry);
    std::optional<FuncRecord> f = RecordAt(i);  // (none past the last)
    if (!f) continue;
    own.clear();
    auto add = [&](uint64_t, uint64_t to, int32_t) {
      if (to > f->entry && to < f->end) own.push_back(to);
      return to < f->end;  // the runs ascend (or overflowed: then no matter where they stop)
    };
    ForEachPcValue(f->pcfile, f->entry, add);
    const auto file_end = static_cast<std::ptrdiff_t>(own.size());
    ForEachPcValue(f->pcln, f->entry, add);
    const auto line_end = static_cast<std::ptrdiff_t>(own.size());
    // Lookup reads the inline-index table only where the function has an inline tree.
    if (InlineTree(*f)) {
      if (std::optional<uint64_t> table = InlineIndexTable(*f))
        ForEachPcValue(*table, f->entry, add);
    }
    // Each table's runs ascend: three sorted runs to merge (sorted whole if one overflowed).
    std::inplace_merge(own.begin(), own.begin() + file_end, own.begin() + line_end);
    std::inplace_merge(own.begin(), own.begin() + line_end, own.end());
    if (!std::is_sorted(own.begin(), own.end())) std::sort(own.begin(), own.end());
    bounds.insert(bounds.end(), own.begin(), own.end());
  }
  // Sorted already when the entries ascend; not in a corrupt table.
  if (!std::is_sorted(bounds.begin(), bounds.end())) std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

void GoPclntab::FindGofunc() {
  // The runtime's moduledata (in a writable segment) starts with a pointer to the table's
  // header and a slice whose data is the function-name table; its text field equals the
  // header's text start. Its gofunc field is where 1.18+ funcdata offsets count from.
  const size_t p = pointer_size_;
  const size_t gofunc_word =
      version_ == GoPclntabVersion::k1_20 ? kModuleGofunc120 : kModuleGofunc118;
  for (const GoSegment& s : image_) {
    if (!s.writable) continue;
    size_t first = static_cast<size_t>((p - s.vaddr % p) % p);
    for (size_t off = first; off + (gofunc_word + 1) * p <= s.bytes.size(); off += p) {
      // (In bounds by the loop's condition; most words are not the header's address.)
      uint64_t header = 0;
      std::memcpy(&header, s.bytes.data() + off, p);
      if (header != table_vaddr_) continue;
      std::optional<uint64_t> names = ReadAt(s.bytes, off + p, p);
      std::optional<uint64_t> text = ReadAt(s.bytes, off + kModuleText * p, p);
      std::optional<uint64_t> gofunc = ReadAt(s.bytes, off + gofunc_word * p, p);
      if (names != table_vaddr_ + funcnametab_ || text != text_start_ || !gofunc) continue;
      if (ImageBytes(*gofunc, 1).empty()) continue;
      gofunc_ = *gofunc;
      return;
    }
  }
}

namespace {

std::vector<GoSegment> LoadedImage(const ElfFile& elf) {
  std::vector<GoSegment> image;
  std::span<const uint8_t> file = elf.bytes();
  for (const ElfSegment& s : elf.segments()) {
    if (s.type != PT_LOAD || s.offset > file.size()) continue;
    uint64_t size = std::min<uint64_t>(s.filesz, file.size() - s.offset);
    image.push_back(GoSegment{s.vaddr, file.subspan(static_cast<size_t>(s.offset), size),
                              (s.flags & PF_W) != 0});
  }
  return image;
}

// The image's bytes from vaddr to the end of its segment.
std::span<const uint8_t> BytesFrom(const std::vector<GoSegment>& image, uint64_t vaddr) {
  for (const GoSegment& s : image) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.bytes.size()) {
      return s.bytes.subspan(static_cast<size_t>(vaddr - s.vaddr));
    }
  }
  return {};
}

// N of a runtime version "go1.N", "go1.N.P", "go1.NrcK", "go1.NbetaK"; 0 for anything else
// (a development build's "devel +hash ...", bytes that are no version).
uint32_t MinorOfVersion(std::string_view version) {
  constexpr std::string_view kPrefix = "go1.";
  if (!version.starts_with(kPrefix)) return 0;
  uint32_t minor = 0;
  size_t i = kPrefix.size();
  for (; i < version.size() && i < kPrefix.size() + 4 && version[i] >= '0' && version[i] <= '9';
       ++i) {
    minor = minor * 10 + static_cast<uint32_t>(version[i] - '0');
  }
  if (i == kPrefix.size()) return 0;
  if (i < version.size() && version[i] >= '0' && version[i] <= '9') return 0;  // too long
  return minor;
}

// A Go string header {data pointer, length} at vaddr, its bytes read through the image.
std::string_view GoStringAt(const std::vector<GoSegment>& image, uint64_t vaddr,
                            size_t pointer_size) {
  constexpr uint64_t kMaxVersionLength = 128;
  std::span<const uint8_t> header = BytesFrom(image, vaddr);
  std::optional<uint64_t> data = ReadAt(header, 0, pointer_size);
  std::optional<uint64_t> length = ReadAt(header, pointer_size, pointer_size);
  if (!data || !length || *length > kMaxVersionLength) return {};
  std::span<const uint8_t> bytes = BytesFrom(image, *data);
  if (bytes.size() < *length) return {};
  return {reinterpret_cast<const char*>(bytes.data()), static_cast<size_t>(*length)};
}

// N of the release "go1.N" that linked the binary, 0 when it does not say. Go 1.13 on write
// .go.buildinfo: a 16-byte header ("\xff Go buildinf:", the pointer size, flags), then up to
// 1.17 a pointer to the runtime.buildVersion string, from 1.18 on (flag 2) the version inline,
// a varint length and its bytes at offset 32. Else the runtime.buildVersion symbol, where a
// symbol table is left.
uint32_t GoMinorRelease(const ElfFile& elf, const std::vector<GoSegment>& image) {
  constexpr std::string_view kBuildInfoMagic = "\xff Go buildinf:";
  const ElfSection* section = elf.FindSection(".go.buildinfo");
  std::optional<std::span<const uint8_t>> info;
  if (section != nullptr && section->type != SHT_NOBITS) {
    if (auto data = elf.SectionData(*section)) info = *data;
  }
  if (info && info->size() >= 32 &&
      std::memcmp(info->data(), kBuildInfoMagic.data(), kBuildInfoMagic.size()) == 0) {
    const uint8_t pointer_size = (*info)[14];
    const uint8_t flags = (*info)[15];
    std::string_view version;
    if (flags & 2) {
      ByteCursor c(*info);
      c.Seek(32);
      uint64_t length = c.Uleb128();
      if (c.ok() && length <= c.remaining()) {
        std::span<const uint8_t> bytes = c.Bytes(static_cast<size_t>(length));
        version = {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
      }
    } else if ((flags & 1) == 0 && (pointer_size == 4 || pointer_size == 8)) {  // little-endian
      if (std::optional<uint64_t> address = ReadAt(*info, 16, pointer_size)) {
        version = GoStringAt(image, *address, pointer_size);
      }
    }
    if (uint32_t minor = MinorOfVersion(version)) return minor;
  }
  if (const ElfSymbol* symbol = elf.symbols().FindByName("runtime.buildVersion")) {
    return MinorOfVersion(GoStringAt(image, symbol->address, elf.is_64bit() ? 8 : 4));
  }
  return 0;
}

bool StartsWithMagic(std::span<const uint8_t> bytes) {
  if (bytes.size() < 8) return false;
  uint32_t magic;
  std::memcpy(&magic, bytes.data(), 4);
  return (magic == kMagic12 || magic == kMagic116 || magic == kMagic118 || magic == kMagic120) &&
         bytes[4] == 0 && bytes[5] == 0;
}

}  // namespace

namespace {

using FoundTable = std::optional<std::unique_ptr<GoPclntab>>;

bool InExecutableSegment(const ElfFile& elf, uint64_t vaddr) {
  for (const ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD && (s.flags & PF_X) && vaddr >= s.vaddr && vaddr - s.vaddr < s.memsz) {
      return true;
    }
  }
  return false;
}

// A table read at a guessed place (a symbol's address, a scanned magic) is taken when its
// first and last functions are named and lie in the program's code: random bytes that
// happen to start with a magic are not.
bool Plausible(const ElfFile& elf, const GoPclntab& table) {
  std::optional<GoFunction> first = table.FunctionAt(0);
  std::optional<GoFunction> last = table.FunctionAt(table.function_count() - 1);
  return first && last && !first->name.empty() && !last->name.empty() &&
         InExecutableSegment(elf, first->entry) && InExecutableSegment(elf, last->entry);
}

// The binary's release (GoMinorRelease), read once, when a table is about to be parsed: not
// for the binaries without one.
class LazyRelease {
 public:
  LazyRelease(const ElfFile& elf, const std::vector<GoSegment>& image) : elf_(elf), image_(image) {}
  uint32_t Get() {
    if (!minor_) minor_ = GoMinorRelease(elf_, image_);
    return *minor_;
  }

 private:
  const ElfFile& elf_;
  const std::vector<GoSegment>& image_;
  std::optional<uint32_t> minor_;
};

FoundTable ParseGuessed(const ElfFile& elf, const std::vector<GoSegment>& image, uint64_t vaddr,
                        LazyRelease& release) {
  std::span<const uint8_t> bytes = BytesFrom(image, vaddr);
  if (!StartsWithMagic(bytes)) return std::nullopt;
  auto table = GoPclntab::Parse(bytes, vaddr, image, release.Get());
  if (!table || !Plausible(elf, **table)) return std::nullopt;
  return std::move(*table);
}

// Sections a Go linker always writes, also with -ldflags='-s -w'.
bool IsGoBinary(const ElfFile& elf) {
  return elf.FindSection(".go.buildinfo") != nullptr ||
         elf.FindSection(".note.go.buildid") != nullptr;
}

}  // namespace

Result<FoundTable> FindGoPclntab(const ElfFile& elf) {
  std::vector<GoSegment> image = LoadedImage(elf);
  LazyRelease release(elf, image);
  // Go's own linker names the section; ld keeps the name for executables, not for PIE, where
  // it merges .data.rel.ro.gopclntab into .data.rel.ro.
  for (std::string_view name : {".gopclntab", ".data.rel.ro.gopclntab"}) {
    const ElfSection* section = elf.FindSection(name);
    if (section == nullptr || section->type == SHT_NOBITS) continue;
    auto data = elf.SectionData(*section);
    if (!data) return std::move(data).error();
    const uint32_t go_minor = release.Get();  // (before the image is moved)
    auto table = GoPclntab::Parse(*data, section->addr, std::move(image), go_minor);
    if (!table) return std::move(table).error();
    return FoundTable(std::move(*table));
  }
  // The linker's symbols, when a symbol table is left: the table itself, or the moduledata,
  // whose first word points to it.
  if (const ElfSymbol* symbol = elf.symbols().FindByName("runtime.pclntab")) {
    if (FoundTable table = ParseGuessed(elf, image, symbol->address, release)) return table;
  }
  if (const ElfSymbol* symbol = elf.symbols().FindByName("runtime.firstmoduledata")) {
    const uint8_t pointer_size = elf.is_64bit() ? 8 : 4;
    std::optional<uint64_t> header = ReadAt(BytesFrom(image, symbol->address), 0, pointer_size);
    if (header) {
      if (FoundTable table = ParseGuessed(elf, image, *header, release)) return table;
    }
  }
  // Else a header found in the data segments: only in a Go binary, or one without section
  // headers (scanning every big C++ binary's data would cost each of them a pass over it).
  if (!elf.sections().empty() && !IsGoBinary(elf)) return FoundTable();
  for (const GoSegment& s : image) {
    // The linker aligns the table to at least 8 bytes.
    for (size_t off = (8 - s.vaddr % 8) % 8; off + 8 <= s.bytes.size(); off += 8) {
      if (!StartsWithMagic(s.bytes.subspan(off))) continue;
      if (FoundTable table = ParseGuessed(elf, image, s.vaddr + off, release)) return table;
    }
  }
  return FoundTable();
}

}  // namespace stacksym::elf
