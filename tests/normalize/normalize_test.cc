// Normalizer against live child processes: answers are checked against what the test computes
// independently from the ELF files (symbol address → VaddrToFileOffset), build IDs against
// `readelf -n`, and the two VMA sources against each other.
#include "stacksym/normalize.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "child_process.h"
#include "normalize/vma_walk.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::ChildProcess;
namespace fs = std::filesystem;

std::string FixturePath(const std::string& name) {
  return std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// The build ID `readelf -n` prints for `path` ("" when it prints none).
std::string ReadelfBuildId(const std::string& path) {
  std::string out = RunCommand("readelf -n " + ShellQuote(path) + " 2>/dev/null");
  size_t pos = out.find("Build ID: ");
  if (pos == std::string::npos) return "";
  pos += 10;
  size_t end = out.find_first_of(" \n", pos);
  return out.substr(pos, end - pos);
}

uint64_t ParseHex(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

struct Symbol {
  std::string file;  // path the test knows the function comes from (real path)
  std::string name;
  uint64_t address = 0;
  bool data = false;
};

// One running fixture process: a copy of the target binary in a temp directory whose name
// holds a space, deleted once the process is ready, with fixture and system libraries loaded.
struct Target {
  ChildProcess child;
  std::string dir;
  std::string binary;    // the copy (deleted after start)
  std::string original;  // the fixture binary the copy was made from
  std::vector<Symbol> symbols;
  uint64_t jit = 0, region = 0, stack = 0, anon_named = 0, vdso_base = 0, vdso_fn = 0;

  bool Start(std::string* error) {
    char tmpl[] = "/tmp/stacksym norm XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return *error = "mkdtemp failed", false;
    dir = tmpl;
    original = FixturePath("normalize_target");
    binary = dir + "/norm target";
    std::error_code ec;
    fs::copy_file(original, binary, ec);
    if (ec) return *error = "copy: " + ec.message(), false;
    chmod(binary.c_str(), 0755);
    std::vector<std::string> argv = {binary, FixturePath("libnorm_a.so"),
                                     FixturePath("libnorm_nobid.so"),
                                     FixturePath("libnorm space.so")};
    for (const char* lib :
         {"/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libzstd.so.1"}) {
      if (access(lib, R_OK) == 0) argv.push_back(lib);
    }
    if (!child.Start(argv, error)) return false;
    std::vector<std::string> lines;
    if (!child.ReadUntil("ready", &lines)) return *error = "fixture did not get ready", false;
    for (const std::string& line : lines) {
      std::istringstream in(line);
      std::string kind;
      in >> kind;
      if (kind == "sym" || kind == "data") {
        // "sym FILE NAME ADDR": FILE may contain spaces, so split from the right.
        size_t addr_pos = line.rfind(' ');
        size_t name_pos = line.rfind(' ', addr_pos - 1);
        Symbol s;
        s.data = kind == "data";
        s.file = line.substr(kind.size() + 1, name_pos - kind.size() - 1);
        s.name = line.substr(name_pos + 1, addr_pos - name_pos - 1);
        s.address = ParseHex(line.substr(addr_pos + 1));
        s.file = s.file == "self" ? binary : fs::canonical(s.file).string();
        symbols.push_back(s);
      } else {
        std::string a, b;
        in >> a >> b;
        if (kind == "jit") jit = ParseHex(a);
        if (kind == "region") region = ParseHex(a);
        if (kind == "stack") stack = ParseHex(a);
        if (kind == "anon_named") anon_named = ParseHex(a);
        if (kind == "vdso") vdso_base = ParseHex(a), vdso_fn = ParseHex(b);
      }
    }
    unlink(binary.c_str());
    return true;
  }

  ~Target() {
    child.KillAndWait();
    unlink(binary.c_str());
    rmdir(dir.c_str());
  }

  // The file the test opens to check a symbol (the deleted copy is identical to the original).
  std::string ElfPathFor(const Symbol& s) const { return s.file == binary ? original : s.file; }

  std::vector<uint64_t> AllAddresses() const {
    std::vector<uint64_t> out;
    for (const Symbol& s : symbols) out.push_back(s.address);
    for (uint64_t a : {jit, region, stack, anon_named, vdso_fn}) {
      if (a != 0) out.push_back(a);
    }
    return out;
  }
};

class NormalizeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    target_ = new Target;
    std::string error;
    if (!target_->Start(&error)) {
      start_error_ = error;
      delete target_;
      target_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    delete target_;
    target_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(target_, nullptr) << start_error_; }

  static std::vector<VmaSourceKind> Sources() {
    std::vector<VmaSourceKind> out = {VmaSourceKind::kText};
    if (normalize::ProcmapQuerySupported()) out.push_back(VmaSourceKind::kIoctl);
    return out;
  }

  static Target* target_;
  static std::string start_error_;
};
Target* NormalizeTest::target_ = nullptr;
std::string NormalizeTest::start_error_;

TEST_F(NormalizeTest, ProcmapQueryAvailableOnThisKernel) {
  if (!normalize::ProcmapQuerySupported()) {
    GTEST_SKIP() << "kernel lacks PROCMAP_QUERY (Linux 6.11+): ioctl-source tests are skipped";
  }
  Result<std::unique_ptr<normalize::VmaSource>> src =
      normalize::OpenVmaSource(getpid(), VmaSourceKind::kAuto);
  ASSERT_TRUE(src) << src.error().ToString();
  EXPECT_EQ((*src)->kind(), VmaSourceKind::kIoctl);
}

// Every fixture function normalizes to the file offset the ELF file gives for its symbol, in a
// module whose path and build ID match the file (readelf -n).
TEST_F(NormalizeTest, MatchesElfFilesAndReadelf) {
  std::map<std::string, std::string> readelf_ids;
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    Normalizer normalizer(options);
    std::vector<uint64_t> addrs;
    for (const Symbol& s : target_->symbols) addrs.push_back(s.address);
    Result<NormalizedBatch> batch = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(batch) << batch.error().ToString();
    EXPECT_EQ(batch->source, source);
    ASSERT_EQ(batch->addresses.size(), addrs.size());
    size_t libraries_checked = 0;
    for (size_t i = 0; i < addrs.size(); ++i) {
      const Symbol& s = target_->symbols[i];
      SCOPED_TRACE(s.file + " " + s.name);
      const NormalizedAddress& a = batch->addresses[i];
      ASSERT_TRUE(a.ok()) << ReasonName(a.reason);
      const Module& m = batch->modules[a.module];
      EXPECT_EQ(m.kind, ModuleKind::kElf);
      EXPECT_EQ(m.path, s.file);
      EXPECT_EQ(m.deleted, s.file == target_->binary);

      auto elf = ElfFile::Open(target_->ElfPathFor(s));
      ASSERT_TRUE(elf) << elf.error().ToString();
      const ElfSymbol* sym = (*elf)->symbols().FindByName(s.name);
      ASSERT_NE(sym, nullptr);
      std::optional<uint64_t> expected = (*elf)->VaddrToFileOffset(sym->address);
      ASSERT_TRUE(expected);
      EXPECT_EQ(a.file_offset, *expected);

      std::string& id = readelf_ids[s.file];
      if (id.empty()) id = ReadelfBuildId(target_->ElfPathFor(s));
      if (id.empty()) {
        EXPECT_TRUE(m.build_id.empty());
        EXPECT_EQ(m.build_id_reason, Reason::kNoBuildId);
      } else {
        EXPECT_EQ(ToHex(m.build_id), id);
        EXPECT_FALSE(m.build_id_reason);
      }
      // The module names a mapping through which the file can be opened, deleted or not.
      std::string map_file = normalize::MapFilesPath(target_->child.pid(), m.map_start, m.map_end);
      struct stat st;
      ASSERT_EQ(stat(map_file.c_str(), &st), 0) << map_file;
      EXPECT_EQ(st.st_ino, m.inode);
      if (s.file != target_->binary) ++libraries_checked;
    }
    EXPECT_GE(libraries_checked, 3u);  // the three fixture libraries at least
  }
}

