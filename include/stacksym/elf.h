// stacksym/elf.h — a zero-copy ELF reader.
//
// ElfFile maps a file once and exposes its sections, segments, notes (GNU build ID,
// .gnu_debuglink, .gnu_debugaltlink), a sorted symbol table, and the translation between
// virtual addresses and file offsets. Compressed sections (SHF_COMPRESSED with zlib or zstd,
// and legacy .zdebug_*) are decompressed on first use, once, and kept. ELF32 and ELF64
// little-endian; big-endian files are rejected with a clear error. Every length and offset in
// the file is distrusted: bad input yields an Error naming the problem, never a crash.
//
//   Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open("/usr/bin/bash");
//   if (!elf) return elf.error();
//   const ElfSymbol* sym = (*elf)->symbols().Find(0x4a2f0);
//   std::optional<uint64_t> off = (*elf)->VaddrToFileOffset(0x4a2f0);
//
// Thread-safety: const methods may be called from several threads at once (lazy state is
// built under a lock, once).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/hex.h"  // ToHex, FromHex: build IDs in the form they are printed in
#include "stacksym/mapped_file.h"
#include "stacksym/result.h"

namespace stacksym {
class ElfFile;
struct ElfSection;
}  // namespace stacksym

// Internal to the library (src/elf/): the symbol table's builder, and a section's contents
// decompressed on a background thread, readable front to back while they arrive
// (StreamSectionData, src/elf/section_stream.h): only the library's DWARF reader streams (it
// parses the units of a big compressed .debug_info before all of it is inflated); callers of
// this header use SectionData.
namespace stacksym::elf {
class SymbolTableBuilder;
class SectionStream;
std::shared_ptr<const SectionStream> StreamSectionData(const ElfFile& elf,
                                                       const ElfSection& section);
}  // namespace stacksym::elf

namespace stacksym {

struct ElfSection {
  std::string_view name;  // points into the file's section-name table
  uint32_t index = 0;
  uint32_t type = 0;   // SHT_*
  uint64_t flags = 0;  // SHF_*
  // sh_addr; in a relocatable object (ET_REL), where every sh_addr is 0, the address ElfFile
  // placed the section at so that no two overlap (src/elf/object_layout.h).
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;  // on-disk size (compressed size for compressed sections)
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t addralign = 0;
  uint64_t entsize = 0;
};

struct ElfSegment {
  uint32_t type = 0;   // PT_*
  uint32_t flags = 0;  // PF_*
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  uint64_t align = 0;
};

struct DebugLink {
  std::string name;
  uint32_t crc = 0;
};

struct DebugAltLink {
  std::string name;
  std::vector<uint8_t> build_id;
};

struct ElfSymbol {
  std::string_view name;  // raw (mangled) name, points into the mapped string table
  uint64_t address = 0;
  uint64_t size = 0;      // after fix-up: sizeless symbols end at the next symbol or section end
  uint8_t type = 0;       // STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, ...
  uint8_t binding = 0;    // STB_GLOBAL, STB_WEAK, STB_LOCAL
  uint32_t section = 0;   // section index (st_shndx, or its SHT_SYMTAB_SHNDX extension)
  bool sizeless = false;  // st_size was 0 in the file (for every alias at this address)
};

// Function, object and untyped (STT_NOTYPE: assembly) symbols from .symtab and .dynsym,
// sorted by address, one entry per address (aliases resolved: global, then weak, then local;
// ties by name, so the choice is deterministic).
class SymbolTable {
 public:
  // The symbol with address <= addr < address + size, or nullptr. When sized symbols nest
  // (a symbol inside another's range), the innermost one — the covering symbol with the
  // highest address — is returned.
  const ElfSymbol* Find(uint64_t addr) const;
  const ElfSymbol* FindByName(std::string_view name) const;  // linear; for tests and tools

  // Find() for addresses asked in ascending order, each in amortized constant time instead of
  // two binary searches (an index build asks at every symbol boundary).
  class AscendingFinder {
   public:
    explicit AscendingFinder(const SymbolTable& table) : table_(table) {}
    // As table.Find(addr); `addr` must not be below the previous call's.
    const ElfSymbol* Find(uint64_t addr);

   private:
    const SymbolTable& table_;
    size_t next_symbol_ = 0;  // the first symbol starting past the last address asked
    size_t next_resume_ = 0;  // the first resume point past it (advanced only when needed)
  };
  std::span<const ElfSymbol> symbols() const { return symbols_; }
  bool empty() const { return symbols_.empty(); }
  bool has_symtab() const { return has_symtab_; }  // .symtab was present
  bool has_dynsym() const { return has_dynsym_; }  // .dynsym was present
  // Entries that were dropped because they were malformed (name or section index out of
  // range), and what was wrong with the tables themselves (past EOF, bad entry size). The
  // symbols that could be read are still in the table.
  size_t skipped() const { return skipped_; }
  const std::vector<Error>& problems() const { return problems_; }
  size_t memory_bytes() const {
    return symbols_.capacity() * sizeof(ElfSymbol) + resumes_.capacity() * sizeof(Resume) +
           owned_names_.capacity();
  }

