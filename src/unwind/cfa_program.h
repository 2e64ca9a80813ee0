// cfa_program.h — the DW_CFA_* interpreter: runs a CIE's initial instructions and an FDE's
// instructions and reports every row of the resulting table, with the rule of every register
// column (not only those an unwinder needs), the way `readelf --debug-dump=frames-interp`
// prints them: a row at each location op (even when nothing changed), and a last row unless
// the FDE's instructions are all DW_CFA_nop.
//
//   CfaInterpreter interp;
//   Result<CfaProgramSummary> r = interp.Run(cie, fde, [](uint64_t pc, const CfaState& s) {...});
//
// A malformed program (truncated operand, unknown op, location moving backwards or past the
// FDE's end, remember_state nested deeper than kMaxRememberDepth, restore_state with nothing
// remembered, a register column above kMaxColumn) is an error: the caller drops every row the
// FDE reported.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "stacksym/result.h"
#include "unwind/cfi_reader.h"

namespace stacksym::unwind {

enum class RegisterRuleKind : uint8_t {
  kUnspecified = 0,  // never mentioned: "same value" for callee-saved registers by convention
  kUndefined,
  kSameValue,
  kOffset,         // saved at CFA + offset
  kValOffset,      // value is CFA + offset
  kRegister,       // in register `reg`
  kExpression,     // saved at the address the expression computes
  kValExpression,  // value is what the expression computes
};

struct RegisterRule {
  RegisterRuleKind kind = RegisterRuleKind::kUnspecified;
  int64_t offset = 0;  // kOffset, kValOffset
  uint64_t reg = 0;    // kRegister
  std::span<const uint8_t> expression;
};

struct CfaRuleState {
  bool is_expression = false;
  uint64_t reg = 0;
  int64_t offset = 0;
  std::span<const uint8_t> expression;
};

struct CfaState {
  CfaRuleState cfa;
  std::vector<RegisterRule> registers;  // by DWARF column; missing columns are kUnspecified
  uint64_t args_size = 0;               // DW_CFA_GNU_args_size (informational)

  const RegisterRule& Rule(uint64_t column) const {
    static const RegisterRule kUnspecifiedRule;
    return column < registers.size() ? registers[column] : kUnspecifiedRule;
  }
};

struct CfaProgramSummary {
  uint64_t rows = 0;      // rows reported
  bool all_nops = false;  // the FDE's own instructions were only DW_CFA_nop (or none)
};

inline constexpr size_t kMaxRememberDepth = 64;
inline constexpr uint64_t kMaxColumn = 255;

// Reports (pc, state) rows in order of the program; pcs never decrease.
using CfaRowCallback = std::function<void(uint64_t pc, const CfaState& state)>;

class CfaInterpreter {
 public:
  Result<CfaProgramSummary> Run(const Cie& cie, const Fde& fde, const CfaRowCallback& on_row);

 private:
  // Runs `program`; location ops report rows only when `fde` is non-null (the CIE's initial
  // instructions may not move the location).
  Result<void> Execute(std::span<const uint8_t> program, const Cie& cie, const Fde* fde,
                       const CfaRowCallback* on_row, CfaProgramSummary* summary);
  RegisterRule& Column(uint64_t column);

  CfaState state_;
  CfaState initial_;  // after the CIE's instructions: what DW_CFA_restore goes back to
  std::vector<CfaState> remembered_;
  uint64_t loc_ = 0;
};

}  // namespace stacksym::unwind
