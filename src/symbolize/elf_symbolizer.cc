#include <elf.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "base/demangle_cache.h"
#include "base/parallel.h"
#include "base/run_sharing.h"
#include "dwarf/debug_info_source.h"
#include "dwarf/function_run.h"
#include "elf/go_pclntab.h"
#include "elf/object_layout.h"
#include "elf/symbol_choice.h"
#include "index/index_cache.h"
#include "index/index_identity.h"
#include "index/symbol_index.h"
#include "stacksym/symbolize.h"
#include "symbolize/narrow_options.h"

namespace stacksym {

Result<std::unique_ptr<ElfSymbolizer>> ElfSymbolizer::Open(const std::string& path,
                                                           const SymbolizeOptions& options) {
  auto elf = ElfFile::Open(path);
  if (!elf) return std::move(elf).error();
  return FromElf(std::move(*elf), options);
}

Result<std::unique_ptr<ElfSymbolizer>> ElfSymbolizer::FromElf(std::shared_ptr<ElfFile> elf,
                                                              const SymbolizeOptions& options) {
  if (!elf) return Error(ErrorCode::kInvalidArgument, "no ELF file given");
  return std::unique_ptr<ElfSymbolizer>(new ElfSymbolizer(std::move(elf), options));
}

ElfSymbolizer::ElfSymbolizer(std::shared_ptr<ElfFile> elf, const SymbolizeOptions& options)
    : elf_(std::move(elf)), options_(options), symbol_names_(std::make_unique<DemangleCache>()) {}

ElfSymbolizer::~ElfSymbolizer() {
  if (index_) index::SaveNameMemo(*index_, /*at_least=*/0);
}

std::vector<std::string> ElfSymbolizer::TakeWarnings() {
  if (!debug_info_) return {};
  return debug_info_->units().TakeWarnings();
}

std::string ElfSymbolizer::debug_file() const {
  if (debug_info_) return debug_info_->path();
  if (index_) return index::IdentityValue(index_->identity(), "debug");
  return {};
}

void ElfSymbolizer::ReleasePages() const {
  elf_->ReleasePages();
  if (index_) index_->ReleasePages();
}

size_t ElfSymbolizer::memory_bytes() const {
  size_t total = sizeof(*this) + elf_->heap_bytes();
  if (symbol_names_) total += symbol_names_->memory_bytes();
  if (debug_info_) total += debug_info_->memory_bytes() + debug_info_->file_heap_bytes();
  if (retired_debug_info_) {
    total += retired_debug_info_->memory_bytes() + retired_debug_info_->file_heap_bytes();
  }
  return total;
}

namespace {

bool HasLoadSegments(const ElfFile& elf) {
  for (const ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD) return true;
  }
  return false;
}

bool InLoadSegment(const ElfFile& elf, uint64_t vaddr) {
  for (const ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD && vaddr >= s.vaddr && vaddr - s.vaddr < s.memsz) return true;
  }
  return false;
}

}  // namespace

bool ElfSymbolizer::UseIndex() {
  if (!index_tried_) {
    index_tried_ = true;
    // (An index keeps linkage names: short names are read from the DWARF itself.)
    // (Not for an object file: its answers are not worth keeping, and its addresses are
    // placed by ElfFile, not the file's.)
    if (!options_.cache_dir.empty() && options_.use_debug_info && elf_->type() != ET_REL &&
        options_.symbols_from_debug_file && options_.plt_names && !options_.short_function_names &&
        !options_.start_addresses && !options_.relative_paths && options_.dwp_path.empty() &&
        options_.dwo_beside_binary) {
      // A build's DWARF source (IndexBuilder::Build) is kept, not torn down now; it is the one
      // LoadDebugInfo would open when demangling is off and inlines are on, and then answers
      // what the index leaves to DWARF.
      std::unique_ptr<dwarf::DebugInfoSource> built_from;
      bool keep_source = options_.keep_dwarf_after_index_build && !debug_info_loaded_;
      bool same_source = !options_.demangle && options_.inlines;
      index_ = index::OpenCachedIndex(elf_, symbolize::ToIndexOptions(options_),
                                      keep_source ? &built_from : nullptr);
      if (built_from && (built_from->retired() || !same_source)) {
        // Its sections are given back, or its names are not demangled: held (its teardown
        // skipped with the rest), never asked.
        // The index is written: the strings its names were taken from go too (64 MB of
        // libceph-common's, the last of its DWARF, while the index answers).
        if (built_from->retired()) built_from->files().ReleaseStrings();
        retired_debug_info_ = std::move(built_from);
      } else if (built_from) {
        debug_info_ = std::move(built_from);
        debug_info_loaded_ = true;
      }
    }
  }
  return index_ != nullptr;
}