TEST_F(NormalizeTest, DataAndCodeOfOneFileShareAModule) {
  const Symbol* code = nullptr;
  const Symbol* data = nullptr;
  for (const Symbol& s : target_->symbols) {
    if (s.name == "main") code = &s;
    if (s.data) data = &s;
  }
  ASSERT_TRUE(code && data);
  Normalizer normalizer;
  uint64_t addrs[] = {code->address, data->address};
  auto batch = normalizer.Normalize(target_->child.pid(), addrs);
  ASSERT_TRUE(batch);
  ASSERT_TRUE(batch->addresses[0].ok() && batch->addresses[1].ok());
  EXPECT_EQ(batch->addresses[0].module, batch->addresses[1].module);
  EXPECT_EQ(batch->modules.size(), 1u);
  // The module's mapping is the lowest VMA of the file seen in the batch: main's text.
  EXPECT_LE(batch->modules[0].map_start, code->address);
  EXPECT_GT(batch->modules[0].map_end, code->address);
  EXPECT_GT(batch->modules[0].map_offset, 0u);  // text does not start at the ELF header
}

TEST_F(NormalizeTest, SpecialRegions) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    Normalizer normalizer(options);
    std::vector<uint64_t> addrs = {target_->jit, target_->region, target_->stack};
    if (target_->vdso_fn) addrs.push_back(target_->vdso_fn);
    auto batch = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(batch);
    auto module = [&](size_t i) -> const Module& {
      return batch->modules[batch->addresses[i].module];
    };
    for (size_t i = 0; i < addrs.size(); ++i) ASSERT_TRUE(batch->addresses[i].ok()) << i;
    EXPECT_EQ(module(0).kind, ModuleKind::kAnonymous);
    EXPECT_EQ(batch->addresses[0].file_offset, 0x10u);  // offset inside the JIT region
    EXPECT_EQ(module(0).map_start, target_->jit - 0x10);
    EXPECT_EQ(module(1).kind, ModuleKind::kAnonymous);
    EXPECT_EQ(batch->addresses[1].file_offset, 0u);
    EXPECT_EQ(module(2).kind, ModuleKind::kAnonymous);
    EXPECT_EQ(module(2).path, "[stack]");
    size_t next = 3;
    if (target_->vdso_fn) {
      EXPECT_EQ(module(next).kind, ModuleKind::kVdso);
      EXPECT_EQ(module(next).path, "[vdso]");
      EXPECT_EQ(batch->addresses[next].file_offset, target_->vdso_fn - target_->vdso_base);
      ++next;
    }
    EXPECT_EQ(next, addrs.size());
  }
  EXPECT_NE(target_->vdso_fn, 0u) << "the fixture found no vDSO function";
}

TEST_F(NormalizeTest, NamedAnonymousRegion) {
  if (!target_->anon_named) {
    GTEST_SKIP() << "kernel lacks CONFIG_ANON_VMA_NAME (prctl PR_SET_VMA failed): "
                    "[anon:NAME] regions cannot be created";
  }
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    Normalizer normalizer(options);
    uint64_t addrs[] = {target_->anon_named};
    auto batch = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(batch && batch->addresses[0].ok());
    const Module& m = batch->modules[batch->addresses[0].module];
    EXPECT_EQ(m.kind, ModuleKind::kAnonymous);
    EXPECT_EQ(m.path, "[anon:stacksym test]");
    EXPECT_EQ(batch->addresses[0].file_offset, 8u);
  }
}

