// The strict JSON reader/writer and the symbolization API codec: what they accept, what they
// refuse (with a reason), and that what one side writes the other reads back unchanged.
#include "remote/json.h"

#include <gtest/gtest.h>

#include <string>

#include "remote/symbolize_api.h"

namespace stacksym::remote {
namespace {

TEST(Json, AcceptsTheGrammar) {
  Result<JsonValue> v = ParseJson(
      " {\"a\": [1, -2, 3.5e2, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}} ");
  ASSERT_TRUE(v) << v.error().ToString();
  const JsonValue* a = v->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->array().size(), 7u);
  EXPECT_TRUE(a->array()[0].is_uint64());
  EXPECT_EQ(a->array()[0].uint64(), 1u);
  EXPECT_FALSE(a->array()[1].is_uint64());
  EXPECT_EQ(a->array()[1].number(), -2);
  EXPECT_EQ(a->array()[2].number(), 350);
  EXPECT_TRUE(a->array()[3].boolean());
  EXPECT_TRUE(a->array()[5].is_null());
  EXPECT_EQ(a->array()[6].string(), "x\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_TRUE(v->Find("b")->is_object());
}

TEST(Json, IntegersAreExactTo64Bits) {
  Result<JsonValue> v = ParseJson("[18446744073709551615, 18446744073709551616, 9007199254740993]");
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->array()[0].is_uint64());
  EXPECT_EQ(v->array()[0].uint64(), UINT64_MAX);
  EXPECT_FALSE(v->array()[1].is_uint64());  // too big: a plain number
  EXPECT_EQ(v->array()[2].uint64(), 9007199254740993u);
}

TEST(Json, RefusesWhatTheRfcDoesNotAllow) {
  for (const char* bad : {"",
                          "{",
                          "[1,]",
                          "{\"a\":1,}",
                          "01",
                          "1.",
                          ".5",
                          "+1",
                          "1e",
                          "NaN",
                          "'x'",
                          "\"\\x\"",
                          "\"\x01\"",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"\xff\"",
                          "\"\xc0\xaf\"",
                          "\"\xed\xa0\x80\"",
                          "{\"a\":1,\"a\":2}",
                          "[1] [2]",
                          "tru",
                          "nul",
                          "{1:2}",
                          "[1 2]",
                          "\"abc",
                          "/*c*/1"}) {
    Result<JsonValue> v = ParseJson(bad);
    EXPECT_FALSE(v) << "accepted: " << bad;
    if (!v) {
      EXPECT_EQ(v.error().code, ErrorCode::kMalformed);
    }
  }
}

TEST(Json, RefusesDeepNestingWithoutRecursingFar) {
  std::string deep(100000, '[');
  Result<JsonValue> v = ParseJson(deep);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("nested too deeply"), std::string::npos);
  std::string ok = std::string(20, '[') + std::string(20, ']');
  EXPECT_TRUE(ParseJson(ok));
}

TEST(Json, WriterEscapesAndRoundTrips) {
  JsonWriter w;
  w.BeginObject();
  w.Key("s");
  w.String(std::string("q\"b\\n\n\x01\xc3\xa9", 9));
  w.Key("bad");
  w.String("\xff");
  w.Key("list");
  w.BeginArray();
  w.Uint(0);
  w.Uint(UINT64_MAX);
  w.Bool(false);
  w.Null();
  w.EndArray();
  w.EndObject();
  Result<JsonValue> v = ParseJson(w.text());
  ASSERT_TRUE(v) << w.text();
  EXPECT_EQ(v->Find("s")->string(), std::string("q\"b\\n\n\x01\xc3\xa9", 9));
  EXPECT_EQ(v->Find("bad")->string(), "\xef\xbf\xbd");
  EXPECT_EQ(v->Find("list")->array()[1].uint64(), UINT64_MAX);
}

TEST(SymbolizeApi, ParsesARequest) {
  Result<SymbolizeRequest> r = ParseSymbolizeRequest(
      R"({"modules":[{"build_id":"ABcd0123","offsets":[4660,0]}],"inlines":false})");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->modules.size(), 1u);
  EXPECT_EQ(r->modules[0].build_id, (std::vector<uint8_t>{0xab, 0xcd, 0x01, 0x23}));
  EXPECT_EQ(r->modules[0].offsets, (std::vector<uint64_t>{4660, 0}));
  EXPECT_TRUE(r->demangle);
  EXPECT_FALSE(r->inlines);
  Result<SymbolizeRequest> again = ParseSymbolizeRequest(WriteSymbolizeRequest(*r));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->modules[0].offsets, r->modules[0].offsets);
  EXPECT_FALSE(again->inlines);
}