bool ElfSymbolizer::ReplaceDamagedIndex() {
  if (!index_ || !index_->damaged()) return false;
  // Once: an index damaged again right after its rebuild (failing storage) is dropped.
  index_ = index_rebuilt_
               ? nullptr
               : index::RebuildDamagedIndex(elf_, symbolize::ToIndexOptions(options_), *index_);
  index_rebuilt_ = true;
  return index_ != nullptr;
}

void ElfSymbolizer::LoadDebugInfo() {
  // A batch gave its DWARF back as it read it (release_dwarf_as_read): opened again, and
  // kept this time.
  if (debug_info_ && debug_info_->retired()) {
    debug_info_.reset();
    debug_info_loaded_ = false;
    options_.release_dwarf_as_read = false;
  }
  if (!options_.use_debug_info || debug_info_loaded_) return;
  debug_info_loaded_ = true;
  auto source = dwarf::DebugInfoSource::Open(elf_, symbolize::ToDwarfOptions(options_));
  // Unusable debug info is not fatal: the symbol table still answers.
  if (source) debug_info_ = std::move(*source);
}

std::optional<uint64_t> ElfSymbolizer::ToVaddr(uint64_t address, AddressKind kind,
                                               Reason* reason) const {
  if (elf_->type() == ET_REL) {
    const ElfSection* text =
        kind == AddressKind::kVirtual ? elf::ObjectTextSectionAt(*elf_, address) : nullptr;
    if (text == nullptr) {
      *reason = Reason::kNotInSegment;
      return std::nullopt;
    }
    return text->addr + address;
  }
  if (kind == AddressKind::kFileOffset) {
    std::optional<uint64_t> vaddr = elf_->FileOffsetToVaddr(address);
    if (!vaddr) *reason = Reason::kNotInSegment;
    return vaddr;
  }
  // Relocatable objects and some debug-only files have no PT_LOAD: no segment check there.
  if (HasLoadSegments(*elf_) && !InLoadSegment(*elf_, address)) {
    *reason = Reason::kNotInSegment;
    return std::nullopt;
  }
  return address;
}

bool ElfSymbolizer::Prepare(uint64_t address, AddressKind kind, SymbolizedAddress& out) const {
  out.input = address;
  out.module = elf_->path();
  Reason reason{};
  std::optional<uint64_t> vaddr = ToVaddr(address, kind, &reason);
  if (!vaddr) {
    if (kind == AddressKind::kVirtual) out.vaddr = address;
    out.reason = reason;
    return false;
  }
  out.vaddr = *vaddr;
  return true;
}

bool ElfSymbolizer::NamesNoSection(const SymbolizedAddress& out, AddressKind kind) const {
  return elf_->type() == ET_REL && kind == AddressKind::kVirtual &&
         out.reason == Reason::kNotInSegment;
}

void ElfSymbolizer::SymbolizeAnywhere(SymbolizedAddress& out) {
  // The first place that answers, in ObjectOffsetAnywhere's order (each place's answer is of
  // the one section there).
  LoadDebugInfo();
  for (uint64_t place : elf::ObjectOffsetAnywhere(*elf_, out.input)) {
    SymbolizedAddress answer;
    answer.input = out.input;
    answer.module = out.module;
    answer.vaddr = place;
    if (debug_info_ && !debug_info_->Lookup(place, &answer.frames)) answer.frames.clear();
    FillFromSymbolTable(fallback_symbols(), absolute_symbols(), plt_symbols(), answer);
    FillFromFunctionRun(answer);
    if (answer.frames.empty() && answer.symbol.empty()) continue;
    ToSectionOffsets(answer);
    out = std::move(answer);
    return;
  }
}

