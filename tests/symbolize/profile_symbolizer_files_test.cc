// The profile symbolizer on a normalized-only profile, as `symbolize-profile` runs it: the
// binary is found by build ID (in a debug dir or at the recorded path) and the answers agree
// with addr2line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "stacksym/elf.h"
#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/output_symbolize_target";

std::string RunCommand(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// addr2line -f -i: the inline chain (innermost first) of function names at vaddr.
std::vector<std::string> Addr2lineFunctions(uint64_t vaddr) {
  std::string out = RunCommand("addr2line -f -i -e " + kFixture + " " + Hex(vaddr));
  std::vector<std::string> names;
  size_t pos = 0;
  for (int line = 0; pos < out.size(); ++line) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    if (line % 2 == 0) names.push_back(out.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return names;
}

class ProfileSymbolizerFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto elf = ElfFile::Open(kFixture);
    ASSERT_TRUE(elf) << elf.error().ToString();
    elf_ = *elf;
    build_id_.assign(elf_->build_id().begin(), elf_->build_id().end());
    ASSERT_FALSE(build_id_.empty());
    const ElfSymbol* leaf = elf_->symbols().FindByName("hot_leaf");
    ASSERT_NE(leaf, nullptr);
    leaf_vaddr_ = leaf->address + 1;
    // The call to hot_leaf inside outer_caller lies in the inlined inlined_step.
    std::string dis = RunCommand("objdump -d --no-show-raw-insn " + kFixture +
                                 " | awk '/<outer_caller>:/,/^$/' | grep 'call.*<hot_leaf>'");
    ASSERT_FALSE(dis.empty()) << "objdump found no call to hot_leaf in outer_caller";
    call_vaddr_ = std::stoull(dis.substr(0, dis.find(':')), nullptr, 16);
  }

  Profile MakeProfile(const std::string& module_path, std::vector<uint8_t> build_id) {
    Profile p;
    uint32_t m = p.AddModule({ModuleKind::kElf, module_path, std::move(build_id)});
    uint32_t leaf = p.InternFrame({FrameKind::kUser, m, *elf_->VaddrToFileOffset(leaf_vaddr_)});
    uint32_t call = p.InternFrame({FrameKind::kUser, m, *elf_->VaddrToFileOffset(call_vaddr_)});
    p.AddSample({7, 7, "target", {leaf, call}}, 9);
    p.symbols.resize(p.frames.size());
    return p;
  }

  void ExpectAgreesWithAddr2line(const Profile& p) {
    ASSERT_EQ(p.symbols.size(), 2u);
    ASSERT_TRUE(p.symbols[0]);
    ASSERT_FALSE(p.symbols[0]->lines.empty());
    EXPECT_EQ(p.symbols[0]->lines.back().function, "hot_leaf");
    ASSERT_TRUE(p.symbols[1]);
    ASSERT_FALSE(p.symbols[1]->lines.empty());
    EXPECT_EQ(p.symbols[1]->lines.back().function, "outer_caller");
    // With DWARF, the whole inline chain matches addr2line -i (call address - 1: the call
    // instruction itself, as a return address would be adjusted).
    std::vector<std::string> expected = Addr2lineFunctions(call_vaddr_);
    std::vector<std::string> got;
    for (const SourceFrame& f : p.symbols[1]->lines) got.push_back(f.function);
    if (!p.symbols[1]->lines.front().file.empty()) {
      EXPECT_EQ(got, expected);
    } else {
      ADD_FAILURE() << "no DWARF answer for a binary built with -g; addr2line says "
                    << ::testing::PrintToString(expected);
    }
  }

  std::shared_ptr<ElfFile> elf_;
  std::vector<uint8_t> build_id_;
  uint64_t leaf_vaddr_ = 0, call_vaddr_ = 0;
};

TEST_F(ProfileSymbolizerFilesTest, FindsTheBinaryByBuildIdInADebugDir) {
  std::string dir =
      ::testing::TempDir() + "/profile-symbolizer-build-id-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::string id = ToHex(build_id_);
  std::filesystem::create_directories(dir + "/.build-id/" + id.substr(0, 2));
  std::filesystem::copy_file(kFixture,
                             dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
  Profile p = MakeProfile("/gone/after/the/recording", build_id_);
  ProfileSymbolizeOptions options;
  options.symbolize.debug_dirs = {dir};
  ProfileSymbolizeStats stats = SymbolizeProfile(p, options);
  EXPECT_EQ(stats.frames, 2u);
  EXPECT_EQ(stats.symbolized, 2u);
  EXPECT_EQ(stats.modules_found, 1u);
  ExpectAgreesWithAddr2line(p);

  // And it survives the trip through pprof.
  Result<std::string> encoded = EncodePprof(p);
  ASSERT_TRUE(encoded);
  Result<Profile> back =
      DecodePprof({reinterpret_cast<const uint8_t*>(encoded->data()), encoded->size()});
  ASSERT_TRUE(back);
  ExpectAgreesWithAddr2line(*back);
}

TEST_F(ProfileSymbolizerFilesTest, UsesTheRecordedPathWhenTheBuildIdMatches) {
  Profile p = MakeProfile(kFixture, build_id_);
  ProfileSymbolizeOptions options;
  options.symbolize.debug_dirs = {};
  ProfileSymbolizeStats stats = SymbolizeProfile(p, options);
  EXPECT_EQ(stats.modules_found, 1u);
  ExpectAgreesWithAddr2line(p);
}

TEST_F(ProfileSymbolizerFilesTest, RefusesAFileWithAnotherBuildId) {
  std::vector<uint8_t> other = build_id_;
  other[0] ^= 0xff;
  Profile p = MakeProfile(kFixture, other);
  ProfileSymbolizeOptions options;
  options.symbolize.debug_dirs = {};
  ProfileSymbolizeStats stats = SymbolizeProfile(p, options);
  EXPECT_EQ(stats.modules_found, 0u);
  EXPECT_EQ(stats.modules_missing, 1u);
  EXPECT_EQ(stats.symbolized, 0u);
  ASSERT_EQ(stats.messages.size(), 1u);
  EXPECT_NE(stats.messages[0].find(kFixture + ": has build ID " + ToHex(build_id_)),
            std::string::npos)
      << stats.messages[0];
  for (const auto& s : p.symbols) {
    ASSERT_TRUE(s);
    EXPECT_EQ(s->reason, Reason::kNotFound);
  }
}

}  // namespace
}  // namespace stacksym