 private:
  friend class elf::SymbolTableBuilder;
  std::vector<ElfSymbol> symbols_;
  // Where a nested symbol's range ends inside an enclosing one, the enclosing symbol covers
  // again from `position` on. Sorted by position; empty when no symbols nest (the usual
  // case), so it costs nothing there and keeps Find O(log n) however deep the nesting.
  struct Resume {
    uint64_t position;
    uint32_t index;  // into symbols_
  };
  // Find's answer given how many symbols start at or before `addr` and, asked only when the
  // last of them does not cover it, how many resume points lie at or before it.
  template <class ResumeEnd>
  const ElfSymbol* CoverOf(uint64_t addr, size_t symbol_end, const ResumeEnd& resume_end) const;
  std::vector<Resume> resumes_;
  // The names of a table whose symbols are made up rather than read (ElfFile::plt_symbols):
  // its symbols' names point here.
  std::string owned_names_;
  size_t skipped_ = 0;
  std::vector<Error> problems_;
  bool has_symtab_ = false;
  bool has_dynsym_ = false;
};

class ElfFile {
 public:
  static Result<std::shared_ptr<ElfFile>> Open(const std::string& path);
  static Result<std::shared_ptr<ElfFile>> FromMapped(MappedFile file);
  // Copies the bytes (in-memory images such as a vDSO, fuzzing inputs).
  static Result<std::shared_ptr<ElfFile>> FromBytes(std::span<const uint8_t> bytes,
                                                    std::string name);

  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile();

  const std::string& path() const { return file_.path(); }
  const FileIdentity& identity() const { return file_.identity(); }
  std::span<const uint8_t> bytes() const { return file_.bytes(); }
  // The mapped file's pages out of the resident set (MappedFile::ReleasePages); views into the
  // file stay valid.
  void ReleasePages() const { file_.ReleasePages(); }
  bool is_64bit() const { return is_64bit_; }
  uint16_t type() const { return type_; }        // ET_EXEC, ET_DYN, ...
  uint16_t machine() const { return machine_; }  // EM_X86_64, ...

  const std::vector<ElfSection>& sections() const { return sections_; }
  const std::vector<ElfSegment>& segments() const { return segments_; }
  // By exact name; ".debug_X" also finds a legacy ".zdebug_X".
  const ElfSection* FindSection(std::string_view name) const;

  // The section's contents, decompressed if compressed (once; later calls return the same
  // bytes). In a relocatable file (ET_REL: .o, .ko) a debug section's relocations
  // (.rela.debug_*, .rel.debug_*) are applied to a private copy, once (elf/relocate.h).
  // SHT_NOBITS sections give an empty span. Errors: range past EOF, bad compression
  // header, decompressed size different from the declared one, a relocation that is out of
  // range or of a type not supported.
  Result<std::span<const uint8_t>> SectionData(const ElfSection& section) const;
  // Convenience: empty span when the section does not exist.
  Result<std::span<const uint8_t>> SectionData(std::string_view name) const;
  // Gives back the memory of a compressed section's decompressed bytes; the next
  // SectionData() decompresses it again. Every span of them handed out before is invalid
  // afterwards: for an owner that holds the only ones (an index build's DWARF source, done
  // with them), never while another thread reads or decodes them. Uncompressed sections
  // (views of the mapping) are left alone.
  void DiscardDecompressed(const ElfSection& section);

  // GNU build ID (NT_GNU_BUILD_ID), any length; empty if the file has none.
  std::span<const uint8_t> build_id() const { return build_id_; }
  std::string build_id_hex() const;
  // Go's build ID ("<action id>/<content id>", from .note.go.buildid, else the string older Go
  // linkers put at the start of the text); empty when the file is not a Go binary. Read on
  // each call.
  std::string go_build_id() const;
  const std::optional<DebugLink>& debuglink() const { return debuglink_; }
  const std::optional<DebugAltLink>& debugaltlink() const { return debugaltlink_; }
  // Non-fatal problems met while opening (a corrupt .gnu_debuglink, say): the file is still
  // usable, the affected piece is just missing.
  const std::vector<Error>& problems() const { return problems_; }