SymbolizedAddress ElfSymbolizer::Symbolize(uint64_t address, AddressKind kind) {
  SymbolizedAddress out;
  if (!Prepare(address, kind, out)) {
    if (NamesNoSection(out, kind)) SymbolizeAnywhere(out);
    return out;
  }
  if (UseIndex() && AnswerFromIndex(out.vaddr, symbolize::ToAnswerOptions(options_), out)) {
    // One address at a time: saved once a few hundred names wait, not for every new one.
    index::SaveNameMemo(*index_, /*at_least=*/256);
    return out;
  }
  if (ReplaceDamagedIndex() &&
      AnswerFromIndex(out.vaddr, symbolize::ToAnswerOptions(options_), out)) {
    return out;
  }
  LoadDebugInfo();
  LoadGoPclntab();
  if (debug_info_ && !debug_info_->Lookup(out.vaddr, &out.frames)) out.frames.clear();
  FillFromSymbolTable(fallback_symbols(), absolute_symbols(), plt_symbols(), out);
  FillFromFunctionRun(out);
  FillFromGo(out);
  ToSectionOffsets(out);
  return out;
}

void ElfSymbolizer::ToSectionOffsets(SymbolizedAddress& out) const {
  if (elf_->type() != ET_REL || out.reason == Reason::kNotInSegment) return;
  // Symbols and DWARF functions lie in the section the address was read in.
  const uint64_t base = out.vaddr - out.input;
  out.vaddr = out.input;
  if (!out.symbol.empty()) out.symbol_address -= base;
  for (SourceFrame& frame : out.frames) {
    if (frame.has_start_address) frame.start_address -= base;
  }
}

std::optional<DataDeclaration> ElfSymbolizer::FindDataDeclaration(uint64_t vaddr) {
  LoadDebugInfo();
  if (!debug_info_) return std::nullopt;
  DataDeclaration decl;
  if (elf_->type() != ET_REL) {
    if (!debug_info_->LookupVariable(vaddr, &decl)) return std::nullopt;
    return decl;
  }
  // An object's data address names no section: an offset into any (elf/object_layout.h),
  // every variable's start read as an offset into its own.
  auto offset_of = [this](uint64_t placed) -> std::optional<uint64_t> {
    return elf::ObjectOffsetOf(*elf_, placed);
  };
  if (!debug_info_->LookupVariableAtOffset(vaddr, offset_of, &decl)) return std::nullopt;
  return decl;
}

std::optional<std::string> ElfSymbolizer::EmbeddedSource(uint64_t address, AddressKind kind) {
  LoadDebugInfo();
  Reason reason{};
  std::optional<uint64_t> vaddr = ToVaddr(address, kind, &reason);
  if (!vaddr || !debug_info_) return std::nullopt;
  std::optional<std::string_view> text = debug_info_->EmbeddedSource(*vaddr);
  if (!text) return std::nullopt;
  return std::string(*text);
}

std::vector<FrameLocal> ElfSymbolizer::FindFrameLocals(uint64_t vaddr) {
  LoadDebugInfo();
  std::vector<FrameLocal> locals;
  if (!debug_info_) return locals;
  if (elf_->type() != ET_REL) {
    debug_info_->LookupLocals(vaddr, &locals);
    return locals;
  }
  // A code address: an offset into a text section, else into any section.
  if (const ElfSection* text = elf::ObjectTextSectionAt(*elf_, vaddr)) {
    debug_info_->LookupLocals(text->addr + vaddr, &locals);
    return locals;
  }
  for (uint64_t place : elf::ObjectOffsetAnywhere(*elf_, vaddr)) {
    debug_info_->LookupLocals(place, &locals);
    if (!locals.empty()) break;
  }
  return locals;
}

