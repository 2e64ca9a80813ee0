// KernelSymbolizer: kallsyms answers every kernel address; a vmlinux (when given) answers
// vmlinux addresses first, with DWARF, after removing the KASLR slide.
#include <elf.h>

#include <algorithm>
#include <utility>

#include "stacksym/demangle.h"
#include "stacksym/kernel.h"

namespace stacksym {

namespace {

constexpr std::string_view kVmlinuxModule = "[kernel.kallsyms]";

std::string ModuleLabel(std::string_view module) {
  if (module.empty()) return std::string(kVmlinuxModule);
  return "[" + std::string(module) + "]";
}

}  // namespace

Result<std::unique_ptr<KernelSymbolizer>> KernelSymbolizer::Open(
    const KernelSymbolizerOptions& options) {
  Result<KallsymsTable> table = KallsymsTable::Load(options.kallsyms_path);
  if (!table) return std::move(table).error();
  return FromTable(std::move(*table), options);
}

Result<std::unique_ptr<KernelSymbolizer>> KernelSymbolizer::FromTable(
    KallsymsTable table, const KernelSymbolizerOptions& options) {
  std::unique_ptr<KernelSymbolizer> ks(new KernelSymbolizer(std::move(table)));
  ks->demangle_ = options.symbolize.demangle;
  if (options.vmlinux_path.empty() || ks->table_.addresses_hidden()) return ks;

  auto vmlinux = ElfSymbolizer::Open(options.vmlinux_path, options.symbolize);
  if (!vmlinux) return std::move(vmlinux).error();
  const ElfSymbol* elf_stext = (*vmlinux)->elf().symbols().FindByName("_stext");
  if (elf_stext == nullptr) {
    return Error(ErrorCode::kInvalidArgument,
                 "vmlinux has no _stext symbol: cannot derive the KASLR offset")
        .WithFile(options.vmlinux_path);
  }
  std::optional<uint64_t> running_stext;
  for (const KernelSymbol& s : ks->table_.FindByName("_stext")) {
    if (s.module.empty()) running_stext = s.address;
  }
  if (!running_stext) {
    return Error(ErrorCode::kInvalidArgument,
                 "kallsyms has no _stext symbol: cannot derive the KASLR offset")
        .WithFile(options.kallsyms_path);
  }
  ks->kaslr_offset_ = static_cast<int64_t>(*running_stext - elf_stext->address);
  // vmlinux answers for its executable PT_LOAD segments, moved by the slide.
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ElfSegment& seg : (*vmlinux)->elf().segments()) {
    if (seg.type != PT_LOAD || (seg.flags & PF_X) == 0) continue;
    lo = std::min(lo, seg.vaddr);
    hi = std::max(hi, seg.vaddr + seg.memsz);
  }
  if (lo < hi) {
    ks->vmlinux_text_start_ = lo + static_cast<uint64_t>(ks->kaslr_offset_);
    ks->vmlinux_text_end_ = hi + static_cast<uint64_t>(ks->kaslr_offset_);
  }
  ks->vmlinux_ = std::move(*vmlinux);
  return ks;
}

KernelSymbolizer::~KernelSymbolizer() = default;

SymbolizedAddress KernelSymbolizer::Symbolize(uint64_t address) {
  SymbolizedAddress out;
  out.input = address;
  out.vaddr = address;
  if (table_.addresses_hidden()) {
    out.reason = Reason::kKernelAddressesHidden;
    return out;
  }
  if (address == 0 || address == UINT64_MAX) {
    out.reason = Reason::kInvalidAddress;
    return out;
  }
  std::optional<KernelSymbol> ksym = table_.Find(address);
  bool in_vmlinux_text = address >= vmlinux_text_start_ && address < vmlinux_text_end_;
  if (vmlinux_ && in_vmlinux_text && (!ksym || ksym->module.empty())) {
    SymbolizedAddress v =
        vmlinux_->Symbolize(address - static_cast<uint64_t>(kaslr_offset_), AddressKind::kVirtual);
    if (!v.reason) {
      v.input = address;
      v.module = std::string(kVmlinuxModule);
      return v;
    }
  }
  if (!ksym) {
    out.reason = table_.empty() ? Reason::kNoSymbols : Reason::kNoSymbol;
    out.module = table_.empty() ? std::string() : std::string(kVmlinuxModule);
    return out;
  }
  out.raw_symbol = std::string(ksym->name);
  // Kernel Rust symbols are mangled; C names pass through unchanged.
  out.symbol = demangle_ ? Demangle(ksym->name) : out.raw_symbol;
  out.symbol_address = ksym->address;
  out.symbol_size = ksym->size;
  out.offset = address - ksym->address;
  out.module = ModuleLabel(ksym->module);
  return out;
}

std::vector<SymbolizedAddress> KernelSymbolizer::SymbolizeBatch(
    std::span<const uint64_t> addresses) {
  std::vector<SymbolizedAddress> out;
  out.reserve(addresses.size());
  for (uint64_t a : addresses) out.push_back(Symbolize(a));
  return out;
}

}  // namespace stacksym
