// row_compiler.h — turns one fully interpreted CFI row into the 16-byte UnwindRow an x86_64
// stack walker uses: the CFA as RSP/RBP + offset or one of the recognised expressions (PLT
// stubs, signal frames, gcc's stack realignment), and where the return address and RBP are.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"

namespace stacksym::unwind {

// The PLT entry's CFA expression `breg7 K; breg16 0; lit15; and; litN; ge; lit3; shl; plus`:
// CFA = RSP + K + ((RIP & 15) >= N ? 8 : 0).
struct PltCfa {
  int64_t offset = 0;
  uint8_t threshold = 0;
};
std::optional<PltCfa> MatchPltExpression(std::span<const uint8_t> expression);
// `bregR N; deref` with R = `reg`: the offset N.
std::optional<int64_t> MatchDerefBreg(std::span<const uint8_t> expression, uint32_t reg);
// `bregR N` alone: the offset N.
std::optional<int64_t> MatchBreg(std::span<const uint8_t> expression, uint32_t reg);

struct CompiledRow {
  UnwindRow row{};
  bool unsupported = false;  // the CFA, RA or RBP rule could not be expressed
};

// `pc` is stored as given (the caller makes it relative to the table's base).
CompiledRow CompileRow(const CfaState& state, const Cie& cie, uint32_t pc);

}  // namespace stacksym::unwind
