// libFuzzer target for Go's pclntab reader (elf/go_pclntab.h): the input is taken as the
// table (at a fixed address) and also as the program's writable data (where the reader looks
// for the moduledata) and its read-only data (inline trees), then functions are listed and
// pcs looked up, inline chains included — as the symbolizer asks it — and each function's
// stack-depth runs read as the unwind table reads them. The first pieces of LookupBounds are
// checked as a symbol index relies on them: Lookup answers alike at both ends of each, with
// and without a LookupMemo. The input's length names the release that linked it (go1.N, N =
// length % 17), which picks the inline-tree layout of a 1.2-magic table (Go 1.9–1.15).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "elf/go_pclntab.h"

namespace {

constexpr uint64_t kTableVaddr = 0x10000;
constexpr uint64_t kDataVaddr = 0x800000;
constexpr size_t kMaxFunctionsListed = 64;

void Check(bool ok) {
  if (!ok) std::abort();
}

void LookUp(const stacksym::elf::GoPclntab& table, uint64_t pc) {
  std::vector<stacksym::elf::GoFrame> frames;
  stacksym::elf::GoFunction function;
  if (!table.Lookup(pc, true, &frames, &function)) return;
  Check(!frames.empty() && pc >= function.entry && pc < function.end);
  for (size_t i = 0; i < frames.size(); ++i) Check(frames[i].inlined == (i + 1 < frames.size()));
}

// One Lookup's whole answer, as text.
std::string Answer(const stacksym::elf::GoPclntab& table, uint64_t pc,
                   stacksym::elf::GoPclntab::LookupMemo* memo) {
  std::vector<stacksym::elf::GoFrame> frames;
  stacksym::elf::GoFunction function;
  if (!table.Lookup(pc, true, &frames, &function, memo)) return "-";
  std::string out = std::to_string(function.entry) + " " + std::to_string(function.end) + " " +
                    std::string(function.name);
  for (const stacksym::elf::GoFrame& f : frames) {
    out += "|" + std::string(f.function) + " " + std::string(f.file) + ":" +
           std::to_string(f.line) + (f.inlined ? "i" : "");
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  std::vector<stacksym::elf::GoSegment> image = {{kTableVaddr, bytes, false},
                                                 {kDataVaddr, bytes, true}};
  const uint32_t go_minor = static_cast<uint32_t>(size % 17);
  auto table = stacksym::elf::GoPclntab::Parse(bytes, kTableVaddr, image, go_minor);
  if (!table) {
    Check(!table.error().message.empty());
    return 0;
  }
  const stacksym::elf::GoPclntab& t = **table;
  Check(t.function_count() > 0 && t.go_minor() == go_minor);
  for (size_t i = 0; i < t.function_count() && i < kMaxFunctionsListed; ++i) {
    std::optional<stacksym::elf::GoFunction> f = t.FunctionAt(i);
    if (!f) continue;
    LookUp(t, f->entry);
    LookUp(t, f->entry + (f->end - f->entry) / 2);
    LookUp(t, f->end - 1);
    // The unwind table's view: stack-depth runs in order, inside the function.
    std::vector<stacksym::elf::GoStackDelta> runs;
    t.StackDeltas(i, &runs);
    uint64_t at = f->entry;
    for (const stacksym::elf::GoStackDelta& run : runs) {
      Check(run.begin == at && run.end > run.begin && run.end <= f->end && run.sp_delta >= 0);
      at = run.end;
    }
  }
  std::vector<uint64_t> bounds = t.LookupBounds();
  stacksym::elf::GoPclntab::LookupMemo memo;
  for (size_t k = 0; k + 1 < bounds.size() && k < kMaxFunctionsListed; ++k) {
    Check(bounds[k] < bounds[k + 1]);
    const std::string first = Answer(t, bounds[k], nullptr);
    Check(Answer(t, bounds[k], &memo) == first);
    Check(Answer(t, bounds[k + 1] - 1, nullptr) == first);
    Check(Answer(t, bounds[k + 1] - 1, &memo) == first);
  }
  // And pcs the input names itself (its last 8 bytes), wherever they fall.
  if (size >= 8) {
    uint64_t pc;
    std::memcpy(&pc, data + size - 8, 8);
    LookUp(t, pc);
  }
  return 0;
}
