// Kernel symbolization: kallsyms parsing, size inference, modules and BPF programs, hidden
// addresses, a round trip over the live /proc/kallsyms checked against an independent
// iostream parse, and vmlinux DWARF through a made-up KASLR slide.
#include "stacksym/kernel.h"

#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "test_util.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::RunCommand;

std::string WriteTemp(const std::string& tag, const std::string& text) {
  std::string path = ::testing::TempDir() + "/kernel_test_" + tag + "_" + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

constexpr char kSample[] =
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 t srso_local_alias\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81000100 t local_func\n"
    "ffffffff81000180 W weak_func\n"
    "ffffffff81000200 T last_vmlinux_func\n"
    // Modules and BPF programs come after vmlinux, in load order, not address order.
    "ffffffffc0a02000 t ext4_second\t[ext4]\n"
    "ffffffffc0a01000 t ext4_first\t[ext4]\n"
    "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_my_prog\t[bpf]\n"
    "ffffffffc0b00800 t bpf_prog_00000000000000ff\t[bpf]\n"
    "garbage line\n"
    "ffffffff81000300\n"
    "ffffffff81000300 T\n"
    "zzzz T bad_hex\n"
    "\n";

TEST(KallsymsTest, ParsesSortsAndSkipsMalformedLines) {
  KallsymsTable t = KallsymsTable::Parse(kSample);
  EXPECT_EQ(t.size(), 10u);
  EXPECT_EQ(t.skipped_lines(), 4u);
  EXPECT_FALSE(t.addresses_hidden());
  for (size_t i = 1; i < t.size(); ++i) EXPECT_LE(t.at(i - 1).address, t.at(i).address);
}

TEST(KallsymsTest, AliasesPreferGlobalThenFileOrder) {
  KallsymsTable t = KallsymsTable::Parse(kSample);
  auto s = t.Find(0xffffffff81000010);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "_stext");  // 'T' before 't'; first 'T' in the file wins the tie
  EXPECT_EQ(s->address, 0xffffffff81000000u);
  EXPECT_EQ(s->size, 0x100u);
  EXPECT_TRUE(s->module.empty());
}

TEST(KallsymsTest, SizesAreInferredFromTheNextSymbolOfTheSameModule) {
  KallsymsTable t = KallsymsTable::Parse(kSample);
  auto local = t.Find(0xffffffff8100017f);
  ASSERT_TRUE(local);
  EXPECT_EQ(local->name, "local_func");
  EXPECT_EQ(local->size, 0x80u);
  EXPECT_EQ(t.Find(0xffffffff81000180)->name, "weak_func");
  // The last vmlinux symbol is followed by a module: its size is unknown and bounded.
  auto last = t.Find(0xffffffff81000200 + KallsymsTable::kMaxUnsizedSpan - 1);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->name, "last_vmlinux_func");
  EXPECT_EQ(last->size, 0u);
  EXPECT_FALSE(t.Find(0xffffffff81000200 + KallsymsTable::kMaxUnsizedSpan));
  EXPECT_FALSE(t.Find(0xffffffff80ffffff));
  EXPECT_FALSE(t.Find(0));
}

TEST(KallsymsTest, ModuleSymbols) {
  KallsymsTable t = KallsymsTable::Parse(kSample);
  auto first = t.Find(0xffffffffc0a01010);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->name, "ext4_first");
  EXPECT_EQ(first->module, "ext4");
  EXPECT_EQ(first->size, 0x1000u);  // sorted although listed after ext4_second
  auto by_name = t.FindByName("ext4_second");
  ASSERT_EQ(by_name.size(), 1u);
  EXPECT_EQ(by_name[0].address, 0xffffffffc0a02000u);
  EXPECT_EQ(by_name[0].module, "ext4");
}

TEST(KallsymsTest, BpfProgramSymbols) {
  KallsymsTable t = KallsymsTable::Parse(kSample);
  auto prog = t.Find(0xffffffffc0b00004);
  ASSERT_TRUE(prog);
  EXPECT_EQ(prog->module, "bpf");
  auto parsed = ParseBpfProgramSymbol(prog->name);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->tag, "6deef7357e7b4530");
  EXPECT_EQ(parsed->name, "my_prog");
  auto unnamed = ParseBpfProgramSymbol("bpf_prog_00000000000000ff");
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(unnamed->name, "");
  EXPECT_FALSE(ParseBpfProgramSymbol("bpf_prog_realloc"));
  EXPECT_FALSE(ParseBpfProgramSymbol("bpf_prog_6deef7357e7b4530x"));
  EXPECT_FALSE(ParseBpfProgramSymbol("perf_event_attach_bpf_prog"));

  KallsymsTable copy = KallsymsTable::Parse(kSample);
  auto ks = KernelSymbolizer::FromTable(std::move(copy), {});
  ASSERT_TRUE(ks);
  SymbolizedAddress a = (*ks)->Symbolize(0xffffffffc0b00004);
  ASSERT_FALSE(a.reason);
  EXPECT_EQ(a.symbol, "bpf_prog_6deef7357e7b4530_my_prog");
  EXPECT_EQ(a.module, "[bpf]");
  EXPECT_EQ(a.offset, 4u);
}

