// libFuzzer target for MiniDebugInfo (.gnu_debugdata): the input is taken as the section's
// xz bytes, decoded within the limits (a small one here, so that the fuzzer cannot spend its
// time allocating), and what it decodes to is opened as ELF and its symbol table built and
// searched — as ElfFile::mini_debug_info and the symbolizers use it.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "elf/mini_debug_info.h"
#include "stacksym/elf.h"

namespace {

constexpr size_t kFuzzLimit = size_t{4} << 20;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto image = stacksym::elf::DecompressXz(std::span<const uint8_t>(data, size), kFuzzLimit);
  if (!image) {
    Check(!image.error().message.empty());
    return 0;
  }
  Check(image->size() <= kFuzzLimit);
  auto elf = stacksym::ElfFile::FromMapped(
      stacksym::MappedFile::FromOwned(std::move(*image), "fuzz[.gnu_debugdata]"));
  if (!elf) return 0;
  const stacksym::SymbolTable& symbols = (*elf)->symbols();
  for (const stacksym::ElfSymbol& s : symbols.symbols()) {
    const stacksym::ElfSymbol* found = symbols.Find(s.address);
    if (found != nullptr) Check(s.address >= found->address);
  }
  return 0;
}
