// cfi_text.h — our interpreted CFI rows spelled the way readelf --debug-dump=frames-interp
// spells them, so the differential test compares strings cell by cell.
#pragma once

#include <string>

#include "unwind/cfa_program.h"

namespace stacksym::testing {

std::string CfaText(const unwind::CfaRuleState& cfa);    // "rsp+8", "exp"
std::string RuleText(const unwind::RegisterRule& rule);  // "u", "c-16", "r5 (rdi)", "vexp"

}  // namespace stacksym::testing