TEST(KernelSymbolizerTest, ModuleAndVmlinuxLabels) {
  auto ks = KernelSymbolizer::FromTable(KallsymsTable::Parse(kSample), {});
  ASSERT_TRUE(ks);
  SymbolizedAddress m = (*ks)->Symbolize(0xffffffffc0a02008);
  ASSERT_FALSE(m.reason);
  EXPECT_EQ(m.symbol, "ext4_second");
  EXPECT_EQ(m.module, "[ext4]");
  EXPECT_EQ(m.offset, 8u);
  SymbolizedAddress v = (*ks)->Symbolize(0xffffffff81000104);
  ASSERT_FALSE(v.reason);
  EXPECT_EQ(v.symbol, "local_func");
  EXPECT_EQ(v.module, "[kernel.kallsyms]");
  EXPECT_EQ(v.symbol_size, 0x80u);
}

TEST(KernelSymbolizerTest, BadAddressesGetReasons) {
  auto ks = KernelSymbolizer::FromTable(KallsymsTable::Parse(kSample), {});
  ASSERT_TRUE(ks);
  std::vector<uint64_t> addrs = {0, ~uint64_t{0}, 0x1000, 0xffffffff81000104};
  std::vector<SymbolizedAddress> out = (*ks)->SymbolizeBatch(addrs);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].reason, Reason::kInvalidAddress);
  EXPECT_EQ(out[1].reason, Reason::kInvalidAddress);
  EXPECT_EQ(out[2].reason, Reason::kNoSymbol);
  EXPECT_FALSE(out[3].reason);
  EXPECT_TRUE((*ks)->SymbolizeBatch({}).empty());
}

TEST(KernelSymbolizerTest, HiddenAddressesGiveAClearReason) {
  std::string hidden =
      "0000000000000000 T _stext\n"
      "0000000000000000 T do_sys_open\n"
      "0000000000000000 t ext4_fill_super\t[ext4]\n";
  KallsymsTable t = KallsymsTable::Parse(hidden);
  EXPECT_TRUE(t.addresses_hidden());
  EXPECT_FALSE(t.Find(0));
  KernelSymbolizerOptions options;
  options.kallsyms_path = WriteTemp("hidden", hidden);
  auto ks = KernelSymbolizer::Open(options);
  ASSERT_TRUE(ks) << ks.error().ToString();
  EXPECT_TRUE((*ks)->addresses_hidden());
  SymbolizedAddress a = (*ks)->Symbolize(0xffffffff81000000);
  EXPECT_EQ(a.reason, Reason::kKernelAddressesHidden);
  EXPECT_NE(std::string(ReasonText(*a.reason)).find("kptr_restrict"), std::string::npos);

  // The command says why, once, on stderr, and still answers each address.
  int code = -1;
  std::string out = RunCommand(std::string(STACKSYM_CLI) + " symbolize kernel --kallsyms " +
                                   options.kallsyms_path + " ffffffff81000000 --json 2>&1",
                               &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("kptr_restrict"), std::string::npos) << out;
  EXPECT_NE(out.find("\"reason\":\"kernel_addresses_hidden\""), std::string::npos) << out;
  std::remove(options.kallsyms_path.c_str());
}

TEST(KernelSymbolizerTest, EmptyAndMissingKallsyms) {
  EXPECT_TRUE(KallsymsTable::Parse("").empty());
  EXPECT_FALSE(KallsymsTable::Parse("").addresses_hidden());
  KernelSymbolizerOptions options;
  options.kallsyms_path = "/nonexistent/kallsyms";
  auto ks = KernelSymbolizer::Open(options);
  ASSERT_FALSE(ks);
  EXPECT_NE(ks.error().ToString().find("/nonexistent/kallsyms"), std::string::npos);
}

// Reference parse of kallsyms with iostreams: address → every name at that address.
std::map<uint64_t, std::set<std::string>> ReferenceParse(const std::string& text) {
  std::map<uint64_t, std::set<std::string>> by_address;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string addr, type, name;
    if (!(f >> addr >> type >> name)) continue;
    by_address[std::stoull(addr, nullptr, 16)].insert(name);
  }
  return by_address;
}

