#include "unwind/cfa_program.h"

#include "base/hex.h"

namespace stacksym::unwind {
namespace {

Error Malformed(std::string message) {
  return MakeError(ErrorCode::kMalformed, std::move(message));
}

RegisterRule Rule(RegisterRuleKind kind, int64_t offset = 0) {
  RegisterRule r;
  r.kind = kind;
  r.offset = offset;
  return r;
}

}  // namespace

RegisterRule& CfaInterpreter::Column(uint64_t column) {
  if (column >= state_.registers.size()) state_.registers.resize(column + 1);
  return state_.registers[column];
}

Result<CfaProgramSummary> CfaInterpreter::Run(const Cie& cie, const Fde& fde,
                                              const CfaRowCallback& on_row) {
  state_ = CfaState();
  remembered_.clear();
  loc_ = fde.pc_begin;
  CfaProgramSummary summary;
  if (cie.return_address_column > kMaxColumn) {
    return Malformed("return address column " + std::to_string(cie.return_address_column) +
                     " out of range");
  }
  if (Result<void> r = Execute(cie.initial_instructions, cie, nullptr, nullptr, &summary); !r) {
    return MakeError(r.error().code, "CIE instructions: " + r.error().message);
  }
  initial_ = state_;
  remembered_.clear();
  summary.all_nops = true;
  if (Result<void> r = Execute(fde.instructions, cie, &fde, &on_row, &summary); !r) {
    return r.error();
  }
  on_row(loc_, state_);
  ++summary.rows;
  return summary;
}

Result<void> CfaInterpreter::Execute(std::span<const uint8_t> program, const Cie& cie,
                                     const Fde* fde, const CfaRowCallback* on_row,
                                     CfaProgramSummary* summary) {
  ByteCursor c(program);
  const int64_t data_align = cie.data_alignment;

  // Moves the location to `target`, reporting the row that held up to it.
  auto move_to = [&](uint64_t target) -> Result<void> {
    if (fde == nullptr) return Malformed("location op in a CIE's initial instructions");
    if (target < loc_) return Malformed("location moves backwards to " + HexU64(target));
    if (target > fde->pc_end) {
      return Malformed("location " + HexU64(target) + " is past the FDE's end " +
                       HexU64(fde->pc_end));
    }
    (*on_row)(loc_, state_);
    ++summary->rows;
    loc_ = target;
    return {};
  };
  auto advance = [&](uint64_t delta) -> Result<void> {
    uint64_t bytes = 0, target = 0;
    if (__builtin_mul_overflow(delta, cie.code_alignment, &bytes) ||
        __builtin_add_overflow(loc_, bytes, &target)) {
      return Malformed("advance by " + HexU64(delta) + " overflows");
    }
    return move_to(target);
  };
  auto column = [&](uint64_t reg) -> Result<RegisterRule*> {
    if (reg > kMaxColumn)
      return Malformed("register column " + std::to_string(reg) + " out of range");
    return &Column(reg);
  };
  auto factored = [&](int64_t n, int64_t* out) -> bool {
    return !__builtin_mul_overflow(n, data_align, out);
  };

  while (!c.at_end()) {
    const size_t op_offset = c.offset();
    uint8_t op = c.U8();
    uint8_t low = op & 0x3f;
    if (op != DW_CFA_nop) summary->all_nops = false;
    switch (op & 0xc0) {
      case DW_CFA_advance_loc:
        if (Result<void> r = advance(low); !r) return r;
        continue;
      case DW_CFA_offset: {
        uint64_t n = c.Uleb128();
        int64_t off = 0;
        if (!c.ok()) return Malformed("operand of DW_CFA_offset truncated");
        if (n > INT64_MAX || !factored(static_cast<int64_t>(n), &off)) {
          return Malformed("offset overflows");
        }
        Column(low) = Rule(RegisterRuleKind::kOffset, off);
        continue;
      }
      case DW_CFA_restore:
        Column(low) = initial_.Rule(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case DW_CFA_nop:
        break;
      case DW_CFA_set_loc: {
        if (fde == nullptr) return Malformed("DW_CFA_set_loc in a CIE's initial instructions");
        PointerBases bases;
        bases.section_vaddr = fde->instructions_vaddr;
        bases.address_size = cie.address_size;
        uint64_t target = 0;
        std::string error;
        if (!ReadEncodedPointer(c, cie.fde_encoding & 0x7f, bases, &target, &error)) {
          return Malformed("DW_CFA_set_loc: " + error);
        }
        if (Result<void> r = move_to(target); !r) return r;
        break;
      }
      case DW_CFA_advance_loc1:
      case DW_CFA_advance_loc2:
      case DW_CFA_advance_loc4: {
        uint64_t delta = op == DW_CFA_advance_loc1   ? c.U8()
                         : op == DW_CFA_advance_loc2 ? c.U16()
                                                     : c.U32();
        if (!c.ok()) break;
        if (Result<void> r = advance(delta); !r) return r;
        break;
      }
      case DW_CFA_offset_extended:
      case DW_CFA_offset_extended_sf:
      case DW_CFA_val_offset:
      case DW_CFA_val_offset_sf:
      case DW_CFA_GNU_negative_offset_extended: {
        uint64_t reg = c.Uleb128();
        int64_t n = 0;
        if (op == DW_CFA_offset_extended_sf || op == DW_CFA_val_offset_sf) {
          n = c.Sleb128();
        } else {
          uint64_t u = c.Uleb128();
          if (u > INT64_MAX) return Malformed("offset overflows");
          n = static_cast<int64_t>(u);
          if (op == DW_CFA_GNU_negative_offset_extended) n = -n;
        }
        if (!c.ok()) break;
        int64_t off = 0;
        if (!factored(n, &off)) return Malformed("offset overflows");
        Result<RegisterRule*> rule = column(reg);
        if (!rule) return rule.error();
        bool val = op == DW_CFA_val_offset || op == DW_CFA_val_offset_sf;
        **rule = Rule(val ? RegisterRuleKind::kValOffset : RegisterRuleKind::kOffset, off);
        break;
      }
      case DW_CFA_restore_extended:
      case DW_CFA_undefined:
      case DW_CFA_same_value: {
        uint64_t reg = c.Uleb128();
        if (!c.ok()) break;
        Result<RegisterRule*> rule = column(reg);
        if (!rule) return rule.error();
        if (op == DW_CFA_restore_extended) {
          **rule = initial_.Rule(reg);
        } else {
          **rule = Rule(op == DW_CFA_undefined ? RegisterRuleKind::kUndefined
                                               : RegisterRuleKind::kSameValue);
        }
        break;
      }
      case DW_CFA_register: {
        uint64_t reg = c.Uleb128();
        uint64_t reg2 = c.Uleb128();
        if (!c.ok()) break;
        Result<RegisterRule*> rule = column(reg);
        if (!rule) return rule.error();
        **rule = Rule(RegisterRuleKind::kRegister);
        (*rule)->reg = reg2;
        break;
      }
      case DW_CFA_remember_state:
        if (remembered_.size() >= kMaxRememberDepth) {
          return Malformed("DW_CFA_remember_state nested deeper than " +
                           std::to_string(kMaxRememberDepth));
        }
        remembered_.push_back(state_);
        break;
      case DW_CFA_restore_state:
        if (remembered_.empty()) return Malformed("DW_CFA_restore_state with no remembered state");
        state_.cfa = remembered_.back().cfa;
        state_.registers = std::move(remembered_.back().registers);
        remembered_.pop_back();
        break;
      case DW_CFA_def_cfa:
      case DW_CFA_def_cfa_sf: {
        uint64_t reg = c.Uleb128();
        int64_t off = 0;
        if (op == DW_CFA_def_cfa) {
          uint64_t u = c.Uleb128();
          if (u > INT64_MAX) return Malformed("CFA offset overflows");
          off = static_cast<int64_t>(u);
        } else if (!factored(c.Sleb128(), &off)) {
          return Malformed("CFA offset overflows");
        }
        if (!c.ok()) break;
        state_.cfa = CfaRuleState();
        state_.cfa.reg = reg;
        state_.cfa.offset = off;
        break;
      }
      case DW_CFA_def_cfa_register: {
        uint64_t reg = c.Uleb128();
        if (!c.ok()) break;
        state_.cfa.is_expression = false;
        state_.cfa.reg = reg;
        break;
      }
      case DW_CFA_def_cfa_offset:
      case DW_CFA_def_cfa_offset_sf: {
        int64_t off = 0;
        if (op == DW_CFA_def_cfa_offset) {
          uint64_t u = c.Uleb128();
          if (u > INT64_MAX) return Malformed("CFA offset overflows");
          off = static_cast<int64_t>(u);
        } else if (!factored(c.Sleb128(), &off)) {
          return Malformed("CFA offset overflows");
        }
        if (!c.ok()) break;
        state_.cfa.offset = off;
        break;
      }
      case DW_CFA_def_cfa_expression: {
        uint64_t len = c.Uleb128();
        std::span<const uint8_t> expr = c.Bytes(len);
        if (!c.ok()) break;
        state_.cfa = CfaRuleState();
        state_.cfa.is_expression = true;
        state_.cfa.expression = expr;
        break;
      }
      case DW_CFA_expression:
      case DW_CFA_val_expression: {
        uint64_t reg = c.Uleb128();
        uint64_t len = c.Uleb128();
        std::span<const uint8_t> expr = c.Bytes(len);
        if (!c.ok()) break;
        Result<RegisterRule*> rule = column(reg);
        if (!rule) return rule.error();
        **rule = Rule(op == DW_CFA_expression ? RegisterRuleKind::kExpression
                                              : RegisterRuleKind::kValExpression);
        (*rule)->expression = expr;
        break;
      }
      case DW_CFA_GNU_args_size:
        state_.args_size = c.Uleb128();
        break;
      default:
        return Malformed("unknown call frame instruction " + HexU64(op) + " at offset " +
                         std::to_string(op_offset));
    }
    if (!c.ok()) {
      return Malformed("operand of call frame instruction " + HexU64(op) + " truncated");
    }
  }
  return {};
}

}  // namespace stacksym::unwind
