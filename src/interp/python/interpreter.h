// Finding a CPython interpreter in a mapped file: is it CPython (the `python3.X` executable, or
// `libpython3.X.so` in a program that embeds it), which version, and where the symbols a reader
// of its memory needs are: `_PyRuntime` (from which every interpreter, thread state and frame is
// reached), `_PyEval_EvalFrameDefault` (the native frames Python frames stand in for), and the
// type objects of code objects, strings and bytes (to tell a code object from garbage).
//
//   Result<std::optional<Interpreter>> found = FindInterpreter(*elf);
//   if (found && *found) { ... found->value().version.minor ... }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::interp::python {

struct Version {
  uint8_t major = 0;
  uint8_t minor = 0;
  uint8_t micro = 0;
  uint32_t hex = 0;              // PY_VERSION_HEX (0 when the version came from the file's name)
  std::string ToString() const;  // "3.11.2", or "3.10" without a micro version
  bool operator==(const Version&) const = default;
};

// The versions whose frames this module reads: 3.11 (tested), 3.12 to 3.14 (from CPython's
// headers).
bool SupportedVersion(const Version& version);

// [start, end) of a function's code, virtual addresses in the file.
struct CodeRange {
  uint64_t start = 0;
  uint64_t end = 0;
  bool operator==(const CodeRange&) const = default;
};

// Virtual addresses in the file (add the load bias for the process's).
struct Interpreter {
  Version version;
  uint64_t runtime = 0;  // _PyRuntime
  uint64_t runtime_size = 0;
  // _PyEval_EvalFrameDefault, and the parts gcc split from it where the symbol table names them
  // (`.cold`: a stripped binary's separate debug file has them, see EvaluatorRanges).
  std::vector<CodeRange> eval_frames;
  uint64_t code_type = 0;     // PyCode_Type; 0: not found (code objects are not checked)
  uint64_t unicode_type = 0;  // PyUnicode_Type
  uint64_t bytes_type = 0;    // PyBytes_Type
};

// _PyEval_EvalFrameDefault and its split parts (`_PyEval_EvalFrameDefault.cold`) in `elf`'s
// symbol table: the native frames that run Python frames.
std::vector<CodeRange> EvaluatorRanges(const ElfFile& elf);

// nullopt: not CPython (no `_PyRuntime`). An error: CPython whose version cannot be found
// (neither `Py_Version`, 3.11+, nor a version in the file's name).
Result<std::optional<Interpreter>> FindInterpreter(const ElfFile& elf);

// The load bias of `elf` mapped at `map_start` from file offset `map_offset` (a process's
// address = the file's virtual address + bias); nullopt when no PT_LOAD segment holds that
// offset.
std::optional<uint64_t> LoadBias(const ElfFile& elf, uint64_t map_start, uint64_t map_offset);

}  // namespace stacksym::interp::python