TEST(KallsymsLiveTest, RandomSymbolsRoundTrip) {
  std::ifstream file("/proc/kallsyms");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (text.empty()) GTEST_SKIP() << "/proc/kallsyms is not readable";
  ASSERT_TRUE(KallsymsTable::Load());
  // Both parsers read the same snapshot: BPF programs (other tests') come and go.
  std::optional<KallsymsTable> table = KallsymsTable::Parse(text);
  if (table->addresses_hidden()) {
    GTEST_SKIP() << "kallsyms addresses are hidden (kptr_restrict / missing CAP_SYSLOG)";
  }
  std::map<uint64_t, std::set<std::string>> reference = ReferenceParse(text);
  EXPECT_EQ(table->skipped_lines(), 0u);
  EXPECT_GT(table->size(), 1000u);

  std::mt19937_64 rng(12345);
  std::vector<uint64_t> addresses;
  for (const auto& [address, names] : reference) addresses.push_back(address);
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    size_t k = rng() % (addresses.size() - 1);
    uint64_t start = addresses[k], next = addresses[k + 1];
    uint64_t probe = start + rng() % (next - start);
    auto found = table->Find(probe);
    // The reference may span a module boundary, where the table bounds sizes.
    if (!found) {
      EXPECT_GE(probe - start, KallsymsTable::kMaxUnsizedSpan) << std::hex << probe;
      continue;
    }
    EXPECT_EQ(found->address, start) << std::hex << probe;
    EXPECT_TRUE(reference[start].count(std::string(found->name)))
        << found->name << " at " << std::hex << start;
    ++checked;
  }
  EXPECT_GT(checked, 1900);

  // The command agrees with the library on a few of them.
  std::string cmd = std::string(STACKSYM_CLI) + " symbolize kernel --json";
  std::vector<std::pair<uint64_t, std::string>> expected;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = addresses[rng() % addresses.size()] + 1;
    auto found = table->Find(a);
    if (!found || !found->module.empty()) continue;  // vmlinux only: stable across reads
    char buf[32];
    std::snprintf(buf, sizeof buf, " %llx", static_cast<unsigned long long>(a));
    cmd += buf;
    expected.emplace_back(a, std::string(found->name));
  }
  std::string out = RunCommand(cmd);
  for (const auto& [a, name] : expected) {
    EXPECT_NE(out.find("\"raw_symbol\":\"" + name + "\""), std::string::npos) << name << out;
  }
}

TEST(KallsymsLiveTest, LiveModuleSymbolsAreLabelled) {
  Result<KallsymsTable> table = KallsymsTable::Load();
  if (!table || table->addresses_hidden()) GTEST_SKIP() << "kallsyms unreadable or hidden";
  auto ks = KernelSymbolizer::FromTable(std::move(*table), {});
  ASSERT_TRUE(ks);
  const KallsymsTable& t = (*ks)->table();
  size_t modules = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    KernelSymbol s = t.at(i);
    if (s.module.empty()) continue;
    ++modules;
    SymbolizedAddress a = (*ks)->Symbolize(s.address);
    ASSERT_FALSE(a.reason);
    EXPECT_EQ(a.module, "[" + std::string(s.module) + "]");
  }
  if (modules == 0) GTEST_SKIP() << "this kernel has no module, BPF or ftrace symbols loaded";
}

// A real BPF program: load a two-instruction socket filter, read its tag back from the
// kernel, and find "bpf_prog_<tag>_<name>" in [bpf] through the live kallsyms.
TEST(KallsymsLiveTest, LoadedBpfProgramIsSymbolized) {
  struct bpf_insn insns[2] = {};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = 0
  insns[0].dst_reg = BPF_REG_0;
  insns[1].code = BPF_JMP | BPF_EXIT;
  const char kName[] = "stacksym_ktest";
  union bpf_attr attr = {};
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insn_cnt = 2;
  attr.insns = reinterpret_cast<uint64_t>(insns);
  attr.license = reinterpret_cast<uint64_t>("GPL");
  std::memcpy(attr.prog_name, kName, sizeof kName);
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof attr));
  if (fd < 0) GTEST_SKIP() << "cannot load a BPF program (needs CAP_BPF): " << strerror(errno);
  struct bpf_prog_info info = {};
  union bpf_attr info_attr = {};
  info_attr.info.bpf_fd = static_cast<uint32_t>(fd);
  info_attr.info.info_len = sizeof info;
  info_attr.info.info = reinterpret_cast<uint64_t>(&info);
  ASSERT_EQ(syscall(__NR_bpf, BPF_OBJ_GET_INFO_BY_FD, &info_attr, sizeof info_attr), 0);
  char tag[17];
  for (int i = 0; i < 8; ++i) std::snprintf(tag + 2 * i, 3, "%02x", info.tag[i]);
  std::string symbol = std::string("bpf_prog_") + tag + "_" + kName;

  Result<KallsymsTable> table = KallsymsTable::Load();
  close(fd);
  ASSERT_TRUE(table);
  if (table->addresses_hidden()) GTEST_SKIP() << "kallsyms addresses are hidden";
  std::vector<KernelSymbol> found = table->FindByName(symbol);
  if (found.empty()) {
    GTEST_SKIP() << symbol << " is not in kallsyms (net.core.bpf_jit_kallsyms=0 or no JIT)";
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].module, "bpf");
  uint64_t address = found[0].address;
  auto ks = KernelSymbolizer::FromTable(std::move(*table), {});
  ASSERT_TRUE(ks);
  SymbolizedAddress a = (*ks)->Symbolize(address + 1);
  ASSERT_FALSE(a.reason) << ReasonText(*a.reason);
  EXPECT_EQ(a.symbol, symbol);
  EXPECT_EQ(a.module, "[bpf]");
  EXPECT_EQ(a.offset, 1u);
  auto parsed = ParseBpfProgramSymbol(a.symbol);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->tag, tag);
  EXPECT_EQ(parsed->name, kName);
}

