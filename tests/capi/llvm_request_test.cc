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

TEST(LlvmRequest, AddressBasesAsLlvm16) {
  // llvm/test/tools/llvm-symbolizer/input-base.test: StringRef::getAsInteger(0)'s prefixes.
  for (const char* text :
       {"0x1234", "0X1234", "4660", "011064", "0b1001000110100", "0B1001000110100", "0o11064"}) {
    uint64_t v = 0;
    EXPECT_TRUE(ParseLlvmAddress(text, &v)) << text;
    EXPECT_EQ(v, 0x1234u) << text;
  }
  uint64_t v = 0;
  for (const char* bad : {"0O1234", "0b", "0x", "0o", "0b2", "0o8", "09", "0a", "0x1g", ""})
    EXPECT_FALSE(ParseLlvmAddress(bad, &v)) << bad;
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

TEST(LlvmRequest, FileAndBuildIdPrefixesAsLlvm16) {
  std::string written;
  auto r = ParseLlvmRequest("DATA BUILDID:\"0aBc\" 0x10", "", &written);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->command, LlvmCommand::kData);
  EXPECT_EQ(r->build_id, (std::vector<uint8_t>{0x0a, 0xbc}));
  EXPECT_EQ(r->module, "0ABC") << "a build ID's module is its hex in capitals";
  EXPECT_EQ(written, "0ABC");
  r = ParseLlvmRequest("BUILDID:f 1", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->build_id, (std::vector<uint8_t>{0x0f})) << "an odd count: a leading 0";
  EXPECT_EQ(r->module, "0F");
  r = ParseLlvmRequest("CODE FILE:/bin/true:x86_64 0x10", "", &written);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->build_id.empty());
  EXPECT_EQ(r->module, "/bin/true");
  EXPECT_EQ(written, "/bin/true:x86_64");
  // A prefix only right after the command: after a delimiter it is part of the file name.
  r = ParseLlvmRequest("CODE  FILE:/bin/true 0x10", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->module, "FILE:/bin/true");
  for (const char* line : {"BUILDID:zz 0x1", "BUILDID: 0x1", "BUILDID:0x12 0x1",
                           "FILE:BUILDID:00 0x1", "BUILDID:FILE:00 0x1", "BUILDID:BUILDID:00 0x1",
                           "FILE:FILE:/bin/true 0x1", "BUILDID:00:x86_64 0x1"}) {
    EXPECT_FALSE(ParseLlvmRequest(line, "", &written)) << line;
  }
  EXPECT_FALSE(ParseLlvmRequest("BUILDID:zz 0x1", "", &written));
  EXPECT_EQ(written, "zz") << "JSON's ModuleName of a build ID that does not parse";
}

TEST(LlvmRequest, DefaultBuildIdTakesAddressesAlone) {
  const std::vector<uint8_t> id = {0xf6, 0xe9};
  std::string written = "stale";
  auto r = ParseLlvmRequest("0x1050", "", &written, id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->build_id, id);
  EXPECT_EQ(r->module, "F6E9");
  EXPECT_EQ(written, "F6E9");
  EXPECT_FALSE(ParseLlvmRequest("FILE:/bin/true 0x1", "", &written, id));
  EXPECT_EQ(written, "") << "llvm-symbolizer names no module for a line that does not parse";
}

TEST(LlvmRequest, BuildIdHex) {
  EXPECT_EQ(ParseLlvmBuildId("00FFab"), (std::vector<uint8_t>{0x00, 0xff, 0xab}));
  EXPECT_EQ(ParseLlvmBuildId("abc"), (std::vector<uint8_t>{0x0a, 0xbc}));
  EXPECT_FALSE(ParseLlvmBuildId(""));
  EXPECT_FALSE(ParseLlvmBuildId("0g"));
  EXPECT_FALSE(ParseLlvmBuildId("g"));
  EXPECT_EQ(LlvmBuildIdName(std::vector<uint8_t>{0x0a, 0xbc, 0xff}), "0ABCFF");
}

TEST(LlvmRequest, DebuginfodCacheNamesAsLlvm16) {
  // XXH64's published values; the cache name's 58-byte key takes the 32-byte stripes too.
  EXPECT_EQ(LlvmXxh64(""), 0xef46db3751d8e999ull);
  EXPECT_EQ(LlvmXxh64("a"), 0xd24ec4f1a98c6e5bull);
  EXPECT_EQ(LlvmXxh64("abc"), 0x44bc2cf5ad770999ull);
  // llvm/test/tools/llvm-symbolizer/debuginfod.test's cache file for addr.exe.
  std::optional<std::vector<uint8_t>> id =
      ParseLlvmBuildId("127da749021c1fc1a58cba734a1f542cbe2b7ce4");
  ASSERT_TRUE(id);
  EXPECT_EQ(LlvmDebuginfodCacheName(*id), "llvmcache-9800707741016212219");
}

}  // namespace
}  // namespace stacksym::cli
