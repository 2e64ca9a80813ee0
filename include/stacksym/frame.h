// stacksym/frame.h — the vocabulary of answers: what an address symbolizes to.
//
// Every symbolizer (one ELF file, a process, the kernel, a symbolization server) answers an
// address with a SymbolizedAddress: the symbol-table entry that covers it and, from DWARF, its
// inline chain as SourceFrames (innermost first). A profile keeps the part it needs per
// distinct frame as FrameSymbols. The llvm-symbolizer drop-in's DATA and FRAME requests are
// answered with a DataDeclaration and FrameLocals. This header depends on reason.h only, so that
// readers (DWARF, the persisted index) and the profile model can speak it without the symbolizers'
// API.
//
//   SymbolizedAddress a = symbolizer->Symbolize(0x4a2f0, AddressKind::kFileOffset);
//   FrameSymbols s = ToFrameSymbols(std::move(a));   // what a profile stores
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stacksym/reason.h"

namespace stacksym {

enum class AddressKind : uint8_t { kVirtual, kFileOffset };

// One frame of an inline chain. For an inlined frame, file:line:column is where the code at
// the address stands inside that inlined function; the next frame out is its caller.
struct SourceFrame {
  std::string function;      // demangled when demangling is on
  std::string raw_function;  // linkage name as found in the debug info / symbol table
  std::string file;          // empty when unknown
  uint32_t line = 0;
  uint32_t column = 0;
  bool inlined = false;  // true for every frame but the last (the out-of-line function)
  // DWARF line-table discriminator of the location: the address's line row for the
  // innermost frame, the inlined call site's DW_AT_GNU_discriminator for the others (0: none).
  uint32_t discriminator = 0;
  // Where the function starts, as llvm-symbolizer's StartFileName/StartLine/StartAddress:
  // DW_AT_decl_file and DW_AT_decl_line of the frame's subprogram or inlined subroutine
  // (searched through abstract origins and specifications), and the DIE's own DW_AT_low_pc.
  // start_file is empty when unknown, also when DW_AT_decl_file is DW_FORM_implicit_const
  // (gcc's DWARF 5), which llvm-symbolizer 14 and 16 do not resolve there either.
  // (Initialized, like every member after `inlined`, so that the six-value aggregate
  // initializations written before these fields existed stay warning-free.)
  std::string start_file{};
  uint32_t start_line = 0;  // 0: unknown
  // Only with SymbolizeOptions::start_addresses (else false).
  bool has_start_address = false;
  uint64_t start_address = 0;  // meaningful when has_start_address
};

struct SymbolizedAddress {
  uint64_t input = 0;            // the address as given
  uint64_t vaddr = 0;            // the address in the file's virtual address space
  std::optional<Reason> reason;  // set when nothing could be found for the address

  // From the symbol table (empty symbol when only DWARF knew the function).
  std::string symbol;      // demangled when demangling is on
  std::string raw_symbol;  // as in the symbol table
  uint64_t symbol_address = 0;
  uint64_t symbol_size = 0;
  uint64_t offset = 0;  // vaddr - symbol_address

  // Innermost first; the last entry is the out-of-line function. Empty without DWARF.
  std::vector<SourceFrame> frames;
  std::string module;  // path of the binary
};

// Where the variable stored at an address was declared (DWARF's DW_AT_decl_file and
// DW_AT_decl_line, found as llvm-symbolizer 15+ finds them for DATA requests).
struct DataDeclaration {
  std::string file;  // absolute as llvm-symbolizer prints it; empty when DWARF names none
  uint32_t line = 0;
  // DW_AT_decl_file was written as DW_FORM_implicit_const (gcc's DWARF 5), which
  // llvm-symbolizer 15 and 16 cannot resolve: they print an unknown file ("??:?") there.
  bool file_form_implicit_const = false;
};

// One local variable of a function, as llvm-symbolizer 16 answers FRAME requests.
struct FrameLocal {
  std::string function;   // DWARF's short name of the (possibly inlined) function; "" unknown
  std::string name;       // "" unknown
  std::string decl_file;  // "" unknown
  uint64_t decl_line = 0;
  std::optional<int64_t> frame_offset;  // from DW_OP_fbreg
  std::optional<uint64_t> size;         // of its type
  std::optional<uint64_t> tag_offset;   // DW_AT_LLVM_tag_offset (HWASan)
};

// Result of symbolizing one frame (filled by the symbolize-once pass).
struct FrameSymbols {
  std::optional<Reason> reason;    // set when nothing was found
  std::vector<SourceFrame> lines;  // inline chain, innermost first; at least one entry when
                                   // a symbol was found (file/line may be empty)
};

// The profile's view of an answer: the inline chain when DWARF gave one, else the symbol as a
// single frame, else the reason (Reason::kNoSymbol when the symbolizer gave none).
FrameSymbols ToFrameSymbols(SymbolizedAddress&& answer);

}  // namespace stacksym
