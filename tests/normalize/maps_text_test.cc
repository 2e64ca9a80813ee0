// The /proc/PID/maps text parser: tricky names, malformed lines, and chunked input (every split
// point must give the same entries as parsing the whole text at once).
#include "normalize/maps_text.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <sstream>
#include <string>

#include "normalize/vma_sources.h"

namespace stacksym::normalize {
namespace {

const char kMaps[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234                       /usr/bin/my prog "
    "(deleted)\n"
    "55d0c0a02000-55d0c0a22000 r-xp 00002000 fd:01 1234                       /usr/bin/my prog "
    "(deleted)\n"
    "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0000000000-7f0000001000 rw-s 00000000 00:01 77                         /dev/zero (deleted)\n"
    "7f0000001000-7f0000002000 r-xp 00000000 00:00 0                          [anon:jit code]\n"
    "7f0000002000-7f0000003000 ---p 00000000 00:00 0 \n"
    "7f0000003000-7f0000004000 r--p 00001000 103:0a 99                        /tmp/new\\012line\n"
    "7f0000004000-7f0000005000 r-xp 00000000 00:00 0\n"
    "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffc000fe000-7ffc00100000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

struct Parsed {
  std::vector<MapsEntry> entries;
  std::string text;
  MapsParseStats stats;
  std::string Name(size_t i) const { return std::string(MapsNameOf(entries[i], text)); }
};

Parsed ParseAll(std::string text, MapsParseOptions options = {}) {
  Parsed p;
  p.text = std::move(text);
  ParseMapsLines(std::span<char>(p.text.data(), p.text.size()), 0, true, options, &p.entries,
                 &p.stats);
  return p;
}

TEST(MapsText, Fields) {
  Parsed p = ParseAll(kMaps);
  EXPECT_EQ(p.stats.malformed, 0u);
  ASSERT_EQ(p.entries.size(), 10u);  // [vsyscall] skipped
  const MapsEntry& e = p.entries[1];
  EXPECT_EQ(e.start, 0x55d0c0a02000u);
  EXPECT_EQ(e.end, 0x55d0c0a22000u);
  EXPECT_EQ(e.offset, 0x2000u);
  EXPECT_EQ(e.perms, kVmaRead | kVmaExec);
  EXPECT_EQ(e.dev, makedev(0xfd, 0x01));
  EXPECT_EQ(e.inode, 1234u);
  EXPECT_TRUE(e.deleted);
  EXPECT_EQ(p.Name(1), "/usr/bin/my prog");
  EXPECT_EQ(p.Name(2), "[heap]");
  EXPECT_FALSE(p.entries[2].deleted);
  EXPECT_EQ(p.entries[3].perms, kVmaRead | kVmaWrite | kVmaShared);
  EXPECT_EQ(p.Name(3), "/dev/zero");
  EXPECT_TRUE(p.entries[3].deleted);
  EXPECT_EQ(p.Name(4), "[anon:jit code]");
  EXPECT_EQ(p.Name(5), "");
  EXPECT_EQ(p.entries[5].perms, 0u);
  EXPECT_EQ(p.Name(6), "/tmp/new\nline");
  EXPECT_EQ(p.entries[6].dev, makedev(0x103, 0x0a));
  EXPECT_EQ(p.Name(7), "");
  EXPECT_EQ(p.Name(8), "[stack]");
  EXPECT_EQ(p.Name(9), "[vdso]");
}

TEST(MapsText, ExecutableOnlyAndGate) {
  MapsParseOptions o;
  o.executable_only = true;
  Parsed p = ParseAll(kMaps, o);
  ASSERT_EQ(p.entries.size(), 4u);
  for (const MapsEntry& e : p.entries) EXPECT_TRUE(e.perms & kVmaExec);
  o.executable_only = false;
  o.skip_gate = false;
  EXPECT_EQ(ParseAll(kMaps, o).entries.size(), 11u);
}

// An anonymous VMA whose name merely ends in " (deleted)" keeps it: only file-backed mappings
// get the suffix from the kernel.
TEST(MapsText, DeletedSuffixOnlyForFiles) {
  Parsed p = ParseAll(
      "1000-2000 r--p 00000000 00:00 0 [anon:x (deleted)]\n"
      "2000-3000 r--p 00000000 00:00 0 [anon:y] (deleted)\n");
  ASSERT_EQ(p.entries.size(), 2u);
  EXPECT_FALSE(p.entries[1].deleted);
  EXPECT_EQ(p.Name(1), "[anon:y] (deleted)");
}

TEST(MapsText, MalformedLinesAreSkippedAndCounted) {
  const char* bad[] = {
      "zz-2000 r--p 00000000 00:00 0",
      "2000-1000 r--p 00000000 00:00 0",                        // end below start
      "1000-2000 rq-p 00000000 00:00 0",                        // bad perms
      "1000-2000 r--p 0000000g 00:00 0",                        // bad hex
      "1000-2000 r--p 00000000 0000 0",                         // no ':'
      "1000-2000 r--p 00000000 00:00 x",                        // bad inode
      "1000-2000 r--p 00000000 00:00 99999999999999999999999",  // inode overflow
      "11112222333344445-2000 r--p 00000000 00:00 0",           // 17 hex digits
      "1000-2000",                                              // truncated
      "1000-2000 r--",                                          // truncated perms
      "-",
  };
  for (const char* line : bad) {
    SCOPED_TRACE(line);
    Parsed p = ParseAll(std::string(line) + "\n1000-2000 r--p 00000000 00:00 0 ok\n");
    EXPECT_EQ(p.stats.malformed, 1u);
    ASSERT_EQ(p.entries.size(), 1u);
    EXPECT_EQ(p.Name(0), "ok");
  }
}

TEST(MapsText, ChunkedParsingMatchesWholeParsing) {
  Parsed whole = ParseAll(kMaps);
  std::string text = kMaps;
  for (size_t split = 0; split <= text.size(); ++split) {
    std::string buf = text.substr(0, split);
    std::vector<MapsEntry> entries;
    MapsParseStats stats;
    size_t pos =
        ParseMapsLines(std::span<char>(buf.data(), buf.size()), 0, false, {}, &entries, &stats);
    ASSERT_LE(pos, split);
    ASSERT_TRUE(pos == 0 || buf[pos - 1] == '\n');
    buf += text.substr(split);
    ParseMapsLines(std::span<char>(buf.data(), buf.size()), pos, true, {}, &entries, &stats);
    ASSERT_EQ(entries.size(), whole.entries.size()) << split;
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ(entries[i].start, whole.entries[i].start);
      EXPECT_EQ(MapsNameOf(entries[i], buf), MapsNameOf(whole.entries[i], whole.text)) << split;
    }
  }
}

// A last line without '\n' is parsed only when the input is final.
TEST(MapsText, UnterminatedLastLine) {
  std::string text = "1000-2000 r-xp 00000000 00:00 0 a\n2000-3000 r-xp 00000000 00:00 0 b";
  std::vector<MapsEntry> entries;
  MapsParseStats stats;
  size_t pos =
      ParseMapsLines(std::span<char>(text.data(), text.size()), 0, false, {}, &entries, &stats);
  EXPECT_EQ(entries.size(), 1u);
  EXPECT_EQ(pos, text.find('\n') + 1);
  ParseMapsLines(std::span<char>(text.data(), text.size()), pos, true, {}, &entries, &stats);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(MapsNameOf(entries[1], text), "b");
}

// The parser agrees with a naive sscanf parse of this process's real maps file.
TEST(MapsText, RealMapsAgreeWithSscanf) {
  std::ifstream f("/proc/self/maps");
  std::stringstream ss;
  ss << f.rdbuf();
  MapsParseOptions o;
  o.skip_gate = false;
  Parsed p = ParseAll(ss.str(), o);
  std::istringstream lines(p.text);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    unsigned long long start, end, offset, inode;
    unsigned major, minor;
    char perms[5];
    int name_at = 0;
    ASSERT_EQ(sscanf(line.c_str(), "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &offset,
                     &major, &minor, &inode, &name_at),
              7);
    ASSERT_LT(i, p.entries.size());
    EXPECT_EQ(p.entries[i].start, start);
    EXPECT_EQ(p.entries[i].end, end);
    EXPECT_EQ(p.entries[i].offset, offset);
    EXPECT_EQ(p.entries[i].inode, inode);
    EXPECT_EQ(p.entries[i].dev, makedev(major, minor));
    std::string name = line.substr(static_cast<size_t>(name_at));
    if (p.entries[i].deleted) name.resize(name.size() - 10);
    EXPECT_EQ(p.Name(i), name);
    ++i;
  }
  EXPECT_EQ(i, p.entries.size());
  EXPECT_GT(i, 5u);
}

}  // namespace
}  // namespace stacksym::normalize
