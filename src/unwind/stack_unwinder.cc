// The user-space unwinder: registers + a copy of the stack + per-module CFI tables → frames.
#include <cstring>

#include "stacksym/stack_unwind.h"

namespace stacksym {

const char* UnwindEndName(UnwindEnd end) {
  switch (end) {
    case UnwindEnd::kOutermost:
      return "outermost";
    case UnwindEnd::kDepthLimit:
      return "depth_limit";
    case UnwindEnd::kStackCopyTooShort:
      return "copy_too_short";
    case UnwindEnd::kPageNotReadable:
      return "page_not_readable";
    case UnwindEnd::kNoCfi:
      return "no_cfi";
    case UnwindEnd::kUnmappedPc:
      return "unmapped_pc";
    case UnwindEnd::kBadCfa:
      return "bad_cfa";
    case UnwindEnd::kUnsupportedRule:
      return "unsupported_rule";
  }
  return "?";
}

namespace {

// Reads 8-byte words of the copy by their address in the process, remembering what it read.
class CopyReader {
 public:
  CopyReader(const StackCopy& copy, std::vector<StackWord>* words) : copy_(copy), words_(words) {}

  bool Read(uint64_t address, uint64_t* value) const {
    uint64_t size = copy_.bytes.size();
    if (address < copy_.start || size < 8 || address - copy_.start > size - 8) return false;
    std::memcpy(value, copy_.bytes.data() + (address - copy_.start), 8);
    if (words_ != nullptr) words_->push_back({address, *value});
    return true;
  }
  UnwindEnd MissingEnd() const {
    return copy_.cut_at_unreadable_page ? UnwindEnd::kPageNotReadable
                                        : UnwindEnd::kStackCopyTooShort;
  }

