// The jitdump reader on dumps made here byte by byte: code loads with their names, a move of
// loaded code, records it skips (debug and unwinding info, unknown ids), a dump cut in the
// middle of a record (a process still writing it), JIT_CODE_CLOSE, and refusals (bad magic,
// the other byte order, a record size below its prefix, a header size past the end). The table
// built from a perf map and a jitdump: the dump's loads win where both name an address.
#include "symbolize/jitdump.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "symbolize/perf_map.h"

namespace stacksym {
namespace {

class DumpWriter {
 public:
  explicit DumpWriter(uint32_t magic = 0x4A695444, uint32_t header_size = 40) {
    U32(magic);
    U32(1);  // version
    U32(header_size);
    U32(62);  // EM_X86_64
    U32(0);
    U32(4321);  // pid
    U64(99);    // timestamp
    U64(0);     // flags
  }
  DumpWriter& Load(uint64_t addr, uint64_t size, uint64_t index, const std::string& name,
                   size_t code_bytes_written = SIZE_MAX) {
    size_t code = code_bytes_written == SIZE_MAX ? size : code_bytes_written;
    Record(0, 40 + name.size() + 1 + code);
    U32(4321);
    U32(4322);
    U64(addr);
    U64(addr);
    U64(size);
    U64(index);
    bytes_.insert(bytes_.end(), name.begin(), name.end());
    bytes_.push_back(0);
    bytes_.insert(bytes_.end(), code, 0x90);
    return *this;
  }
  DumpWriter& Move(uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
    Record(1, 48);
    U32(4321);
    U32(4322);
    U64(to);
    U64(from);
    U64(to);
    U64(size);
    U64(index);
    return *this;
  }
  DumpWriter& Other(uint32_t id, size_t body) {
    Record(id, body);
    bytes_.insert(bytes_.end(), body, 0xab);
    return *this;
  }
  DumpWriter& RawRecordHeader(uint32_t id, uint32_t total_size) {
    U32(id);
    U32(total_size);
    U64(0);
    return *this;
  }
  std::vector<uint8_t> bytes() const { return bytes_; }

