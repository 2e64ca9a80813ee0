#include "cfi_elf.h"

#include "../elf/elf_builder.h"

namespace stacksym::testing {

std::shared_ptr<ElfFile> ElfWithCfi(const std::vector<uint8_t>& eh_frame,
                                    const std::vector<uint8_t>& debug_frame, bool code_segment) {
  ElfBuilder builder;
  BuilderSection text;
  text.name = ".text";
  text.flags = SHF_ALLOC | SHF_EXECINSTR;
  text.addr = 0x1000;
  text.data.assign(0x100, 0x90);
  uint32_t text_index = builder.AddSection(text);
  if (code_segment) {
    BuilderSegment load;
    load.type = PT_LOAD;
    load.flags = PF_R | PF_X;
    load.section = static_cast<int>(text_index);
    load.vaddr = 0x1000;
    builder.AddSegment(load);
  }
  if (!eh_frame.empty()) {
    BuilderSection eh;
    eh.name = ".eh_frame";
    eh.flags = SHF_ALLOC;
    eh.addr = 0x10000;
    eh.addralign = 8;
    eh.data = eh_frame;
    builder.AddSection(eh);
  }
  if (!debug_frame.empty()) {
    BuilderSection debug;
    debug.name = ".debug_frame";
    debug.data = debug_frame;
    builder.AddSection(debug);
  }
  std::vector<uint8_t> bytes = builder.Build();
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::FromBytes(bytes, "cfi-test");
  return elf ? *elf : nullptr;
}

}  // namespace stacksym::testing