const SymbolTable* ElfSymbolizer::fallback_symbols() {
  if (!options_.symbols_from_debug_file) return nullptr;
  // Its debug file's .symtab only: a batch's retired DWARF still has that file.
  if (!debug_info_) LoadDebugInfo();
  return elf::FallbackSymbolTable(*elf_,
                                  debug_info_ ? debug_info_->files().debug_file().get() : nullptr);
}

const SymbolTable* ElfSymbolizer::absolute_symbols() const {
  return options_.symbols_from_debug_file ? elf::AbsoluteSymbolTable(*elf_) : nullptr;
}

void ElfSymbolizer::LoadGoPclntab() {
  if (go_pclntab_loaded_) return;
  go_pclntab_loaded_ = true;
  // A corrupt table is not fatal: the symbol table and DWARF still answer.
  auto table = elf::FindGoPclntab(*elf_);
  if (table && *table) go_pclntab_ = std::move(**table);
}

namespace {

// Go's answer for an address merged into what the symbol table and DWARF (or the index's copy
// of them) said, where they gave no frames: the one merge, whether the answer comes from the
// pclntab or from an index's copy of its answers. `lines`: file:line frames wanted.
void MergeGoAnswer(const elf::GoFunction& function, std::span<const elf::GoFrame> frames,
                   bool lines, bool linkage_names, SymbolizedAddress& out) {
  // A symbol that does not start at the function (a sizeless one before it, in a cgo binary's
  // .dynsym) names it worse than Go's table.
  if (out.symbol.empty() || out.symbol_address != function.entry) {
    out.symbol = std::string(function.name);
    out.raw_symbol = out.symbol;
    out.symbol_address = function.entry;
    out.symbol_size = function.end - function.entry;
    out.offset = out.vaddr - function.entry;
  }
  out.reason.reset();
  if (lines) {
    out.frames.reserve(frames.size());
    for (const elf::GoFrame& frame : frames) {
      SourceFrame& f = out.frames.emplace_back();
      // The out-of-line frame is named as the symbol, as FillFromSymbolTable names it.
      f.function = frame.inlined ? std::string(frame.function) : out.symbol;
      f.raw_function = f.function;
      f.file = std::string(frame.file);
      f.line = frame.line;
      f.inlined = frame.inlined;
    }
  }
  if (!linkage_names) {
    out.raw_symbol.clear();
    for (SourceFrame& frame : out.frames) frame.raw_function.clear();
  }
}

// Go's answer after the index's (Answer, AnswerReusing) answer of the symbol table and DWARF:
// from the index's copy of the pclntab's answers when it holds them, else from the binary's
// table (`from_table`: ElfSymbolizer::FillFromGo). False when the copy is damaged (the
// address then goes to the direct path).
template <class FromTable>
bool FillGoAfterIndex(const index::SymbolIndex& index, const SymbolizeOptions& options,
                      index::SymbolIndex::Reader* reader, index::GoAnswer* go,
                      SymbolizedAddress& out, const FromTable& from_table) {
  if (!index.has_go_answers()) {
    from_table(out);
    return true;
  }
  if (!out.frames.empty()) return true;
  if (!index.AnswerGo(out.vaddr, options.inlines, go, reader)) return false;
  if (!go->found || go->name.empty()) return true;
  elf::GoFunction function;
  std::vector<elf::GoFrame> frames;
  go->Views(&function, &frames);
  // An index is used only with debug info on (UseIndex): file:line frames wanted.
  MergeGoAnswer(function, frames, /*lines=*/true, options.linkage_names, out);
  return true;
}

}  // namespace

bool ElfSymbolizer::AnswerFromIndex(uint64_t vaddr, const index::AnswerOptions& options,
                                    SymbolizedAddress& out) {
  if (!index_->has_go_answers()) LoadGoPclntab();  // else the index holds them
  SymbolizedAddress answer;
  answer.vaddr = vaddr;
  if (!index_->Answer(vaddr, options, answer)) return false;
  index::GoAnswer go;
  if (!FillGoAfterIndex(*index_, options_, nullptr, &go, answer,
                        [this](SymbolizedAddress& a) { FillFromGo(a); })) {
    return false;
  }
  out.reason = answer.reason;
  out.symbol = std::move(answer.symbol);
  out.raw_symbol = std::move(answer.raw_symbol);
  out.symbol_address = answer.symbol_address;
  out.symbol_size = answer.symbol_size;
  out.offset = answer.offset;
  out.frames = std::move(answer.frames);
  return true;
}

