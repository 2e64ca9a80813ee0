// PLT stubs through the symbolizer: named "puts@plt" (perf's way) by default — directly, from a
// persisted index, by `symbolize elf`, and by the profile symbolizer locally and through a
// server, alike — and left unnamed with SymbolizeOptions::plt_names off, which the
// llvm-symbolizer drop-in uses: there it answers a PLT address as llvm-symbolizer does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stacksym/demangle.h"
#include "stacksym/elf.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"
#include "stacksym/symbolize_profile.h"
#include "test_util.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using testing::FixturePath;
using testing::Hex;
using testing::RunCommand;

const char* const kFixtures[] = {"elf_plt_lazy", "elf_plt_ibt_now", "elf_plt_nopie"};

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

// The first, a middle and the last address of every stub, and the name each must get.
struct Probe {
  uint64_t vaddr;
  std::string name;
};
std::vector<Probe> Probes(const ElfFile& elf) {
  std::vector<Probe> probes;
  for (const ElfSymbol& s : elf.plt_symbols().symbols()) {
    for (uint64_t a : {s.address, s.address + s.size / 2, s.address + s.size - 1}) {
      probes.push_back({a, std::string(s.name)});
    }
  }
  return probes;
}

std::string TempDir(const std::string& tag) {
  std::string dir = ::testing::TempDir() + "/plt-" + tag + "-" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(PltSymbolize, NamesStubsDirectlyAndFromTheIndexAlike) {
  std::string cache = TempDir("cache");
  for (const char* fixture : kFixtures) {
    SCOPED_TRACE(fixture);
    std::string path = FixturePath(fixture);
    std::shared_ptr<ElfFile> elf = OpenOrDie(path);
    ASSERT_NE(elf, nullptr);
    std::vector<Probe> probes = Probes(*elf);
    ASSERT_GE(probes.size(), 4u * 3);
    std::vector<uint64_t> addresses;
    for (const Probe& p : probes) addresses.push_back(p.vaddr);

    auto direct = ElfSymbolizer::Open(path);
    ASSERT_TRUE(direct.ok());
    std::vector<SymbolizedAddress> batch =
        (*direct)->SymbolizeBatch(addresses, AddressKind::kVirtual);
    SymbolizeOptions indexed_options;
    indexed_options.cache_dir = cache;
    for (int round = 0; round < 2; ++round) {  // built, then read back
      auto indexed = ElfSymbolizer::Open(path, indexed_options);
      ASSERT_TRUE(indexed.ok());
      std::vector<SymbolizedAddress> from_index =
          (*indexed)->SymbolizeBatch(addresses, AddressKind::kVirtual);
      for (size_t i = 0; i < probes.size(); ++i) {
        SCOPED_TRACE(Hex(probes[i].vaddr));
        const SymbolizedAddress& a = batch[i];
        EXPECT_FALSE(a.reason.has_value());
        EXPECT_EQ(a.symbol, probes[i].name);
        EXPECT_EQ(a.raw_symbol, probes[i].name);
        EXPECT_TRUE(a.frames.empty());  // no DWARF covers a stub
        SymbolizedAddress one = (*direct)->Symbolize(probes[i].vaddr, AddressKind::kVirtual);
        EXPECT_EQ(one.symbol, a.symbol);
        EXPECT_EQ(one.offset, a.offset);
        const SymbolizedAddress& b = from_index[i];
        EXPECT_EQ(b.symbol, a.symbol);
        EXPECT_EQ(b.raw_symbol, a.raw_symbol);
        EXPECT_EQ(b.symbol_address, a.symbol_address);
        EXPECT_EQ(b.symbol_size, a.symbol_size);
        EXPECT_EQ(b.offset, a.offset);
        EXPECT_EQ(b.reason, a.reason);
        EXPECT_EQ(b.frames.size(), a.frames.size());
      }
    }
    // The functions themselves are still named as before.
    const ElfSymbol* work = elf->symbols().FindByName("work");
    ASSERT_NE(work, nullptr);
    EXPECT_EQ((*direct)->Symbolize(work->address, AddressKind::kVirtual).symbol, "work");
  }
  fs::remove_all(cache);
}

TEST(PltSymbolize, OffLeavesStubsUnnamed) {
  SymbolizeOptions options;
  options.plt_names = false;
  options.cache_dir = TempDir("off-cache");  // not used without PLT names
  for (const char* fixture : kFixtures) {
    SCOPED_TRACE(fixture);
    std::string path = FixturePath(fixture);
    std::shared_ptr<ElfFile> elf = OpenOrDie(path);
    ASSERT_NE(elf, nullptr);
    auto symbolizer = ElfSymbolizer::Open(path, options);
    ASSERT_TRUE(symbolizer.ok());
    for (const Probe& p : Probes(*elf)) {
      SymbolizedAddress a = (*symbolizer)->Symbolize(p.vaddr, AddressKind::kVirtual);
      EXPECT_EQ(a.symbol, "") << Hex(p.vaddr);
      EXPECT_EQ(a.reason, Reason::kNoSymbol) << Hex(p.vaddr);
    }
  }
  EXPECT_TRUE(fs::is_empty(options.cache_dir));
  fs::remove_all(options.cache_dir);
}

// C++ stubs print demangled, "@plt" after the function's name, as perf and objdump -C do.
TEST(PltSymbolize, CxxStubsAreDemangled) {
  std::string path = FixturePath("elf_cxx");
  std::shared_ptr<ElfFile> elf = OpenOrDie(path);
  ASSERT_NE(elf, nullptr);
  auto symbolizer = ElfSymbolizer::Open(path);
  ASSERT_TRUE(symbolizer.ok());
  int mangled = 0;
  for (const ElfSymbol& s : elf->plt_symbols().symbols()) {
    if (!s.name.starts_with("_Z")) continue;
    ++mangled;
    std::string function(s.name.substr(0, s.name.size() - 4));
    SymbolizedAddress a = (*symbolizer)->Symbolize(s.address + 2, AddressKind::kVirtual);
    EXPECT_EQ(a.symbol, Demangle(function) + "@plt");
    EXPECT_NE(a.symbol.substr(0, 2), "_Z");
    EXPECT_EQ(a.raw_symbol, s.name);
  }
  EXPECT_GT(mangled, 0);
}

TEST(PltSymbolize, SymbolizeElfCommandNamesStubs) {
  std::string path = FixturePath("elf_plt_lazy");
  std::shared_ptr<ElfFile> elf = OpenOrDie(path);
  ASSERT_NE(elf, nullptr);
  std::vector<Probe> probes = Probes(*elf);
  ASSERT_FALSE(probes.empty());
  int code = -1;
  std::string out = RunCommand(std::string(STACKSYM_CLI) + " symbolize elf --file '" + path + "' " +
                                   Hex(probes.back().vaddr) + " 2>&1",
                               &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(probes.back().name), std::string::npos) << out;
}

// The drop-in answers PLT addresses as llvm-symbolizer itself does (no "@plt" name).
TEST(PltSymbolize, DropInMatchesLlvmSymbolizerAtStubs) {
  if (RunCommand("command -v llvm-symbolizer").empty()) GTEST_SKIP() << "needs llvm-symbolizer";
  std::string dir = TempDir("dropin");
  fs::create_symlink(STACKSYM_CLI, dir + "/llvm-symbolizer");
  std::string requests;
  for (const char* fixture : kFixtures) {
    std::string path = FixturePath(fixture);
    std::shared_ptr<ElfFile> elf = OpenOrDie(path);
    ASSERT_NE(elf, nullptr);
    for (const Probe& p : Probes(*elf)) requests += "'" + path + "' " + Hex(p.vaddr) + "\n";
  }
  std::ofstream(dir + "/requests") << requests;
  for (const char* flags : {"", "--output-style=JSON", "--no-inlines -f linkage"}) {
    SCOPED_TRACE(flags);
    std::string ours = RunCommand(dir + "/llvm-symbolizer " + flags + " < " + dir + "/requests");
    std::string theirs =
        RunCommand("llvm-symbolizer " + std::string(flags) + " < " + dir + "/requests 2>/dev/null");
    EXPECT_EQ(ours, theirs);
    EXPECT_EQ(ours.find("@plt"), std::string::npos);
    EXPECT_FALSE(ours.empty());
  }
  fs::remove_all(dir);
}

// The profile symbolizer names a sample in a stub, locally and through a server alike.
TEST(PltSymbolize, ProfileNamesStubsLocallyAndThroughAServer) {
  std::string path = FixturePath("elf_plt_ibt_now");
  std::shared_ptr<ElfFile> elf = OpenOrDie(path);
  ASSERT_NE(elf, nullptr);
  std::vector<Probe> probes = Probes(*elf);
  ASSERT_FALSE(probes.empty());
  auto make_profile = [&](Profile* p, std::vector<uint32_t>* frames) {
    std::vector<uint8_t> id(elf->build_id().begin(), elf->build_id().end());
    uint32_t m = p->AddModule({ModuleKind::kElf, path, id});
    for (const Probe& probe : probes) {
      frames->push_back(
          p->InternFrame({FrameKind::kUser, m, elf->VaddrToFileOffset(probe.vaddr).value_or(0)}));
    }
    p->AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = *frames}, 1);
  };
  Profile local;
  std::vector<uint32_t> local_frames;
  make_profile(&local, &local_frames);
  ProfileSymbolizeOptions local_options;
  local_options.kallsyms_path.clear();
  SymbolizeProfile(local, local_options);
  for (size_t i = 0; i < probes.size(); ++i) {
    const std::optional<FrameSymbols>& s = local.symbols[local_frames[i]];
    ASSERT_TRUE(s.has_value());
    ASSERT_FALSE(s->reason.has_value()) << Hex(probes[i].vaddr);
    ASSERT_EQ(s->lines.size(), 1u);
    EXPECT_EQ(s->lines[0].function, probes[i].name);
  }

  // The server finds the binary by build ID.
  std::string dir = TempDir("server");
  std::string id = elf->build_id_hex();
  ASSERT_GT(id.size(), 2u);
  fs::create_directories(dir + "/.build-id/" + id.substr(0, 2));
  fs::create_symlink(path, dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2));
  SymbolServerOptions server_options;
  server_options.debug_dirs = {dir};
  auto server = SymbolServer::Start("127.0.0.1", 0, server_options);
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  auto client = ConnectSymbolServer("http://127.0.0.1:" + std::to_string((*server)->port()));
  if (!client.ok()) GTEST_SKIP() << "no HTTP module: " << client.error().ToString();
  Profile remote;
  std::vector<uint32_t> remote_frames;
  make_profile(&remote, &remote_frames);
  // Not the local file: only the server has it.
  remote.modules[0].path = "/nonexistent/prog";
  ProfileSymbolizeOptions remote_options;
  remote_options.kallsyms_path.clear();
  remote_options.server = *client;
  ProfileSymbolizeStats stats = SymbolizeProfile(remote, remote_options);
  EXPECT_EQ(stats.from_server, probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    const std::optional<FrameSymbols>& a = local.symbols[local_frames[i]];
    const std::optional<FrameSymbols>& b = remote.symbols[remote_frames[i]];
    ASSERT_TRUE(b.has_value());
    ASSERT_EQ(b->lines.size(), a->lines.size());
    EXPECT_EQ(b->lines[0].function, a->lines[0].function) << Hex(probes[i].vaddr);
  }
  (*server)->Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stacksym
