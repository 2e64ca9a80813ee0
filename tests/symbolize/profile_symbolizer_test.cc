// The symbolize-once pass: every distinct frame gets an answer (symbols or a Reason), user
// frames by file offset through the module's file (handed in, by path, or missing), kernel
// frames through kallsyms; names and lines are checked against addr2line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "stacksym/elf.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/capture_app";

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  return out;
}

struct Fn {
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;
};

Fn FindFunction(const ElfFile& elf, const std::string& name) {
  const ElfSymbol* s = elf.symbols().FindByName(name);
  if (s == nullptr) return {};
  return {s->address, elf.VaddrToFileOffset(s->address).value_or(0)};
}

TEST(SymbolizeProfileTest, UserFramesMatchAddr2line) {
  auto elf = ElfFile::Open(kFixture);
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  Profile p;
  std::vector<uint8_t> id((*elf)->build_id().begin(), (*elf)->build_id().end());
  uint32_t m = p.AddModule({ModuleKind::kElf, kFixture, id});
  std::vector<uint32_t> frames;
  std::vector<std::string> names = {"cap_hot_leaf", "cap_middle_b", "cap_outer_a", "main"};
  std::vector<uint64_t> vaddrs;
  for (const std::string& n : names) {
    Fn fn = FindFunction(**elf, n);
    ASSERT_NE(fn.vaddr, 0u) << n;
    vaddrs.push_back(fn.vaddr + 4);
    frames.push_back(p.InternFrame({FrameKind::kUser, m, fn.file_offset + 4}));
  }
  // The same frames in many stacks: still one answer per frame.
  for (int i = 0; i < 50; ++i) {
    p.AddSample({.pid = 1, .tid = static_cast<uint32_t>(i), .comm = "x", .frames = frames}, 1);
  }
  ProfileSymbolizeStats st = SymbolizeProfile(p);
  EXPECT_EQ(st.frames, names.size());
  EXPECT_EQ(st.symbolized, names.size());
  EXPECT_EQ(st.modules_found, 1u);
  ASSERT_EQ(p.symbols.size(), p.frames.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& s = p.symbols[frames[i]];
    ASSERT_TRUE(s.has_value());
    ASSERT_FALSE(s->reason.has_value()) << names[i];
    ASSERT_FALSE(s->lines.empty());
    EXPECT_EQ(s->lines.back().function, names[i]);
    // addr2line: "function\nfile:line\n"
    char hex[32];
    snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(vaddrs[i]));
    std::string out = RunCommand("addr2line -f -e " + kFixture + " " + hex);
    size_t nl = out.find('\n');
    ASSERT_NE(nl, std::string::npos) << out;
    EXPECT_EQ(out.substr(0, nl), names[i]);
    size_t colon = out.rfind(':');
    if (s->lines.front().line != 0 && colon != std::string::npos) {
      EXPECT_EQ(std::to_string(s->lines.front().line),
                out.substr(colon + 1, out.find_first_of(" \n", colon) - colon - 1))
          << names[i];
    }
  }
}

TEST(SymbolizeProfileTest, HandedInFileWinsOverMissingPath) {
  auto elf = ElfFile::Open(kFixture);
  ASSERT_TRUE(elf.ok());
  Profile p;
  std::vector<uint8_t> id((*elf)->build_id().begin(), (*elf)->build_id().end());
  uint32_t gone = p.AddModule({ModuleKind::kElf, "/nonexistent/deleted_binary", id});
  Fn fn = FindFunction(**elf, "cap_outer_a");
  uint32_t f = p.InternFrame({FrameKind::kUser, gone, fn.file_offset});
  p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = {f}}, 1);

  Profile without = p;
  SymbolizeProfile(without);
  ASSERT_TRUE(without.symbols[f].has_value());
  EXPECT_TRUE(without.symbols[f]->reason.has_value()) << "a vanished file cannot be read";

  p.files.Keep(p.modules[gone], *elf);
  SymbolizeProfile(p);
  ASSERT_TRUE(p.symbols[f].has_value());
  ASSERT_FALSE(p.symbols[f]->reason.has_value());
  EXPECT_EQ(p.symbols[f]->lines.back().function, "cap_outer_a");
}

// A handed-in file (as the recorder keeps them, opened through map_files) whose DWARF is in a
// .gnu_debuglink file next to the path the process mapped it by, not next to the file's own
// path: the module's path leads to the debug file.
TEST(SymbolizeProfileTest, HandedInFileFindsDebuglinkNextToItsMappedPath) {
  std::string tmp =
      ::testing::TempDir() + "/symbolize_profile_debuglink_" + std::to_string(getpid());
  std::string fixtures = STACKSYM_FIXTURE_DIR;
  ASSERT_EQ(std::system(("rm -rf '" + tmp + "' && mkdir -p '" + tmp + "/kept' '" + tmp +
                         "/mapped' && cp '" + fixtures + "/process_target.stripped' '" + tmp +
                         "/kept/copy' && cp '" + fixtures + "/process_target.debug' '" + tmp +
                         "/mapped/'")
                            .c_str()),
            0);
  auto elf = ElfFile::Open(tmp + "/kept/copy");
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  Fn fn = FindFunction(**elf, "process_target_work");
  ASSERT_NE(fn.vaddr, 0u);
  std::vector<uint8_t> id((*elf)->build_id().begin(), (*elf)->build_id().end());
  for (bool known : {true, false}) {
    SCOPED_TRACE(known ? "mapped path next to the debug file" : "mapped path elsewhere");
    Profile p;
    std::string mapped = tmp + (known ? "/mapped/process_target" : "/elsewhere/process_target");
    uint32_t m = p.AddModule({ModuleKind::kElf, mapped, id});
    uint32_t f = p.InternFrame({FrameKind::kUser, m, fn.file_offset + 1});
    p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = {f}}, 1);
    p.files.Keep(p.modules[m], *elf);
    ProfileSymbolizeOptions opts;
    opts.symbolize.debug_dirs = {};
    SymbolizeProfile(p, opts);
    ASSERT_TRUE(p.symbols[f].has_value());
    ASSERT_FALSE(p.symbols[f]->reason.has_value());
    EXPECT_EQ(p.symbols[f]->lines.back().function, "process_target_work");
    if (known) {
      EXPECT_NE(p.symbols[f]->lines.back().file.find("process_target.c"), std::string::npos);
      EXPECT_GT(p.symbols[f]->lines.back().line, 0u);
    } else {
      EXPECT_EQ(p.symbols[f]->lines.back().file, "") << "only the symbol table is there";
    }
  }
  std::system(("rm -rf '" + tmp + "'").c_str());
}

