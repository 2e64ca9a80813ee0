#include "elf_builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace stacksym::testing {

void Put8(std::vector<uint8_t>& b, uint64_t at, uint8_t v) { b.at(at) = v; }
void Put16(std::vector<uint8_t>& b, uint64_t at, uint16_t v) {
  for (int i = 0; i < 2; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}
void Put32(std::vector<uint8_t>& b, uint64_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(std::vector<uint8_t>& b, uint64_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}
void Append32(std::vector<uint8_t>& b, uint32_t v) {
  b.resize(b.size() + 4);
  Put32(b, b.size() - 4, v);
}
void Append64(std::vector<uint8_t>& b, uint64_t v) {
  b.resize(b.size() + 8);
  Put64(b, b.size() - 8, v);
}

void AppendChars(std::vector<uint8_t>& b, std::string_view s) {
  b.insert(b.end(), s.begin(), s.end());
}

namespace {
void PadTo(std::vector<uint8_t>& b, uint64_t align) {
  if (align > 1) b.resize((b.size() + align - 1) / align * align);
}
}  // namespace

std::vector<uint8_t> MakeNote(const std::string& name, uint32_t type,
                              const std::vector<uint8_t>& desc, int align) {
  std::vector<uint8_t> n;
  Append32(n, static_cast<uint32_t>(name.size() + 1));
  Append32(n, static_cast<uint32_t>(desc.size()));
  Append32(n, type);
  n.insert(n.end(), name.begin(), name.end());
  n.push_back(0);
  PadTo(n, align);
  n.insert(n.end(), desc.begin(), desc.end());
  PadTo(n, align);
  return n;
}

SymtabWriter::SymtabWriter(bool is_64bit) : is_64bit_(is_64bit) {
  symbols_.resize(entry_size());  // the null symbol
}

void SymtabWriter::Add(const std::string& name, uint64_t value, uint64_t size, uint8_t type,
                       uint8_t bind, uint16_t shndx) {
  uint32_t offset = static_cast<uint32_t>(strings_.size());
  strings_.insert(strings_.end(), name.begin(), name.end());
  strings_.push_back(0);
  AddRaw(offset, value, size, type, bind, shndx);
}

void SymtabWriter::AddRaw(uint32_t name_offset, uint64_t value, uint64_t size, uint8_t type,
                          uint8_t bind, uint16_t shndx) {
  size_t at = symbols_.size();
  symbols_.resize(at + entry_size());
  uint8_t info = static_cast<uint8_t>((bind << 4) | (type & 0xf));
  Put32(symbols_, at, name_offset);
  if (is_64bit_) {
    Put8(symbols_, at + 4, info);
    Put16(symbols_, at + 6, shndx);
    Put64(symbols_, at + 8, value);
    Put64(symbols_, at + 16, size);
  } else {
    Put32(symbols_, at + 4, static_cast<uint32_t>(value));
    Put32(symbols_, at + 8, static_cast<uint32_t>(size));
    Put8(symbols_, at + 12, info);
    Put16(symbols_, at + 14, shndx);
  }
}

std::vector<uint8_t> ElfBuilder::Build() {
  // Section-name table: "" then each name, then ".shstrtab".
  std::vector<uint8_t> names{0};
  std::vector<uint32_t> name_offsets;
  for (const BuilderSection& s : sections_) {
    name_offsets.push_back(static_cast<uint32_t>(names.size()));
    names.insert(names.end(), s.name.begin(), s.name.end());
    names.push_back(0);
  }
  uint32_t shstrtab_name = static_cast<uint32_t>(names.size());
  const std::string kShstrtab = ".shstrtab";
  names.insert(names.end(), kShstrtab.begin(), kShstrtab.end());
  names.push_back(0);

  const size_t ehdr_size = is_64bit_ ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  std::vector<uint8_t> out(ehdr_size);
  phoff_ = segments_.empty() ? 0 : out.size();
  out.resize(out.size() + segments_.size() * phdr_size());

  data_offsets_.assign(sections_.size() + 2, 0);
  for (size_t i = 0; i < sections_.size(); ++i) {
    PadTo(out, std::min<uint64_t>(std::max<uint64_t>(sections_[i].addralign, 1), 16));
    data_offsets_[i + 1] = out.size();
    if (sections_[i].type != SHT_NOBITS) {
      out.insert(out.end(), sections_[i].data.begin(), sections_[i].data.end());
    }
  }
  const uint32_t shstrndx = static_cast<uint32_t>(sections_.size() + 1);
  data_offsets_[shstrndx] = out.size();
  out.insert(out.end(), names.begin(), names.end());
  PadTo(out, 8);
  shoff_ = out.size();
  const uint64_t shnum = sections_.size() + 2;
  out.resize(out.size() + shnum * shdr_size());

  auto write_shdr = [&](uint64_t index, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
                        uint64_t offset, uint64_t size, uint32_t link, uint32_t info,
                        uint64_t align, uint64_t entsize) {
    uint64_t at = shoff_ + index * shdr_size();
    Put32(out, at, name);
    Put32(out, at + 4, type);
    if (is_64bit_) {
      Put64(out, at + 8, flags);
      Put64(out, at + 16, addr);
      Put64(out, at + 24, offset);
      Put64(out, at + 32, size);
      Put32(out, at + 40, link);
      Put32(out, at + 44, info);
      Put64(out, at + 48, align);
      Put64(out, at + 56, entsize);
    } else {
      Put32(out, at + 8, static_cast<uint32_t>(flags));
      Put32(out, at + 12, static_cast<uint32_t>(addr));
      Put32(out, at + 16, static_cast<uint32_t>(offset));
      Put32(out, at + 20, static_cast<uint32_t>(size));
      Put32(out, at + 24, link);
      Put32(out, at + 28, info);
      Put32(out, at + 32, static_cast<uint32_t>(align));
      Put32(out, at + 36, static_cast<uint32_t>(entsize));
    }
  };
  if (extended_numbering) {
    write_shdr(0, 0, SHT_NULL, 0, 0, 0, shnum, shstrndx, static_cast<uint32_t>(segments_.size()), 0,
               0);
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    const BuilderSection& s = sections_[i];
    write_shdr(i + 1, s.name_override.value_or(name_offsets[i]), s.type, s.flags, s.addr,
               s.offset_override.value_or(data_offsets_[i + 1]),
               s.size_override.value_or(s.data.size()), s.link, s.info, s.addralign, s.entsize);
  }
  write_shdr(shstrndx, shstrtab_name, SHT_STRTAB, 0, 0, data_offsets_[shstrndx], names.size(), 0, 0,
             1, 0);

  for (size_t i = 0; i < segments_.size(); ++i) {
    const BuilderSegment& p = segments_[i];
    uint64_t offset = p.section > 0 ? data_offsets_[p.section] : 0;
    uint64_t filesz = p.section > 0 ? sections_[p.section - 1].data.size() : 0;
    offset = p.offset_override.value_or(offset);
    filesz = p.filesz_override.value_or(filesz);
    uint64_t memsz = p.memsz != 0 ? p.memsz : filesz;
    uint64_t at = program_header_offset(static_cast<uint32_t>(i));
    if (is_64bit_) {
      Put32(out, at, p.type);
      Put32(out, at + 4, p.flags);
      Put64(out, at + 8, offset);
      Put64(out, at + 16, p.vaddr);
      Put64(out, at + 24, p.vaddr);
      Put64(out, at + 32, filesz);
      Put64(out, at + 40, memsz);
      Put64(out, at + 48, p.align);
    } else {
      Put32(out, at, p.type);
      Put32(out, at + 4, static_cast<uint32_t>(offset));
      Put32(out, at + 8, static_cast<uint32_t>(p.vaddr));
      Put32(out, at + 12, static_cast<uint32_t>(p.vaddr));
      Put32(out, at + 16, static_cast<uint32_t>(filesz));
      Put32(out, at + 20, static_cast<uint32_t>(memsz));
      Put32(out, at + 24, p.flags);
      Put32(out, at + 28, static_cast<uint32_t>(p.align));
    }
  }

  // File header.
  std::memcpy(out.data(), ELFMAG, SELFMAG);
  out[EI_CLASS] = is_64bit_ ? ELFCLASS64 : ELFCLASS32;
  out[EI_DATA] = ELFDATA2LSB;
  out[EI_VERSION] = EV_CURRENT;
  Put16(out, EI_NIDENT, elf_type);
  Put16(out, EI_NIDENT + 2, machine);
  Put32(out, EI_NIDENT + 4, EV_CURRENT);
  uint16_t phnum = extended_numbering ? PN_XNUM : static_cast<uint16_t>(segments_.size());
  uint16_t shnum16 = extended_numbering ? 0 : static_cast<uint16_t>(shnum);
  uint16_t shstrndx16 = extended_numbering ? SHN_XINDEX : static_cast<uint16_t>(shstrndx);
  if (is_64bit_) {
    Put64(out, 32, phoff_);
    Put64(out, 40, shoff_);
    Put16(out, 52, sizeof(Elf64_Ehdr));
    Put16(out, 54, sizeof(Elf64_Phdr));
    Put16(out, 56, phnum);
    Put16(out, 58, sizeof(Elf64_Shdr));
    Put16(out, 60, shnum16);
    Put16(out, 62, shstrndx16);
  } else {
    Put32(out, 28, static_cast<uint32_t>(phoff_));
    Put32(out, 32, static_cast<uint32_t>(shoff_));
    Put16(out, 40, sizeof(Elf32_Ehdr));
    Put16(out, 42, sizeof(Elf32_Phdr));
    Put16(out, 44, phnum);
    Put16(out, 46, sizeof(Elf32_Shdr));
    Put16(out, 48, shnum16);
    Put16(out, 50, shstrndx16);
  }
  return out;
}

std::string WriteTempFile(const std::vector<uint8_t>& bytes, const std::string& tag) {
  static int counter = 0;
  std::string path = std::string(::testing::TempDir()) + "/stacksym_elf_" + tag + "_" +
                     std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace stacksym::testing
