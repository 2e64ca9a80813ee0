// The drop-in's --print-source-context-lines and pretty JSON layouts, on texts whose answers
// llvm-symbolizer 14 and 16 gave for the same lines (the install test `install_dropin`
// compares whole runs with them): LLVM's number width (one short at 10, 100, ...), the marked
// line, files shorter than the window, CRLF and a missing last newline; JSON members and
// elements a line each, empty containers kept on one line, strings left alone.
#include <gtest/gtest.h>

#include <string>

#include "llvm_json_pretty.h"
#include "llvm_source_context.h"

namespace stacksym::cli {
namespace {

std::string Numbered(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) text += "line" + std::to_string(i) + "\n";
  return text;
}

TEST(LlvmSourceContextTest, WindowStartsHalfBeforeTheLineAndMarksIt) {
  EXPECT_EQ(FormatSourceContext(Numbered(20), 5, 3), "4  : line4\n5 >: line5\n6  : line6\n");
  // An even count: lines/2 before, the rest after.
  EXPECT_EQ(FormatSourceContext(Numbered(20), 5, 4),
            "3  : line3\n4  : line4\n5 >: line5\n6  : line6\n");
  EXPECT_EQ(FormatSourceContext(Numbered(20), 1, 3), "1 >: line1\n2  : line2\n3  : line3\n");
  EXPECT_EQ(FormatSourceContext(Numbered(20), 7, 1), "7 >: line7\n");
}

TEST(LlvmSourceContextTest, WidthIsCeilLog10OfTheLastLine) {
  // Last line 10: log10 is 1, so the 9 is not padded to the 10's width (as LLVM prints it).
  EXPECT_EQ(FormatSourceContext(Numbered(20), 9, 3), "8  : line8\n9 >: line9\n10  : line10\n");
  // Last line 11: two columns.
  EXPECT_EQ(FormatSourceContext(Numbered(20), 10, 3), " 9  : line9\n10 >: line10\n11  : line11\n");
  // Last line 1: width 0.
  EXPECT_EQ(FormatSourceContext("only\n", 1, 1), "1 >: only\n");
}

TEST(LlvmSourceContextTest, ShortFilesCrlfAndNoLastNewline) {
  EXPECT_EQ(FormatSourceContext("a\nb\n", 2, 5), "1  : a\n2 >: b\n");
  EXPECT_EQ(FormatSourceContext("a\r\nb\r\nc", 2, 3), "1  : a\n2 >: b\n3  : c\n");
  // The window starts past the end: nothing.
  EXPECT_EQ(FormatSourceContext("a\nb\n", 9, 3), "");
  // It starts on the empty line after the last newline: nothing printed either.
  EXPECT_EQ(FormatSourceContext("a\nb\n", 4, 3), "");
  EXPECT_EQ(FormatSourceContext("", 1, 3), "");
  // Line 0 (unknown): the first lines, none marked.
  EXPECT_EQ(FormatSourceContext(Numbered(5), 0, 2), "1  : line1\n2  : line2\n");
  EXPECT_EQ(FormatSourceContext(Numbered(5), 3, 0), "");
  EXPECT_EQ(FormatSourceContext(Numbered(5), 3, -1), "");
}

TEST(LlvmSourceContextTest, UnreadableFilesGiveNothing) {
  LlvmSourceContext context(3);
  EXPECT_EQ(context.Around("/nonexistent/file.c", 3), "");
  EXPECT_EQ(context.Around("/", 3), "");  // a directory
  EXPECT_EQ(LlvmSourceContext(0).Around("/proc/self/status", 1), "");
}

TEST(LlvmJsonPrettyTest, MembersAndElementsOneALine) {
  std::string out;
  AppendPrettyJson(R"({"a":[1,{"b":"x"}],"c":{},"d":[],"e":{"f":2}})", 0, &out);
  EXPECT_EQ(out,
            "{\n"
            "  \"a\": [\n"
            "    1,\n"
            "    {\n"
            "      \"b\": \"x\"\n"
            "    }\n"
            "  ],\n"
            "  \"c\": {},\n"
            "  \"d\": [],\n"
            "  \"e\": {\n"
            "    \"f\": 2\n"
            "  }\n"
            "}");
}

TEST(LlvmJsonPrettyTest, StringsKeepTheirPunctuationAndEscapes) {
  std::string out;
  AppendPrettyJson(R"({"k":"a,b:{c}[d] \"q\" \\","n":0})", 2, &out);
  EXPECT_EQ(out, "{\n    \"k\": \"a,b:{c}[d] \\\"q\\\" \\\\\",\n    \"n\": 0\n  }");
}

}  // namespace
}  // namespace stacksym::cli