void ElfSymbolizer::FillFromFunctionRun(SymbolizedAddress& out) {
  // After the symbol table, which names what it covers: a function only DWARF names gets the
  // start, size and +offset of its code's run, as the index answers them.
  if (!out.symbol.empty() || out.frames.empty() || !debug_info_) return;
  dwarf::NameFromRun(debug_info_->OutermostRun(out.vaddr), out.vaddr, &out);
}

void ElfSymbolizer::FillFromGo(SymbolizedAddress& out) const {
  // After the symbol table and DWARF (or the index, which holds what they say): DWARF's frames
  // stay; Go's table names what they leave without frames.
  if (!go_pclntab_ || !out.frames.empty()) return;
  std::vector<elf::GoFrame> frames;
  elf::GoFunction function;
  const bool lines = options_.use_debug_info;
  if (!go_pclntab_->Lookup(out.vaddr, lines && options_.inlines, &frames, &function) ||
      function.name.empty()) {
    return;
  }
  MergeGoAnswer(function, frames, lines, options_.linkage_names, out);
}

const SymbolTable* ElfSymbolizer::plt_symbols() const {
  return options_.plt_names ? elf::PltSymbolTable(*elf_) : nullptr;
}

void ElfSymbolizer::FillFromSymbolTable(const SymbolTable* fallback, const SymbolTable* absolute,
                                        const SymbolTable* plt, SymbolizedAddress& out) {
  const SymbolTable& table = elf_->symbols();
  const ElfSymbol* symbol = table.Find(out.vaddr);
  // What neither the binary's table nor DWARF names, a stripped binary's debug file (or
  // MiniDebugInfo) may, then an absolute symbol, then the PLT stubs' made-up names.
  if (symbol == nullptr && out.frames.empty() && fallback != nullptr) {
    symbol = fallback->Find(out.vaddr);
  }
  if (symbol == nullptr && out.frames.empty() && absolute != nullptr) {
    symbol = absolute->Find(out.vaddr);
  }
  if (symbol == nullptr && out.frames.empty() && plt != nullptr) symbol = plt->Find(out.vaddr);
  if (symbol != nullptr) {
    out.raw_symbol = std::string(symbol->name);
    out.symbol = options_.demangle ? symbol_names_->Get(symbol->name) : out.raw_symbol;
    out.symbol_address = symbol->address;
    out.symbol_size = symbol->size;
    out.offset = out.vaddr - symbol->address;
  }
  // The out-of-line frame is named from the symbol table, as llvm-symbolizer does: DWARF
  // names of glibc-style code are internal aliases (__GI___gconv_open for __gconv_open), and
  // line-table-only DWARF (assembly sources) has no function name at all. Inlined frames keep
  // their DWARF names.
  // With short names DWARF's DW_AT_name stays (llvm-symbolizer --functions=short).
  if (symbol != nullptr && !out.frames.empty() && !options_.short_function_names) {
    SourceFrame& outermost = out.frames.back();
    outermost.function = out.symbol;
    outermost.raw_function = out.raw_symbol;
  }
  if (symbol == nullptr && out.frames.empty()) {
    out.reason = table.empty() && fallback == nullptr && absolute == nullptr && plt == nullptr
                     ? Reason::kNoSymbols
                     : Reason::kNoSymbol;
  }
  if (!options_.linkage_names) {  // as the index answers without them
    out.raw_symbol.clear();
    for (SourceFrame& frame : out.frames) frame.raw_function.clear();
  }
}

