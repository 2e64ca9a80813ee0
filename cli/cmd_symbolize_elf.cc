// `stacksym symbolize elf --file F [--file-offsets] [ADDR...]` — symbolize addresses of one
// ELF file with its symbol table and DWARF (separate debug files found automatically).
#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/write_all.h"
#include "command.h"
#include "stacksym/symbolize.h"
#include "symbolize_output.h"
#include "text_arena.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_elf {
namespace {

struct Options {
  std::string file;
  bool file_offsets = false;
  std::vector<std::string> addresses;
  SymbolizeCliOptions symbolize;
};

// Answers rendered as they come (one reused string per worker thread), kept in each worker's
// arena until they are written in input order.
class RenderedAnswers {
 public:
  RenderedAnswers(size_t count, unsigned workers, TextPool* pool) : texts_(count) {
    for (unsigned w = 0; w < workers; ++w) workers_.emplace_back(pool);
  }
  void Add(unsigned worker, size_t i, const SymbolizedAddress& answer,
           const OutputOptions& options) {
    Worker& w = workers_[worker];
    w.scratch.clear();
    AppendSymbolized(answer, options, &w.scratch);
    texts_[i] = w.arena.Add(w.scratch);
  }
  // Writes the answers in the order of their positions, straight from the arenas (gathered
  // by writev: copying 7 MB of text into a buffer first cost a millisecond of a warm run).
  void Write() const {
    std::fflush(stdout);
    std::vector<std::span<const uint8_t>> pieces;
    pieces.reserve(texts_.size());
    for (std::string_view text : texts_) {
      pieces.push_back({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    }
    (void)WriteAll(fileno(stdout), pieces);  // stdout closed or full: nothing more to do
  }

 private:
  struct Worker {
    explicit Worker(TextPool* pool) : arena(pool) {}
    std::string scratch;
    TextArena arena;
  };
  std::deque<Worker> workers_;  // built in place: an arena does not move
  std::vector<std::string_view> texts_;
};

int Run(const Options& o) {
  KeepFreedMemoryForReuse();
  std::vector<uint64_t> addresses;
  std::string error;
  if (!ReadAddresses(o.addresses, &addresses, &error)) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", error.c_str());
    return kExitBadInput;
  }
  // Batches let the symbolizer parse the DWARF units they need on all cores; bounded so a
  // huge address list streams instead of holding every answer.
  constexpr size_t kBatch = 1 << 16;
  // Made first: its pages fault in on the other core while the index or the DWARF opens.
  // Address space for 4 KiB of text per answer (libceph-common's average is 1.4 KiB).
  TextPool pool(std::min(kBatch, addresses.size()) * 4096);
  SymbolizeOptions options = o.symbolize.ToSymbolizeOptions();
  // One batch: the DWARF it reads is given back as it goes (SymbolizeOptions).
  options.release_dwarf_as_read = addresses.size() <= kBatch;
  auto symbolizer = ElfSymbolizer::Open(o.file, options);
  if (!symbolizer) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", symbolizer.error().ToString().c_str());
    return kExitBadInput;
  }
  AddressKind kind = o.file_offsets ? AddressKind::kFileOffset : AddressKind::kVirtual;
  for (size_t begin = 0; begin < addresses.size(); begin += kBatch) {
    std::span<const uint64_t> batch(addresses.data() + begin,
                                    std::min(kBatch, addresses.size() - begin));
    // Each answer is rendered as it comes (in address order, from reused storage), then the
    // texts are written in input order.
    constexpr unsigned kWorkers = 4;  // at most; SymbolizeOptions::threads bounds them too
    {
      RenderedAnswers rendered(batch.size(), kWorkers, &pool);
      (*symbolizer)
          ->SymbolizeEachConcurrently(
              batch, kind, kWorkers,
              [&](unsigned worker, size_t i, const SymbolizedAddress& answer) {
                rendered.Add(worker, i, answer, o.symbolize.output);
              });
      rendered.Write();
    }
    pool.Reuse();
  }
  KeepUntilExit(std::move(*symbolizer));
  return kExitOk;
}

CommandRegistrar registrar("symbolize elf", "Symbolize addresses (or file offsets) of an ELF file",
                           [](CLI::App& app) -> CommandRun {
                             auto o = std::make_shared<Options>();
                             app.add_option("--file,-e,--obj", o->file, "ELF file")->required();
                             app.add_flag("--file-offsets", o->file_offsets,
                                          "Addresses are file offsets, not virtual addresses");
                             AddSymbolizeOptions(app, &o->symbolize);
                             app.add_option("ADDR", o->addresses,
                                            "Hex addresses; read from stdin when none are given");
                             return [o] { return Run(*o); };
                           });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_elf
