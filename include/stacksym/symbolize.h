// stacksym/symbolize.h — addresses of one ELF file → functions, inline chains, file:line.
//
// An ElfSymbolizer owns one binary (and, with debug info on, the debug files found for it:
// build-ID directories, .gnu_debuglink, dwz supplementary files, split DWARF). Give it
// virtual addresses or file offsets; every address gets either an answer or a Reason, and a
// batch never fails as a whole.
//
//   SymbolizeOptions opts;                       // demangle + DWARF by default
//   auto sym = ElfSymbolizer::Open("/usr/bin/bash", opts);
//   if (!sym) return sym.error();
//   SymbolizedAddress a = (*sym)->Symbolize(0x4a2f0, AddressKind::kVirtual);
//   if (a.reason) puts(ReasonText(*a.reason)); else puts(a.symbol.c_str());
//
// Thread-safety: one ElfSymbolizer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/elf.h"
#include "stacksym/frame.h"
#include "stacksym/reason.h"
#include "stacksym/result.h"

namespace stacksym {

struct SymbolizeOptions {
  bool demangle = true;
  bool use_debug_info = true;  // DWARF line tables and inline chains when available
  bool inlines = true;         // report inlined frames (otherwise only the outermost frame)
  // Name functions by DWARF's DW_AT_name ("f", "g<int>": no scope, no parameters) instead of
  // the linkage name, and not from the symbol table (llvm-symbolizer --functions=short).
  // Frames without DWARF then have no function name. Persisted indexes are not used.
  bool short_function_names = false;
  // Fill SourceFrame::start_address (each frame's DWARF DW_AT_low_pc, llvm-symbolizer's JSON
  // StartAddress). Persisted indexes do not keep it and are not used with it.
  bool start_addresses = false;
  // Source paths without the compilation directory (llvm-symbolizer --relativenames): line
  // rows', call sites' and function starts' files as their line table names them relative to
  // it (DWARF 5's directory 0 left out too). Persisted indexes are not used with it.
  bool relative_paths = false;
  // The split-DWARF package of every binary's split units (llvm-symbolizer --dwp), in place
  // of "<binary>.dwp" and "<debug file>.dwp"; empty: those. The .dwo files are still looked
  // for when it lacks a unit. Persisted indexes are not used with it.
  std::string dwp_path;
  // A split unit's .dwo is also looked for in the binary's directory (by its name's last
  // component) when it is not at comp_dir/dwo_name: for build trees that were moved. Off:
  // only at comp_dir/dwo_name, as llvm-symbolizer looks (its drop-in turns it off).
  // Persisted indexes are not used without it.
  bool dwo_beside_binary = true;
  // Fill SymbolizedAddress::raw_symbol and SourceFrame::raw_function (linkage names). Off,
  // they stay empty: an index then reads no linkage name at all (they are stored apart from
  // the demangled ones), which is what a caller that prints only demangled names wants.
  bool linkage_names = true;
  // After building an index (cache_dir), keep the DWARF it was built from for the addresses
  // the index leaves to DWARF, instead of freeing it: for a process about to exit (the
  // command line), which then skips tens of milliseconds of teardown on a big binary. It
  // holds that memory (hundreds of MB on a big binary) for as long as the symbolizer lives,
  // so long-lived callers (a server's cache of symbolizers) leave it off.
  bool keep_dwarf_after_index_build = false;
  // A first batch read from a big compressed .debug_info as it is being decompressed gives
  // back each unit's decompressed bytes once that unit's addresses are answered, so that
  // peak memory holds a window of the section instead of all of it (on libceph-common's
  // 154 MB .debug_info, a third of the peak). Lookups after such a batch open the DWARF again:
  // for callers that ask one batch (a command with all its addresses at hand).
  bool release_dwarf_as_read = false;
  // Name what neither a stripped binary's own symbols nor DWARF name (its startup code, _start)
  // from its separate debug file's .symtab, or its MiniDebugInfo's (.gnu_debugdata), and then
  // from absolute (SHN_ABS) symbols, as eu-addr2line does. Off: only the binary's own tables
  // of symbols in sections, as llvm-symbolizer does (its drop-in turns it off). Persisted indexes
  // are built with it on and are not used without it.
  bool symbols_from_debug_file = true;
  // Name the PLT stubs perf's way ("puts@plt"; ElfFile::plt_symbols) where nothing else names
  // them, so that a profile's samples in a stub are not left unnamed. Off: only what the
  // binary's own tables give there, as llvm-symbolizer answers (the sizeless symbol before the
  // PLT, usually `_init`, or ??; its drop-in turns it off). Persisted indexes are
  // built with it on and are not used without it.
  bool plt_names = true;
  // Roots searched for separate debug files (".build-id/xx/rest.debug", debuglink paths).
  std::vector<std::string> debug_dirs = {kDefaultDebugDir};
  // Threads a batch may use to parse debug info and resolve names (0: one per CPU).
  unsigned threads = 0;
  // The path the binary is known by where it runs, and the root that path is relative to (a
  // container's "/proc/PID/root"; empty: ours). For a binary opened through another path,
  // such as /proc/PID/map_files/..., its .gnu_debuglink file is then also looked for next to
  // that path and under each debug dir by that path's directory. Process symbolization sets
  // both per module.
  std::string known_path;
  std::string known_root;
  // Directory of persisted symbol indexes (stacksym/symbol_cache.h); empty: none. With one,
  // the first use of a binary (with use_debug_info) indexes the whole binary there, and later
  // symbolizers answer from that index — the same answers, without parsing DWARF again.
  std::string cache_dir;
  uint64_t cache_max_bytes = uint64_t{1} << 30;  // least recently used indexes go beyond it
  // Asked by build ID when no local debug dir has the debug file (debuginfod); null: local only.
  std::shared_ptr<const BuildIdFetcher> fetcher;
};

namespace dwarf {
class DebugInfoSource;  // DWARF behind the symbolizer (src/dwarf); opaque here
}
class DemangleCache;  // src/base; opaque here
namespace index {
class SymbolIndex;  // src/index; opaque here
struct AnswerOptions;
}  // namespace index
namespace elf {
class GoPclntab;  // src/elf; opaque here
}

class ElfSymbolizer {
 public:
  static Result<std::unique_ptr<ElfSymbolizer>> Open(const std::string& path,
                                                     const SymbolizeOptions& options = {});
  static Result<std::unique_ptr<ElfSymbolizer>> FromElf(std::shared_ptr<ElfFile> elf,
                                                        const SymbolizeOptions& options = {});
  ~ElfSymbolizer();

