// DieChain — what a function or variable DIE says about itself through its chain of
// DW_AT_abstract_origin and DW_AT_specification: the name llvm-symbolizer prints and the
// declaration's file:line, each found the way LLVM's DWARFDie::findRecursively finds one
// attribute (a LIFO worklist, abstract origin pushed before specification, each DIE visited
// once, bounded). The searches walk the same chain; a DieChain reads each DIE of it once for
// all of them (an index build asks every function of a binary), and reads the DIE's own
// start attributes (low_pc, discriminator) in the same pass.
//
//   DieChain chain(file, die_offset);
//   if (chain.start_read()) use(chain.start());
//   std::string_view name = chain.Name(/*short_name=*/false);
//   DeclAttrs decl;
//   chain.Decl(&decl);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_form.h"

namespace stacksym::dwarf {

// Where a function or variable was declared: DW_AT_decl_file and DW_AT_decl_line.
struct DeclAttrs {
  bool has_file = false;
  uint64_t file_index = 0;              // into the line table of `file_unit`
  const UnitInfo* file_unit = nullptr;  // the unit whose DIE held DW_AT_decl_file
  DwarfFile* file_file = nullptr;       // and its file (the supplementary file, when followed)
  bool file_implicit_const = false;     // DW_AT_decl_file was DW_FORM_implicit_const
  uint64_t line = 0;                    // 0: none
};

// The DIE's own DW_AT_low_pc (as LLVM's DWARFDie::find, no abstract origin) and
// DW_AT_GNU_discriminator (an inlined call site's).
struct SubroutineStart {
  bool has_low_pc = false;
  uint64_t low_pc = 0;
  uint32_t call_discriminator = 0;
  // An instance that names and declares nothing itself (no name, linkage name,
  // specification, decl_file or decl_line) is named and declared as its abstract origin.
  DieRef abstract_origin;
  bool describes_itself = false;
};

class DieChain {
 public:
  // Reads the DIE itself.
  DieChain(DwarfFile& file, uint64_t die_offset);
  DieChain(const DieChain&) = delete;
  DieChain& operator=(const DieChain&) = delete;

  bool start_read() const { return dies_[0].ok; }  // false: the DIE cannot be read
  const SubroutineStart& start() const { return start_; }

  // The linkage name found along the chain (across units and into the supplementary file),
  // else DW_AT_name the same way. `short_name`: DW_AT_name only (llvm-symbolizer
  // --functions=short).
  std::string_view Name(bool short_name);
  // DW_AT_decl_file and DW_AT_decl_line, each searched on its own. References into the
  // supplementary file (DW_FORM_GNU_ref_alt, DW_FORM_ref_sup4) are followed only when asked:
  // LLVM 16 does not resolve them.
  void Decl(DeclAttrs* out, bool follow_supplementary = false);

 private:
  // The attributes of one DIE of the chain that any search reads.
  struct Die {
    DieRef ref;
    bool ok = false;
    UnitInfo* unit = nullptr;
    std::string_view linkage_name, name;
    DieRef abstract_origin, specification;
    bool has_decl_file = false, has_decl_line = false;
    AttrValue decl_file, decl_line;
  };
  static constexpr size_t kMaxChain = 16;  // DIEs a search visits at most
  static constexpr size_t kKept = 8;       // DIEs read once (real chains have two or three)

  void Read(DieRef ref, Die* out, SubroutineStart* start = nullptr);
  const Die& Get(DieRef ref);
  template <class Take>
  void Walk(bool follow_any_file, bool follow_supplementary, const Take& take);

  DwarfFile& file_;
  SubroutineStart start_;
  Die dies_[kKept];
  size_t die_count_ = 0;
  Die overflow_;  // a DIE past the kept ones: read again each time
};

// The declaration of the DIE at `die_offset` (DieChain::Decl).
inline void FindDecl(DwarfFile& file, uint64_t die_offset, DeclAttrs* out,
                     bool follow_supplementary = false) {
  DieChain(file, die_offset).Decl(out, follow_supplementary);
}

}  // namespace stacksym::dwarf
