// Reading a CPython code object out of a process's memory: its name, qualified name, file, first
// line and location table, so that (code object, instruction) pairs taken at sample time become
// named frames with lines. The memory is the sampled process's, so it is distrusted like a file:
// every pointer is checked by reading through it, type objects are compared when known, string
// and table lengths are bounded, and every way it can go wrong has a name.
//
//   CodeRead read = ReadCodeObject(memory, layout, types, address);
//   if (read.code) ... read.code->qualname, read.code->Line(instruction) ...
//   else ... CodeErrorName(read.error) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interp/python/layout.h"
#include "interp/python/line_table.h"
#include "interp/python/memory.h"

namespace stacksym::interp::python {

// Longest name or file name read (in code points; PATH_MAX-sized paths fit), and longest
// location table (a function of some 100k instructions).
inline constexpr uint64_t kMaxStringLength = 4096;
inline constexpr uint64_t kMaxLineTableBytes = 1 << 20;

enum class CodeError : uint8_t {
  kNone,
  kProcessGone,    // the process exited before its code object was read
  kUnreadable,     // the code object's own bytes could not be read (a bad pointer)
  kNotCode,        // its type is not PyCode_Type
  kBadString,      // a name or file name is unreadable, not a string, or not compact
  kStringTooLong,  // a name or file name longer than kMaxStringLength
  kBadLineTable,   // co_linetable unreadable or not bytes
  kLineTableTooLong,
  // The address held another code object when it was read (its fingerprint, code_check.h, is
  // not the one the sample saw): the sample's was freed and its address reused.
  kReplaced,
  // The code object was freed before it was read (its memory is the allocator's now), or while
  // it was read.
  kFreed,
};
const char* CodeErrorName(CodeError error);  // "process_gone", "not_code", ... (stable tokens)
inline constexpr int kCodeErrorCount = 10;

// Runtime addresses of the type objects (the interpreter's symbols plus its load bias); 0: not
// known, not checked.
struct TypeAddresses {
  uint64_t code = 0;
  uint64_t unicode = 0;
  uint64_t bytes = 0;
};

struct CodeObject {
  std::string name;      // co_name, UTF-8
  std::string qualname;  // co_qualname ("Worker.run", "main.<locals>.inner")
  std::string filename;  // co_filename
  int32_t first_line = 0;
  uint64_t qualname_address = 0;    // the co_qualname string object's
  std::vector<uint8_t> line_table;  // co_linetable
  // Code units the line table covers (the code's length); 0 when the table is damaged.
  uint32_t code_units = 0;

  // The line of code unit `instruction` (-1: not started: the first line); 0 when the table has
  // no line for it.
  int32_t Line(int64_t instruction) const;
  // Its fingerprint (code_check.h), as a sample's frame records it.
  uint16_t Check() const;
};

struct CodeRead {
  std::optional<CodeObject> code;
  CodeError error = CodeError::kNone;
};

CodeRead ReadCodeObject(MemoryReader& memory, const Layout& layout, const TypeAddresses& types,
                        uint64_t address);

// Reads the string object at `address` as UTF-8 (compact strings: ASCII, Latin-1, UCS-2, UCS-4).
CodeError ReadString(MemoryReader& memory, const Layout& layout, uint64_t unicode_type,
                     uint64_t address, std::string* out);

}  // namespace stacksym::interp::python
