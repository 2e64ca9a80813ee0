#include "interp/python/code_object.h"

#include <linux/types.h>

#include <cstring>

#include "interp/python/code_check.h"

namespace stacksym::interp::python {

namespace {

template <class T>
T Field(const std::vector<uint8_t>& bytes, uint32_t offset) {
  T v{};
  if (offset <= bytes.size() && bytes.size() - offset >= sizeof(T)) {
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
  }
  return v;
}

CodeError Unreadable(MemoryReader& memory, CodeError otherwise) {
  return memory.gone() ? CodeError::kProcessGone : otherwise;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  // Lone surrogates (which Python strings may hold) and values past U+10FFFF become U+FFFD.
  if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) cp = 0xfffd;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace

const char* CodeErrorName(CodeError error) {
  switch (error) {
    case CodeError::kNone:
      return "none";
    case CodeError::kProcessGone:
      return "process_gone";
    case CodeError::kUnreadable:
      return "unreadable";
    case CodeError::kNotCode:
      return "not_code";
    case CodeError::kBadString:
      return "bad_string";
    case CodeError::kStringTooLong:
      return "string_too_long";
    case CodeError::kBadLineTable:
      return "bad_line_table";
    case CodeError::kLineTableTooLong:
      return "line_table_too_long";
    case CodeError::kReplaced:
      return "replaced";
    case CodeError::kFreed:
      return "freed";
  }
  return "unknown";
}

int32_t CodeObject::Line(int64_t instruction) const {
  LineLookup l = LineOfInstruction(line_table, first_line, instruction);
  return l.status == LineStatus::kFound ? l.line : 0;
}

uint16_t CodeObject::Check() const {
  return static_cast<uint16_t>(stacksym_py_code_check(first_line, qualname_address));
}

CodeError ReadString(MemoryReader& memory, const Layout& layout, uint64_t unicode_type,
                     uint64_t address, std::string* out) {
  out->clear();
  std::vector<uint8_t> header(layout.StringHeaderBytes());
  if (address == 0 || !memory.Read(address, header)) {
    return Unreadable(memory, CodeError::kBadString);
  }
  if (unicode_type != 0 && Field<uint64_t>(header, layout.ob_type) != unicode_type) {
    return CodeError::kBadString;
  }
  int64_t length = Field<int64_t>(header, layout.unicode_length);
  uint32_t state = Field<uint32_t>(header, layout.unicode_state);
  if (length < 0) return CodeError::kBadString;
  if (static_cast<uint64_t>(length) > kMaxStringLength) return CodeError::kStringTooLong;
  uint32_t kind = (state >> layout.state_kind_shift) & 7;
  bool compact = (state >> layout.state_compact_bit) & 1;
  bool ascii = (state >> layout.state_ascii_bit) & 1;
  // Legacy (non-compact) strings keep their data elsewhere; CPython makes none of its names so.
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) {
    return CodeError::kBadString;
  }
  uint64_t data = address + (ascii ? layout.unicode_ascii_data : layout.unicode_compact_data);
  std::vector<uint8_t> bytes(static_cast<size_t>(length) * kind);
  if (!memory.Read(data, bytes)) return Unreadable(memory, CodeError::kBadString);
  out->reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); i += kind) {
    uint32_t cp = bytes[i];
    if (kind == 2) cp |= uint32_t{bytes[i + 1]} << 8;
    if (kind == 4) {
      cp |=
          uint32_t{bytes[i + 1]} << 8 | uint32_t{bytes[i + 2]} << 16 | uint32_t{bytes[i + 3]} << 24;
    }
    if (ascii && cp >= 0x80) return CodeError::kBadString;
    AppendUtf8(cp, out);
  }
  return CodeError::kNone;
}

