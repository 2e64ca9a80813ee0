#include "interp/python/layout.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "base/byte_cursor.h"
#include "dwarf/debug_files.h"
#include "dwarf/struct_members.h"

namespace stacksym::interp::python {

namespace {

// Per-object structures are a few hundred bytes; PyInterpreterState and _PyRuntimeState are
// large (7 KiB to the thread list in 3.13) but far below this.
constexpr uint32_t kMaxObjectOffset = 4096;
constexpr uint32_t kMaxStateOffset = 1 << 20;

uint32_t MaxPlus(std::initializer_list<uint32_t> offsets, uint32_t width) {
  uint32_t m = 0;
  for (uint32_t o : offsets) {
    if (o != kAbsent) m = std::max(m, o + width);
  }
  return m;
}

}  // namespace

const char* LayoutSourceName(LayoutSource source) {
  switch (source) {
    case LayoutSource::kDwarf:
      return "dwarf";
    case LayoutSource::kDebugOffsets:
      return "debug_offsets";
    case LayoutSource::kBuiltin:
      return "builtin";
  }
  return "unknown";
}

uint32_t Layout::FrameBytes() const {
  // Pointers are 8 bytes, owner and is_entry 1: read through the widest field.
  return std::max(MaxPlus({frame_code, frame_previous, frame_instr}, 8),
                  MaxPlus({frame_owner, frame_is_entry}, 1));
}

uint32_t Layout::CodeBytes() const {
  return std::max({MaxPlus({ob_type, code_filename, code_name, code_qualname, code_linetable}, 8),
                   MaxPlus({code_firstlineno}, 4)});
}

Result<void> CheckLayout(const Layout& l) {
  auto bad = [](const char* what) {
    return Error(ErrorCode::kMalformed, std::string("implausible CPython layout: ") + what);
  };
  for (uint32_t o : {l.runtime_interpreters_head, l.interp_next, l.interp_threads_head}) {
    if (o >= kMaxStateOffset) return bad("runtime or interpreter state offset");
  }
  for (uint32_t o : {l.tstate_next,        l.tstate_native_thread_id,
                     l.current_frame,      l.frame_code,
                     l.frame_previous,     l.frame_instr,
                     l.frame_owner,        l.ob_type,
                     l.code_filename,      l.code_name,
                     l.code_qualname,      l.code_linetable,
                     l.code_firstlineno,   l.code_adaptive,
                     l.unicode_length,     l.unicode_state,
                     l.unicode_ascii_data, l.unicode_compact_data,
                     l.bytes_size,         l.bytes_data}) {
    if (o >= kMaxObjectOffset) return bad("object field offset");
  }
  if (l.tstate_cframe != kAbsent && l.tstate_cframe >= kMaxObjectOffset) return bad("cframe");
  for (uint32_t o : {l.runtime_tstate_current, l.runtime_gil_last_holder}) {
    if (o != kAbsent && o >= kMaxStateOffset) return bad("GIL holder offset");
  }
  if (l.frame_is_entry != kAbsent && l.frame_is_entry >= kMaxObjectOffset) return bad("is_entry");
  if (l.code_adaptive < l.CodeBytes() - 8) return bad("co_code_adaptive before the fields");
  if (l.unicode_ascii_data < l.unicode_state + 4 || l.unicode_compact_data < l.unicode_ascii_data) {
    return bad("string data before the header");
  }
  if (l.state_kind_shift > 29 || l.state_compact_bit > 31 || l.state_ascii_bit > 31) {
    return bad("string state bits");
  }
  if (l.bytes_data < l.bytes_size + 8) return bad("bytes data before its size");
  if (l.code_tag_bits > 7) return bad("tag bits");
  if (l.ob_type < 8) return bad("ob_type before the reference count");
  return {};
}

std::optional<Layout> BuiltinLayout(const Version& version) {
  if (version.major != 3) return std::nullopt;
  Layout l;
  l.version = version;
  l.source = LayoutSource::kBuiltin;
  l.ob_type = 8;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.unicode_length = 16;
  l.unicode_state = 32;
  l.bytes_size = 16;
  l.bytes_data = 32;
  l.tstate_next = 8;
  l.frame_instr = 56;
  switch (version.minor) {
    case 11:  // Include/internal/pycore_frame.h, cpython/pystate.h, cpython/code.h of 3.11
      l.runtime_interpreters_head = 40;
      l.runtime_tstate_current = 576;
      l.runtime_gil_last_holder = 368;
      l.interp_next = 0;
      l.interp_threads_head = 16;
      l.tstate_native_thread_id = 160;
      l.tstate_cframe = 56;
      l.current_frame = 8;  // after uint8_t use_tracing
      l.frame_code = 32;
      l.frame_previous = 48;
      l.frame_is_entry = 68;
      l.frame_owner = 69;
      l.code_firstlineno = 72;
      l.code_adaptive = 184;
      l.unicode_ascii_data = 48;  // with wchar_t *wstr
      l.unicode_compact_data = 72;
      return l;
    case 12:
      l.runtime_interpreters_head = 40;
      l.interp_next = 0;
      l.interp_threads_head = 72;
      l.tstate_native_thread_id = 144;
      l.tstate_cframe = 56;
      l.current_frame = 0;
      l.frame_code = 0;
      l.frame_previous = 8;
      l.frame_owner = 70;
      l.shim_owner = 3;
      l.code_firstlineno = 68;
      l.code_adaptive = 192;
      l.unicode_ascii_data = 40;
      l.unicode_compact_data = 56;
      return l;
    case 13:
      l.runtime_interpreters_head = 632;
      l.interp_next = 7264;
      l.interp_threads_head = 7344;
      l.tstate_native_thread_id = 160;
      l.current_frame = 72;
      l.frame_code = 0;
      l.frame_previous = 8;
      l.frame_owner = 70;
      l.shim_owner = 3;
      l.code_firstlineno = 68;
      l.code_adaptive = 200;
      l.unicode_ascii_data = 40;
      l.unicode_compact_data = 56;
      return l;
    default:
      return std::nullopt;
  }
}

namespace {

// What only the version says: which owners are the evaluator's own frames, whether
// f_executable is a tagged reference.
void SetVersionKnowledge(Layout* l) {
  l->shim_owner = l->version.minor >= 12 ? 3 : 0xff;
  l->code_tag_bits = l->version.minor >= 14 ? 7 : 0;
}

}  // namespace

Result<Layout> LayoutFromDwarf(dwarf::DwarfFile& file, const Version& version) {
  if (!SupportedVersion(version)) {
    return Error(ErrorCode::kUnsupported, "CPython " + version.ToString() + " is not supported");
  }
  bool cframe = version.minor <= 12;
  bool code_pointer = version.minor <= 12;  // f_code, prev_instr; later f_executable, instr_ptr
  std::vector<std::string_view> names = {
      "pyruntimestate", "_is",     "_ts",           "_PyInterpreterFrame",
      "PyCodeObject",   "_object", "PyASCIIObject", "PyCompactUnicodeObject",
      "PyBytesObject"};
  if (cframe) names.push_back("_PyCFrame");
  dwarf::StructMembers m = dwarf::StructMembers::Find(file, names);
  std::string missing;
  auto at = [&](std::string_view type, std::string_view path) -> uint32_t {
    std::optional<dwarf::MemberLocation> loc = m.Member(type, path);
    if (!loc || loc->offset >= kMaxStateOffset) {
      missing += (missing.empty() ? "" : ", ") + std::string(type) + "." + std::string(path);
      return 0;
    }
    return static_cast<uint32_t>(loc->offset);
  };
  auto bit = [&](std::string_view path, uint32_t state) -> uint8_t {
    std::optional<dwarf::MemberLocation> loc = m.Member("PyASCIIObject", path);
    if (!loc || loc->offset < state || loc->offset - state > 3) {
      missing += (missing.empty() ? "" : ", ") + std::string("PyASCIIObject.") + std::string(path);
      return 0;
    }
    return static_cast<uint8_t>((loc->offset - state) * 8 + loc->bit_offset);
  };
  Layout l;
  l.version = version;
  l.source = LayoutSource::kDwarf;
  l.runtime_interpreters_head = at("pyruntimestate", "interpreters.head");
  if (version.minor == 11) {
    l.runtime_tstate_current = at("pyruntimestate", "gilstate.tstate_current");
    l.runtime_gil_last_holder = at("pyruntimestate", "ceval.gil.last_holder");
  }
  l.interp_next = at("_is", "next");
  l.interp_threads_head = at("_is", "threads.head");
  l.tstate_next = at("_ts", "next");
  l.tstate_native_thread_id = at("_ts", "native_thread_id");
  if (cframe) {
    l.tstate_cframe = at("_ts", "cframe");
    l.current_frame = at("_PyCFrame", "current_frame");
  } else {
    l.current_frame = at("_ts", "current_frame");
  }
  l.frame_code = at("_PyInterpreterFrame", code_pointer ? "f_code" : "f_executable");
  l.frame_previous = at("_PyInterpreterFrame", "previous");
  l.frame_instr = at("_PyInterpreterFrame", code_pointer ? "prev_instr" : "instr_ptr");
  l.frame_owner = at("_PyInterpreterFrame", "owner");
  if (version.minor == 11) l.frame_is_entry = at("_PyInterpreterFrame", "is_entry");
  l.ob_type = at("_object", "ob_type");
  l.code_filename = at("PyCodeObject", "co_filename");
  l.code_name = at("PyCodeObject", "co_name");
  l.code_qualname = at("PyCodeObject", "co_qualname");
  l.code_linetable = at("PyCodeObject", "co_linetable");
  l.code_firstlineno = at("PyCodeObject", "co_firstlineno");
  l.code_adaptive = at("PyCodeObject", "co_code_adaptive");
  l.unicode_length = at("PyASCIIObject", "length");
  l.unicode_state = at("PyASCIIObject", "state");
  l.state_kind_shift = bit("state.kind", l.unicode_state);
  l.state_compact_bit = bit("state.compact", l.unicode_state);
  l.state_ascii_bit = bit("state.ascii", l.unicode_state);
  l.bytes_size = at("PyBytesObject", "ob_base.ob_size");
  l.bytes_data = at("PyBytesObject", "ob_sval");
  std::optional<uint64_t> ascii_size = m.Size("PyASCIIObject");
  std::optional<uint64_t> compact_size = m.Size("PyCompactUnicodeObject");
  if (!ascii_size || !compact_size || *compact_size >= kMaxObjectOffset) {
    missing += (missing.empty() ? "" : ", ") + std::string("string sizes");
  } else {
    l.unicode_ascii_data = static_cast<uint32_t>(*ascii_size);
    l.unicode_compact_data = static_cast<uint32_t>(*compact_size);
  }
  if (!missing.empty()) {
    return Error(ErrorCode::kNotFound, "CPython structures not in the DWARF: " + missing);
  }
  SetVersionKnowledge(&l);
  if (Result<void> ok = CheckLayout(l); !ok) return ok.error();
  return l;
}

namespace {

// Where the fields this module reads lie in _Py_DebugOffsets (each a uint64_t), per version:
// 3.13's struct, and 3.14's (threads_main added to the interpreter state, stackpointer to the
// frame, set objects before dicts).
struct DebugOffsetsShape {
  uint32_t interp;  // start of interpreter_state (its `size` field)
  uint32_t tstate;
  uint32_t frame;
  uint32_t code;
  uint32_t pyobject;
  uint32_t bytes;
  uint32_t unicode;
};
constexpr DebugOffsetsShape kDebugOffsets313 = {48, 152, 224, 272, 352, 512, 536};
constexpr DebugOffsetsShape kDebugOffsets314 = {48, 160, 232, 288, 368, 560, 584};

}  // namespace

Result<Layout> LayoutFromDebugOffsets(std::span<const uint8_t> bytes, const Version& version) {
  if (version.major != 3 || version.minor < 13 || version.minor > 14) {
    return Error(ErrorCode::kUnsupported, "no debug offsets before CPython 3.13");
  }
  const DebugOffsetsShape& s = version.minor == 13 ? kDebugOffsets313 : kDebugOffsets314;
  if (bytes.size() < s.unicode + 32) {
    return Error(ErrorCode::kMalformed, "debug offsets cut short");
  }
  if (std::memcmp(bytes.data(), "xdebugpy", 8) != 0) {
    return Error(ErrorCode::kMalformed, "no _Py_DebugOffsets cookie at _PyRuntime");
  }
  ByteCursor c(bytes);
  auto u64 = [&](uint32_t at) {
    c.Seek(at);
    return c.U64();
  };
  uint64_t hex = u64(8);
  if ((hex >> 24) != version.major || ((hex >> 16) & 0xff) != version.minor) {
    return Error(ErrorCode::kMalformed, "debug offsets of another version");
  }
  if (u64(16) != 0) return Error(ErrorCode::kUnsupported, "free-threaded CPython build");
  // Each group starts with the size of its structure: if these are not what such structures
  // measure, the struct is not arranged as this version's.
  auto within = [](uint64_t v, uint64_t lo, uint64_t hi) { return v >= lo && v <= hi; };
  if (!within(u64(s.tstate), 64, 4096) || !within(u64(s.frame), 48, 256) ||
      !within(u64(s.code), 128, 512) || u64(s.pyobject) != 16 || !within(u64(s.bytes), 24, 64) ||
      !within(u64(s.unicode), 40, 128)) {
    return Error(ErrorCode::kMalformed,
                 "debug offsets not arranged as CPython " + version.ToString() + "'s");
  }
  bool too_big = false;
  auto field = [&](uint32_t at) -> uint32_t {
    uint64_t v = u64(at);
    if (v >= kMaxStateOffset) too_big = true;
    return static_cast<uint32_t>(v);
  };
  Layout l;
  l.version = version;
  l.source = LayoutSource::kDebugOffsets;
  l.runtime_interpreters_head = field(40);
  l.interp_next = field(s.interp + 16);
  l.interp_threads_head = field(s.interp + 24);
  l.tstate_next = field(s.tstate + 16);
  l.current_frame = field(s.tstate + 32);
  l.tstate_native_thread_id = field(s.tstate + 48);
  l.frame_previous = field(s.frame + 8);
  l.frame_code = field(s.frame + 16);
  l.frame_instr = field(s.frame + 24);
  l.frame_owner = field(s.frame + 40);
  l.code_filename = field(s.code + 8);
  l.code_name = field(s.code + 16);
  l.code_qualname = field(s.code + 24);
  l.code_linetable = field(s.code + 32);
  l.code_firstlineno = field(s.code + 40);
  l.code_adaptive = field(s.code + 72);
  l.ob_type = field(s.pyobject + 8);
  l.bytes_size = field(s.bytes + 8);
  l.bytes_data = field(s.bytes + 16);
  l.unicode_state = field(s.unicode + 8);
  l.unicode_length = field(s.unicode + 16);
  l.unicode_ascii_data = field(s.unicode + 24);
  // PyCompactUnicodeObject: the ASCII header, then utf8_length and the utf8 pointer.
  l.unicode_compact_data = l.unicode_ascii_data + 16;
  if (!c.ok() || too_big) return Error(ErrorCode::kMalformed, "debug offsets out of range");
  SetVersionKnowledge(&l);
  if (Result<void> ok = CheckLayout(l); !ok) return ok.error();
  return l;
}

Result<Layout> LoadDwarfLayout(std::shared_ptr<ElfFile> binary, const Interpreter& interpreter,
                               const dwarf::DebugFileSearch& search, std::string* notes) {
  const Version& version = interpreter.version;
  if (!SupportedVersion(version)) {
    return Error(ErrorCode::kUnsupported, "CPython " + version.ToString() + " is not supported")
        .WithFile(binary->path());
  }
  auto note = [&](const std::string& text) {
    if (notes != nullptr) *notes += (notes->empty() ? "" : "; ") + text;
  };
  // The DWARF's .debug_info is read whole (no background stream): only top-level DIEs are
  // looked at, and the first units hold these structs.
  auto files = dwarf::DebugFiles::Open(binary, search, UINT64_MAX);
  if (!files) {
    note("debug info: " + files.error().ToString());
    return files.error();
  }
  if (*files == nullptr || (*files)->main() == nullptr) {
    note("no debug info");
    return Error(ErrorCode::kNotFound, "no debug info").WithFile(binary->path());
  }
  (void)(*files)->main()->ScanUnits();  // the units before any damage are still read
  Result<Layout> from_dwarf = LayoutFromDwarf(*(*files)->main(), version);
  if (!from_dwarf) note("debug info: " + from_dwarf.error().message);
  return from_dwarf;
}

Result<Layout> LoadQuickLayout(const ElfFile& binary, const Interpreter& interpreter,
                               std::string* notes) {
  const Version& version = interpreter.version;
  if (!SupportedVersion(version)) {
    return Error(ErrorCode::kUnsupported, "CPython " + version.ToString() + " is not supported")
        .WithFile(binary.path());
  }
  auto note = [&](const std::string& text) {
    if (notes != nullptr) *notes += (notes->empty() ? "" : "; ") + text;
  };
  if (version.minor >= 13) {
    std::optional<uint64_t> offset = binary.VaddrToFileOffset(interpreter.runtime);
    std::span<const uint8_t> file = binary.bytes();
    if (offset && *offset < file.size()) {
      size_t n = std::min<size_t>(file.size() - *offset, 4096);
      Result<Layout> from_offsets = LayoutFromDebugOffsets(file.subspan(*offset, n), version);
      if (from_offsets) return from_offsets;
      note("debug offsets: " + from_offsets.error().message);
    } else {
      note("debug offsets: _PyRuntime not in the file");
    }
  }
  if (std::optional<Layout> builtin = BuiltinLayout(version)) return *builtin;
  return Error(ErrorCode::kNotFound, "no layout for CPython " + version.ToString())
      .WithFile(binary.path());
}

Result<Layout> LoadLayout(std::shared_ptr<ElfFile> binary, const Interpreter& interpreter,
                          const dwarf::DebugFileSearch& search, std::string* notes) {
  if (!SupportedVersion(interpreter.version)) {
    return Error(ErrorCode::kUnsupported,
                 "CPython " + interpreter.version.ToString() + " is not supported")
        .WithFile(binary->path());
  }
  Result<Layout> from_dwarf = LoadDwarfLayout(binary, interpreter, search, notes);
  if (from_dwarf) return from_dwarf;
  return LoadQuickLayout(*binary, interpreter, notes);
}

bool SameOffsets(Layout a, Layout b) {
  a.source = b.source;
  return a == b;
}

}  // namespace stacksym::interp::python