// vmlinux: the fake vmlinux fixture, "loaded" at a made-up slide.
constexpr uint64_t kSlide = 0xffffffff80000000ull;

TEST(KernelVmlinuxTest, KaslrOffsetFromStextAndVmlinuxAnswers) {
  std::string vmlinux = FixturePath("kernel_fake_vmlinux");
  std::vector<testing::NmSymbol> nm = testing::RunNm(vmlinux, "");
  uint64_t stext = 0, alpha = 0, beta = 0;
  for (const auto& s : nm) {
    if (s.name == "kfunc_alpha") alpha = s.address;
    if (s.name == "kfunc_beta") beta = s.address;
  }
  std::string nm_stext = RunCommand("nm '" + vmlinux + "' | awk '$3==\"_stext\"{print $1}'");
  stext = std::stoull(nm_stext, nullptr, 16);
  ASSERT_NE(alpha, 0u);
  ASSERT_NE(beta, 0u);
  // kallsyms knows only _stext and kfunc_beta: kfunc_alpha can come only from vmlinux.
  char text[256];
  std::snprintf(text, sizeof text, "%016llx T _stext\n%016llx T kfunc_beta\n",
                static_cast<unsigned long long>(stext + kSlide),
                static_cast<unsigned long long>(beta + kSlide));
  KernelSymbolizerOptions options;
  options.vmlinux_path = vmlinux;
  options.symbolize.debug_dirs = {};
  auto ks = KernelSymbolizer::FromTable(KallsymsTable::Parse(text), options);
  ASSERT_TRUE(ks) << ks.error().ToString();
  EXPECT_EQ((*ks)->kaslr_offset(), static_cast<int64_t>(kSlide));

  SymbolizedAddress a = (*ks)->Symbolize(alpha + kSlide + 1);
  ASSERT_FALSE(a.reason) << ReasonText(*a.reason);
  EXPECT_EQ(a.symbol, "kfunc_alpha");
  EXPECT_EQ(a.offset, 1u);
  EXPECT_EQ(a.vaddr, alpha + 1);
  EXPECT_EQ(a.input, alpha + kSlide + 1);
  EXPECT_EQ(a.module, "[kernel.kallsyms]");
  if (!a.frames.empty()) {
    // DWARF is in use: file:line equals addr2line's at the unslid address.
    char addr[32];
    std::snprintf(addr, sizeof addr, "%llx", static_cast<unsigned long long>(alpha + 1));
    std::string want = RunCommand("addr2line -e '" + vmlinux + "' " + addr);
    std::string line = want.substr(want.rfind(':') + 1);
    line = line.substr(0, line.find_first_not_of("0123456789"));
    EXPECT_EQ(std::to_string(a.frames.back().line), line) << want;
    EXPECT_NE(want.find(a.frames.back().file.substr(a.frames.back().file.rfind('/') + 1)),
              std::string::npos);
  }
}

TEST(KernelVmlinuxTest, VmlinuxWithoutStextIsAnError) {
  KernelSymbolizerOptions options;
  options.vmlinux_path = FixturePath("kernel_fake_vmlinux");
  auto ks =
      KernelSymbolizer::FromTable(KallsymsTable::Parse("ffffffff81000000 T not_stext\n"), options);
  ASSERT_FALSE(ks);
  EXPECT_NE(ks.error().message.find("_stext"), std::string::npos);
  options.vmlinux_path = "/nonexistent/vmlinux";
  EXPECT_FALSE(KernelSymbolizer::FromTable(KallsymsTable::Parse(kSample), options));
}

}  // namespace
}  // namespace stacksym