// Addresses at every VMA start, middle and last byte, and in the gaps, from both sources and
// in both orders: identical answers, module for module.
TEST_F(NormalizeTest, TextAndIoctlSourcesAgree) {
  if (!normalize::ProcmapQuerySupported()) GTEST_SKIP() << "kernel lacks PROCMAP_QUERY";
  std::ifstream maps("/proc/" + std::to_string(target_->child.pid()) + "/maps");
  std::vector<uint64_t> addrs = target_->AllAddresses();
  std::string line;
  uint64_t prev_end = 0;
  while (std::getline(maps, line)) {
    uint64_t start = ParseHex(line.substr(0, line.find('-')));
    uint64_t end = ParseHex(line.substr(line.find('-') + 1));
    if (start >= (1ull << 56)) continue;  // [vsyscall]
    addrs.insert(addrs.end(), {start, start + (end - start) / 2, end - 1});
    if (start > prev_end + 1) addrs.push_back(prev_end + 1);  // a gap
    prev_end = end;
  }
  addrs.push_back(0);
  addrs.push_back(~0ull);
  ASSERT_GT(addrs.size(), 100u);
  std::mt19937 rng(42);
  std::vector<uint64_t> shuffled = addrs;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);

  for (bool kernel_ids : {true, false}) {
    for (const auto* input : {&addrs, &shuffled}) {
      NormalizerOptions t;
      t.vma_source = VmaSourceKind::kText;
      NormalizerOptions k = t;
      k.vma_source = VmaSourceKind::kIoctl;
      k.kernel_build_ids = kernel_ids;
      Normalizer text(t), ioctl(k);
      auto a = text.Normalize(target_->child.pid(), *input);
      auto b = ioctl.Normalize(target_->child.pid(), *input);
      ASSERT_TRUE(a && b);
      ASSERT_EQ(a->modules.size(), b->modules.size());
      for (size_t i = 0; i < input->size(); ++i) {
        SCOPED_TRACE(i);
        const NormalizedAddress& x = a->addresses[i];
        const NormalizedAddress& y = b->addresses[i];
        ASSERT_EQ(x.ok(), y.ok());
        if (!x.ok()) {
          EXPECT_EQ(x.reason, y.reason);
          continue;
        }
        EXPECT_EQ(x.module, y.module);
        EXPECT_EQ(x.file_offset, y.file_offset);
        const Module& m = a->modules[x.module];
        const Module& n = b->modules[y.module];
        EXPECT_EQ(m.kind, n.kind);
        EXPECT_EQ(m.path, n.path);
        EXPECT_EQ(m.deleted, n.deleted);
        EXPECT_EQ(m.dev, n.dev);
        EXPECT_EQ(m.inode, n.inode);
        EXPECT_EQ(m.build_id, n.build_id);
        EXPECT_EQ(m.build_id_reason, n.build_id_reason);
        EXPECT_EQ(m.map_start, n.map_start);
        EXPECT_EQ(m.map_end, n.map_end);
      }
    }
  }
}

// With executable_only (the kernel's EXECUTABLE filter for the ioctl source), code still
// normalizes and data, stack and read-only regions are unmapped, identically in both sources.
TEST_F(NormalizeTest, ExecutableOnly) {
  std::vector<uint64_t> addrs;
  std::vector<bool> executable;
  for (const Symbol& s : target_->symbols) {
    addrs.push_back(s.address);
    executable.push_back(!s.data);
  }
  for (uint64_t a : {target_->jit, target_->region, target_->stack}) addrs.push_back(a);
  executable.insert(executable.end(), {true, false, false});
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    options.executable_only = true;
    Normalizer normalizer(options);
    NormalizerOptions all_options = options;
    all_options.executable_only = false;
    Normalizer all(all_options);
    auto r = normalizer.Normalize(target_->child.pid(), addrs);
    auto full = all.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(r && full);
    for (size_t i = 0; i < addrs.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(r->addresses[i].ok(), executable[i]);
      if (executable[i]) {
        EXPECT_EQ(r->addresses[i].file_offset, full->addresses[i].file_offset);
      } else {
        EXPECT_EQ(r->addresses[i].reason, Reason::kUnmapped);
      }
    }
  }
}

TEST_F(NormalizeTest, UnsortedInputAnswersInInputOrder) {
  std::vector<uint64_t> sorted = target_->AllAddresses();
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> reversed(sorted.rbegin(), sorted.rend());
  Normalizer normalizer;
  auto a = normalizer.Normalize(target_->child.pid(), sorted);
  auto b = normalizer.Normalize(target_->child.pid(), reversed);
  ASSERT_TRUE(a && b);
  for (size_t i = 0; i < sorted.size(); ++i) {
    const NormalizedAddress& x = a->addresses[i];
    const NormalizedAddress& y = b->addresses[sorted.size() - 1 - i];
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(x.file_offset, y.file_offset);
    EXPECT_EQ(a->modules[x.module].path, b->modules[y.module].path);
  }
}

TEST_F(NormalizeTest, BadInput) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    Normalizer normalizer(options);
    uint64_t one[] = {target_->symbols[0].address};
    for (pid_t bad : {0, -1}) {
      auto r = normalizer.Normalize(bad, one);
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    }
    auto empty = normalizer.Normalize(target_->child.pid(), {});
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->addresses.empty());

    uint64_t edge[] = {0, ~0ull, target_->symbols[0].address, 1};
    auto r = normalizer.Normalize(target_->child.pid(), edge);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->addresses[0].reason, Reason::kInvalidAddress);
    EXPECT_FALSE(r->addresses[0].ok());
    EXPECT_EQ(r->addresses[1].reason, Reason::kUnmapped);
    EXPECT_FALSE(r->addresses[1].ok());
    EXPECT_TRUE(r->addresses[2].ok());
    EXPECT_EQ(r->addresses[3].reason, Reason::kUnmapped);

    // A pid above pid_max can never exist.
    std::ifstream pid_max_file("/proc/sys/kernel/pid_max");
    long pid_max = 0;
    pid_max_file >> pid_max;
    ASSERT_GT(pid_max, 0);
    if (pid_max < INT_MAX) {
      auto gone = normalizer.Normalize(static_cast<pid_t>(pid_max + 1), edge);
      ASSERT_TRUE(gone);
      EXPECT_EQ(gone->addresses[0].reason, Reason::kInvalidAddress);
      for (size_t i = 1; i < 4; ++i) EXPECT_EQ(gone->addresses[i].reason, Reason::kProcessGone);
    }
  }
}