  SymbolizedAddress Symbolize(uint64_t address, AddressKind kind);
  // Same answers as Symbolize() per address, computed on SymbolizeOptions::threads threads:
  // each DWARF unit the batch needs is parsed for just the addresses in it, and names are
  // resolved and demangled once each. The preferred call for many addresses.
  std::vector<SymbolizedAddress> SymbolizeBatch(std::span<const uint64_t> addresses,
                                                AddressKind kind);
  // The answers SymbolizeBatch() gives, handed to `sink(i, answer)` one at a time in no
  // particular order (i: the address's position in `addresses`). `answer` lives only during
  // the call: its storage is reused for the next one, so that a batch answered from a
  // persisted index allocates next to nothing. For callers that render each answer at once.
  void SymbolizeEach(std::span<const uint64_t> addresses, AddressKind kind,
                     const std::function<void(size_t, const SymbolizedAddress&)>& sink);
  // SymbolizeEach() on up to `workers` threads (and SymbolizeOptions::threads) when a
  // persisted index answers: `sink(worker, i, answer)` is called concurrently from several
  // threads, each worker number (< workers) from one thread at a time, so a caller keeps its
  // rendering state per worker. Addresses the index does not answer go to worker 0 last.
  void SymbolizeEachConcurrently(
      std::span<const uint64_t> addresses, AddressKind kind, unsigned workers,
      const std::function<void(unsigned, size_t, const SymbolizedAddress&)>& sink);

  // The declaration of the global or static variable whose storage holds virtual address
  // `vaddr` (not TLS), or nullopt when DWARF has none with a line. The first call reads the
  // variables of the whole binary's DWARF into a table (once; CODE lookups never do). In a
  // relocatable object `vaddr` is an offset into any section (src/elf/object_layout.h).
  std::optional<DataDeclaration> FindDataDeclaration(uint64_t vaddr);

  // The locals of the innermost function DWARF places at `vaddr` (with those of the
  // functions inlined into it), in DIE order; empty when there is none. In a relocatable
  // object `vaddr` is a code address: an offset into a text section, else into any section.
  std::vector<FrameLocal> FindFrameLocals(uint64_t vaddr);

  // The source text DWARF embeds for the file of the innermost frame at `address` (DWARF 5's
  // DW_LNCT_LLVM_source, clang -gembed-source), which llvm-symbolizer prints source context
  // from instead of reading the file; nullopt when there is none. Always read from the DWARF
  // (loaded if it was not), never from a persisted index.
  std::optional<std::string> EmbeddedSource(uint64_t address, AddressKind kind);

  // What the DWARF read so far holds that llvm-symbolizer warns about and the answers went
  // around (a premature .debug_aranges terminator), in LLVM's words, each once: the ones not
  // given by an earlier call. For callers that report them as llvm-symbolizer does.
  std::vector<std::string> TakeWarnings();

