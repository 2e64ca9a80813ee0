// One interpreted row → UnwindRow: the recognised CFA expressions and register rules, and
// what is refused (flagged, never guessed).
#include "unwind/row_compiler.h"

#include <gtest/gtest.h>

namespace stacksym::testing {
namespace {

using namespace unwind;

CfaState RspState(int64_t offset) {
  CfaState s;
  s.cfa.reg = kDwarfRsp;
  s.cfa.offset = offset;
  s.registers.resize(17);
  s.registers[16].kind = RegisterRuleKind::kOffset;
  s.registers[16].offset = -8;
  return s;
}

CompiledRow CompileWithCfaExpression(const std::vector<uint8_t>& expression) {
  CfaState s = RspState(0);
  s.cfa.is_expression = true;
  s.cfa.expression = expression;
  Cie cie;
  return CompileRow(s, cie, 7);
}

TEST(RowCompiler, RegisterCfas) {
  Cie cie;
  CompiledRow r = CompileRow(RspState(8), cie, 3);
  EXPECT_FALSE(r.unsupported);
  EXPECT_EQ(r.row.pc, 3u);
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kRspOffset);
  EXPECT_EQ(r.row.cfa_offset, 8);
  EXPECT_EQ(r.row.ra_rule, RegRule::kAtCfa);
  EXPECT_EQ(r.row.ra_offset, -8);
  EXPECT_EQ(r.row.rbp_rule, RegRule::kSame);

  CfaState rbp = RspState(16);
  rbp.cfa.reg = kDwarfRbp;
  rbp.registers[6].kind = RegisterRuleKind::kOffset;
  rbp.registers[6].offset = -16;
  r = CompileRow(rbp, cie, 0);
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kRbpOffset);
  EXPECT_EQ(r.row.rbp_rule, RegRule::kAtCfa);
  EXPECT_EQ(r.row.rbp_offset, -16);

  CfaState r10 = RspState(0);  // gcc's DRAP register before the frame is set up
  r10.cfa.reg = 10;
  r = CompileRow(r10, cie, 0);
  EXPECT_TRUE(r.unsupported);
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kUndefined);
  EXPECT_EQ(r.row.flags, kUnwindRowUnsupportedCfa);

  r = CompileRow(RspState(int64_t{1} << 40), cie, 0);
  EXPECT_TRUE(r.unsupported) << "an offset that does not fit 32 bits";
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kUndefined);
}

TEST(RowCompiler, PltExpression) {
  // breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus
  CompiledRow r =
      CompileWithCfaExpression({0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22});
  EXPECT_FALSE(r.unsupported);
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kPlt);
  EXPECT_EQ(r.row.cfa_offset, 8);
  EXPECT_EQ(r.row.rbp_offset, 11);
  // lit10 (IBT PLT) gives another threshold.
  r = CompileWithCfaExpression({0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22});
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kPlt);
  EXPECT_EQ(r.row.rbp_offset, 10);
  // Any change of the pattern is not a PLT: lit2 shift, trailing op, breg16 with an offset.
  for (const std::vector<uint8_t>& e : std::vector<std::vector<uint8_t>>{
           {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x32, 0x24, 0x22},
           {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22, 0x06},
           {0x77, 8, 0x80, 1, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}}) {
    r = CompileWithCfaExpression(e);
    EXPECT_EQ(r.row.cfa_rule, CfaRule::kUndefined);
    EXPECT_TRUE(r.unsupported);
  }
}

TEST(RowCompiler, DerefExpressions) {
  CompiledRow r = CompileWithCfaExpression({0x77, 0xa0, 0x01, 0x06});  // breg7 160; deref
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kDerefRspOffset);
  EXPECT_EQ(r.row.cfa_offset, 160);
  r = CompileWithCfaExpression({0x76, 0x78, 0x06});  // breg6 -8; deref (gcc's DRAP)
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kDerefRbpOffset);
  EXPECT_EQ(r.row.cfa_offset, -8);
  r = CompileWithCfaExpression({0x76, 0x78});  // breg6 -8 without deref: not supported
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kUndefined);
  r = CompileWithCfaExpression({});
  EXPECT_EQ(r.row.cfa_rule, CfaRule::kUndefined);
}

TEST(RowCompiler, RegisterRules) {
  Cie cie;
  cie.signal_frame = true;
  CfaState s = RspState(8);
  std::vector<uint8_t> at_rsp = {0x77, 0xa8, 0x01};  // breg7 168
  s.registers[16].kind = RegisterRuleKind::kExpression;
  s.registers[16].expression = at_rsp;
  s.registers[6].kind = RegisterRuleKind::kValOffset;
  s.registers[6].offset = 16;
  CompiledRow r = CompileRow(s, cie, 0);
  EXPECT_FALSE(r.unsupported);
  EXPECT_EQ(r.row.flags, kUnwindRowSignalFrame);
  EXPECT_EQ(r.row.ra_rule, RegRule::kAtRsp);
  EXPECT_EQ(r.row.ra_offset, 168);
  EXPECT_EQ(r.row.rbp_rule, RegRule::kValCfa);
  EXPECT_EQ(r.row.rbp_offset, 16);

  s.registers[16].kind = RegisterRuleKind::kUndefined;
  s.registers[6].kind = RegisterRuleKind::kRegister;
  s.registers[6].reg = 3;
  r = CompileRow(s, cie, 0);
  EXPECT_EQ(r.row.ra_rule, RegRule::kUndefined);
  EXPECT_EQ(r.row.rbp_rule, RegRule::kUnsupported);
  EXPECT_TRUE(r.unsupported);

  s.registers[6].kind = RegisterRuleKind::kOffset;
  s.registers[6].offset = 40000;  // beyond int16
  s.registers[16].kind = RegisterRuleKind::kUnspecified;
  r = CompileRow(s, cie, 0);
  EXPECT_EQ(r.row.rbp_rule, RegRule::kUnsupported);
  EXPECT_EQ(r.row.ra_rule, RegRule::kUnsupported) << "an unspecified return address";
}

}  // namespace
}  // namespace stacksym::testing
