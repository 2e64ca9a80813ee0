#include "interp/python/interpreter.h"

#include <cstring>
#include <string_view>

namespace stacksym::interp::python {

namespace {

constexpr uint32_t kPtLoad = 1;

// "python3.11", "libpython3.11.so.1.0", "libpython3.12d.so": the version in a file's name.
std::optional<Version> VersionFromName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t at = name.find("python");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = name.substr(at + 6);
  if (rest.size() < 3 || rest[0] < '2' || rest[0] > '9' || rest[1] != '.') return std::nullopt;
  Version v;
  v.major = static_cast<uint8_t>(rest[0] - '0');
  size_t i = 2;
  unsigned minor = 0;
  while (i < rest.size() && i < 5 && rest[i] >= '0' && rest[i] <= '9') {
    minor = minor * 10 + static_cast<unsigned>(rest[i] - '0');
    ++i;
  }
  if (i == 2 || minor > 255) return std::nullopt;
  v.minor = static_cast<uint8_t>(minor);
  return v;
}

// Py_Version (3.11+): PY_VERSION_HEX as a 4-byte constant in the file.
std::optional<Version> VersionFromSymbol(const ElfFile& elf, const ElfSymbol& symbol) {
  std::optional<uint64_t> offset = elf.VaddrToFileOffset(symbol.address);
  std::span<const uint8_t> bytes = elf.bytes();
  if (!offset || *offset > bytes.size() || bytes.size() - *offset < 4) return std::nullopt;
  uint32_t hex = 0;
  std::memcpy(&hex, bytes.data() + *offset, 4);
  Version v{static_cast<uint8_t>(hex >> 24), static_cast<uint8_t>(hex >> 16),
            static_cast<uint8_t>(hex >> 8), hex};
  if (v.major != 3) return std::nullopt;
  return v;
}

}  // namespace

std::string Version::ToString() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (hex != 0) s += "." + std::to_string(micro);
  return s;
}

bool SupportedVersion(const Version& version) {
  return version.major == 3 && version.minor >= 11 && version.minor <= 14;
}

std::vector<CodeRange> EvaluatorRanges(const ElfFile& elf) {
  constexpr std::string_view kEval = "_PyEval_EvalFrameDefault";
  std::vector<CodeRange> out;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if (s.size == 0 || s.name.substr(0, kEval.size()) != kEval) continue;
    if (s.name.size() == kEval.size() || s.name[kEval.size()] == '.') {
      out.push_back({s.address, s.address + s.size});
    }
  }
  return out;
}

namespace {

// Whether a string table of the file (.dynstr, .strtab) holds `name` whole: a byte search, so
// that the symbol table of every program a host runs is not built (and kept) just to learn
// that it is not Python.
bool NamesSymbol(const ElfFile& elf, std::string_view name) {
  for (const char* section : {".dynstr", ".strtab"}) {
    Result<std::span<const uint8_t>> bytes = elf.SectionData(section);
    if (!bytes || bytes->empty()) continue;
    std::string_view strings(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    for (size_t at = strings.find(name); at != std::string_view::npos;
         at = strings.find(name, at + 1)) {
      const bool starts = at == 0 || strings[at - 1] == '\0';
      const bool ends = at + name.size() == strings.size() || strings[at + name.size()] == '\0';
      if (starts && ends) return true;
    }
  }
  return false;
}

}  // namespace

Result<std::optional<Interpreter>> FindInterpreter(const ElfFile& elf) {
  if (!NamesSymbol(elf, "_PyRuntime")) return std::optional<Interpreter>();
  const ElfSymbol* runtime = nullptr;
  const ElfSymbol* py_version = nullptr;
  Interpreter interp;
  // One pass over the symbols for every name (FindByName would be one pass each).
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if (s.name == "_PyRuntime") {
      runtime = &s;
    } else if (s.name == "Py_Version") {
      py_version = &s;
    } else if (s.name == "PyCode_Type") {
      interp.code_type = s.address;
    } else if (s.name == "PyUnicode_Type") {
      interp.unicode_type = s.address;
    } else if (s.name == "PyBytes_Type") {
      interp.bytes_type = s.address;
    }
  }
  if (runtime == nullptr) return std::optional<Interpreter>();
  interp.runtime = runtime->address;
  interp.runtime_size = runtime->size;
  interp.eval_frames = EvaluatorRanges(elf);
  std::optional<Version> version;
  if (py_version != nullptr) version = VersionFromSymbol(elf, *py_version);
  if (!version) version = VersionFromName(elf.path());
  if (!version) {
    return Error(ErrorCode::kUnsupported, "CPython interpreter of unknown version")
        .WithFile(elf.path());
  }
  interp.version = *version;
  return std::optional<Interpreter>(interp);
}

std::optional<uint64_t> LoadBias(const ElfFile& elf, uint64_t map_start, uint64_t map_offset) {
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type != kPtLoad) continue;
    // Mappings start at page boundaries: the segment whose pages hold the offset.
    uint64_t page_offset = seg.offset & ~uint64_t{0xfff};
    if (map_offset < page_offset || map_offset >= seg.offset + seg.filesz) continue;
    return map_start - map_offset + seg.offset - seg.vaddr;
  }
  return std::nullopt;
}

}  // namespace stacksym::interp::python