// Waits until `pid` (a child of ours, killed) is a zombie, without reaping it.
void WaitForZombie(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    siginfo_t info{};
    if (waitid(P_PID, pid, &info, WEXITED | WNOWAIT | WNOHANG) == 0 && info.si_pid == pid) return;
    usleep(10000);
  }
}

TEST_F(NormalizeTest, ExitedProcessGivesProcessGone) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    for (bool reap : {false, true}) {
      Target t;
      std::string error;
      ASSERT_TRUE(t.Start(&error)) << error;
      std::vector<uint64_t> addrs = t.AllAddresses();
      // This normalizer knew the process alive (it keeps its maps fd and VMAs); a fresh one
      // did not.
      NormalizerOptions options;
      options.vma_source = source;
      Normalizer knew(options);
      auto alive = knew.Normalize(t.child.pid(), addrs);
      ASSERT_TRUE(alive);
      for (const NormalizedAddress& a : alive->addresses) EXPECT_TRUE(a.ok());
      kill(t.child.pid(), SIGKILL);
      if (reap) {
        t.child.KillAndWait();
      } else {
        WaitForZombie(t.child.pid());  // /proc/PID exists but the address space is gone
      }
      Normalizer fresh(options);
      for (Normalizer* normalizer : {&knew, &fresh}) {
        auto r = normalizer->Normalize(t.child.pid(), addrs);
        ASSERT_TRUE(r);
        for (const NormalizedAddress& a : r->addresses) {
          EXPECT_EQ(a.reason, Reason::kProcessGone) << ReasonName(a.reason);
        }
      }
    }
  }
}

// A VmaSource that kills the process after its first answer: the rest of the walk must give
// Reasons, not crashes or stale answers.
class KillingSource : public normalize::VmaSource {
 public:
  KillingSource(std::unique_ptr<normalize::VmaSource> inner, ChildProcess* child)
      : inner_(std::move(inner)), child_(child) {}
  VmaSourceKind kind() const override { return inner_->kind(); }
  Result<bool> FindCoveringOrNext(uint64_t addr, normalize::Vma* out) override {
    Result<bool> r = inner_->FindCoveringOrNext(addr, out);
    if (++calls_ == 1) child_->KillAndWait();
    return r;
  }
  uint64_t lookups() const override { return inner_->lookups(); }

 private:
  std::unique_ptr<normalize::VmaSource> inner_;
  ChildProcess* child_;
  int calls_ = 0;
};

TEST_F(NormalizeTest, ProcessExitingDuringWalkGivesReasons) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    Target t;
    std::string error;
    ASSERT_TRUE(t.Start(&error)) << error;
    std::vector<uint64_t> addrs = t.AllAddresses();
    std::sort(addrs.begin(), addrs.end());
    auto inner = normalize::OpenVmaSource(t.child.pid(), source);
    ASSERT_TRUE(inner);
    KillingSource killing(std::move(*inner), &t.child);
    std::vector<int> resolved(addrs.size(), -1);  // -1 unvisited, 1 VMA, 0 reason
    std::vector<Reason> reasons(addrs.size());
    normalize::WalkVmas(
        killing, addrs, {},
        [&](const normalize::Vma* vma, Reason reason, std::span<const uint32_t> ix) {
          for (uint32_t i : ix) {
            resolved[i] = vma != nullptr;
            reasons[i] = reason;
          }
        });
    size_t gone = 0;
    for (size_t i = 0; i < addrs.size(); ++i) {
      ASSERT_NE(resolved[i], -1) << "address " << i << " was never visited";
      if (resolved[i] == 0) {
        EXPECT_EQ(reasons[i], Reason::kProcessGone);
        ++gone;
      }
    }
    // The ioctl asks the kernel per VMA, so everything after the first VMA is gone; the text
    // source may answer from the snapshot it already read.
    EXPECT_TRUE(resolved[0] == 1);
    if (source == VmaSourceKind::kIoctl) {
      EXPECT_GT(gone, 0u);
    }
  }
}

// --- caches -------------------------------------------------------------------------------

TEST_F(NormalizeTest, RangeCacheAnswersAddressesInTheLastVma) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    options.build_ids = false;
    Normalizer normalizer(options);
    uint64_t base = target_->symbols[0].address;  // main
    std::vector<uint64_t> addrs;
    for (int i = 0; i < 10; ++i) addrs.push_back(base + i);
    ASSERT_TRUE(normalizer.Normalize(target_->child.pid(), addrs));
    NormalizerStats s = normalizer.stats();
    EXPECT_EQ(s.vma_lookups, 1u);
    EXPECT_EQ(s.range_cache_hits, 9u);
  }
}

TEST_F(NormalizeTest, SameFileCacheReadsABuildIdOnce) {
  const Symbol* code = nullptr;
  const Symbol* data = nullptr;
  for (const Symbol& s : target_->symbols) {
    if (s.name == "main") code = &s;
    if (s.data) data = &s;
  }
  ASSERT_TRUE(code && data);
  NormalizerOptions options;
  options.vma_source = VmaSourceKind::kText;
  Normalizer normalizer(options);
  uint64_t addrs[] = {code->address, data->address};
  auto r = normalizer.Normalize(target_->child.pid(), addrs);
  ASSERT_TRUE(r);
  NormalizerStats s = normalizer.stats();
  EXPECT_EQ(s.vma_lookups, 2u);  // two VMAs
  EXPECT_EQ(s.same_file_hits, 1u);
  EXPECT_EQ(s.build_id_reads, 1u);
}

