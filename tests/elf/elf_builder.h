// elf_builder.h — writes small ELF files byte by byte for tests of the ELF reader: well-formed
// ones (ELF32, extended numbering, hand-picked symbols and notes) and, by overriding any
// field after layout or patching the bytes, every kind of broken one.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym::testing {

struct BuilderSection {
  std::string name;
  uint32_t type = SHT_PROGBITS;
  uint64_t flags = 0;
  uint64_t addr = 0;
  std::vector<uint8_t> data;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t addralign = 1;
  uint64_t entsize = 0;
  // Applied after layout, to make a header lie.
  std::optional<uint64_t> offset_override;
  std::optional<uint64_t> size_override;
  std::optional<uint32_t> name_override;
};

struct BuilderSegment {
  uint32_t type = PT_LOAD;
  uint32_t flags = PF_R;
  int section = -1;  // file range = that section's data; -1: offset 0, size 0
  uint64_t vaddr = 0;
  uint64_t memsz = 0;  // 0: same as filesz
  uint64_t align = 4;
  std::optional<uint64_t> offset_override;
  std::optional<uint64_t> filesz_override;
};

class ElfBuilder {
 public:
  explicit ElfBuilder(bool is_64bit = true) : is_64bit_(is_64bit) {}

  // Returns the index the section will have (section 0 is the null section; the section-name
  // table is added last by Build).
  uint32_t AddSection(BuilderSection section) {
    sections_.push_back(std::move(section));
    return static_cast<uint32_t>(sections_.size());
  }
  void AddSegment(BuilderSegment segment) { segments_.push_back(segment); }

  uint16_t elf_type = ET_DYN;
  uint16_t machine = EM_X86_64;
  // e_shnum = 0, e_shstrndx = SHN_XINDEX and e_phnum = PN_XNUM, with the real values in
  // section 0 (as linkers do when there are too many sections or segments).
  bool extended_numbering = false;

  std::vector<uint8_t> Build();

  // Where things ended up in the last Build() (for patching).
  uint64_t section_header_offset(uint32_t index) const { return shoff_ + index * shdr_size(); }
  uint64_t section_data_offset(uint32_t index) const { return data_offsets_.at(index); }
  uint64_t program_header_offset(uint32_t index) const { return phoff_ + index * phdr_size(); }
  size_t shdr_size() const { return is_64bit_ ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr); }
  size_t phdr_size() const { return is_64bit_ ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr); }

 private:
  bool is_64bit_;
  std::vector<BuilderSection> sections_;
  std::vector<BuilderSegment> segments_;
  uint64_t shoff_ = 0;
  uint64_t phoff_ = 0;
  std::vector<uint64_t> data_offsets_;
};

// Little-endian writers into a byte vector.
void Put8(std::vector<uint8_t>& b, uint64_t at, uint8_t v);
void Put16(std::vector<uint8_t>& b, uint64_t at, uint16_t v);
void Put32(std::vector<uint8_t>& b, uint64_t at, uint32_t v);
void Put64(std::vector<uint8_t>& b, uint64_t at, uint64_t v);
void Append32(std::vector<uint8_t>& b, uint32_t v);
void Append64(std::vector<uint8_t>& b, uint64_t v);
void AppendChars(std::vector<uint8_t>& b, std::string_view s);

// One ELF note with the given name/type/descriptor, padded to `align` (4 or 8).
std::vector<uint8_t> MakeNote(const std::string& name, uint32_t type,
                              const std::vector<uint8_t>& desc, int align = 4);

// Accumulates a symbol table and its string table.
class SymtabWriter {
 public:
  explicit SymtabWriter(bool is_64bit = true);
  void Add(const std::string& name, uint64_t value, uint64_t size, uint8_t type, uint8_t bind,
           uint16_t shndx);
  // Like Add, but with a raw name offset (for out-of-range tests).
  void AddRaw(uint32_t name_offset, uint64_t value, uint64_t size, uint8_t type, uint8_t bind,
              uint16_t shndx);
  const std::vector<uint8_t>& symbols() const { return symbols_; }
  const std::vector<uint8_t>& strings() const { return strings_; }
  size_t entry_size() const { return is_64bit_ ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym); }

 private:
  bool is_64bit_;
  std::vector<uint8_t> symbols_;
  std::vector<uint8_t> strings_{0};
};

// Writes bytes to a fresh temporary file and returns its path.
std::string WriteTempFile(const std::vector<uint8_t>& bytes, const std::string& tag);

}  // namespace stacksym::testing
