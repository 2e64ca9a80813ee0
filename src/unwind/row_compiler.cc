#include "unwind/row_compiler.h"

#include <limits>

#include "base/byte_cursor.h"

namespace stacksym::unwind {
namespace {

template <class T>
bool Fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

// A register rule for the return address or RBP.
bool CompileRegister(const RegisterRule& rule, bool is_return_address, RegRule* out,
                     int16_t* offset) {
  *offset = 0;
  switch (rule.kind) {
    case RegisterRuleKind::kUnspecified:
    case RegisterRuleKind::kSameValue:
      // An unspecified return address has no meaning an unwinder could use.
      *out = is_return_address ? RegRule::kUnsupported : RegRule::kSame;
      return !is_return_address;
    case RegisterRuleKind::kUndefined:
      *out = RegRule::kUndefined;
      return true;
    case RegisterRuleKind::kOffset:
    case RegisterRuleKind::kValOffset:
      if (!Fits<int16_t>(rule.offset)) break;
      *out = rule.kind == RegisterRuleKind::kOffset ? RegRule::kAtCfa : RegRule::kValCfa;
      *offset = static_cast<int16_t>(rule.offset);
      return true;
    case RegisterRuleKind::kExpression:
      if (std::optional<int64_t> n = MatchBreg(rule.expression, kDwarfRsp);
          n && Fits<int16_t>(*n)) {
        *out = RegRule::kAtRsp;
        *offset = static_cast<int16_t>(*n);
        return true;
      }
      break;
    case RegisterRuleKind::kRegister:
    case RegisterRuleKind::kValExpression:
      break;
  }
  *out = RegRule::kUnsupported;
  return false;
}

}  // namespace

std::optional<PltCfa> MatchPltExpression(std::span<const uint8_t> expression) {
  ByteCursor c(expression);
  if (c.U8() != DW_OP_breg0 + kDwarfRsp) return std::nullopt;
  int64_t k = c.Sleb128();
  if (c.U8() != DW_OP_breg0 + kDwarfRip || c.Sleb128() != 0) return std::nullopt;
  if (c.U8() != DW_OP_lit0 + 15 || c.U8() != DW_OP_and) return std::nullopt;
  uint8_t lit = c.U8();
  if (lit < DW_OP_lit0 || lit > DW_OP_lit0 + 15) return std::nullopt;
  if (c.U8() != DW_OP_ge || c.U8() != DW_OP_lit0 + 3 || c.U8() != DW_OP_shl ||
      c.U8() != DW_OP_plus) {
    return std::nullopt;
  }
  if (!c.ok() || !c.at_end()) return std::nullopt;
  return PltCfa{.offset = k, .threshold = static_cast<uint8_t>(lit - DW_OP_lit0)};
}

std::optional<int64_t> MatchDerefBreg(std::span<const uint8_t> expression, uint32_t reg) {
  ByteCursor c(expression);
  if (c.U8() != DW_OP_breg0 + reg) return std::nullopt;
  int64_t n = c.Sleb128();
  if (c.U8() != DW_OP_deref || !c.ok() || !c.at_end()) return std::nullopt;
  return n;
}

std::optional<int64_t> MatchBreg(std::span<const uint8_t> expression, uint32_t reg) {
  ByteCursor c(expression);
  if (c.U8() != DW_OP_breg0 + reg) return std::nullopt;
  int64_t n = c.Sleb128();
  if (!c.ok() || !c.at_end()) return std::nullopt;
  return n;
}

CompiledRow CompileRow(const CfaState& state, const Cie& cie, uint32_t pc) {
  CompiledRow out;
  UnwindRow& row = out.row;
  row.pc = pc;
  if (cie.signal_frame) row.flags |= kUnwindRowSignalFrame;

  bool cfa_ok = false;
  const CfaRuleState& cfa = state.cfa;
  if (!cfa.is_expression) {
    if ((cfa.reg == kDwarfRsp || cfa.reg == kDwarfRbp) && Fits<int32_t>(cfa.offset)) {
      row.cfa_rule = cfa.reg == kDwarfRsp ? CfaRule::kRspOffset : CfaRule::kRbpOffset;
      row.cfa_offset = static_cast<int32_t>(cfa.offset);
      cfa_ok = true;
    }
  } else if (std::optional<PltCfa> plt = MatchPltExpression(cfa.expression);
             plt && Fits<int32_t>(plt->offset)) {
    row.cfa_rule = CfaRule::kPlt;
    row.cfa_offset = static_cast<int32_t>(plt->offset);
    cfa_ok = true;
  } else if (std::optional<int64_t> n = MatchDerefBreg(cfa.expression, kDwarfRsp);
             n && Fits<int32_t>(*n)) {
    row.cfa_rule = CfaRule::kDerefRspOffset;
    row.cfa_offset = static_cast<int32_t>(*n);
    cfa_ok = true;
  } else if (std::optional<int64_t> m = MatchDerefBreg(cfa.expression, kDwarfRbp);
             m && Fits<int32_t>(*m)) {
    row.cfa_rule = CfaRule::kDerefRbpOffset;
    row.cfa_offset = static_cast<int32_t>(*m);
    cfa_ok = true;
  }
  if (!cfa_ok) {
    row.cfa_rule = CfaRule::kUndefined;
    row.cfa_offset = 0;
    row.flags |= kUnwindRowUnsupportedCfa;
  }

  bool ra_ok =
      CompileRegister(state.Rule(cie.return_address_column), true, &row.ra_rule, &row.ra_offset);
  bool rbp_ok = CompileRegister(state.Rule(kDwarfRbp), false, &row.rbp_rule, &row.rbp_offset);
  if (row.cfa_rule == CfaRule::kPlt) {
    // The PLT rule has no RBP offset of its own: the threshold lives in rbp_offset.
    std::optional<PltCfa> plt = MatchPltExpression(cfa.expression);
    row.rbp_offset = static_cast<int16_t>(plt->threshold);
  }
  out.unsupported = !cfa_ok || !ra_ok || !rbp_ok;
  return out;
}

}  // namespace stacksym::unwind