// Every VMA of the process at once: one module per file (dev, inode) and one per name for the
// rest, each address in its own VMA's, and a same-file hit for every further VMA of a file.
TEST_F(NormalizeTest, OneModulePerFileAndPerName) {
  struct MapsVma {
    uint64_t start;
    uint64_t dev;
    uint64_t inode;
    std::string name;
  };
  std::vector<MapsVma> vmas;
  std::ifstream maps("/proc/" + std::to_string(target_->child.pid()) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, name;
    uint64_t inode = 0;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, name);
    uint64_t start = ParseHex(range.substr(0, range.find('-')));
    if (start >= (1ull << 56)) continue;  // [vsyscall]
    size_t colon = dev.find(':');
    vmas.push_back({start,
                    makedev(std::stoul(dev.substr(0, colon), nullptr, 16),
                            std::stoul(dev.substr(colon + 1), nullptr, 16)),
                    inode, name});
  }
  std::set<std::pair<uint64_t, uint64_t>> files;
  std::set<std::string> names;
  size_t file_vmas = 0;
  std::vector<uint64_t> addrs;
  for (const MapsVma& v : vmas) {
    addrs.push_back(v.start);
    if (v.dev != 0 || v.inode != 0) {
      files.insert({v.dev, v.inode});
      ++file_vmas;
    } else {
      names.insert(v.name);
    }
  }
  ASSERT_GE(files.size(), 5u);  // the program, the fixture libraries, libc, the loader
  ASSERT_GE(names.size(), 3u);  // unnamed, [heap] or [stack], [vdso]...
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    options.build_ids = false;
    Normalizer normalizer(options);
    auto batch = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(batch);
    EXPECT_EQ(batch->modules.size(), files.size() + names.size());
    EXPECT_EQ(normalizer.stats().same_file_hits, file_vmas - files.size());
    for (size_t i = 0; i < vmas.size(); ++i) {
      SCOPED_TRACE(vmas[i].name);
      const NormalizedAddress& a = batch->addresses[i];
      ASSERT_TRUE(a.ok()) << ReasonName(a.reason);
      const Module& m = batch->modules[a.module];
      if (vmas[i].dev != 0 || vmas[i].inode != 0) {
        EXPECT_EQ(m.kind, ModuleKind::kElf);
        EXPECT_EQ(m.dev, vmas[i].dev);
        EXPECT_EQ(m.inode, vmas[i].inode);
      } else {
        EXPECT_NE(m.kind, ModuleKind::kElf);
        EXPECT_EQ(m.path, vmas[i].name);
      }
    }
  }
}

TEST_F(NormalizeTest, BuildIdCacheAndNegativeCache) {
  const Symbol* with_id = nullptr;
  const Symbol* without_id = nullptr;
  for (const Symbol& s : target_->symbols) {
    if (s.name == "norm_a_func") with_id = &s;
    if (s.name == "norm_nobid_func") without_id = &s;
  }
  ASSERT_TRUE(with_id && without_id);
  uint64_t addrs[] = {with_id->address, without_id->address};
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    options.vma_cache_processes = 0;  // no remembered VMAs: only the build-ID cache
    Normalizer normalizer(options);
    auto first = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(first);
    NormalizerStats s1 = normalizer.stats();
    const Module& nobid = first->modules[first->addresses[1].module];
    EXPECT_TRUE(nobid.build_id.empty());
    EXPECT_EQ(nobid.build_id_reason, Reason::kNoBuildId);
    if (source == VmaSourceKind::kIoctl) {
      EXPECT_EQ(s1.kernel_build_ids, 1u);  // the kernel answered for libnorm_a
      EXPECT_EQ(s1.build_id_reads, 1u);    // and we checked the file it found nothing in
    } else {
      EXPECT_EQ(s1.build_id_reads, 2u);
    }
    EXPECT_EQ(s1.negative_hits, 0u);

    auto second = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(second);
    NormalizerStats s2 = normalizer.stats();
    EXPECT_EQ(s2.build_id_reads, s1.build_id_reads);  // nothing read again
    EXPECT_EQ(s2.negative_hits, 1u);                  // the file without a build ID
    if (source == VmaSourceKind::kText) {
      EXPECT_EQ(s2.build_id_cache_hits, 1u);
    }
    EXPECT_EQ(second->modules[second->addresses[0].module].build_id,
              first->modules[first->addresses[0].module].build_id);
    EXPECT_EQ(second->modules[second->addresses[1].module].build_id_reason, Reason::kNoBuildId);

    normalizer.ClearBuildIdCache();
    ASSERT_TRUE(normalizer.Normalize(target_->child.pid(), addrs));
    EXPECT_GT(normalizer.stats().build_id_reads, s2.build_id_reads);
  }
}

// Without cache_vmas every address is looked up, but a VMA that matches a remembered one reuses
// its module: no build ID is asked of the kernel or read again.
TEST_F(NormalizeTest, RememberedVmasReuseModules) {
  std::vector<uint64_t> addrs;
  for (const Symbol& s : target_->symbols) addrs.push_back(s.address);
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    Normalizer normalizer(options);
    auto first = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(first);
    NormalizerStats s1 = normalizer.stats();
    EXPECT_EQ(s1.vma_matches, 0u);
    auto second = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(second);
    NormalizerStats s2 = normalizer.stats();
    EXPECT_EQ(s2.vma_lookups, 2 * s1.vma_lookups);  // still looked up
    EXPECT_EQ(s2.vma_matches, s1.vma_lookups);      // every one matched
    EXPECT_EQ(s2.build_id_reads, s1.build_id_reads);
    EXPECT_EQ(s2.kernel_build_ids, s1.kernel_build_ids);
    EXPECT_EQ(s2.negative_hits + s2.build_id_cache_hits, 0u);
    ASSERT_EQ(first->modules.size(), second->modules.size());
    for (size_t i = 0; i < addrs.size(); ++i) {
      const NormalizedAddress& a = first->addresses[i];
      const NormalizedAddress& b = second->addresses[i];
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a.file_offset, b.file_offset);
      const Module& m = first->modules[a.module];
      const Module& n = second->modules[b.module];
      EXPECT_EQ(m.path, n.path);
      EXPECT_EQ(m.deleted, n.deleted);
      EXPECT_EQ(m.build_id, n.build_id);
      EXPECT_EQ(m.build_id_reason, n.build_id_reason);
      EXPECT_EQ(m.map_start, n.map_start);
    }
  }
}