std::vector<SymbolizedAddress> ElfSymbolizer::SymbolizeBatch(std::span<const uint64_t> addresses,
                                                             AddressKind kind) {
  std::vector<SymbolizedAddress> out(addresses.size());
  std::vector<uint64_t> vaddrs;
  std::vector<uint32_t> positions;  // of vaddrs[i] in `out`
  vaddrs.reserve(addresses.size());
  positions.reserve(addresses.size());
  std::vector<uint32_t> anywhere;  // an object's offsets that name no section
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (!Prepare(addresses[i], kind, out[i])) {
      if (NamesNoSection(out[i], kind)) anywhere.push_back(static_cast<uint32_t>(i));
      continue;
    }
    vaddrs.push_back(out[i].vaddr);
    positions.push_back(static_cast<uint32_t>(i));
  }
  if (UseIndex()) {
    // Answered from the index in address order (neighbouring addresses share records and
    // compressed string blocks, which the index keeps a few of); what it cannot answer (an
    // inconsistent record) goes on below.
    std::vector<uint32_t> order(positions.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<uint32_t>(k);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return vaddrs[a] < vaddrs[b]; });
    std::vector<uint8_t> answered(positions.size(), 0);
    const index::AnswerOptions answer_options = symbolize::ToAnswerOptions(options_);
    constexpr size_t kReleaseEvery = 1024;  // answers; see SymbolIndex::ReleasePages
    for (size_t i = 0; i < order.size(); ++i) {
      uint32_t k = order[i];
      answered[k] = AnswerFromIndex(vaddrs[k], answer_options, out[positions[k]]);
      if (i % kReleaseEvery == kReleaseEvery - 1) index_->ReleasePages();
    }
    size_t kept = 0;
    for (size_t k = 0; k < positions.size(); ++k) {
      if (answered[k]) continue;
      vaddrs[kept] = vaddrs[k];
      positions[kept++] = positions[k];
    }
    vaddrs.resize(kept);
    positions.resize(kept);
    if (kept > 0 && ReplaceDamagedIndex()) {
      kept = 0;
      for (size_t k = 0; k < positions.size(); ++k) {
        if (AnswerFromIndex(vaddrs[k], answer_options, out[positions[k]])) continue;
        vaddrs[kept] = vaddrs[k];
        positions[kept++] = positions[k];
      }
      vaddrs.resize(kept);
      positions.resize(kept);
    }
    if (index_) index::SaveNameMemo(*index_, /*at_least=*/1);
    if (kept == 0) return out;
  }
  // DWARF: the units the batch needs are parsed, and their addresses answered, on every core.
  LoadDebugInfo();
  LoadGoPclntab();  // before the threads below share it
  for (uint32_t i : anywhere) SymbolizeAnywhere(out[i]);
  if (debug_info_) {
    debug_info_->LookupBatch(
        vaddrs, [&](size_t i) { return &out[positions[i]].frames; }, options_.threads);
  }
  // Symbol-table names, likewise spread over the cores (demangling long C++ names is the
  // cost; each distinct name is demangled once).
  constexpr size_t kPerThread = 512;  // below this a thread costs more than it saves
  unsigned threads = ThreadCount(options_.threads, positions.size() / kPerThread);
  const SymbolTable* fallback = fallback_symbols();
  const SymbolTable* absolute = absolute_symbols();
  const SymbolTable* plt = plt_symbols();
  RunOnThreads(threads, [&](unsigned t) {
    for (size_t k = t; k < positions.size(); k += threads) {
      FillFromSymbolTable(fallback, absolute, plt, out[positions[k]]);
      FillFromGo(out[positions[k]]);
    }
  });
  // The DWARF tables are one thread's at a time; the functions only they name are few.
  for (uint32_t position : positions) {
    FillFromFunctionRun(out[position]);
    ToSectionOffsets(out[position]);
  }
  return out;
}

void ElfSymbolizer::SymbolizeEach(
    std::span<const uint64_t> addresses, AddressKind kind,
    const std::function<void(size_t, const SymbolizedAddress&)>& sink) {
  SymbolizeEachConcurrently(
      addresses, kind, 1,
      [&](unsigned, size_t i, const SymbolizedAddress& answer) { sink(i, answer); });
}