 private:
  const StackCopy& copy_;
  std::vector<StackWord>* words_;
};

// Where a caller's register is, by its rule: false with `end` set when it cannot be had.
bool ApplyRegRule(RegRule rule, int64_t offset, uint64_t cfa, uint64_t sp, uint64_t same,
                  const CopyReader& reader, uint64_t* value, UnwindEnd* end) {
  switch (rule) {
    case RegRule::kSame:
      *value = same;
      return true;
    case RegRule::kUndefined:
      *value = 0;
      return true;
    case RegRule::kAtCfa:
      if (!reader.Read(cfa + static_cast<uint64_t>(offset), value)) {
        *end = reader.MissingEnd();
        return false;
      }
      return true;
    case RegRule::kAtRsp:
      if (!reader.Read(sp + static_cast<uint64_t>(offset), value)) {
        *end = reader.MissingEnd();
        return false;
      }
      return true;
    case RegRule::kValCfa:
      *value = cfa + static_cast<uint64_t>(offset);
      return true;
    case RegRule::kUnsupported:
      break;
  }
  *end = UnwindEnd::kUnsupportedRule;
  return false;
}

}  // namespace

UnwindEnd UnwindStack(const UserRegs& regs, const StackCopy& copy, const UnwindModuleLookup& lookup,
                      const UnwindOptions& options, std::vector<uint64_t>* pcs,
                      std::vector<StackWord>* words, UnwindStats* stats) {
  pcs->clear();
  if (words != nullptr) words->clear();
  CopyReader reader(copy, words);
  uint64_t pc = regs.rip, sp = regs.rsp, bp = regs.rbp;
  bool bp_known = true;
  // The sampled pc, and a pc interrupted by a signal, are the instruction itself; return
  // addresses point after the call, which may be the first byte of the next function.
  bool exact_pc = true;
  if (pc == 0) return UnwindEnd::kUnmappedPc;
  pcs->push_back(pc);
  while (true) {
    if (pcs->size() >= options.max_frames) return UnwindEnd::kDepthLimit;
    uint64_t lookup_pc = exact_pc ? pc : pc - 1;
    UnwindModule module;
    if (!lookup(lookup_pc, &module)) {
      // A return address outside every mapping is garbage (a stack being torn down, a bad
      // rule): it is not shown as a frame.
      if (pcs->size() > 1) pcs->pop_back();
      return UnwindEnd::kUnmappedPc;
    }
    const UnwindRow* row = nullptr;
    if (module.table != nullptr && !module.table->empty()) {
      row = module.table->Find(lookup_pc - module.bias);
    }
    uint64_t cfa = 0, ra = 0, caller_bp = bp;
    bool signal = false;
    if (row == nullptr || row->cfa_rule == CfaRule::kUndefined) {
      if (row != nullptr && (row->flags & kUnwindRowUnsupportedCfa)) {
        return UnwindEnd::kUnsupportedRule;
      }
      // No CFI here: the frame-pointer convention (push rbp; mov rbp, rsp) is all there is.
      if (!options.frame_pointer_fallback || !bp_known || bp < sp) return UnwindEnd::kNoCfi;
      if (!reader.Read(bp + 8, &ra) || !reader.Read(bp, &caller_bp)) {
        return bp - copy.start < copy.bytes.size() + 4096 ? reader.MissingEnd() : UnwindEnd::kNoCfi;
      }
      cfa = bp + 16;
      if (stats != nullptr) ++stats->frames_by_fp;
    } else {
      switch (row->cfa_rule) {
        case CfaRule::kRspOffset:
          cfa = sp + static_cast<uint64_t>(int64_t{row->cfa_offset});
          break;
        case CfaRule::kRbpOffset:
          if (!bp_known) return UnwindEnd::kUnsupportedRule;
          cfa = bp + static_cast<uint64_t>(int64_t{row->cfa_offset});
          break;
        case CfaRule::kDerefRspOffset:
          if (!reader.Read(sp + static_cast<uint64_t>(int64_t{row->cfa_offset}), &cfa)) {
            return reader.MissingEnd();
          }
          break;
        case CfaRule::kDerefRbpOffset:
          if (!bp_known) return UnwindEnd::kUnsupportedRule;
          if (!reader.Read(bp + static_cast<uint64_t>(int64_t{row->cfa_offset}), &cfa)) {
            return reader.MissingEnd();
          }
          break;
        case CfaRule::kPlt:
          // The PLT's own expression: one more word pushed in the second half of a stub.
          cfa = sp + static_cast<uint64_t>(int64_t{row->cfa_offset}) +
                ((pc & 15) >= static_cast<uint64_t>(row->rbp_offset) ? 8 : 0);
          break;
        case CfaRule::kUndefined:
          break;
      }
      UnwindEnd end = UnwindEnd::kOutermost;
      if (row->ra_rule == RegRule::kUndefined) return UnwindEnd::kOutermost;
      if (row->ra_rule == RegRule::kSame) return UnwindEnd::kUnsupportedRule;
      if (!ApplyRegRule(row->ra_rule, row->ra_offset, cfa, sp, pc, reader, &ra, &end)) {
        return end;
      }
      if (row->cfa_rule == CfaRule::kPlt) {
        caller_bp = bp;  // rbp_offset holds the PLT threshold; PLT stubs never touch RBP
      } else if (row->rbp_rule == RegRule::kUnsupported) {
        bp_known = false;  // only a problem if a caller's CFA is RBP-based
      } else if (!ApplyRegRule(row->rbp_rule, row->rbp_offset, cfa, sp, bp, reader, &caller_bp,
                               &end)) {
        return end;
      } else if (row->rbp_rule != RegRule::kSame) {
        bp_known = true;
      }
      signal = (row->flags & kUnwindRowSignalFrame) != 0;
      // The trampoline itself was "returned to", not called from: its pc is exact too.
      if (signal && !exact_pc) pcs->back() += 1;
    }
    if (ra == 0) return UnwindEnd::kOutermost;
    // Each caller's frame lies above its callee's; only a signal frame may switch stacks
    // (sigaltstack), and it reads the interrupted RSP from the saved context.
    if (!signal && cfa <= sp) return UnwindEnd::kBadCfa;
    pcs->push_back(signal ? ra + 1 : ra);
    pc = ra;
    sp = cfa;
    bp = caller_bp;
    exact_pc = signal;
  }
}

}  // namespace stacksym