TEST_F(NormalizeTest, VmaCacheSkipsLookupsUntilInvalidated) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    NormalizerOptions options;
    options.vma_source = source;
    options.cache_vmas = true;
    Normalizer normalizer(options);
    std::vector<uint64_t> addrs = target_->AllAddresses();
    auto first = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(first);
    NormalizerStats s1 = normalizer.stats();
    EXPECT_GT(s1.vma_lookups, 0u);
    EXPECT_EQ(s1.vma_cache_hits, 0u);

    auto second = normalizer.Normalize(target_->child.pid(), addrs);
    ASSERT_TRUE(second);
    NormalizerStats s2 = normalizer.stats();
    EXPECT_EQ(s2.vma_lookups, s1.vma_lookups);  // no lookup at all
    EXPECT_EQ(s2.vma_cache_hits, addrs.size());
    EXPECT_EQ(s2.build_id_reads, s1.build_id_reads);
    for (size_t i = 0; i < addrs.size(); ++i) {
      ASSERT_TRUE(second->addresses[i].ok());
      EXPECT_EQ(second->addresses[i].file_offset, first->addresses[i].file_offset);
      const Module& m = second->modules[second->addresses[i].module];
      const Module& n = first->modules[first->addresses[i].module];
      EXPECT_EQ(m.path, n.path);
      EXPECT_EQ(m.build_id, n.build_id);
      EXPECT_EQ(m.build_id_reason, n.build_id_reason);
    }

    normalizer.Invalidate(target_->child.pid());
    ASSERT_TRUE(normalizer.Normalize(target_->child.pid(), addrs));
    NormalizerStats s3 = normalizer.stats();
    EXPECT_GT(s3.vma_lookups, s2.vma_lookups);
    EXPECT_GT(s3.vma_cache_invalidations, 0u);
  }
}

// A remembered VMA that a later lookup contradicts (same start, new end) is dropped.
TEST_F(NormalizeTest, VmaCacheInvalidatesAContradictedVma) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    Target t;
    std::string error;
    ASSERT_TRUE(t.Start(&error)) << error;
    NormalizerOptions options;
    options.vma_source = source;
    options.cache_vmas = true;
    Normalizer normalizer(options);
    uint64_t in_old[] = {t.region};
    auto r1 = normalizer.Normalize(t.child.pid(), in_old);
    ASSERT_TRUE(r1 && r1->addresses[0].ok());
    EXPECT_EQ(r1->modules[0].map_end, t.region + 2 * 4096);

    ASSERT_TRUE(t.child.Send("grow\n"));
    std::string line;
    ASSERT_TRUE(t.child.ReadLine(&line));
    ASSERT_EQ(line, "grown");
    NormalizerStats before = normalizer.stats();
    uint64_t in_new[] = {t.region + 3 * 4096, t.region + 4096};
    auto r2 = normalizer.Normalize(t.child.pid(), in_new);
    ASSERT_TRUE(r2);
    ASSERT_TRUE(r2->addresses[0].ok()) << ReasonName(r2->addresses[0].reason);
    NormalizerStats after = normalizer.stats();
    EXPECT_EQ(after.vma_cache_invalidations, before.vma_cache_invalidations + 1);
    // The contradicted VMA is gone: the second address, which the stale cache had answered
    // first (it sorts lower), is answered again from the new VMA within the same call.
    EXPECT_EQ(r2->modules[r2->addresses[1].module].map_end, t.region + 4 * 4096);
    EXPECT_EQ(r2->addresses[1].file_offset, 4096u);
  }
}

NormalizerOptions RememberingOptions(VmaSourceKind source, bool past_addresses) {
  NormalizerOptions options;
  options.vma_source = source;
  options.cache_vmas = true;
  options.past_addresses = past_addresses;
  return options;
}

// A recorder reads samples after they were taken: with past_addresses, the addresses of a
// process that has exited since are answered from the VMAs remembered while it lived — the
// same modules and offsets — and only until the second revalidation after it went.
TEST_F(NormalizeTest, PastAddressesOfAnExitedProcessAnswerFromMemory) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    for (bool reap : {false, true}) {
      SCOPED_TRACE(reap ? "reaped" : "zombie");
      Target t;
      std::string error;
      ASSERT_TRUE(t.Start(&error)) << error;
      std::vector<uint64_t> addrs = t.AllAddresses();
      Normalizer normalizer(RememberingOptions(source, /*past_addresses=*/true));
      auto alive = normalizer.Normalize(t.child.pid(), addrs);
      ASSERT_TRUE(alive);
      kill(t.child.pid(), SIGKILL);
      if (reap) {
        t.child.KillAndWait();
      } else {
        WaitForZombie(t.child.pid());
      }
      normalizer.RevalidateAll();  // the remembered VMAs may not answer unchecked
      auto gone = normalizer.Normalize(t.child.pid(), addrs);
      ASSERT_TRUE(gone);
      EXPECT_EQ(normalizer.stats().remembered_answers, addrs.size());
      for (size_t i = 0; i < addrs.size(); ++i) {
        ASSERT_TRUE(alive->addresses[i].ok());
        ASSERT_TRUE(gone->addresses[i].ok()) << ReasonName(gone->addresses[i].reason);
        EXPECT_EQ(gone->addresses[i].file_offset, alive->addresses[i].file_offset);
        const Module& then = alive->modules[alive->addresses[i].module];
        const Module& now = gone->modules[gone->addresses[i].module];
        EXPECT_EQ(now.path, then.path);
        EXPECT_EQ(now.kind, then.kind);
        EXPECT_EQ(now.build_id, then.build_id);
      }
      // An address it never mapped is still unmapped, not guessed.
      uint64_t never[] = {8};
      auto unknown = normalizer.Normalize(t.child.pid(), never);
      ASSERT_TRUE(unknown);
      EXPECT_FALSE(unknown->addresses[0].ok());
      EXPECT_EQ(unknown->addresses[0].reason, Reason::kProcessGone);
      // Forgotten at the second revalidation after it went.
      normalizer.RevalidateAll();
      ASSERT_TRUE(normalizer.Normalize(t.child.pid(), addrs)->addresses[0].ok());
      normalizer.RevalidateAll();
      auto forgotten = normalizer.Normalize(t.child.pid(), addrs);
      ASSERT_TRUE(forgotten);
      for (const NormalizedAddress& a : forgotten->addresses) {
        EXPECT_EQ(a.reason, Reason::kProcessGone) << ReasonName(a.reason);
      }
    }
  }
}