namespace {

CodeError ReadLineTable(MemoryReader& memory, const Layout& layout, uint64_t bytes_type,
                        uint64_t address, std::vector<uint8_t>* out) {
  std::vector<uint8_t> header(layout.bytes_data);
  if (address == 0 || !memory.Read(address, header)) {
    return Unreadable(memory, CodeError::kBadLineTable);
  }
  if (bytes_type != 0 && Field<uint64_t>(header, layout.ob_type) != bytes_type) {
    return CodeError::kBadLineTable;
  }
  int64_t size = Field<int64_t>(header, layout.bytes_size);
  if (size < 0) return CodeError::kBadLineTable;
  if (static_cast<uint64_t>(size) > kMaxLineTableBytes) return CodeError::kLineTableTooLong;
  out->resize(static_cast<size_t>(size));
  if (!memory.Read(address + layout.bytes_data, *out)) {
    return Unreadable(memory, CodeError::kBadLineTable);
  }
  return CodeError::kNone;
}

// A freed object's first word is the allocator's: pymalloc links a pool's free blocks through
// it (the next free block, in the same pool, or null); glibc's free lists write the type word
// after it too, which the type check catches. A live object's reference count is neither.
bool LooksFreed(const std::vector<uint8_t>& code, const Layout& layout, uint64_t address) {
  constexpr int kPoolBits = 14;  // pymalloc's pools: 4 KiB (3.11) or 16 KiB, aligned
  uint64_t first = Field<uint64_t>(code, layout.ob_type - 8);
  return first == 0 || (first >> kPoolBits) == (address >> kPoolBits);
}

// Whether two reads of a code object agree on every field the reader took.
bool SameFields(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                const Layout& layout) {
  for (uint32_t offset : {layout.ob_type, layout.code_filename, layout.code_name,
                          layout.code_qualname, layout.code_linetable}) {
    if (Field<uint64_t>(a, offset) != Field<uint64_t>(b, offset)) return false;
  }
  return Field<int32_t>(a, layout.code_firstlineno) == Field<int32_t>(b, layout.code_firstlineno);
}

}  // namespace

CodeRead ReadCodeObject(MemoryReader& memory, const Layout& layout, const TypeAddresses& types,
                        uint64_t address) {
  CodeRead read;
  std::vector<uint8_t> code(layout.CodeBytes());
  if (address == 0 || !memory.Read(address, code)) {
    read.error = Unreadable(memory, CodeError::kUnreadable);
    return read;
  }
  if (types.code != 0 && Field<uint64_t>(code, layout.ob_type) != types.code) {
    read.error = CodeError::kNotCode;
    return read;
  }
  if (LooksFreed(code, layout, address)) {
    read.error = CodeError::kFreed;
    return read;
  }
  CodeObject object;
  object.first_line = Field<int32_t>(code, layout.code_firstlineno);
  object.qualname_address = Field<uint64_t>(code, layout.code_qualname);
  struct {
    uint32_t offset;
    std::string* out;
  } strings[] = {{layout.code_qualname, &object.qualname},
                 {layout.code_name, &object.name},
                 {layout.code_filename, &object.filename}};
  for (const auto& s : strings) {
    read.error = ReadString(memory, layout, types.unicode, Field<uint64_t>(code, s.offset), s.out);
    if (read.error != CodeError::kNone) return read;
  }
  read.error = ReadLineTable(memory, layout, types.bytes,
                             Field<uint64_t>(code, layout.code_linetable), &object.line_table);
  if (read.error != CodeError::kNone) return read;
  // Its strings and table are its own only while it lives: it must live still, unchanged (else
  // they may have been freed with it and reused).
  std::vector<uint8_t> again(code.size());
  if (!memory.Read(address, again)) {
    read.error = Unreadable(memory, CodeError::kFreed);
    return read;
  }
  if (LooksFreed(again, layout, address) || !SameFields(code, again, layout)) {
    read.error = CodeError::kFreed;
    return read;
  }
  uint32_t units = 0;
  if (ForEachLocation(object.line_table, object.first_line, [&](const LocationRange& r) {
        units = r.end;
        return true;
      })) {
    object.code_units = units;
  }
  read.code = std::move(object);
  return read;
}

}  // namespace stacksym::interp::python
