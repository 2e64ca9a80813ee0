// The llvm-symbolizer drop-in's request parser reads lines as llvm-symbolizer 14 does (the
// answers themselves are compared with llvm-symbolizer in tests/install).
#include <gtest/gtest.h>

#include "llvm_symbolizer_request.h"

namespace stacksym::cli {
namespace {

TEST(LlvmRequest, CommandsModulesAndAddresses) {
  auto r = ParseLlvmRequest("CODE \"/usr/lib/my lib.so\" 0x27249", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, LlvmCommand::kCode);
  EXPECT_EQ(r->module, "/usr/lib/my lib.so");
  EXPECT_EQ(r->address, 0x27249u);

  r = ParseLlvmRequest("DATA '/bin/true:x86_64' 0x10", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, LlvmCommand::kData);
  EXPECT_EQ(r->module, "/bin/true") << "an architecture suffix is dropped";

  r = ParseLlvmRequest("FRAME /srv/a:b 017", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, LlvmCommand::kFrame);
  EXPECT_EQ(r->module, "/srv/a:b") << "a colon part that is no architecture stays";
  EXPECT_EQ(r->address, 017u) << "leading 0: octal";

  r = ParseLlvmRequest("  /bin/true   4477  ", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, LlvmCommand::kCode);
  EXPECT_EQ(r->address, 4477u) << "no prefix: decimal";

  r = ParseLlvmRequest("0x1150", "/bin/true");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->module, "/bin/true") << "--obj supplies the module";
  EXPECT_EQ(r->address, 0x1150u);
}

TEST(LlvmRequest, BadLinesAreRejected) {
  for (const char* line : {"", "CODE", "CODE \"unterminated 0x1", "/bin/true", "/bin/true 0x",
                           "/bin/true 0xzz", "/bin/true 09", "/bin/true 18446744073709551616",
                           "/bin/true 0x10000000000000000", "0x1150"}) {
    EXPECT_FALSE(ParseLlvmRequest(line, "")) << line;
  }
  uint64_t v = 0;
  EXPECT_TRUE(ParseLlvmAddress("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_TRUE(ParseLlvmAddress("0", &v));
  EXPECT_EQ(v, 0u);
}

TEST(LlvmRequest, ModuleAsWrittenForJson) {
  // llvm-symbolizer's JSON "ModuleName": the module as the line wrote it, ":arch" kept, and
  // as far as it was parsed when the line is rejected.
  std::string written = "stale";
  auto r = ParseLlvmRequest("DATA \"/bin/true:x86_64\" 0x10", "", &written);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->module, "/bin/true");
  EXPECT_EQ(written, "/bin/true:x86_64");
  EXPECT_FALSE(ParseLlvmRequest("not a request", "", &written));
  EXPECT_EQ(written, "not");
  EXPECT_FALSE(ParseLlvmRequest("CODE \"unterminated 0x1", "", &written));
  EXPECT_EQ(written, "");
  r = ParseLlvmRequest("0x10", "/bin/true", &written);
  ASSERT_TRUE(r);
  EXPECT_EQ(written, "/bin/true");
}

}  // namespace
}  // namespace stacksym::cli
