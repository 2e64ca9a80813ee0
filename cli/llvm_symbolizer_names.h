// llvm-symbolizer 14's view of a symbol table, for the drop-in to answer as it does.
//
// stacksym's SymbolTable keeps function and object symbols, resolves aliases global, then
// weak, then local (as addr2line and perf do), and lets a size-0 symbol end at the next one.
// llvm-symbolizer instead keeps FUNC, IFUNC, OBJECT and NOTYPE symbols of real sections
// (.symtab, or .dynsym when there is no .symtab); per address the one with the largest size,
// the last in the table among equal sizes; and a size-0 symbol covers every address above
// it up to the next symbol. It names DATA answers and the outermost frame of CODE answers by
// that symbol, and for a local symbol without DWARF prints the STT_FILE name before it in the
// table as the file. As LLVM 16, it skips the symbols LLVM's ELF reader calls format-specific
// (ARM/AArch64 mapping symbols such as `$x.1`, ARM and RISC-V empty names) and clears the
// instruction-set bit of ARM and MIPS function addresses.
//
// In a relocatable object (.o) a code address is an offset into a text section, as
// llvm-symbolizer reads it (elf/object_layout.h). llvm-symbolizer then looks the symbol up by
// that offset alone, among every section's symbols (at 0 in each), so it names code by a
// function of another section, or by a string label of .rodata; the drop-in looks it up among
// the symbols of the section the offset was read in (docs/dwarf-differences.md). An offset
// that names no section — a DATA address, a code address no text section holds — is looked up
// as llvm-symbolizer does, among every section's symbols, each section at 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/elf.h"

namespace stacksym::cli {

class LlvmSymbolNames {
 public:
  // `untag_addresses` (llvm-symbolizer's default, --no-untag-addresses turns it off): symbol
  // addresses lose their top byte (bits 56-63 made copies of bit 55, as LLVM 16 does, so that
  // kernel addresses stay as they are).
  explicit LlvmSymbolNames(const ElfFile& elf, bool untag_addresses = true);
  struct Entry {
    uint64_t address;
    uint64_t size;          // st_size (0 for sizeless symbols)
    std::string_view name;  // raw, into the mapped string table
    std::string_view file;  // local symbols: the preceding STT_FILE symbol's name
  };
  // The symbol llvm-symbolizer answers code address `address` with, or nullopt. (An object's
  // symbol with its offset into its section as its address.)
  std::optional<Entry> Find(uint64_t address) const;
  // The same for a data address (DATA requests): in an object, an offset into any section.
  std::optional<Entry> FindData(uint64_t address) const;

  // Why llvm-symbolizer 16 refuses the whole file, in its words, or empty: a symbol whose
  // name lies past the end of the string table ("st_name (0xffff) is past the end of the
  // string table of size 0x7").
  const std::string& error() const { return error_; }

 private:
  static void OnePerAddress(std::vector<Entry>& entries);
  static const Entry* Covering(const std::vector<Entry>& entries, uint64_t address);

  std::string error_;
  const ElfFile* elf_;
  std::vector<Entry> entries_;      // one per address, sorted; an object's where ElfFile placed it
  std::vector<Entry> any_section_;  // an object's, each at its offset into its section
};

}  // namespace stacksym::cli
