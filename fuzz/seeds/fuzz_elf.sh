#!/bin/sh
# Seeds for fuzz_elf: the ELF test fixtures of a build (compiled by tests/elf), given the build
# directory as $1. Small real binaries with every feature the reader handles, and relocatable
# objects (tests/symbolize) whose debug sections' relocations SectionData applies.
dir="$1/fixtures"
for f in "$dir"/elf_basic_pie "$dir"/elf_basic_nopie "$dir"/elf_basic_strip_all \
         "$dir"/elf_basic_zlib "$dir"/elf_basic_zlib_gnu "$dir"/elf_basic_zstd \
         "$dir"/elf_basic_debuglink "$dir"/elf_basic_debuglink.debug "$dir"/elf_basic_dwz \
         "$dir"/elf_basic_dwz.alt "$dir"/elf_cxx "$dir"/elf_plt_ibt_lazy "$dir"/elf_plt_lazy \
         "$dir"/elf_plt_nopie "$dir"/elf_plt_aarch64_bti \
         "$dir"/object_gcc_c_o2_d4.o "$dir"/object_clang_c_o2_gz.o "$dir"/object_gcc_c_o2_sections.o; do
  [ -f "$f" ] && echo "$f"
done
exit 0
