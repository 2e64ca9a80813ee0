// libFuzzer target for the DWARF reader: units, abbreviations, forms, range lists, aranges,
// inline trees, name chains, line tables, the variable table (locations, location lists,
// type sizes, declarations; looked up by address and by an object's offset) and FRAME's
// locals, fed raw section bytes.
//
// Input: records of [u8 section id][u32 little-endian length][bytes] (ids: 0 .debug_info,
// 1 .debug_abbrev, 2 .debug_str, 3 .debug_line, 4 .debug_line_str, 5 .debug_str_offsets,
// 6 .debug_addr, 7 .debug_ranges, 8 .debug_rnglists, 9 .debug_aranges, 10 .debug_loc,
// 11 .debug_loclists); seeds are sections
// extracted from the test fixtures by fuzz/seeds/fuzz_dwarf_info.sh.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/function_table.h"
#include "dwarf/line_table.h"
#include "dwarf/variable_table.h"

namespace {

stacksym::dwarf::DwarfSections Split(const uint8_t* data, size_t size) {
  stacksym::dwarf::DwarfSections s;
  std::span<const uint8_t>* slots[] = {&s.info,     &s.abbrev,      &s.str,  &s.line,
                                       &s.line_str, &s.str_offsets, &s.addr, &s.ranges,
                                       &s.rnglists, &s.aranges,     &s.loc,  &s.loclists};
  size_t pos = 0;
  while (pos + 5 <= size) {
    uint8_t id = data[pos];
    uint32_t len;
    std::memcpy(&len, data + pos + 1, 4);
    pos += 5;
    if (len > size - pos) len = static_cast<uint32_t>(size - pos);
    if (id < 12) *slots[id] = std::span<const uint8_t>(data + pos, len);
    pos += len;
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stacksym;
  dwarf::DwarfSections sections = Split(data, size);

  // The reader pieces directly: every unit's function table, names and line table.
  dwarf::DwarfFile file(sections);
  (void)file.ScanUnits();
  std::vector<uint64_t> probes;
  for (dwarf::UnitInfo& unit : file.units()) {
    if (unit.is_type_unit()) continue;
    std::vector<dwarf::AddressRange> unit_ranges;
    (void)file.UnitRanges(unit, &unit_ranges);
    for (const auto& r : unit_ranges) probes.push_back(r.low);
    auto table = dwarf::FunctionTable::Build(file, unit);
    if (table) {
      for (const auto& node : table->nodes())
        (void)dwarf::DieChain(file, node.die_offset).Name(false);
      for (const auto& seg : table->segments()) probes.push_back(seg.start);
    }
    if (unit.has_stmt_list) {
      dwarf::LineSections ls{sections.line, sections.line_str, sections.str, sections.str_offsets};
      auto line = dwarf::LineTable::Parse(ls, unit.stmt_list, unit.ctx.address_size);
      if (line) {
        std::string path;
        for (size_t i = 0; i < line->files().size() + 1; ++i) {
          (void)line->FilePath(i, unit.comp_dir, &path);
        }
        for (const auto& row : line->rows()) (void)line->Find(row.address);
      }
    }
    if (probes.size() > 4096) break;
  }

  // Variables at fixed addresses and their declarations.
  dwarf::VariableTable variables = dwarf::VariableTable::Build(file);
  for (size_t i = 0; i < variables.entries().size() && i < 256; ++i) {
    const dwarf::VariableTable::Entry& e = variables.entries()[i];
    if (const dwarf::VariableTable::Entry* v = variables.Find(e.high - 1)) {
      dwarf::DeclAttrs decl;
      dwarf::FindDecl(file, v->die_offset, &decl);
    }
  }

  // And the whole pipeline.
  dwarf::DwarfOptions options;
  options.demangle = false;
  auto source = dwarf::DebugInfoSource::FromSections(sections, options);
  if (source && *source) {
    std::vector<SourceFrame> frames;
    std::vector<FrameLocal> locals;
    DataDeclaration decl;
    // An object's offsets: every address read as an offset into a 4 KiB section.
    auto offset_of = [](uint64_t a) -> std::optional<uint64_t> { return a & 0xfff; };
    for (size_t i = 0; i < probes.size(); ++i) {
      const uint64_t a = probes[i];
      (*source)->Lookup(a, &frames);
      (*source)->Lookup(a + 1, &frames);
      if (i >= 256) continue;
      // FRAME: locals with their location lists (frame base register, DW_OP_bregN entries).
      locals.clear();
      (*source)->LookupLocals(a, &locals);
      (void)(*source)->LookupVariable(a, &decl);
      (void)(*source)->LookupVariableAtOffset(a & 0xfff, offset_of, &decl);
    }
  }
  return 0;
}