TEST(SymbolizeApi, RefusesBadRequestsWithAReason) {
  struct Case {
    const char* body;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"([])", "must be a JSON object"},
           {R"({})", "needs \"modules\""},
           {R"({"modules":[],"path":"/etc/passwd"})", "unknown field \"path\""},
           {R"({"modules":[{"build_id":"abc","offsets":[]}]})", "invalid build ID"},
           {R"({"modules":[{"build_id":"zz","offsets":[]}]})", "invalid build ID"},
           {R"({"modules":[{"build_id":"ab","offsets":[]}]})", "invalid build ID"},
           {R"({"modules":[{"build_id":7,"offsets":[]}]})", "hex string"},
           {R"({"modules":[{"build_id":"abcd","offsets":[-1]}]})", "integers"},
           {R"({"modules":[{"build_id":"abcd","offsets":[1.5]}]})", "integers"},
           {R"({"modules":[{"build_id":"abcd","offsets":"1"}]})", "array of integers"},
           {R"({"modules":[{"build_id":"abcd","offsets":[],"file":"x"}]})", "unknown field"},
           {R"({"modules":[],"demangle":1})", "true or false"},
       }) {
    Result<SymbolizeRequest> r = ParseSymbolizeRequest(c.body);
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << c.body;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.body << " → " << r.error().message;
  }
  EXPECT_EQ(ParseSymbolizeRequest("{\"modules\":[").error().code, ErrorCode::kMalformed);
}

TEST(SymbolizeApi, LimitsOffsetsPerRequest) {
  RequestLimits limits;
  limits.max_offsets = 3;
  EXPECT_TRUE(ParseSymbolizeRequest(
      R"({"modules":[{"build_id":"abcd","offsets":[1,2]},{"build_id":"abce","offsets":[3]}]})",
      limits));
  Result<SymbolizeRequest> r = ParseSymbolizeRequest(
      R"({"modules":[{"build_id":"abcd","offsets":[1,2]},{"build_id":"abce","offsets":[3,4]}]})",
      limits);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("too many offsets"), std::string::npos);
}

TEST(SymbolizeApi, ResponseRoundTrips) {
  SymbolizeResponse response;
  ModuleAnswer m;
  m.build_id = {1, 2, 3, 4};
  m.offsets = {10, 20, 30};
  FrameSymbols inlined;
  inlined.lines.push_back({"square", "square", "a.c", 6, 62, true});
  inlined.lines.push_back({"ns::f(int)", "_ZN2ns1fEi", "a.c", 10, 3, false});
  m.answers = {inlined, FrameSymbols{Reason::kNoSymbol, {}},
               FrameSymbols{std::nullopt, {{"g", "g", "", 0, 0, false}}}};
  response.modules.push_back(m);
  ModuleAnswer missing;
  missing.build_id = {5, 6};
  missing.message = "no binary with build ID 0506";
  missing.offsets = {1};
  missing.answers = {FrameSymbols{Reason::kNotFound, {}}};
  response.modules.push_back(missing);

  Result<SymbolizeResponse> back = ParseSymbolizeResponse(WriteSymbolizeResponse(response));
  ASSERT_TRUE(back) << back.error().ToString();
  ASSERT_EQ(back->modules.size(), 2u);
  EXPECT_EQ(back->modules[0].offsets, m.offsets);
  ASSERT_EQ(back->modules[0].answers.size(), 3u);
  ASSERT_EQ(back->modules[0].answers[0].lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const SourceFrame& x = back->modules[0].answers[0].lines[i];
    const SourceFrame& y = inlined.lines[i];
    EXPECT_EQ(x.function, y.function);
    EXPECT_EQ(x.raw_function, y.raw_function);
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.line, y.line);
    EXPECT_EQ(x.column, y.column);
    EXPECT_EQ(x.inlined, y.inlined);
  }
  EXPECT_EQ(back->modules[0].answers[1].reason, Reason::kNoSymbol);
  EXPECT_EQ(back->modules[0].answers[2].lines[0].function, "g");
  EXPECT_EQ(back->modules[1].message, missing.message);
  EXPECT_EQ(back->modules[1].answers[0].reason, Reason::kNotFound);
}

TEST(SymbolizeApi, RefusesAnswersThatAreNeitherFramesNorReason) {
  EXPECT_FALSE(
      ParseSymbolizeResponse(R"({"modules":[{"build_id":"abcd","answers":[{"offset":1}]}]})"));
  EXPECT_FALSE(ParseSymbolizeResponse(
      R"({"modules":[{"build_id":"abcd","answers":[{"offset":1,"reason":"made_up"}]}]})"));
  EXPECT_FALSE(ParseSymbolizeResponse(
      R"({"modules":[{"build_id":"abcd","answers":[{"offset":1,"frames":[{"line":-3}]}]}]})"));
  EXPECT_TRUE(ParseSymbolizeResponse(
      R"({"modules":[{"build_id":"abcd","answers":[{"offset":1,"reason":"no_symbol"}]}]})"));
}

}  // namespace
}  // namespace stacksym::remote
