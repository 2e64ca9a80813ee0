#include "cfi_text.h"

#include <cinttypes>
#include <cstdio>

#include "readelf_frames.h"

namespace stacksym::testing {
namespace {

std::string Signed(int64_t v) {
  char buf[32];
  // readelf prints these offsets as int.
  std::snprintf(buf, sizeof buf, "%+d", static_cast<int>(v));
  return buf;
}

}  // namespace

std::string CfaText(const unwind::CfaRuleState& cfa) {
  if (cfa.is_expression) return "exp";
  return ReadelfRegisterName(cfa.reg) + Signed(cfa.offset);
}

std::string RuleText(const unwind::RegisterRule& rule) {
  using K = unwind::RegisterRuleKind;
  switch (rule.kind) {
    case K::kUnspecified:
    case K::kUndefined:
      return "u";
    case K::kSameValue:
      return "s";
    case K::kOffset:
      return "c" + Signed(rule.offset);
    case K::kValOffset:
      return "v" + Signed(rule.offset);
    case K::kRegister: {
      std::string name = ReadelfRegisterName(rule.reg);
      return "r" + std::to_string(rule.reg) + " (" + name + ")";
    }
    case K::kExpression:
      return "exp";
    case K::kValExpression:
      return "vexp";
  }
  return "?";
}

}  // namespace stacksym::testing
