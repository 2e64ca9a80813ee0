#include "stacksym/result.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "stacksym/reason.h"

namespace stacksym {
namespace {

Result<int> Parse(bool good) {
  if (!good) return Error(ErrorCode::kMalformed, "bad header").WithFile("a.out").WithOffset(16);
  return 42;
}

TEST(Result, ValueAndError) {
  auto good = Parse(true);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  auto bad = Parse(false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kMalformed);
  EXPECT_EQ(bad.error().ToString(), "a.out: offset 0x10: bad header");
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(Result, ErrnoMapping) {
  EXPECT_EQ(ErrnoError(ENOENT, "open x").code, ErrorCode::kNotFound);
  EXPECT_EQ(ErrnoError(EACCES, "open x").code, ErrorCode::kPermission);
  EXPECT_EQ(ErrnoError(EIO, "read x").code, ErrorCode::kIo);
}

TEST(Reason, NamesAreStableAndDistinct) {
  EXPECT_STREQ(ReasonName(Reason::kNoSymbol), "no_symbol");
  EXPECT_STRNE(ReasonText(Reason::kNoSymbol), ReasonText(Reason::kNoSymbols));
}

}  // namespace
}  // namespace stacksym
