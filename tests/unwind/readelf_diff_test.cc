// Differential test of the CFI reader and interpreter against binutils: for each file, every
// FDE readelf finds must be found with the same pc range, and every row of its interpreted
// table (location, CFA and every register column readelf prints) must read the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../elf/elf_builder.h"
#include "../elf/tool_runner.h"
#include "cfi_bytes.h"
#include "cfi_elf.h"
#include "cfi_text.h"
#include "readelf_frames.h"
#include "stacksym/elf.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_sources.h"

namespace stacksym::testing {
namespace {

struct DiffCounts {
  size_t fdes = 0;
  size_t rows = 0;
  std::vector<std::string> mismatches;
};

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string HexText(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

// Runs readelf once into a temporary file and parses it.
std::vector<ReadelfEntry> RunReadelf(const std::string& path) {
  char tmpl[] = "/tmp/stacksym-readelf-XXXXXX";
  int fd = mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  if (fd < 0) return {};
  close(fd);
  int rc = 0;
  RunTool(
      "readelf -wN --debug-dump=frames-interp " + ShellQuote(path) + " > " + tmpl + " 2>/dev/null",
      &rc);
  std::string text = ReadWholeFile(tmpl);
  unlink(tmpl);
  // readelf exits with 1 on a separate debug file ("Unable to find program interpreter
  // name") but still prints the frames.
  EXPECT_TRUE(rc == 0 || text.find("Contents of the ") != std::string::npos)
      << "readelf failed on " << path;
  std::vector<ReadelfEntry> entries;
  std::string error;
  EXPECT_TRUE(ParseReadelfFrames(text, &entries, &error)) << error;
  return entries;
}

DiffCounts Compare(const std::string& path) {
  DiffCounts counts;
  std::vector<ReadelfEntry> reference = RunReadelf(path);
  std::map<std::pair<std::string, uint64_t>, const ReadelfEntry*> by_offset;
  std::map<std::string, size_t> reference_fdes;
  for (const ReadelfEntry& e : reference) {
    if (e.is_cie) continue;
    by_offset[{e.section, e.offset}] = &e;
    ++reference_fdes[e.section];
  }

  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << path;
  if (!elf) return counts;
  unwind::CfiSources sources = unwind::FindCfiSources(**elf, nullptr);
  EXPECT_TRUE(sources.problems.empty());
  auto mismatch = [&](std::string what) { counts.mismatches.push_back(std::move(what)); };

  for (const unwind::CfiSectionInfo& info : sources.sections) {
    const std::string section = unwind::CfiSectionName(info.kind);
    unwind::CfiEntries entries = unwind::ReadCfiSection(info);
    for (const unwind::CfiProblem& p : entries.problems) {
      mismatch(section + " entry " + HexText(p.offset) + ": " + p.message);
    }
    if (entries.fdes.size() != reference_fdes[section]) {
      mismatch(section + ": " + std::to_string(entries.fdes.size()) + " FDEs, readelf has " +
               std::to_string(reference_fdes[section]));
    }
    unwind::CfaInterpreter interpreter;
    for (const unwind::Fde& fde : entries.fdes) {
      const std::string where = section + " FDE " + HexText(fde.offset);
      auto it = by_offset.find({section, fde.offset});
      if (it == by_offset.end()) {
        mismatch(where + ": readelf has no FDE there");
        continue;
      }
      const ReadelfEntry& ref = *it->second;
      ++counts.fdes;
      if (ref.pc_begin != fde.pc_begin || ref.pc_end != fde.pc_end) {
        mismatch(where + ": pc " + HexText(fde.pc_begin) + ".." + HexText(fde.pc_end) +
                 ", readelf " + HexText(ref.pc_begin) + ".." + HexText(ref.pc_end));
        continue;
      }
      const unwind::Cie& cie = entries.cies[fde.cie_index];
      std::vector<uint64_t> columns;
      std::set<uint64_t> listed;
      for (int c : ref.columns) {
        uint64_t col = c == kReadelfRaColumn ? cie.return_address_column : static_cast<uint64_t>(c);
        columns.push_back(col);
        listed.insert(col);
      }
      size_t row_index = 0;
      size_t before = counts.mismatches.size();
      Result<unwind::CfaProgramSummary> run =
          interpreter.Run(cie, fde, [&](uint64_t pc, const unwind::CfaState& state) {
            size_t i = row_index++;
            if (i >= ref.rows.size() || counts.mismatches.size() > before + 3) return;
            const ReadelfRow& r = ref.rows[i];
            std::string at = where + " row " + std::to_string(i) + " (" + HexText(pc) + ")";
            if (r.loc != pc) mismatch(at + ": readelf's row is at " + HexText(r.loc));
            if (r.cfa != CfaText(state.cfa)) {
              mismatch(at + ": CFA " + CfaText(state.cfa) + ", readelf " + r.cfa);
            }
            for (size_t k = 0; k < columns.size(); ++k) {
              std::string ours = RuleText(state.Rule(columns[k]));
              if (ours != r.cells[k]) {
                mismatch(at + ": " + ReadelfRegisterName(columns[k]) + " " + ours + ", readelf " +
                         r.cells[k]);
              }
            }
            for (size_t reg = 0; reg < state.registers.size(); ++reg) {
              if (state.registers[reg].kind != unwind::RegisterRuleKind::kUnspecified &&
                  !listed.count(reg)) {
                mismatch(at + ": rule for " + ReadelfRegisterName(reg) +
                         " that readelf does not list");
              }
            }
          });
      if (!run) {
        mismatch(where + ": " + run.error().message);
        continue;
      }
      // readelf prints no table for an FDE whose instructions are all DW_CFA_nop.
      size_t expected = run->all_nops ? 0 : row_index;
      if (ref.rows.size() != expected) {
        mismatch(where + ": " + std::to_string(expected) + " rows, readelf " +
                 std::to_string(ref.rows.size()));
      }
      counts.rows += expected;
    }
  }
  return counts;
}

void ExpectSameAsReadelf(const std::string& path, size_t min_fdes) {
  if (!ToolAvailable("readelf")) GTEST_SKIP() << "readelf (binutils) is not installed";
  if (access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " is not present";
  DiffCounts counts = Compare(path);
  for (size_t i = 0; i < counts.mismatches.size() && i < 30; ++i) {
    ADD_FAILURE() << counts.mismatches[i];
  }
  EXPECT_EQ(counts.mismatches.size(), 0u) << path;
  EXPECT_GE(counts.fdes, min_fdes) << path;
  EXPECT_GT(counts.rows, 0u) << path;
  std::printf("%s: %zu FDEs, %zu rows equal to readelf's\n", path.c_str(), counts.fdes,
              counts.rows);
}

TEST(ReadelfDiff, Libc) { ExpectSameAsReadelf("/usr/lib/x86_64-linux-gnu/libc.so.6", 1000); }
TEST(ReadelfDiff, Python) { ExpectSameAsReadelf("/usr/bin/python3.11", 1000); }
TEST(ReadelfDiff, LibPython) {
  ExpectSameAsReadelf("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", 1000);
}
TEST(ReadelfDiff, LibCephCommon) {
  // From librados2 (scripts/setup.sh installs it with STACKSYM_BENCH_DEPS=1).
  ExpectSameAsReadelf("/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2", 1000);
}

class ReadelfDiffFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ReadelfDiffFixture, SameRows) { ExpectSameAsReadelf(Fixture(GetParam()), 5); }

INSTANTIATE_TEST_SUITE_P(Fixtures, ReadelfDiffFixture,
                         ::testing::Values("unwind_gcc_o2", "unwind_gcc_o0", "unwind_clang_o2",
                                           "unwind_clang_o0", "unwind_gxx_o2", "unwind_clangxx_o2",
                                           "unwind_gcc_debug_frame", "unwind_gcc_split.debug"));

}  // namespace
}  // namespace stacksym::testing

namespace stacksym::testing {
namespace {

std::vector<uint8_t> Le(uint64_t v, size_t n) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<uint8_t> Sleb(int64_t v) {
  std::vector<uint8_t> out;
  AppendSleb(out, v);
  return out;
}

// Every DW_CFA op, in one program, the way no compiler would write it.
std::vector<uint8_t> EveryOp() {
  using namespace unwind;
  return Cat({
      {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2},
      {DW_CFA_advance_loc1, 0x10, DW_CFA_def_cfa_register, 6},
      {DW_CFA_advance_loc2, 0x00, 0x01, DW_CFA_offset_extended, 3, 3},
      {DW_CFA_offset_extended_sf, 12},
      Sleb(-4),
      {DW_CFA_GNU_negative_offset_extended, 13, 2},
      {DW_CFA_advance_loc4, 0x00, 0x02, 0, 0, DW_CFA_val_offset, 14, 1, DW_CFA_val_offset_sf, 15},
      Sleb(-2),
      {DW_CFA_offset_extended, 25, 4},  // xmm8
      {DW_CFA_remember_state, DW_CFA_register, 3, 0, DW_CFA_same_value, 12, DW_CFA_undefined, 13},
      {DW_CFA_advance_loc | 4, DW_CFA_restore_state, DW_CFA_advance_loc | 2},
      {DW_CFA_restore_extended, 3, DW_CFA_restore | 6, DW_CFA_def_cfa_sf, 7},
      Sleb(-2),
      {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset_sf},
      Sleb(-3),
      {DW_CFA_GNU_args_size, 16, DW_CFA_expression, 6, 2, 0x77, 8},
      {DW_CFA_val_expression, 3, 2, 0x77, 0},
      {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_expression, 3, 0x77, 8, DW_OP_deref},
      {DW_CFA_advance_loc | 0, DW_CFA_def_cfa, 7, 8, DW_CFA_nop, DW_CFA_nop},
  });
}

// Every header variant and pointer encoding readelf itself understands (it applies pcrel
// only, and reads LEB128 pointers as absptr, so those are tested in ReadEncodedPointer's
// own test), written into an ELF and compared with readelf's reading of it.
TEST(ReadelfDiff, HandMadeSections) {
  using namespace unwind;
  CfiBytes eh(CfiSectionKind::kEhFrame);
  const uint64_t kVaddr = 0x10000;
  // "zPLR": personality indirect pcrel sdata4, LSDA and FDE pointers pcrel sdata4.
  size_t cie1 = eh.AddCie({.augmentation = "zPLR",
                           .augmentation_data = Cat({{0x9b}, Le(0x40, 4), {0x1b, 0x1b}}),
                           .z = true,
                           .instructions = X86CieInstructions()});
  {
    size_t field = eh.NextFdePcField(false);
    eh.AddFde({.cie_offset = cie1,
               .pc_fields = Cat({Le(0x2000 - (kVaddr + field), 4), Le(0x1000, 4)}),
               .z = true,
               .augmentation_data = Le(0, 4),
               .instructions = EveryOp()});
  }
  // "zR" udata4, with set_loc.
  size_t cie2 = eh.AddCie({.augmentation = "zR",
                           .augmentation_data = {DW_EH_PE_udata4},
                           .z = true,
                           .instructions = X86CieInstructions()});
  eh.AddFde({.cie_offset = cie2,
             .pc_fields = Cat({Le(0x4000, 4), Le(0x100, 4)}),
             .z = true,
             .instructions = Cat({{DW_CFA_set_loc},
                                  Le(0x4010, 4),
                                  {DW_CFA_def_cfa_offset, 16, DW_CFA_set_loc},
                                  Le(0x4020, 4),
                                  {DW_CFA_def_cfa_offset, 8}})});
  // "zRS" sdata8 (a signal frame) and "zR" udata2.
  size_t cie3 = eh.AddCie({.augmentation = "zRS",
                           .augmentation_data = {DW_EH_PE_sdata8},
                           .z = true,
                           .instructions = X86CieInstructions()});
  eh.AddFde({.cie_offset = cie3, .pc_fields = Cat({Le(0x5000, 8), Le(0x10, 8)}), .z = true});
  size_t cie4 = eh.AddCie({.augmentation = "zR",
                           .augmentation_data = {DW_EH_PE_udata2},
                           .z = true,
                           .instructions = X86CieInstructions()});
  eh.AddFde({.cie_offset = cie4,
             .pc_fields = Cat({Le(0x5100, 2), Le(0x20, 2)}),
             .z = true,
             .instructions = {DW_CFA_advance_loc | 3, DW_CFA_def_cfa_offset, 24}});
  // The pre-"z" "eh" augmentation: an 8-byte pointer after the string, absptr FDEs.
  size_t cie5 = eh.AddCie(
      {.augmentation = "eh", .after_augmentation = Le(0, 8), .instructions = X86CieInstructions()});
  eh.AddFde({.cie_offset = cie5, .pc_fields = Cat({Le(0x6000, 8), Le(0x30, 8)})});
  eh.AddRaw(Le(0, 4));  // zero terminator

  CfiBytes debug(CfiSectionKind::kDebugFrame);
  size_t d3 =
      debug.AddCie({.version = 3, .data_alignment = -4, .instructions = X86CieInstructions()});
  debug.AddFde(
      {.cie_offset = d3,
       .pc_fields = Cat({Le(0x8000, 8), Le(0x20, 8)}),
       .instructions = {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 4}});
  size_t d4 = debug.AddCie({.version = 4,
                            .after_augmentation = {8, 0},
                            .return_address_column = 16,
                            .instructions = X86CieInstructions()});
  debug.AddFde({.cie_offset = d4, .pc_fields = Cat({Le(0x9000, 8), Le(0x20, 8)})});
  size_t d64 = debug.AddCie({.dwarf64 = true,
                             .version = 4,
                             .after_augmentation = {8, 0},
                             .code_alignment = 4,
                             .instructions = X86CieInstructions()});
  debug.AddFde({.dwarf64 = true,
                .cie_offset = d64,
                .pc_fields = Cat({Le(0xa000, 8), Le(0x40, 8)}),
                .instructions = {DW_CFA_advance_loc | 3, DW_CFA_def_cfa_offset, 32}});

  std::shared_ptr<ElfFile> elf = ElfWithCfi(eh.bytes(), debug.bytes());
  ASSERT_TRUE(elf);
  std::vector<uint8_t> image(elf->bytes().begin(), elf->bytes().end());
  std::string path = WriteTempFile(image, "cfi-handmade");
  ExpectSameAsReadelf(path, 8);
  unlink(path.c_str());
}

}  // namespace
}  // namespace stacksym::testing