  const ElfFile& elf() const { return *elf_; }
  // Path of the file DWARF was read from (the binary itself or a separate debug file);
  // empty when none was found or debug info is off.
  std::string debug_file() const;
  // Heap memory held now: decompressed sections, symbol and DWARF tables, name caches (not
  // the files' mappings, which the kernel can drop). Grows as addresses need more units.
  size_t memory_bytes() const;
  // The binary's and the persisted index's mapped pages out of the resident set, between
  // batches of a long-lived caller: memory_bytes() counts heap, not these.
  void ReleasePages() const;

 private:
  ElfSymbolizer(std::shared_ptr<ElfFile> elf, const SymbolizeOptions& options);
  void LoadDebugInfo();  // once, on first need
  // Sets input, module and vaddr; false (with the reason set) when the address is outside
  // the file's segments.
  bool Prepare(uint64_t address, AddressKind kind, SymbolizedAddress& out) const;
  // The virtual address `address` stands for, or the reason it has none. In a relocatable
  // object an address is an offset into a text section, as llvm-symbolizer reads it, and
  // stands for where ElfFile placed that section (src/elf/object_layout.h).
  std::optional<uint64_t> ToVaddr(uint64_t address, AddressKind kind, Reason* reason) const;
  // Whether `out`, which Prepare turned down, is an object's offset that names no section
  // (no text section holds it; src/elf/object_layout.h), answered by SymbolizeAnywhere.
  bool NamesNoSection(const SymbolizedAddress& out, AddressKind kind) const;
  // Such an offset looked up in any section: at each place elf::ObjectOffsetAnywhere lists,
  // the first that DWARF or the symbol table answers.
  void SymbolizeAnywhere(SymbolizedAddress& out);
  // An object file's answer in the caller's terms: its addresses made offsets into the text
  // section the input was read in again. Other files' answers are left alone.
  void ToSectionOffsets(SymbolizedAddress& out) const;
  // A stripped binary's debug file's .symtab, for what neither its own table nor DWARF names
  // (FallbackSymbolTable); null when there is none or it is not wanted. Loads the debug info.
  const SymbolTable* fallback_symbols();
  // The PLT stubs' names (elf::PltSymbolTable) when plt_names asks for them; else null.
  const SymbolTable* plt_symbols() const;
  const SymbolTable* absolute_symbols() const;
  // `fallback` and `plt` name, in that order, what the binary's table and DWARF do not.
  void FillFromSymbolTable(const SymbolTable* fallback, const SymbolTable* absolute,
                           const SymbolTable* plt, SymbolizedAddress& out);
  // A function only DWARF names (no symbol covers it): its start, size and +offset from the
  // run of its code (dwarf/function_run.h), as the index answers them.
  void FillFromFunctionRun(SymbolizedAddress& out);
  // Go's pclntab (elf/go_pclntab.h), found once: names, file:line and inline chains of Go
  // code where the symbol table and DWARF leave an address unanswered (a binary built with
  // -ldflags='-s -w'), on the direct path, and on the index's when the index does not hold
  // the table's answers itself (SymbolIndex::has_go_answers: an index of format 16 holds them
  // whenever the binary has a readable table, and then the table is not even loaded).
  void LoadGoPclntab();
  void FillFromGo(SymbolizedAddress& out) const;
  // index_->Answer, then Go's answer where it gives no frames (the index's copy, else
  // FillFromGo); `out` is left as it was when the index cannot answer.
  bool AnswerFromIndex(uint64_t vaddr, const index::AnswerOptions& options, SymbolizedAddress& out);
  bool UseIndex();  // opens or builds the cached index once; false: answer directly
  // After a lookup found the index damaged (a chunk failed its checksum): rebuilds it (once);
  // true when index_ is a new, usable index.
  bool ReplaceDamagedIndex();

  std::shared_ptr<ElfFile> elf_;
  SymbolizeOptions options_;
  std::unique_ptr<dwarf::DebugInfoSource> debug_info_;
  bool debug_info_loaded_ = false;
  // An index build's DWARF after it gave its sections back (keep_dwarf_after_index_build):
  // held only so that it is torn down with the process, never asked.
  std::unique_ptr<dwarf::DebugInfoSource> retired_debug_info_;
  std::unique_ptr<DemangleCache> symbol_names_;  // demangled symbol-table names
  std::unique_ptr<index::SymbolIndex> index_;    // set when cache_dir gave one
  bool index_tried_ = false;
  bool index_rebuilt_ = false;                  // once, after a lookup found the index damaged
  std::unique_ptr<elf::GoPclntab> go_pclntab_;  // null: not a Go binary (or a corrupt table)
  bool go_pclntab_loaded_ = false;
};

}  // namespace stacksym
