// The option structs the modules take: every list of debug directories starts as the one
// default (kDefaultDebugDir).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dwarf/debug_file_finder.h"
#include "remote/symbol_service.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

TEST(OptionsTest, EveryDebugDirListStartsAsTheDefaultOne) {
  const std::vector<std::string> expected = {"/usr/lib/debug"};
  EXPECT_EQ(std::string(kDefaultDebugDir), "/usr/lib/debug");
  EXPECT_EQ(SymbolizeOptions{}.debug_dirs, expected);
  EXPECT_EQ(OfflineSymbolizeOptions{}.debug_dirs, expected);
  EXPECT_EQ(SymbolServerOptions{}.debug_dirs, expected);
  EXPECT_EQ(remote::SymbolServiceOptions{}.debug_dirs, expected);
  EXPECT_EQ(DebugFileFinder().debug_dirs(), expected);
}

}  // namespace
}  // namespace stacksym