void ElfSymbolizer::SymbolizeEachConcurrently(
    std::span<const uint64_t> addresses, AddressKind kind, unsigned workers,
    const std::function<void(unsigned, size_t, const SymbolizedAddress&)>& sink) {
  if (!UseIndex()) {
    std::vector<SymbolizedAddress> answers = SymbolizeBatch(addresses, kind);
    for (size_t i = 0; i < answers.size(); ++i) sink(0, i, answers[i]);
    return;
  }
  // In address order, as SymbolizeBatch asks the index, into one reused answer per thread;
  // each thread takes a contiguous run of addresses (neighbours share string blocks).
  std::vector<std::pair<uint64_t, uint32_t>> order;  // vaddr, position
  order.reserve(addresses.size());
  std::vector<uint32_t> rest;  // positions the index did not answer
  for (size_t i = 0; i < addresses.size(); ++i) {
    Reason reason{};
    if (std::optional<uint64_t> vaddr = ToVaddr(addresses[i], kind, &reason)) {
      order.emplace_back(*vaddr, static_cast<uint32_t>(i));
    } else {
      rest.push_back(static_cast<uint32_t>(i));
    }
  }
  std::sort(order.begin(), order.end());
  // The threads below share it (unless the index holds its answers).
  if (!index_->has_go_answers()) LoadGoPclntab();
  // A thread is worth starting for a few hundred lookups (each takes microseconds).
  constexpr size_t kLookupsPerThread = 512;
  unsigned threads = std::min(std::max(workers, 1u),
                              ThreadCount(options_.threads, order.size() / kLookupsPerThread));
  std::vector<std::vector<uint32_t>> unanswered(threads);
  // Each thread takes runs of neighbouring addresses (they share string blocks) from its own
  // share, then from the others': lookups differ in cost (inline depth, name lengths), and
  // halves split by count finished up to 40 % apart.
  RunSharing runs(order.size(), threads, 128);
  const index::AnswerOptions answer_options = symbolize::ToAnswerOptions(options_);
  RunOnThreads(threads, [&](unsigned t) {
    auto reader = index_->NewReader();  // null: the index's shared one
    SymbolizedAddress answer;
    answer.module = elf_->path();
    std::vector<SourceFrame> spare;  // frames (and their strings' storage) for the next answers
    index::GoAnswer go;              // likewise for Go's answers
    constexpr size_t kReleaseEvery = 1024;  // answers; see SymbolIndex::ReleasePages
    size_t done = 0;
    for (auto [begin, end] = runs.Next(t); begin < end; std::tie(begin, end) = runs.Next(t)) {
      for (size_t i = begin; i < end; ++i) {
        auto [vaddr, position] = order[i];
        answer.input = addresses[position];
        answer.vaddr = vaddr;
        if (index_->AnswerReusing(vaddr, answer_options, answer, &spare, reader.get()) &&
            FillGoAfterIndex(*index_, options_, reader.get(), &go, answer,
                             [this](SymbolizedAddress& a) { FillFromGo(a); })) {
          sink(t, position, answer);
        } else {
          unanswered[t].push_back(position);
        }
        if (++done % kReleaseEvery == 0) index_->ReleasePages();
      }
    }
  });
  index::SaveNameMemo(*index_, /*at_least=*/1);
  for (const std::vector<uint32_t>& positions : unanswered) {
    rest.insert(rest.end(), positions.begin(), positions.end());
  }
  if (rest.empty()) return;
  // Outside the segments, or not answered by the index (a damaged index is rebuilt there,
  // an inconsistent record goes to the direct path): as SymbolizeBatch answers them.
  std::vector<uint64_t> rest_addresses(rest.size());
  for (size_t k = 0; k < rest.size(); ++k) rest_addresses[k] = addresses[rest[k]];
  std::vector<SymbolizedAddress> answers = SymbolizeBatch(rest_addresses, kind);
  for (size_t k = 0; k < rest.size(); ++k) sink(0, rest[k], answers[k]);
}

}  // namespace stacksym