// A recorder that falls behind reads a process's last samples after it exited, at addresses
// (a vDSO call, a library function) it never looked up while the process lived: the first
// lookup of a live process remembers all its executable VMAs, so those still resolve.
TEST_F(NormalizeTest, PastAddressesNeverLookedUpWhileAliveStillResolve) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    Target t;
    std::string error;
    ASSERT_TRUE(t.Start(&error)) << error;
    // One address inside each executable mapping, with its name, from the maps text.
    std::ifstream maps("/proc/" + std::to_string(t.child.pid()) + "/maps");
    std::vector<uint64_t> inside;
    std::vector<std::string> names;
    for (std::string line; std::getline(maps, line);) {
      unsigned long long start = 0, end = 0;
      char perms[8] = {};
      if (sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms) != 3) continue;
      if (perms[2] != 'x' || line.find("[vsyscall]") != std::string::npos) continue;
      inside.push_back(start + (end - start) / 2);
      size_t slash = line.find_first_of("/[");
      names.push_back(slash == std::string::npos ? "" : line.substr(slash));
    }
    ASSERT_GE(inside.size(), 3u) << "expected the program, libc and the vDSO";
    Normalizer normalizer(RememberingOptions(source, /*past_addresses=*/true));
    std::vector<uint64_t> one = {t.AllAddresses().front()};
    ASSERT_TRUE(normalizer.Normalize(t.child.pid(), one)->addresses[0].ok());
    EXPECT_GE(normalizer.stats().snapshot_vmas, inside.size() - 1);
    kill(t.child.pid(), SIGKILL);
    t.child.KillAndWait();
    normalizer.RevalidateAll();
    auto gone = normalizer.Normalize(t.child.pid(), inside);
    ASSERT_TRUE(gone);
    for (size_t i = 0; i < inside.size(); ++i) {
      SCOPED_TRACE(names[i]);
      ASSERT_TRUE(gone->addresses[i].ok()) << ReasonName(gone->addresses[i].reason);
      const Module& m = gone->modules[gone->addresses[i].module];
      if (!names[i].empty()) {
        EXPECT_EQ(m.path, names[i].substr(0, names[i].find(" (deleted)")));
      }
      EXPECT_LE(m.map_start, inside[i]);
    }
  }
}

// An address unmapped after it was sampled: answered from memory with past_addresses, and
// kUnmapped without it. A revalidated VMA that changed is answered from the new one.
TEST_F(NormalizeTest, PastAddressesOfAnUnmappedRegionAnswerFromMemory) {
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    for (bool past : {true, false}) {
      SCOPED_TRACE(past ? "past_addresses" : "present addresses");
      Target t;
      std::string error;
      ASSERT_TRUE(t.Start(&error)) << error;
      Normalizer normalizer(RememberingOptions(source, past));
      uint64_t first_page[] = {t.region + 16};
      auto before = normalizer.Normalize(t.child.pid(), first_page);
      ASSERT_TRUE(before && before->addresses[0].ok());
      EXPECT_EQ(before->modules[0].map_end, t.region + 2 * 4096);

      // Grown: after revalidation the new, larger VMA answers, not the remembered one.
      std::string line;
      ASSERT_TRUE(t.child.Send("grow\n"));
      ASSERT_TRUE(t.child.ReadLine(&line));
      ASSERT_EQ(line, "grown");
      normalizer.RevalidateAll();
      uint64_t lookups = normalizer.stats().vma_lookups;
      auto grown = normalizer.Normalize(t.child.pid(), first_page);
      ASSERT_TRUE(grown && grown->addresses[0].ok());
      EXPECT_GT(normalizer.stats().vma_lookups, lookups) << "revalidated VMA not looked up";
      EXPECT_EQ(grown->modules[0].map_end, t.region + 4 * 4096);

      ASSERT_TRUE(t.child.Send("unmap\n"));
      ASSERT_TRUE(t.child.ReadLine(&line));
      ASSERT_EQ(line, "unmapped");
      normalizer.RevalidateAll();
      uint64_t later[] = {t.region + 3 * 4096 + 8};
      auto after = normalizer.Normalize(t.child.pid(), later);
      ASSERT_TRUE(after);
      if (past) {
        ASSERT_TRUE(after->addresses[0].ok()) << ReasonName(after->addresses[0].reason);
        EXPECT_EQ(after->addresses[0].file_offset, 3 * 4096u + 8);
        EXPECT_EQ(after->modules[0].map_end, t.region + 4 * 4096);
        EXPECT_EQ(normalizer.stats().remembered_answers, 1u);
      } else {
        EXPECT_FALSE(after->addresses[0].ok());
        EXPECT_EQ(after->addresses[0].reason, Reason::kUnmapped);
        EXPECT_EQ(normalizer.stats().remembered_answers, 0u);
      }
    }
  }
}

TEST_F(NormalizeTest, ForcedIoctlSourceFailsClearlyWhenUnsupported) {
  if (normalize::ProcmapQuerySupported())
    GTEST_SKIP() << "kernel has PROCMAP_QUERY; nothing to check";
  NormalizerOptions options;
  options.vma_source = VmaSourceKind::kIoctl;
  Normalizer normalizer(options);
  uint64_t one[] = {target_->symbols[0].address};
  auto r = normalizer.Normalize(target_->child.pid(), one);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
}