  // Function/object symbols; built on first call.
  const SymbolTable& symbols() const;
  // Symbols made up for the PLT stubs, which no symbol table covers, named as perf names them:
  // "puts@plt" for the stub that jumps through puts' GOT slot (in .plt, .plt.sec or .plt.got),
  // ".plt" for the lazy-binding resolver PLT0 (the whole .plt when .plt.sec holds the stubs).
  // x86-64 and AArch64 (empty for other machines, for files without a PLT and for separate
  // debug files, whose PLT has no bytes); a malformed section or relocation names nothing.
  // Built on first call (elf/plt_symbols.cc).
  const SymbolTable& plt_symbols() const;
  // The absolute symbols (SHN_ABS) of .symtab and .dynsym, which lie in no section: each names
  // its own range, a sizeless one only its exact address (as eu-addr2line names them; they
  // never extend to the next symbol). Asked only where nothing else names an address
  // (elf::AbsoluteSymbolTable); llvm-symbolizer names nothing from them. Built on first call.
  const SymbolTable& absolute_symbols() const;

  // MiniDebugInfo (Fedora's, RHEL's): the ELF image kept xz-compressed in .gnu_debugdata,
  // whose .symtab names the functions .dynsym lacks (elf/mini_debug_info.h). Null when the
  // file has none, or when it cannot be decoded: then mini_debug_info_problem() says why.
  // Decoded on first call, once, within fixed size limits.
  const ElfFile* mini_debug_info() const;
  const std::optional<Error>& mini_debug_info_problem() const;

  // Heap memory this file holds beyond its mapping: the decompressed sections, the symbol
  // table built so far and the MiniDebugInfo image. For callers that bound the memory of the
  // files they keep.
  size_t heap_bytes() const {
    const ElfFile* mini = mini_ready_.load(std::memory_order_acquire);
    return heap_bytes_.load(std::memory_order_relaxed) +
           (mini != nullptr ? mini->bytes().size() + mini->heap_bytes() : 0);
  }

  // Through PT_LOAD segments. nullopt when no segment holds the address/offset.
  std::optional<uint64_t> VaddrToFileOffset(uint64_t vaddr) const;
  std::optional<uint64_t> FileOffsetToVaddr(uint64_t offset) const;

 private:
  ElfFile() = default;
  Result<void> Parse();

  MappedFile file_;
  bool is_64bit_ = false;
  uint16_t type_ = 0;
  uint16_t machine_ = 0;
  std::vector<ElfSection> sections_;
  std::vector<ElfSegment> segments_;
  std::vector<uint8_t> build_id_;
  std::optional<DebugLink> debuglink_;
  std::optional<DebugAltLink> debugaltlink_;
  std::vector<Error> problems_;

  mutable std::once_flag symbols_once_;
  mutable SymbolTable symbols_;
  mutable std::once_flag plt_once_;
  mutable SymbolTable plt_symbols_;
  mutable std::once_flag absolute_once_;
  mutable SymbolTable absolute_symbols_;
  mutable std::atomic<size_t> heap_bytes_{0};
  mutable std::once_flag mini_once_;
  mutable std::shared_ptr<ElfFile> mini_;
  mutable std::optional<Error> mini_problem_;
  mutable std::atomic<const ElfFile*> mini_ready_{nullptr};  // mini_, once it is set
  // One slot per section, allocated only for compressed ones; each is filled once.
  struct Decompressed;
  mutable std::vector<std::unique_ptr<Decompressed>> decompressed_;
  friend std::shared_ptr<const elf::SectionStream> elf::StreamSectionData(
      const ElfFile& elf, const ElfSection& section);
  void StartDecompression(const ElfSection& s, std::span<const uint8_t> raw, Decompressed& slot,
                          bool background) const;
  // One slot per debug section of an ET_REL file that relocations apply to (elf/relocate.h).
  struct Relocated;
  mutable std::vector<std::unique_ptr<Relocated>> relocated_;
  // SectionData before relocations: the file's bytes, or decompressed ones.
  Result<std::span<const uint8_t>> UnrelocatedSectionData(const ElfSection& s) const;
};

// Reads just the GNU build ID of an open ELF file with pread: the ELF header, program
// headers and PT_NOTE contents — a few KiB, never the whole file. Empty vector: no build ID.
Result<std::vector<uint8_t>> ReadBuildIdFromFd(int fd);

// The CRC32 used by .gnu_debuglink (zlib's polynomial) of a whole file.
uint32_t DebugLinkCrc32(std::span<const uint8_t> bytes);

// Candidate paths for a build ID in one debug directory laid out like /usr/lib/debug, in the
// order they are tried: the binary ("<dir>/.build-id/ab/cdef...") first, then its separate
// debug file ("....debug"); empty for a build ID shorter than 2 bytes. The one place such a
// path is built (the finders, the symbol index's identity, the llvm-symbolizer drop-in).
std::vector<std::string> BuildIdPaths(const std::string& debug_dir,
                                      std::span<const uint8_t> build_id);

}  // namespace stacksym
