// stacksym/kernel.h — kernel addresses → symbols, from /proc/kallsyms and optionally vmlinux.
//
// KallsymsTable is /proc/kallsyms parsed into one sorted, compact table: vmlinux symbols,
// module symbols (their "[module]" name kept) and BPF programs ("bpf_prog_<tag>_<name>" in
// "[bpf]"). kallsyms has no sizes, so a symbol ends where the next one of the same module
// starts. KernelSymbolizer answers addresses from that table, or — given a vmlinux with
// DWARF — from vmlinux through ElfSymbolizer, shifted by the KASLR offset (the difference
// between `_stext` in kallsyms and in vmlinux's symbol table).
//
//   auto ksym = KernelSymbolizer::Open({});          // /proc/kallsyms, no vmlinux
//   if (!ksym) return ksym.error();
//   SymbolizedAddress a = (*ksym)->Symbolize(0xffffffff81234567);
//   // a.symbol == "do_sys_openat2", a.offset == 0x47, a.module == "[kernel.kallsyms]"
//
// When kallsyms shows only zero addresses (kernel.kptr_restrict, or not root) every address
// gets Reason::kKernelAddressesHidden; KernelSymbolizer::addresses_hidden() says so upfront.
//
// Thread-safety: KallsymsTable is immutable after parsing; KernelSymbolizer is used by one
// thread at a time (its ElfSymbolizer is).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym {

// One kallsyms line. Strings point into the owning KallsymsTable.
struct KernelSymbol {
  uint64_t address = 0;
  uint64_t size = 0;  // inferred: up to the next higher symbol of the same module (saturating
                      // at 4 GiB); 0 = unknown
  std::string_view name;
  std::string_view module;  // empty for vmlinux; "ext4", "bpf", "__builtin__ftrace", ...
  char type = 0;            // the nm-style letter: 'T', 't', 'W', 'D', ...
};

class KallsymsTable {
 public:
  // Reads and parses a kallsyms file (default /proc/kallsyms).
  static Result<KallsymsTable> Load(const std::string& path = "/proc/kallsyms");
  // Parses kallsyms text. Malformed lines are skipped and counted (skipped_lines());
  // the text is not referenced after the call.
  static KallsymsTable Parse(std::string_view text);

  KallsymsTable() = default;
  KallsymsTable(KallsymsTable&&) noexcept = default;
  KallsymsTable& operator=(KallsymsTable&&) noexcept = default;

  // The best symbol covering addr: the highest start <= addr whose inferred extent includes
  // it. Several names at one address: a global text symbol wins over a local one, then the
  // first in the file. nullopt when no symbol covers the address.
  std::optional<KernelSymbol> Find(uint64_t addr) const;
  // Every symbol with exactly this name (a name can exist in several modules).
  std::vector<KernelSymbol> FindByName(std::string_view name) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  KernelSymbol at(size_t index) const;  // in address order
  // True when the file had symbols but every address was zero (kptr_restrict).
  bool addresses_hidden() const { return addresses_hidden_; }
  size_t skipped_lines() const { return skipped_lines_; }
  // Bytes of heap held (entries + names), for benchmarks and cache accounting.
  size_t memory_bytes() const;

  // A symbol whose end cannot be inferred (the last one of its module) covers at most this.
  static constexpr uint64_t kMaxUnsizedSpan = 4096;

 private:
  // 24 bytes per symbol; ~120k symbols on a typical kernel.
  struct Entry {
    uint64_t address;
    uint32_t span;         // bytes covered (kMaxUnsizedSpan when unknown); saturates at 4 GiB
    uint32_t name_offset;  // into names_
    uint16_t name_length;
    uint16_t module;  // index into modules_; 0 = vmlinux
    char type;
    bool size_known;
  };
  KernelSymbol ToSymbol(const Entry& e) const;

  std::vector<Entry> entries_;  // sorted by (address, preference)
  std::string names_;
  std::vector<std::string> modules_;  // modules_[0] == ""
  bool addresses_hidden_ = false;
  size_t skipped_lines_ = 0;
};

// A BPF program symbol "bpf_prog_<16 hex tag>_<name>" split into its parts.
struct BpfProgramName {
  std::string_view tag;   // 16 hex digits
  std::string_view name;  // may be empty (programs loaded without a name)
};
std::optional<BpfProgramName> ParseBpfProgramSymbol(std::string_view symbol);

struct KernelSymbolizerOptions {
  std::string kallsyms_path = "/proc/kallsyms";
  std::string vmlinux_path;    // empty: kallsyms only
  SymbolizeOptions symbolize;  // for vmlinux (DWARF, demangling, debug dirs)
};

class KernelSymbolizer {
 public:
  // Fails when kallsyms cannot be read, or vmlinux is given but cannot be opened or has no
  // `_stext` (so the KASLR offset cannot be derived). Hidden addresses are not a failure.
  static Result<std::unique_ptr<KernelSymbolizer>> Open(const KernelSymbolizerOptions& options);
  // From an already parsed table (tests, `record`); vmlinux as in options.vmlinux_path.
  static Result<std::unique_ptr<KernelSymbolizer>> FromTable(
      KallsymsTable table, const KernelSymbolizerOptions& options);
  ~KernelSymbolizer();

  // module is "[kernel.kallsyms]" for vmlinux, "[name]" for a module, "[bpf]" for BPF
  // programs. With vmlinux, its DWARF fills `frames` for vmlinux addresses.
  SymbolizedAddress Symbolize(uint64_t address);
  std::vector<SymbolizedAddress> SymbolizeBatch(std::span<const uint64_t> addresses);

  const KallsymsTable& table() const { return table_; }
  bool addresses_hidden() const { return table_.addresses_hidden(); }
  // kallsyms _stext minus vmlinux _stext; 0 without vmlinux.
  int64_t kaslr_offset() const { return kaslr_offset_; }

 private:
  explicit KernelSymbolizer(KallsymsTable table) : table_(std::move(table)) {}

  KallsymsTable table_;
  std::unique_ptr<ElfSymbolizer> vmlinux_;
  int64_t kaslr_offset_ = 0;
  bool demangle_ = true;
  uint64_t vmlinux_text_start_ = 0;  // runtime range where vmlinux answers
  uint64_t vmlinux_text_end_ = 0;
};

}  // namespace stacksym
