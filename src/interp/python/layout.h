// Where the fields of CPython's structures lie, as data: one Layout per interpreter binary, from
// (in this order) the binary's DWARF when its debug info can be found, `_Py_DebugOffsets` at the
// start of `_PyRuntime` (3.13+, read from the file's initialised data or the running process), or
// a built-in table for the version (3.11: checked against python3.11-dbg's DWARF in the tests;
// 3.12 and 3.13: from CPython's headers, checked against the DWARF of builds of them where one is
// installed). 3.14 has no built-in table: its `_Py_DebugOffsets` are always there.
//
// What the frame walk (in BPF, and its user-space twin in frame_walk.h) and the code-object
// reader need, and nothing more:
//   _PyRuntime.interpreters.head → PyInterpreterState { next, threads.head }
//   → PyThreadState { next, native_thread_id, cframe (3.11-3.12) | current_frame (3.13+) }
//   → _PyInterpreterFrame { f_code | f_executable, previous, prev_instr | instr_ptr, owner,
//                           is_entry (3.11) }
//   → PyCodeObject { co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
//                    co_code_adaptive } → PyASCIIObject / PyCompactUnicodeObject, PyBytesObject
//
//   Result<Layout> layout = LoadLayout(*elf, interpreter, search);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_options.h"
#include "interp/python/interpreter.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::interp::python {

enum class LayoutSource : uint8_t { kDwarf, kDebugOffsets, kBuiltin };
const char* LayoutSourceName(LayoutSource source);  // "dwarf", "debug_offsets", "builtin"

inline constexpr uint32_t kAbsent = 0xffffffff;  // a field this version does not have

struct Layout {
  Version version;
  LayoutSource source = LayoutSource::kBuiltin;

  // _PyRuntimeState
  uint32_t runtime_interpreters_head = 0;
  uint32_t runtime_tstate_current = kAbsent;   // gilstate.tstate_current (3.11; later in TLS)
  uint32_t runtime_gil_last_holder = kAbsent;  // ceval.gil.last_holder (3.11)
  // PyInterpreterState
  uint32_t interp_next = 0;
  uint32_t interp_threads_head = 0;
  // PyThreadState
  uint32_t tstate_next = 0;
  uint32_t tstate_native_thread_id = 0;
  // The innermost frame: tstate->cframe->current_frame (3.11, 3.12: tstate_cframe is the
  // _PyCFrame pointer, current_frame its member) or tstate->current_frame (3.13+: tstate_cframe
  // is kAbsent).
  uint32_t tstate_cframe = kAbsent;
  uint32_t current_frame = 0;
  // _PyInterpreterFrame
  uint32_t frame_code = 0;  // f_code (3.11, 3.12) / f_executable (3.13+)
  uint32_t frame_previous = 0;
  uint32_t frame_instr = 0;           // prev_instr (3.11, 3.12) / instr_ptr (3.13+)
  uint32_t frame_owner = 0;           // char
  uint32_t frame_is_entry = kAbsent;  // bool, 3.11: the outermost frame of its evaluator call
  // Owners from this value up are the evaluator's own frames, not Python functions (3.12+:
  // FRAME_OWNED_BY_CSTACK = 3, 3.14: _INTERPRETER = 3, _CSTACK = 4): they end an evaluator
  // call's frames. 0xff: none (3.11).
  uint8_t shim_owner = 0xff;
  // Low bits of f_executable that tag a stack reference (3.14) rather than address the object.
  uint8_t code_tag_bits = 0;

  // PyObject
  uint32_t ob_type = 8;
  // PyCodeObject
  uint32_t code_filename = 0;
  uint32_t code_name = 0;
  uint32_t code_qualname = 0;
  uint32_t code_linetable = 0;
  uint32_t code_firstlineno = 0;  // int
  uint32_t code_adaptive = 0;     // co_code_adaptive: the first code unit

  // PyASCIIObject (compact strings; every identifier and file name CPython makes is one)
  uint32_t unicode_length = 0;        // Py_ssize_t, in code points
  uint32_t unicode_state = 0;         // the 32-bit word of state bits
  uint32_t unicode_ascii_data = 0;    // sizeof(PyASCIIObject): compact ASCII data
  uint32_t unicode_compact_data = 0;  // sizeof(PyCompactUnicodeObject): other compact data
  uint8_t state_kind_shift = 2;       // kind: 3 bits (1, 2 or 4 bytes per code point)
  uint8_t state_compact_bit = 5;
  uint8_t state_ascii_bit = 6;
  // PyBytesObject
  uint32_t bytes_size = 0;  // ob_base.ob_size
  uint32_t bytes_data = 0;  // ob_sval

  // How many bytes of a frame, a code object and a string header the readers fetch in one read.
  uint32_t FrameBytes() const;
  uint32_t CodeBytes() const;
  // PyASCIIObject: length and state (a string's data may end right after the header).
  uint32_t StringHeaderBytes() const { return unicode_ascii_data; }

  bool operator==(const Layout&) const = default;
};

// Checks that every offset is plausible (below 64 KiB for the per-object structures, fields
// inside the objects they are read from): a layout from DWARF or from a process's memory is
// data too.
Result<void> CheckLayout(const Layout& layout);

// The built-in table: 3.11, 3.12, 3.13; nullopt for other versions.
std::optional<Layout> BuiltinLayout(const Version& version);

// From the DWARF of an interpreter binary of `version` (its structs found by name).
Result<Layout> LayoutFromDwarf(dwarf::DwarfFile& file, const Version& version);

// From _Py_DebugOffsets (3.13+): the bytes at _PyRuntime (at least 1 KiB, or to its end). An
// error when the cookie or version do not match, or for a free-threaded build.
Result<Layout> LayoutFromDebugOffsets(std::span<const uint8_t> runtime_bytes,
                                      const Version& version);

// The layout of the interpreter in `binary`: DWARF (the binary's own or a separate debug file
// found through `search`), else the debug offsets in the file's `_PyRuntime` (3.13+), else the
// built-in table. `notes` (may be null) gets why each source before the one used was passed
// over.
Result<Layout> LoadLayout(std::shared_ptr<ElfFile> binary, const Interpreter& interpreter,
                          const dwarf::DebugFileSearch& search, std::string* notes = nullptr);

// LoadLayout in two parts. The DWARF alone: reading it can take half a second (a compressed
// .debug_info of 20 MiB), so the recorder does it on a thread of its own. And the sources that
// cost nothing: the debug offsets (3.13+), else the built-in table.
Result<Layout> LoadDwarfLayout(std::shared_ptr<ElfFile> binary, const Interpreter& interpreter,
                               const dwarf::DebugFileSearch& search, std::string* notes = nullptr);
Result<Layout> LoadQuickLayout(const ElfFile& binary, const Interpreter& interpreter,
                               std::string* notes = nullptr);

// Whether two layouts read the same fields at the same offsets (wherever they came from).
bool SameOffsets(Layout a, Layout b);

}  // namespace stacksym::interp::python
