// stacksym/stack_unwind.h — walk a copied user stack with DWARF CFI unwind tables.
//
// A sampler that cannot trust frame pointers (leaf functions, Debian's own binaries) copies
// the user registers and the top of the user stack at each sample, as `perf record
// --call-graph dwarf` does; UnwindStack() then walks the frames with each module's
// UnwindTable (stacksym/unwind.h), falling back to frame pointers for code without CFI.
//
//   UserRegs regs{.rip = ip, .rsp = sp, .rbp = bp};
//   StackCopy copy{.start = sp, .bytes = bytes};
//   UnwindModuleLookup lookup = [&](uint64_t pc, UnwindModule* out) {
//     ... find the executable mapping of pc: its table and load bias (pc - vaddr) ...
//   };
//   std::vector<uint64_t> pcs;
//   UnwindEnd end = UnwindStack(regs, copy, lookup, {}, &pcs);
//   // pcs[0] is the sampled pc; pcs[i > 0] are return addresses (like a frame-pointer
//   // callchain); `end` says why the walk stopped.
//
// Nothing here reads memory other than the copy, so it is safe on untrusted bytes: a walk
// never leaves the copy, always moves up the stack and stops at `max_frames`.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "stacksym/unwind.h"

namespace stacksym {

struct UserRegs {
  uint64_t rip = 0;
  uint64_t rsp = 0;
  uint64_t rbp = 0;
};

// The user stack from `start` (the sampled RSP) upward.
struct StackCopy {
  uint64_t start = 0;
  std::span<const uint8_t> bytes;
  // The copy stopped before the requested size because a page could not be read (the end
  // of the stack mapping, or a page not resident at sampling time).
  bool cut_at_unreadable_page = false;
};

// Why a walk ended. kOutermost is the one good end; every other one is a truncation that a
// recorder counts and shows.
enum class UnwindEnd : uint8_t {
  kOutermost,          // return address undefined or zero (_start, a thread's entry)
  kDepthLimit,         // max_frames reached
  kStackCopyTooShort,  // a saved register lies past the end of a full-size copy
  kPageNotReadable,    // ... past the end of a copy cut at a page that could not be read
  kNoCfi,              // no CFI for the pc and the frame-pointer fallback failed
  kUnmappedPc,         // a return address outside every executable mapping
  kBadCfa,             // the CFA did not move up the stack, or a rule gave nonsense
  kUnsupportedRule,    // a CFI rule the tables cannot express (register rules, expressions)
};
inline constexpr int kUnwindEndCount = 8;
const char* UnwindEndName(UnwindEnd end);  // "outermost", "copy_too_short", ...

// The module that maps a pc, as the unwinder needs it.
struct UnwindModule {
  const UnwindTable* table = nullptr;  // null or empty: no CFI (frame pointers are tried)
  uint64_t bias = 0;                   // pc - bias = the table's virtual address
};
// False when no executable mapping covers pc.
using UnwindModuleLookup = std::function<bool(uint64_t pc, UnwindModule* out)>;

struct UnwindOptions {
  size_t max_frames = 127;
  bool frame_pointer_fallback = true;  // for code without CFI (JIT code, stripped tables)
};

// A word of the copy that the walk read: the walk's result depends on these words only (and
// on the mappings), so a later sample with the same registers and the same values at these
// addresses unwinds to the same frames (see UnwindMemo).
struct StackWord {
  uint64_t address;
  uint64_t value;
};

struct UnwindStats {
  uint32_t frames_by_fp = 0;  // frames found by the frame-pointer fallback
};

// Walks from `regs` through `copy`. pcs gets the sampled pc, then one return address per
// caller. A signal trampoline and the code it interrupted were not called from the previous
// byte, so their exact pcs are entered as pc + 1: every pcs[i > 0] can then be read as a
// "return address" whose call site is pcs[i] - 1. A return address outside every mapping
// ends the walk without being entered. `words`, when given, receives every word read.
UnwindEnd UnwindStack(const UserRegs& regs, const StackCopy& copy, const UnwindModuleLookup& lookup,
                      const UnwindOptions& options, std::vector<uint64_t>* pcs,
                      std::vector<StackWord>* words = nullptr, UnwindStats* stats = nullptr);

}  // namespace stacksym
