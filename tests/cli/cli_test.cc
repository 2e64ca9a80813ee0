// The `stacksym` command end to end: exit codes (0 ok, 1 bad input, 2 usage), --help on every
// subcommand, buildid against readelf -n, and symbolize elf's output styles — llvm style
// diffed byte for byte against llvm-symbolizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "../symbolize/test_util.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::RunCommand;

std::string Cli() { return STACKSYM_CLI; }

std::string RunCli(const std::string& args, int* code) {
  return RunCommand(Cli() + " " + args + " 2>&1", code);
}

std::string ReadelfBuildId(const std::string& path) {
  std::string out = RunCommand("readelf -n '" + path + "'");
  std::smatch m;
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

TEST(Cli, UsageErrorsExitTwo) {
  int code = 0;
  RunCli("", &code);
  EXPECT_EQ(code, 2);
  RunCli("no-such-command", &code);
  EXPECT_EQ(code, 2);
  RunCli("symbolize elf", &code);  // --file is required
  EXPECT_EQ(code, 2);
  RunCli("symbolize elf --file /bin/true --output-style=bogus 0x1", &code);
  EXPECT_EQ(code, 2);
}

TEST(Cli, HelpOnEverySubcommand) {
  int code = 0;
  std::string top = RunCli("--help", &code);
  EXPECT_EQ(code, 0);
  // Only the command named on the command line gets its options built (CommandTree): each
  // must still show them, found in argv after options that precede it.
  for (const char* sub :
       {"buildid", "cache list", "cache build", "cache prune", "convert", "normalize", "record",
        "report", "serve", "symbolize build-id", "symbolize elf", "symbolize kernel",
        "symbolize process", "symbolize-profile"}) {
    std::string name = sub;
    EXPECT_NE(top.find(name.substr(0, name.find(' '))), std::string::npos) << sub;
    std::string out = RunCli(name + " --help", &code);
    EXPECT_EQ(code, 0) << sub;
    EXPECT_NE(out.find("Usage"), std::string::npos) << sub << ":\n" << out;
    EXPECT_NE(out.find("Options:"), std::string::npos) << sub << ":\n" << out;
    // What the command's setup adds: positionals, or options beside --help.
    bool more_options = out.find("\n  --", out.find("--help")) != std::string::npos;
    EXPECT_TRUE(out.find("Positionals:") != std::string::npos || more_options)
        << sub << " lists neither positionals nor options:\n"
        << out;
  }
  std::string elf_help = RunCli("symbolize elf --help", &code);
  EXPECT_NE(elf_help.find("--file"), std::string::npos) << elf_help;
  std::string group = RunCli("symbolize --help", &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(group.find("elf"), std::string::npos) << group;
}

TEST(Cli, BuildIdMatchesReadelf) {
  for (std::string path :
       {std::string("/usr/bin/bash"), std::string("/usr/lib/x86_64-linux-gnu/libc.so.6"),
        FixturePath("symtab_cpp_pie")}) {
    std::string expected = ReadelfBuildId(path);
    ASSERT_FALSE(expected.empty()) << "readelf shows no build ID for " << path;
    int code = -1;
    std::string out = RunCommand(Cli() + " buildid '" + path + "'", &code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(out, expected + " " + path + "\n");
  }
}

TEST(Cli, BuildIdBadFilesExitOneWithMessagePerFile) {
  int code = 0;
  std::string out = RunCli("buildid /nonexistent /etc/hostname /usr/bin/bash", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("/nonexistent"), std::string::npos) << out;
  EXPECT_NE(out.find("/etc/hostname"), std::string::npos) << out;
  EXPECT_NE(out.find(ReadelfBuildId("/usr/bin/bash")), std::string::npos) << out;
}

TEST(Cli, SymbolizeElfBadInput) {
  int code = 0;
  std::string out = RunCli("symbolize elf --file /nonexistent 0x10", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("/nonexistent"), std::string::npos);
  out = RunCli("symbolize elf --file /usr/bin/bash 0xzz", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("invalid address"), std::string::npos) << out;
}

// llvm style is diffable with llvm-symbolizer: on a stripped binary both answer from .dynsym.
// Legacy Rust names are left out: llvm-symbolizer 14 demangles them as Itanium names and keeps
// the hash ("::h0123456789abcdef"); we follow libiberty/c++filt/perf, which drop it
// (docs/ARCHITECTURE.md, "Known differences").
TEST(Cli, LlvmStyleMatchesLlvmSymbolizerOnSymbolTables) {
  std::string path = FixturePath("symtab_cpp_stripped");
  std::vector<testing::NmSymbol> nm = testing::RunNm(path, "-D");
  std::string addresses;
  std::mt19937 rng(7);
  int n = 0;
  for (const auto& s : nm) {
    bool legacy_rust = s.name.rfind("_ZN", 0) == 0 && s.name.find("17h") != std::string::npos;
    if ((s.type == 'T' || s.type == 'W') && s.size > 0 && !legacy_rust) {
      char buf[64];
      snprintf(buf, sizeof buf, "0x%llx\n",
               static_cast<unsigned long long>(s.address + rng() % s.size));
      addresses += buf;
      ++n;
    }
  }
  ASSERT_GT(n, 5);
  std::string list = std::string(::testing::TempDir()) + "/addrs" + std::to_string(getpid());
  FILE* f = fopen(list.c_str(), "w");
  fputs(addresses.c_str(), f);
  fclose(f);
  int code = -1;
  std::string ours = RunCommand(
      Cli() + " symbolize elf --output-style=llvm --file '" + path + "' < " + list, &code);
  EXPECT_EQ(code, 0);
  std::string theirs = RunCommand("llvm-symbolizer --inlines --obj='" + path + "' < " + list);
  EXPECT_EQ(ours, theirs);
  unlink(list.c_str());
}

TEST(Cli, StdinAndArgumentsAgreeAndHexPrefixOptional) {
  std::string path = FixturePath("symtab_cpp_pie");
  int code = -1;
  std::string a = RunCommand(Cli() + " symbolize elf --file '" + path + "' 0x1139 1139", &code);
  EXPECT_EQ(code, 0);
  std::string b = RunCommand("printf '0x1139\\n\\n# comment\\n1139\\n' | " + Cli() +
                             " symbolize elf --file '" + path + "'");
  EXPECT_EQ(a, b);
  std::istringstream lines(a);
  std::string l1, l2;
  std::getline(lines, l1);
  std::getline(lines, l2);
  EXPECT_EQ(l1.substr(l1.find(' ')), l2.substr(l2.find(' ')));
}

TEST(Cli, JsonLinesParse) {
  std::string path = FixturePath("symtab_cpp_pie");
  int code = -1;
  RunCommand(Cli() + " symbolize elf --json --file '" + path +
                 "' 0x0 0x1139 0xffffffffffffffff | python3 -c 'import sys, json\n"
                 "rows = [json.loads(l) for l in sys.stdin]\n"
                 "assert len(rows) == 3, rows\n"
                 "assert rows[2][\"reason\"] == \"not_in_segment\", rows[2]\n'",
             &code);
  EXPECT_EQ(code, 0);
}

// --debug-dir means the same on every subcommand: searched before the default
// /usr/lib/debug, which --no-default-debug-dir drops.
TEST(Cli, DebugDirPrependsToTheDefaultEverywhere) {
  int code = 0;
  for (const char* sub :
       {"symbolize elf", "symbolize process", "symbolize kernel", "symbolize build-id",
        "cache build", "record", "serve", "symbolize-profile"}) {
    std::string out = RunCli(std::string(sub) + " --help", &code);
    EXPECT_EQ(code, 0) << sub;
    EXPECT_NE(out.find("--no-default-debug-dir"), std::string::npos) << sub << ":\n" << out;
    EXPECT_NE(out.find("before /usr/lib/debug"), std::string::npos) << sub << ":\n" << out;
  }
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  std::string id = ReadelfBuildId(libc);
  std::string debug = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  if (id.empty() || access(debug.c_str(), R_OK) != 0) GTEST_SKIP() << "libc6-dbg not installed";
  std::string malloc_at =
      RunCommand("nm -D " + libc + " | awk '$3 == \"malloc@@GLIBC_2.2.5\" {print $1; exit}'");
  ASSERT_FALSE(malloc_at.empty());
  malloc_at = malloc_at.substr(0, malloc_at.find('\n'));
  const std::string elf = "symbolize elf --no-cache --no-debuginfod --file " + libc + " ";
  std::string with_default = RunCli(elf + "--debug-dir /nonexistent 0x" + malloc_at, &code);
  EXPECT_EQ(code, 0) << with_default;
  EXPECT_NE(with_default.find("malloc.c:"), std::string::npos) << with_default;
  std::string without =
      RunCli(elf + "--debug-dir /nonexistent --no-default-debug-dir 0x" + malloc_at, &code);
  EXPECT_EQ(code, 0) << without;
  EXPECT_EQ(without.find("malloc.c:"), std::string::npos) << without;

  // cache build used to replace the default with --debug-dir.
  char dir[] = "/tmp/stacksym-cli-debugdir-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string built = RunCli(
      "cache build --cache-dir " + std::string(dir) + " --debug-dir /nonexistent " + libc, &code);
  EXPECT_EQ(code, 0) << built;
  EXPECT_NE(built.find(debug), std::string::npos) << built;
  RunCommand("rm -rf " + std::string(dir));
}

}  // namespace
}  // namespace stacksym