TEST(SymbolizeProfileTest, WrongBuildIdIsNotTrusted) {
  Profile p;
  uint32_t m = p.AddModule({ModuleKind::kElf, kFixture, {0xde, 0xad, 0xbe, 0xef}});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, 0x1000});
  p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = {f}}, 1);
  ProfileSymbolizeOptions opts;
  opts.symbolize.debug_dirs = {};
  ProfileSymbolizeStats st = SymbolizeProfile(p, opts);
  EXPECT_EQ(st.modules_missing, 1u);
  ASSERT_TRUE(p.symbols[f] && p.symbols[f]->reason);
  EXPECT_EQ(*p.symbols[f]->reason, Reason::kNotFound);
}

TEST(SymbolizeProfileTest, RawAndKernelFrames) {
  Profile p;
  uint32_t raw = p.InternFrame({FrameKind::kUserRaw, 0, 0x7f0000001234});
  // A kernel text symbol from kallsyms, if addresses are visible.
  std::ifstream kallsyms("/proc/kallsyms");
  std::string line;
  uint64_t addr = 0;
  std::string want;
  while (std::getline(kallsyms, line)) {
    unsigned long long a;
    char type;
    char name[256];
    if (sscanf(line.c_str(), "%llx %c %255s", &a, &type, name) == 3 &&
        std::string(name) == "vfs_read") {
      addr = a;
      want = name;
      break;
    }
  }
  std::vector<uint32_t> frames = {raw};
  uint32_t k = UINT32_MAX;
  if (addr != 0) {
    uint32_t km = p.AddModule({ModuleKind::kKernel, "[kernel.kallsyms]", {}});
    k = p.InternFrame({FrameKind::kKernel, km, addr + 1});
    frames.insert(frames.begin(), k);
  }
  p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = frames}, 1);
  SymbolizeProfile(p);
  ASSERT_TRUE(p.symbols[raw] && p.symbols[raw]->reason);
  EXPECT_EQ(*p.symbols[raw]->reason, Reason::kUnmapped);
  if (addr == 0) GTEST_SKIP() << "kallsyms hides addresses here (kptr_restrict, not root)";
  ASSERT_TRUE(p.symbols[k].has_value());
  ASSERT_FALSE(p.symbols[k]->reason.has_value());
  EXPECT_EQ(p.symbols[k]->lines.back().function, want);
}

// The session's bound on kept symbolizers holds module by module: a window that meets many new
// binaries (a build host's) holds at most the bound and the module at hand, not all of them
// until it ends; the answers are those of a session that kept everything.
TEST(ProfileSymbolizerTest, CacheBoundHoldsWithinOneProfile) {
  Profile p;
  std::vector<uint32_t> frames;
  for (const char* name : {"capture_app", "process_target", "output_symbolize_target"}) {
    std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf.ok()) << elf.error().ToString();
    std::vector<uint8_t> id((*elf)->build_id().begin(), (*elf)->build_id().end());
    Fn fn = FindFunction(**elf, "main");
    ASSERT_NE(fn.vaddr, 0u) << name;
    uint32_t m = p.AddModule({ModuleKind::kElf, path, id});
    frames.push_back(p.InternFrame({FrameKind::kUser, m, fn.file_offset}));
  }
  p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = frames}, 1);
  ProfileSymbolizeOptions options;
  options.kallsyms_path.clear();
  Profile kept_all = p;
  ProfileSymbolizer unbounded(options);
  unbounded.Symbolize(kept_all);
  ASSERT_EQ(unbounded.cached_symbolizers(), 3u);
  EXPECT_EQ(unbounded.peak_cached_bytes(), unbounded.cached_bytes());

  ProfileSymbolizer bounded(options, /*max_cached_bytes=*/1);
  bounded.Symbolize(p);
  EXPECT_EQ(bounded.cached_symbolizers(), 1u);
  EXPECT_GT(bounded.peak_cached_bytes(), 0u);
  EXPECT_LT(bounded.peak_cached_bytes(), unbounded.cached_bytes())
      << "all three symbolizers were held at once";
  for (uint32_t f : frames) {
    ASSERT_TRUE(p.symbols[f] && kept_all.symbols[f]);
    ASSERT_FALSE(p.symbols[f]->lines.empty());
    EXPECT_EQ(p.symbols[f]->lines.back().function, "main");
    EXPECT_EQ(p.symbols[f]->lines.back().function, kept_all.symbols[f]->lines.back().function);
  }
}

}  // namespace
}  // namespace stacksym