// `stacksym normalize --json` prints what the library computes.
TEST_F(NormalizeTest, CommandLineJson) {
  std::string cli = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
  if (access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "stacksym binary not built: " << cli;
  std::vector<uint64_t> addrs = target_->AllAddresses();
  addrs.push_back(0);
  std::string cmd = cli + " normalize --json --pid " + std::to_string(target_->child.pid());
  for (uint64_t a : addrs) {
    char buf[24];
    snprintf(buf, sizeof(buf), " 0x%llx", static_cast<unsigned long long>(a));
    cmd += buf;
  }
  std::string out = RunCommand(cmd);
  Normalizer normalizer;
  auto batch = normalizer.Normalize(target_->child.pid(), addrs);
  ASSERT_TRUE(batch);
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; i < addrs.size(); ++i) {
    ASSERT_TRUE(std::getline(lines, line)) << out;
    const NormalizedAddress& a = batch->addresses[i];
    if (!a.ok()) {
      EXPECT_NE(line.find(std::string("\"reason\":\"") + ReasonName(a.reason) + "\""),
                std::string::npos)
          << line;
      continue;
    }
    const Module& m = batch->modules[a.module];
    char off[40];
    snprintf(off, sizeof(off), "\"file_offset\":\"0x%llx\"",
             static_cast<unsigned long long>(a.file_offset));
    EXPECT_NE(line.find(off), std::string::npos) << line;
    if (!m.build_id.empty()) {
      EXPECT_NE(line.find("\"build_id\":\"" + ToHex(m.build_id) + "\""), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace stacksym

namespace stacksym {
namespace {

// The text source reads /proc/PID/maps only as far as the queried address needs: a low address
// costs one 16 KiB read even when the file is far larger; the highest costs them all.
TEST(TextVmaSource, ReadsLazily) {
  // ~600 separate VMAs (alternating protections keep neighbours from merging): > 40 KiB text.
  const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t kRegions = 600;
  char* base = static_cast<char*>(
      mmap(nullptr, kRegions * kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  for (size_t i = 0; i < kRegions; i += 2) mprotect(base + i * kPage, kPage, PROT_NONE);

  auto src = normalize::OpenVmaSource(getpid(), VmaSourceKind::kText);
  ASSERT_TRUE(src);
  normalize::Vma vma;
  Result<bool> low = (*src)->FindCoveringOrNext(0, &vma);  // the lowest VMA
  ASSERT_TRUE(low && *low);
  EXPECT_EQ((*src)->lookups(), 1u);
  Result<bool> high = (*src)->FindCoveringOrNext(~0ull - 1, &vma);  // beyond every VMA
  ASSERT_TRUE(high);
  EXPECT_FALSE(*high);
  EXPECT_GE((*src)->lookups(), 3u);
  // An address in the middle of the region is answered exactly.
  auto again = normalize::OpenVmaSource(getpid(), VmaSourceKind::kText);
  ASSERT_TRUE(again);
  uint64_t mid = reinterpret_cast<uint64_t>(base) + 301 * kPage + 5;
  Result<bool> r = (*again)->FindCoveringOrNext(mid, &vma);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ(vma.start, reinterpret_cast<uint64_t>(base) + 301 * kPage);
  EXPECT_EQ(vma.end, vma.start + kPage);
  EXPECT_EQ(vma.perms, normalize::kVmaRead);
  munmap(base, kRegions * kPage);
}

}  // namespace
}  // namespace stacksym

namespace stacksym {
namespace {

// The executable mappings of pid: (an address inside, the mapped path).
std::vector<std::pair<uint64_t, std::string>> ExecutableMappings(pid_t pid) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms) != 3) continue;
    size_t slash = line.find('/');
    if (perms[2] != 'x' || slash == std::string::npos) continue;
    out.emplace_back(start + (end - start) / 2, line.substr(slash));
  }
  return out;
}

// exec replaces every mapping under the same pid. A recorder is told (the BPF exec event) and
// calls Revalidate(pid): the new image's addresses then resolve to the new mappings, also
// where the kept maps source was opened on the old image, and with past_addresses on.
TEST_F(NormalizeTest, ExecThenRevalidateAnswersTheNewImage) {
  const char* python = "/usr/bin/python3";
  if (access(python, X_OK) != 0) GTEST_SKIP() << "needs " << python;
  for (VmaSourceKind source : Sources()) {
    SCOPED_TRACE(VmaSourceKindName(source));
    testing::ChildProcess child;
    std::string error;
    ASSERT_TRUE(child.Start({python, "-S", "-c",
                             "import os, sys\n"
                             "print('ready', flush=True)\n"
                             "os.read(0, 1)\n"  // one byte: the rest is cat's
                             "os.execv('/bin/cat', ['/bin/cat'])\n"},
                            &error))
        << error;
    std::string line;
    ASSERT_TRUE(child.ReadLine(&line));
    ASSERT_EQ(line, "ready");
    Normalizer normalizer(RememberingOptions(source, /*past_addresses=*/true));
    auto before = ExecutableMappings(child.pid());
    ASSERT_FALSE(before.empty());
    std::vector<uint64_t> old_addrs;
    for (const auto& m : before) old_addrs.push_back(m.first);
    auto old_batch = normalizer.Normalize(child.pid(), old_addrs);
    ASSERT_TRUE(old_batch);
    ASSERT_TRUE(child.Send("\n"));
    // cat echoes: once it answers, the exec is done.
    ASSERT_TRUE(child.Send("execd\n"));
    ASSERT_TRUE(child.ReadLine(&line));
    ASSERT_EQ(line, "execd");
    auto after = ExecutableMappings(child.pid());
    ASSERT_FALSE(after.empty());
    normalizer.Revalidate(child.pid());
    std::vector<uint64_t> new_addrs;
    for (const auto& m : after) new_addrs.push_back(m.first);
    auto batch = normalizer.Normalize(child.pid(), new_addrs);
    ASSERT_TRUE(batch);
    for (size_t i = 0; i < after.size(); ++i) {
      SCOPED_TRACE(after[i].second);
      ASSERT_TRUE(batch->addresses[i].ok()) << ReasonName(batch->addresses[i].reason);
      EXPECT_EQ(batch->modules[batch->addresses[i].module].path, after[i].second);
    }
    child.KillAndWait();
  }
}

}  // namespace
}  // namespace stacksym
