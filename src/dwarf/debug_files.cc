#include "dwarf/debug_files.h"

#include <optional>

#include "base/parallel.h"
#include "dwarf/debug_file_finder.h"
#include "dwarf/dwp_index.h"

namespace stacksym::dwarf {

// The split-DWARF package of the binary, opened once.
struct DebugFiles::DwpPackage {
  std::shared_ptr<ElfFile> elf;
  dwarf::DwpIndex index;
  DwarfSections sections;  // whole *.dwo sections; each unit's contributions are sliced out
};

namespace {

bool HasNonEmptySection(const ElfFile& elf, std::string_view name) {
  const ElfSection* s = elf.FindSection(name);
  return s != nullptr && s->type != 8 /* SHT_NOBITS */ && s->size > 0;
}

bool HasDebugInfo(const ElfFile& elf) { return HasNonEmptySection(elf, ".debug_info"); }

bool IsCompressed(const ElfFile& elf, std::string_view name) {
  const ElfSection* s = elf.FindSection(name);
  return s != nullptr &&
         ((s->flags & 0x800 /* SHF_COMPRESSED */) != 0 || s->name.starts_with(".z"));
}

// Reads (decompressing on first use) the DWARF sections of `elf`. Decompression dominates the
// cost of opening big compressed debug files, so when both halves hold compressed data, the
// string/line/range sections are decompressed on a second thread while this one does
// .debug_info (ElfFile decompresses each section once, under a per-section once-flag).
// `streams`: when given and .debug_info is compressed and at least `stream_from` bytes, it
// and a compressed .debug_str are only started here, each on a background thread, and their
// streams returned there; s.info and s.str are then whole-size buffers whose bytes become
// final later (front to back). The small sections are read meanwhile, on this thread.
struct SectionStreams {
  std::shared_ptr<const elf::SectionStream> info;
  std::shared_ptr<const elf::SectionStream> str;
};
Result<DwarfSections> LoadSections(const ElfFile& elf, bool dwo, SectionStreams* streams = nullptr,
                                   uint64_t stream_from = 0) {
  DwarfSections s;
  struct Want {
    const char* name;
    std::span<const uint8_t>* out;
    bool in_main_skipped_for_dwo;
  };
  const Want first[] = {
      {".debug_info", &s.info, false},
      {".debug_abbrev", &s.abbrev, false},
      {".debug_aranges", &s.aranges, true},
  };
  const Want second[] = {
      {".debug_str", &s.str, false},           {".debug_line", &s.line, false},
      {".debug_line_str", &s.line_str, true},  {".debug_str_offsets", &s.str_offsets, false},
      {".debug_addr", &s.addr, true},          {".debug_ranges", &s.ranges, true},
      {".debug_rnglists", &s.rnglists, false},
  };
  auto load = [&](std::span<const Want> wants, std::string_view skip = {}) -> Result<void> {
    for (const Want& w : wants) {
      // Split objects have *.dwo sections; addresses and aranges stay in the skeleton's file.
      if (dwo && w.in_main_skipped_for_dwo) continue;
      if (w.name == skip) continue;
      std::string name = std::string(w.name) + (dwo ? ".dwo" : "");
      Result<std::span<const uint8_t>> data = elf.SectionData(name);
      if (!data) return std::move(data).error().WithFile(elf.path());
      *w.out = *data;
    }
    return {};
  };
  const ElfSection* info = elf.FindSection(".debug_info");
  if (streams != nullptr && !dwo && info != nullptr && IsCompressed(elf, ".debug_info") &&
      info->size >= stream_from) {
    streams->info = elf::StreamSectionData(elf, *info);
    s.info = streams->info->buffer();
    // The small sections first, so that parsing can start early; .debug_str (big, and only
    // needed once names are resolved) is started after them, not competing with them.
    if (Result<void> r = load(first, ".debug_info"); !r) return std::move(r).error();
    const ElfSection* str = elf.FindSection(".debug_str");
    bool stream_str = str != nullptr && IsCompressed(elf, ".debug_str");
    if (Result<void> r = load(second, stream_str ? ".debug_str" : ""); !r) {
      return std::move(r).error();
    }
    if (stream_str) {
      streams->str = elf::StreamSectionData(elf, *str);
      s.str = streams->str->buffer();
    }
    return s;
  }
  bool parallel = false;
  if (!dwo && IsCompressed(elf, ".debug_info")) {
    for (const Want& w : second) parallel |= IsCompressed(elf, w.name);
  }
  if (!parallel) {
    if (Result<void> r = load(first); !r) return std::move(r).error();
    if (Result<void> r = load(second); !r) return std::move(r).error();
    if (dwo) {
      // A split object's location lists (DATA and FRAME answers) are small: read with it.
      const Want lists[] = {{".debug_loc", &s.loc, false}, {".debug_loclists", &s.loclists, false}};
      if (Result<void> r = load(lists); !r) return std::move(r).error();
    }
    return s;
  }
  Result<void> second_result;
  SpreadThread helper([&] { second_result = load(second); });
  Result<void> first_result = load(first);
  helper.Join();
  if (!first_result) return std::move(first_result).error();
  if (!second_result) return std::move(second_result).error();
  return s;
}

}  // namespace

DebugFiles::DebugFiles() = default;
DebugFiles::~DebugFiles() = default;

Result<std::unique_ptr<DebugFiles>> DebugFiles::Open(std::shared_ptr<ElfFile> binary,
                                                     const DebugFileSearch& search,
                                                     uint64_t stream_info_from) {
  std::unique_ptr<DebugFiles> files(new DebugFiles());
  files->binary_ = binary;
  files->finder_ = std::make_unique<dwarf::DebugFileFinder>(search);
  std::shared_ptr<ElfFile> debug_file;
  if (HasDebugInfo(*binary)) {
    debug_file = binary;
  } else {
    Result<std::shared_ptr<ElfFile>> found = files->finder_->FindSeparateDebugFile(*binary);
    if (!found) return std::move(found).error();
    debug_file = *found;
    if (!debug_file || !HasDebugInfo(*debug_file)) {
      // No unit anywhere. The binary's own .debug_aranges is still read, as LLVM reads it
      // (its problems are reported: UnitCache::TakeWarnings); it names no unit to answer from.
      if (!HasNonEmptySection(*binary, ".debug_aranges")) return std::unique_ptr<DebugFiles>();
      debug_file = binary;
    }
  }
  files->debug_file_ = debug_file;
  files->path_ = debug_file->path();
  SectionStreams streams;
  Result<DwarfSections> sections = LoadSections(*debug_file, false, &streams, stream_info_from);
  if (!sections) return std::move(sections).error();
  files->main_ = std::make_unique<DwarfFile>(*sections);

  if (debug_file->debugaltlink() || debug_file->FindSection(".debug_sup") != nullptr) {
    Result<std::shared_ptr<ElfFile>> alt = files->finder_->FindSupplementaryFile(*debug_file);
    // Without the supplementary file, names that live there are missing; lines still work.
    if (alt && *alt) {
      Result<DwarfSections> alt_sections = LoadSections(**alt, false);
      if (alt_sections) {
        files->supplementary_file_ = *alt;
        files->supplementary_ = std::make_unique<DwarfFile>(*alt_sections);
        (void)files->supplementary_->ScanUnits();
        files->main_->set_supplementary(files->supplementary_.get());
        files->supplementary_->set_supplementary(files->supplementary_.get());
      }
    }
  }
  files->info_stream_ = std::move(streams.info);
  files->str_stream_ = std::move(streams.str);
  return files;
}

std::unique_ptr<DebugFiles> DebugFiles::FromSections(const DwarfSections& sections) {
  std::unique_ptr<DebugFiles> files(new DebugFiles());
  files->path_ = "<memory>";
  files->main_ = std::make_unique<DwarfFile>(sections);
  return files;
}

Result<void> DebugFiles::FinishStreams() {
  // SectionData waits for the same decoding and joins its thread.
  Result<std::span<const uint8_t>> info = debug_file_->SectionData(".debug_info");
  info_stream_.reset();
  if (str_stream_) {
    Result<std::span<const uint8_t>> str = debug_file_->SectionData(".debug_str");
    str_stream_.reset();
    if (info && !str) info = std::move(str).error();
  }
  if (!info) return std::move(info).error();
  return {};
}

Result<DebugFiles::SplitObject> DebugFiles::OpenSplitUnit(const UnitInfo& skeleton,
                                                          std::vector<Error>* notes) {
  // Sources made from raw sections (tests, fuzzing) have no files to search.
  if (!finder_ || (!binary_ && !debug_file_)) {
    return MakeError(ErrorCode::kNotFound, "split DWARF unit without a file to search from");
  }
  std::unique_ptr<DwarfFile> dwo;
  std::shared_ptr<ElfFile> dwo_elf;
  // A .dwp package first (it replaces the .dwo files), then the .dwo itself.
  const DwpPackage* package = Package(notes);
  std::optional<dwarf::DwpUnitSections> contrib;
  if (package != nullptr) contrib = package->index.Find(skeleton.dwo_id);
  if (contrib) {
    auto slice = [](std::span<const uint8_t> s, const dwarf::DwpContribution& c) {
      if (c.size == 0 && c.offset == 0) return s;
      if (c.offset > s.size() || c.size > s.size() - c.offset) return std::span<const uint8_t>();
      return s.subspan(static_cast<size_t>(c.offset), static_cast<size_t>(c.size));
    };
    DwarfSections s = package->sections;
    s.info = slice(s.info, contrib->info);
    s.abbrev = slice(s.abbrev, contrib->abbrev);
    s.line = slice(s.line, contrib->line);
    s.str_offsets = slice(s.str_offsets, contrib->str_offsets);
    s.rnglists = slice(s.rnglists, contrib->rnglists);
    // One column for both: .debug_loc.dwo (index version 2), .debug_loclists.dwo (5).
    s.loc = slice(s.loc, contrib->loclists);
    s.loclists = slice(s.loclists, contrib->loclists);
    dwo = std::make_unique<DwarfFile>(s, true);
    dwo_elf = package->elf;
  }
  if (!dwo) {
    Result<std::shared_ptr<ElfFile>> found =
        finder_->FindDwo(binary_ ? *binary_ : *debug_file_, skeleton.comp_dir, skeleton.dwo_name);
    if (!found) return std::move(found).error();
    if (!*found) {
      return MakeError(ErrorCode::kNotFound,
                       "split DWARF object " + std::string(skeleton.dwo_name) + " not found");
    }
    Result<DwarfSections> s = LoadSections(**found, true);
    if (!s) return std::move(s).error();
    dwo = std::make_unique<DwarfFile>(*s, true);
    dwo_elf = *found;
  }
  if (Result<void> r = dwo->ScanUnits(); !r && dwo->units().empty()) return std::move(r).error();
  UnitInfo* split = nullptr;
  for (UnitInfo& u : dwo->units()) {
    if (u.is_type_unit()) continue;
    if (!dwo->ReadUnitDie(u)) continue;
    if (!skeleton.has_dwo_id || (u.has_dwo_id && u.dwo_id == skeleton.dwo_id)) {
      split = &u;
      break;
    }
  }
  if (split == nullptr) {
    return MakeError(ErrorCode::kMalformed,
                     "no unit with the skeleton's DWO id in " + std::string(skeleton.dwo_name));
  }
  // Addresses (and DWARF 4 range lists) of a split unit live in the skeleton's file.
  split->addr_section = main_->sections().addr;
  split->addr_overridden = true;
  split->addr_base = skeleton.addr_base;
  split->low_pc = skeleton.low_pc;
  if (split->ctx.version < 5) {
    split->ranges_section = main_->sections().ranges;
    split->ranges_overridden = true;
    split->gnu_ranges_base = skeleton.gnu_ranges_base;
  }
  return SplitObject{std::move(dwo), split, std::move(dwo_elf)};
}

DwarfFile* DebugFiles::Keep(SplitObject object, const UnitInfo& skeleton) {
  DwarfFile* file = object.dwarf.get();
  skeleton_of_[file] = &skeleton;
  split_dwarf_.push_back(std::move(object.dwarf));
  // The package is held by dwp_; each .dwo file is held here.
  if (!dwp_ || object.elf != dwp_->elf) split_files_.push_back(std::move(object.elf));
  return file;
}

const UnitInfo* DebugFiles::SkeletonOf(const DwarfFile* split) const {
  auto it = skeleton_of_.find(split);
  return it == skeleton_of_.end() ? nullptr : it->second;
}

// Finds, opens and indexes the .dwp package on the first call only: every split unit of a
// binary lives in the same package, and reopening it per unit would map the file and parse
// its index once per unit. A miss or a broken package is remembered just the same.
const DebugFiles::DwpPackage* DebugFiles::Package(std::vector<Error>* notes) {
  if (dwp_searched_) return dwp_.get();
  dwp_searched_ = true;
  ++dwp_searches_;
  // "<binary>.dwp" first, then "<separate debug file>.dwp" (a package shipped with the debug
  // file, e.g. in the same debug directory).
  std::vector<const ElfFile*> owners;
  if (binary_) owners.push_back(binary_.get());
  if (debug_file_ && debug_file_ != binary_) owners.push_back(debug_file_.get());
  for (const ElfFile* owner : owners) {
    Result<std::shared_ptr<ElfFile>> found = finder_->FindDwp(*owner);
    if (!found) {
      notes->push_back(std::move(found).error());
      continue;
    }
    if (!*found) continue;
    Result<std::unique_ptr<DwpPackage>> package = OpenPackage(*found);
    if (!package) {
      notes->push_back(std::move(package).error());
      continue;
    }
    dwp_ = std::move(*package);
    break;
  }
  return dwp_.get();
}

Result<std::unique_ptr<DebugFiles::DwpPackage>> DebugFiles::OpenPackage(
    std::shared_ptr<ElfFile> elf) {
  ++dwp_opens_;
  if (elf->FindSection(".debug_cu_index") == nullptr) {
    return MakeError(ErrorCode::kMalformed, "no .debug_cu_index: not a split-DWARF package")
        .WithFile(elf->path());
  }
  Result<std::span<const uint8_t>> index_bytes = elf->SectionData(".debug_cu_index");
  if (!index_bytes) return std::move(index_bytes).error().WithFile(elf->path());
  Result<dwarf::DwpIndex> index = dwarf::DwpIndex::Parse(*index_bytes);
  if (!index) return std::move(index).error().WithFile(elf->path());
  Result<DwarfSections> whole = LoadSections(*elf, true);
  if (!whole) return std::move(whole).error();
  auto package = std::make_unique<DwpPackage>();
  package->elf = std::move(elf);
  package->index = std::move(*index);
  package->sections = *whole;
  return package;
}

const std::string& DebugFiles::dwp_path() const {
  static const std::string kNone;
  return dwp_ ? dwp_->elf->path() : kNone;
}

void DebugFiles::LoadLocationLists() {
  // Only DATA and FRAME answers read location lists: their sections are read on the first
  // such request, not when the file is opened.
  if (!debug_file_ || locations_loaded_) return;
  locations_loaded_ = true;
  auto section = [&](const char* name) {
    Result<std::span<const uint8_t>> data = debug_file_->SectionData(name);
    return data ? *data : std::span<const uint8_t>();
  };
  main_->set_location_lists(section(".debug_loc"), section(".debug_loclists"));
}

bool DebugFiles::OwnsSections() const {
  // Only a debug file this object opened itself: the binary's sections may have other
  // readers (the symbolizer's own DWARF), and spans of them outlive this object's use.
  return main_ && debug_file_ && debug_file_ != binary_ && debug_file_.use_count() == 1;
}

bool DebugFiles::ReleaseExportedSections() {
  if (!OwnsSections()) return false;
  for (const char* name : {".debug_info", ".debug_line", ".debug_rnglists", ".debug_ranges",
                           ".debug_abbrev", ".debug_aranges", ".debug_loclists", ".debug_loc"}) {
    if (const ElfSection* section = debug_file_->FindSection(name)) {
      debug_file_->DiscardDecompressed(*section);
    }
  }
  retired_ = true;
  return true;
}

bool DebugFiles::ReleaseStrings() {
  if (!retired_ || !OwnsSections()) return false;
  for (const char* name : {".debug_str", ".debug_line_str", ".debug_str_offsets"}) {
    if (const ElfSection* section = debug_file_->FindSection(name)) {
      debug_file_->DiscardDecompressed(*section);
    }
  }
  return true;
}

std::vector<std::shared_ptr<ElfFile>> DebugFiles::files_read() const {
  std::vector<std::shared_ptr<ElfFile>> out;
  if (debug_file_ && debug_file_ != binary_) out.push_back(debug_file_);
  if (supplementary_file_) out.push_back(supplementary_file_);
  for (const auto& f : split_files_) out.push_back(f);
  if (dwp_ && dwp_->elf) out.push_back(dwp_->elf);
  return out;
}

size_t DebugFiles::file_heap_bytes() const {
  size_t total = 0;
  if (debug_file_ && debug_file_ != binary_) total += debug_file_->heap_bytes();
  if (supplementary_file_) total += supplementary_file_->heap_bytes();
  for (const auto& f : split_files_) total += f->heap_bytes();
  return total;
}

size_t DebugFiles::memory_bytes() const {
  size_t total = 0;
  if (main_) total += main_->memory_bytes();
  if (supplementary_) total += supplementary_->memory_bytes();
  for (const auto& d : split_dwarf_) total += d->memory_bytes();
  return total;
}

}  // namespace stacksym::dwarf

namespace stacksym {

Result<dwarf::DwarfSections> LoadDwarfSections(const ElfFile& elf) {
  return dwarf::LoadSections(elf, false);
}

}  // namespace stacksym