 private:
  void Record(uint32_t id, size_t body) {
    U32(id);
    U32(static_cast<uint32_t>(16 + body));
    U64(1000 + bytes_.size());
  }
  void U32(uint32_t v) { Put(&v, 4); }
  void U64(uint64_t v) { Put(&v, 8); }
  void Put(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

TEST(JitDumpTest, ReadsLoadsAndMovesAndSkipsOtherRecords) {
  std::vector<uint8_t> bytes = DumpWriter()
                                   .Load(0x7f0000001000, 0x40, 1, "JS:*leafHot /app/x.js:2")
                                   .Other(2, 24)  // debug info
                                   .Load(0x7f0000002000, 0x10, 2, "Builtin:Add")
                                   .Other(4, 40)  // unwinding info
                                   .Other(77, 3)  // a record id from a later spec
                                   .Move(0x7f0000001000, 0x7f0000009000, 0x40, 1)
                                   .bytes();
  Result<symbolize::JitDump> dump = symbolize::ReadJitDump(bytes);
  ASSERT_TRUE(dump) << dump.error().ToString();
  EXPECT_EQ(dump->version, 1u);
  EXPECT_EQ(dump->elf_mach, 62u);
  EXPECT_EQ(dump->pid, 4321u);
  EXPECT_EQ(dump->records, 6u);
  EXPECT_EQ(dump->skipped_records, 0u);
  EXPECT_FALSE(dump->truncated);
  ASSERT_EQ(dump->loads.size(), 3u);
  EXPECT_EQ(dump->loads[0].code_addr, 0x7f0000001000u);
  EXPECT_EQ(dump->loads[0].code_size, 0x40u);
  EXPECT_EQ(dump->loads[0].name, "JS:*leafHot /app/x.js:2");
  EXPECT_EQ(dump->loads[1].name, "Builtin:Add");
  EXPECT_EQ(dump->loads[2].code_addr, 0x7f0000009000u);
  EXPECT_EQ(dump->loads[2].name, "JS:*leafHot /app/x.js:2");  // the moved code's name
}

TEST(JitDumpTest, KeepsWhatPrecedesACutRecordAndStopsAtClose) {
  std::vector<uint8_t> whole =
      DumpWriter().Load(0x1000, 0x10, 1, "first").Load(0x2000, 0x10, 2, "second").bytes();
  // Cut anywhere inside the second record: the first load stays, the dump is marked truncated.
  size_t second = 40 + 16 + 40 + 6 + 0x10;
  for (size_t cut = second + 1; cut < whole.size(); cut += 7) {
    std::vector<uint8_t> bytes(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(cut));
    Result<symbolize::JitDump> dump = symbolize::ReadJitDump(bytes);
    ASSERT_TRUE(dump) << cut;
    EXPECT_TRUE(dump->truncated) << cut;
    ASSERT_EQ(dump->loads.size(), 1u) << cut;
    EXPECT_EQ(dump->loads[0].name, "first");
  }
  std::vector<uint8_t> closed =
      DumpWriter().Load(0x1000, 0x10, 1, "first").Other(3, 0).Load(0x2000, 8, 2, "after").bytes();
  Result<symbolize::JitDump> dump = symbolize::ReadJitDump(closed);
  ASSERT_TRUE(dump);
  ASSERT_EQ(dump->loads.size(), 1u);
  EXPECT_FALSE(dump->truncated);
}

TEST(JitDumpTest, SkipsMalformedBodies) {
  std::vector<uint8_t> bytes =
      DumpWriter()
          .Load(0x1000, 0x100, 1, "code_longer_than_its_record", /*code_bytes_written=*/4)
          .Load(0x2000, 0, 2, "empty_code")
          .Move(0x5000, 0x6000, 0x10, 99)                     // no load of index 99
          .Other(0, 10)                                       // a load whose body is cut short
          .Load(0xfffffffffffffff0, 0x20, 4, "past_the_top")  // found by fuzz_jitdump
          .Load(0x3000, 8, 3, "kept")
          .Move(0x3000, 0xfffffffffffffff8, 8, 3)  // moved to end exactly at 2^64
          .bytes();
  Result<symbolize::JitDump> dump = symbolize::ReadJitDump(bytes);
  ASSERT_TRUE(dump);
  EXPECT_EQ(dump->skipped_records, 6u);
  ASSERT_EQ(dump->loads.size(), 1u);
  EXPECT_EQ(dump->loads[0].name, "kept");
}

TEST(JitDumpTest, RefusesWhatIsNotAJitdump) {
  EXPECT_EQ(symbolize::ReadJitDump({}).error().code, ErrorCode::kMalformed);
  std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  EXPECT_EQ(symbolize::ReadJitDump(elf).error().code, ErrorCode::kMalformed);
  EXPECT_EQ(symbolize::ReadJitDump(DumpWriter(0x4454694A).bytes()).error().code,
            ErrorCode::kUnsupported);
  std::vector<uint8_t> header = DumpWriter().bytes();
  EXPECT_EQ(symbolize::ReadJitDump({header.data(), 20}).error().code, ErrorCode::kMalformed);
  EXPECT_EQ(symbolize::ReadJitDump(DumpWriter(0x4A695444, 4096).bytes()).error().code,
            ErrorCode::kMalformed);
  EXPECT_EQ(symbolize::ReadJitDump(DumpWriter(0x4A695444, 8).bytes()).error().code,
            ErrorCode::kMalformed);
  Result<symbolize::JitDump> small =
      symbolize::ReadJitDump(DumpWriter().RawRecordHeader(0, 8).bytes());
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code, ErrorCode::kMalformed);
  EXPECT_EQ(small.error().offset, 40u);
  // A header with no record is an empty dump.
  Result<symbolize::JitDump> empty = symbolize::ReadJitDump(header);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->loads.empty());
}

TEST(JitDumpTest, PerfMapAndJitdumpMakeOneTable) {
  std::vector<uint8_t> bytes =
      DumpWriter().Load(0x1010, 0x10, 1, "from_dump").Load(0x3000, 0x20, 2, "only_dump").bytes();
  Result<symbolize::JitDump> dump = symbolize::ReadJitDump(bytes);
  ASSERT_TRUE(dump);
  symbolize::PerfMap map =
      symbolize::PerfMap::Parse("1000 40 from_map\n2000 10 only_map\n", dump->loads);
  EXPECT_EQ(map.size(), 4u);
  EXPECT_EQ(map.Find(0x1000)->name, "from_map");
  EXPECT_EQ(map.Find(0x1015)->name, "from_dump");  // the dump's load wins where both name it
  EXPECT_EQ(map.Find(0x1025)->name, "from_map");
  EXPECT_EQ(map.Find(0x2005)->name, "only_map");
  EXPECT_EQ(map.Find(0x301f)->name, "only_dump");
  EXPECT_FALSE(map.Find(0x3020));

  // The same through the files a recorder reads.
  JitFiles files;
  files.perf_map_path = "/proc/1/root/tmp/perf-1.map";
  files.perf_map = "1000 40 from_map\n";
  files.jitdump_path = "/proc/1/root/tmp/jit-1.dump";
  files.jitdump.assign(bytes.begin(), bytes.end());
  Result<symbolize::PerfMap> both = symbolize::PerfMap::FromJitFiles(files);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->path(), files.perf_map_path);
  EXPECT_EQ(both->Find(0x1015)->name, "from_dump");
  // A broken dump leaves the map, and says why.
  files.jitdump = "not a dump";
  std::string why;
  Result<symbolize::PerfMap> map_only = symbolize::PerfMap::FromJitFiles(files, &why);
  ASSERT_TRUE(map_only);
  EXPECT_EQ(map_only->Find(0x1015)->name, "from_map");
  EXPECT_NE(why.find("jit-1.dump"), std::string::npos) << why;
  EXPECT_EQ(symbolize::PerfMap::FromJitFiles(JitFiles{}).error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace stacksym
