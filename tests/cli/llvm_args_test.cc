// The drop-in's command line as LLVM 16's llvm-symbolizer reads it (its option table): GNU
// tokens for LLVM_SYMBOLIZER_OPTS and @FILE response files, one-letter groups ("-apCie=FILE"),
// and the "unknown argument" messages with LLVM's suggestions. The expected values are what
// llvm-symbolizer-16 does with the same arguments (tests/conformance runs LLVM's own tests).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "llvm_symbolizer_args.h"

namespace stacksym::cli {
namespace {

using Args = std::vector<std::string>;

bool IsName(std::string_view name) {
  return name == "inlines" || name == "obj" || name == "demangle" || name == "functions";
}

TEST(LlvmArgs, GnuTokens) {
  EXPECT_EQ(TokenizeGnuCommandLine("  0 1\t--verbose\n"), (Args{"0", "1", "--verbose"}));
  EXPECT_EQ(TokenizeGnuCommandLine("\"some text\" 'some text2'"),
            (Args{"some text", "some text2"}));
  EXPECT_EQ(TokenizeGnuCommandLine("a\\ b \"c\\\"d\" 'e\\f' g\"h i\"j"),
            (Args{"a b", "c\"d", "ef", "gh ij"}));
  EXPECT_EQ(TokenizeGnuCommandLine(""), Args{});
}

TEST(LlvmArgs, ResponseFiles) {
  char dir[] = "/tmp/llvm_args_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string outer = std::string(dir) + "/outer.rsp", inner = std::string(dir) + "/inner.rsp";
  std::string self = std::string(dir) + "/self.rsp";
  auto write = [](const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write(inner, "--obj=x \"some text\"\n");
  write(outer, "-a @" + inner + " 0x10");
  write(self, "1 @" + self);
  EXPECT_EQ(ExpandResponseFiles({"-C", "@" + outer, "2"}),
            (Args{"-C", "-a", "--obj=x", "some text", "0x10", "2"}));
  // A file that cannot be read stays an argument; one that names itself is not read again.
  EXPECT_EQ(ExpandResponseFiles({"@/nonexistent/x.rsp"}), Args{"@/nonexistent/x.rsp"});
  EXPECT_EQ(ExpandResponseFiles({"@" + self}), (Args{"1", "@" + self}));
  EXPECT_EQ(ExpandResponseFiles({"@"}), Args{"@"});
  std::remove(outer.c_str());
  std::remove(inner.c_str());
  std::remove(self.c_str());
  rmdir(dir);
}

TEST(LlvmArgs, ShortGroupsAsOptTable) {
  // llvm/test/tools/llvm-symbolizer/flag-grouping.test's four spellings.
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-apCi", "--obj=F"}, IsName),
            (Args{"-a", "-p", "-C", "-i", "--obj=F"}));
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-apCie", "F"}, IsName),
            (Args{"-a", "-p", "-C", "-i", "-e", "F"}));
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-apCie=F"}, IsName),
            (Args{"-a", "-p", "-C", "-i", "--obj=F"}));
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-apCieF"}, IsName),
            (Args{"-a", "-p", "-C", "-i", "--obj=F"}));
  // -e=FILE alone: the '=' is not part of the file name.
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-e=/tmp/a.o"}, IsName), Args{"--obj=/tmp/a.o"});
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-f=short", "-Cf=none"}, IsName),
            (Args{"--functions=short", "-C", "--functions=none"}));
  // Unknown letters one by one; a flag given a value stays whole (both unknown later).
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-xay"}, IsName), (Args{"-x", "-a", "-y"}));
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-pa=1"}, IsName), (Args{"-p", "-a=1"}));
  // Whole option names with one dash (LLVM 14's spelling) and everything else untouched.
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-inlines", "-obj=F", "-demangle=false"}, IsName),
            (Args{"-inlines", "-obj=F", "-demangle=false"}));
  EXPECT_EQ(SplitLlvmShortGroups(Args{"-e", "-a", "--pretty-print", "-", "0x10", "a-b"}, IsName),
            (Args{"-e", "-a", "--pretty-print", "-", "0x10", "a-b"}));
}

TEST(LlvmArgs, UnknownArgumentMessagesAsLlvm16) {
  // llvm/test/tools/llvm-symbolizer/unknown-argument.test, and the real tool's answers.
  EXPECT_EQ(LlvmUnknownArgumentMessage("-x"), "unknown argument '-x'");
  EXPECT_EQ(LlvmUnknownArgumentMessage("--flag"), "unknown argument '--flag'");
  EXPECT_EQ(LlvmUnknownArgumentMessage("--inline"),
            "unknown argument '--inline', did you mean '--inlines'?");
  EXPECT_EQ(LlvmUnknownArgumentMessage("--ob=x"),
            "unknown argument '--ob=x', did you mean '--obj=x'?");
  EXPECT_EQ(LlvmUnknownArgumentMessage("--inlinez=1"), "unknown argument '--inlinez=1'");
  EXPECT_EQ(LlvmUnknownArgumentMessage("-y"), "unknown argument '-y'");  // not "-a": too short
}

TEST(LlvmArgs, Llvm16Spellings) {
  EXPECT_TRUE(IsLlvm16Option("--color"));
  EXPECT_TRUE(IsLlvm16Option("--color=always"));
  EXPECT_TRUE(IsLlvm16Option("--filter-markup"));
  EXPECT_TRUE(IsLlvm16Option("-demangle=false"));
  EXPECT_FALSE(IsLlvm16Option("--colour"));
  EXPECT_FALSE(IsLlvm16Option("-demangle=maybe"));
}

TEST(LlvmArgs, ColorValues) {
  EXPECT_EQ(ParseLlvmColor("always"), LlvmColor::kAlways);
  EXPECT_EQ(ParseLlvmColor("never"), LlvmColor::kNever);
  EXPECT_EQ(ParseLlvmColor("auto"), LlvmColor::kAuto);
  EXPECT_FALSE(ParseLlvmColor(""));
  EXPECT_FALSE(ParseLlvmColor("Always"));
  EXPECT_FALSE(ParseLlvmColor("yes"));
}

}  // namespace
}  // namespace stacksym::cli
