// The code-object reader: code objects dumped from a python3.11 process (scripts/code_dump.py:
// the bytes at each object's address, and what Python says about it) read back through a
// buffer standing in for the process's memory, every instruction's line compared with
// co_positions(); hostile memory (garbage pointers, wrong types, absurd lengths, a process that
// is gone, damage of every byte) giving a reason, never a crash; and the per-process cache.
#include "interp/python/code_object.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "interp/python/code_cache.h"
#include "interp/python/frame_walk.h"
#include "python_test_util.h"

namespace stacksym::interp::python {
namespace {

struct DumpedCode {
  uint64_t address = 0;
  std::string name, qualname, filename;
  int32_t first_line = 0;
  std::vector<int64_t> lines;                                      // per code unit; -1: no location
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> regions;  // code, strings, line table
};

struct Dump {
  TypeAddresses types;
  std::vector<DumpedCode> codes;
};

// Runs code_dump.py once for the whole test binary.
const Dump* LoadDump() {
  static const Dump* dump = []() -> const Dump* {
    if (access(kPython311, X_OK) != 0) return nullptr;
    auto program = Program::Start({kPython311, ScriptPath("code_dump.py"), "json"});
    if (!program) return nullptr;
    std::optional<std::string> line = program->ReadLine(60000);
    if (!line) return nullptr;
    auto json = remote::ParseJson(*line, {.max_depth = 32, .max_values = size_t{1} << 26});
    if (!json) return nullptr;
    auto* d = new Dump;
    const remote::JsonValue* types = json->Find("types");
    d->types = {types->Find("code")->uint64(), types->Find("unicode")->uint64(),
                types->Find("bytes")->uint64()};
    for (const remote::JsonValue& c : json->Find("codes")->array()) {
      DumpedCode code;
      code.address = c.Find("address")->uint64();
      code.name = c.Find("name")->string();
      code.qualname = c.Find("qualname")->string();
      code.filename = c.Find("filename")->string();
      code.first_line = static_cast<int32_t>(c.Find("first_line")->uint64());
      for (const remote::JsonValue& l : c.Find("lines")->array()) {
        code.lines.push_back(l.is_uint64() ? static_cast<int64_t>(l.uint64()) : -1);
      }
      for (const remote::JsonValue& r : c.Find("regions")->array()) {
        auto bytes = FromHex(r.array()[1].string());
        code.regions.emplace_back(r.array()[0].uint64(), bytes.value_or(std::vector<uint8_t>{}));
      }
      d->codes.push_back(std::move(code));
    }
    program->Release();
    program->Wait();
    return d;
  }();
  return dump;
}

Layout Layout311() { return *BuiltinLayout({3, 11, 2, 0x030b02f0}); }

BufferMemory MemoryOf(const DumpedCode& code) {
  BufferMemory memory;
  for (const auto& [address, bytes] : code.regions) memory.Add(address, bytes);
  return memory;
}

#define LOAD_DUMP_OR_SKIP(var)                                                   \
  const Dump* var = LoadDump();                                                  \
  if (var == nullptr) GTEST_SKIP() << "no python3.11 to dump code objects from"; \
  ASSERT_GT(var->codes.size(), 100u)

TEST(CodeObjectTest, DumpedCodeObjectsReadBack) {
  LOAD_DUMP_OR_SKIP(dump);
  Layout layout = Layout311();
  size_t lines_checked = 0, non_ascii = 0;
  for (const DumpedCode& code : dump->codes) {
    SCOPED_TRACE(code.qualname);
    BufferMemory memory = MemoryOf(code);
    CodeRead read = ReadCodeObject(memory, layout, dump->types, code.address);
    ASSERT_TRUE(read.code) << CodeErrorName(read.error);
    EXPECT_EQ(read.code->name, code.name);
    EXPECT_EQ(read.code->qualname, code.qualname);
    EXPECT_EQ(read.code->filename, code.filename);
    EXPECT_EQ(read.code->first_line, code.first_line);
    EXPECT_EQ(read.code->code_units, code.lines.size());
    for (size_t i = 0; i < code.lines.size(); ++i) {
      int64_t want = code.lines[i] < 0 ? 0 : code.lines[i];
      ASSERT_EQ(read.code->Line(static_cast<int64_t>(i)), want) << "code unit " << i;
      ++lines_checked;
    }
    // Past the last instruction there is no line.
    EXPECT_EQ(LineOfInstruction(read.code->line_table, read.code->first_line,
                                static_cast<int64_t>(code.lines.size()))
                  .status,
              LineStatus::kPastTable);
    for (const std::string* s : {&code.name, &code.filename}) {
      for (char ch : *s) non_ascii += static_cast<unsigned char>(ch) >= 0x80;
    }
  }
  EXPECT_GT(lines_checked, 10000u);
  EXPECT_GT(non_ascii, 0u);  // Latin-1, UCS-2 and UCS-4 strings were among them
}

TEST(CodeObjectTest, StringKinds) {
  LOAD_DUMP_OR_SKIP(dump);
  bool latin1 = false, ucs2 = false, ucs4 = false;
  for (const DumpedCode& code : dump->codes) {
    latin1 |= code.name == "caf\xc3\xa9";
    ucs2 |= code.name == "\xd1\x84\xd1\x83\xd0\xbd\xd0\xba\xd1\x86\xd0\xb8\xd1\x8f";
    ucs4 |= code.filename == "/tmp/\xf0\x9f\x90\x8d/snake.py";
    if (code.name == "caf\xc3\xa9" || code.filename.find("snake") != std::string::npos) {
      BufferMemory memory = MemoryOf(code);
      CodeRead read = ReadCodeObject(memory, Layout311(), dump->types, code.address);
      ASSERT_TRUE(read.code);
      EXPECT_EQ(read.code->name, code.name);
      EXPECT_EQ(read.code->filename, code.filename);
    }
  }
  EXPECT_TRUE(latin1 && ucs2 && ucs4);
}

// A code object made by hand in the 3.11 layout, whose parts the hostile tests break one by one.
struct FakeCode {
  static constexpr uint64_t kCode = 0x10000, kQual = 0x20000, kName = 0x21000, kFile = 0x22000,
                            kTable = 0x30000, kCodeType = 0x900, kStrType = 0x910,
                            kBytesType = 0x920;
  std::vector<uint8_t> code = std::vector<uint8_t>(192);
  std::vector<uint8_t> qual, name, file, table;
  TypeAddresses types{kCodeType, kStrType, kBytesType};

  template <class T>
  static void Put(std::vector<uint8_t>& b, size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(T));
  }
  static std::vector<uint8_t> Ascii(const std::string& s) {
    std::vector<uint8_t> b(48 + s.size() + 1);
    Put<uint64_t>(b, 8, kStrType);
    Put<int64_t>(b, 16, static_cast<int64_t>(s.size()));
    Put<uint32_t>(b, 32, 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7);  // kind 1, compact, ascii, ready
    std::memcpy(b.data() + 48, s.data(), s.size());
    return b;
  }
  FakeCode() {
    Put<uint64_t>(code, 0, 3);  // references
    Put<uint64_t>(code, 8, kCodeType);
    Put<int32_t>(code, 72, 7);
    Put<uint64_t>(code, 112, kFile);
    Put<uint64_t>(code, 120, kName);
    Put<uint64_t>(code, 128, kQual);
    Put<uint64_t>(code, 136, kTable);
    qual = Ascii("Worker.run");
    name = Ascii("run");
    file = Ascii("/srv/app/worker.py");
    std::vector<uint8_t> lines = {0x80 | 11 << 3 | 1, 0, 4};  // 2 code units, line 8
    table.resize(32 + lines.size() + 1);
    Put<uint64_t>(table, 8, kBytesType);
    Put<int64_t>(table, 16, static_cast<int64_t>(lines.size()));
    std::memcpy(table.data() + 32, lines.data(), lines.size());
  }
  BufferMemory Memory() const {
    BufferMemory m;
    m.Add(kCode, code);
    m.Add(kQual, qual);
    m.Add(kName, name);
    m.Add(kFile, file);
    m.Add(kTable, table);
    return m;
  }
  CodeRead Read() const {
    BufferMemory m = Memory();
    return ReadCodeObject(m, Layout311(), types, kCode);
  }
};

TEST(CodeObjectTest, HandMadeCodeObject) {
  FakeCode fake;
  CodeRead read = fake.Read();
  ASSERT_TRUE(read.code) << CodeErrorName(read.error);
  EXPECT_EQ(read.code->qualname, "Worker.run");
  EXPECT_EQ(read.code->name, "run");
  EXPECT_EQ(read.code->filename, "/srv/app/worker.py");
  EXPECT_EQ(read.code->first_line, 7);
  EXPECT_EQ(read.code->Line(1), 8);
  EXPECT_EQ(read.code->Line(2), 0);  // past the table: unknown
}

TEST(CodeObjectTest, HostileMemoryGivesReasons) {
  auto error_of = [](FakeCode fake) { return fake.Read().error; };
  {
    BufferMemory empty;
    EXPECT_EQ(ReadCodeObject(empty, Layout311(), {}, 0).error, CodeError::kUnreadable);
    EXPECT_EQ(ReadCodeObject(empty, Layout311(), {}, 0xdead0000).error, CodeError::kUnreadable);
    EXPECT_EQ(ReadCodeObject(empty, Layout311(), {}, ~uint64_t{0} - 4).error,
              CodeError::kUnreadable);
  }
  FakeCode f;
  FakeCode::Put<uint64_t>(f.code, 8, 0x1234);  // not PyCode_Type
  EXPECT_EQ(error_of(f), CodeError::kNotCode);
  f = FakeCode();
  FakeCode::Put<uint64_t>(f.code, 128, 0xdead0000);  // qualname: a pointer to nothing
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<uint64_t>(f.code, 128, FakeCode::kTable);  // qualname: bytes, not str
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<int64_t>(f.qual, 16, int64_t{1} << 40);
  EXPECT_EQ(error_of(f), CodeError::kStringTooLong);
  f = FakeCode();
  FakeCode::Put<int64_t>(f.qual, 16, -5);
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<int64_t>(f.qual, 16, 4000);  // longer than the bytes there
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<uint32_t>(f.qual, 32, 1u << 2 | 1u << 6);  // not compact
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<uint32_t>(f.qual, 32, 3u << 2 | 1u << 5);  // kind 3
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  f.qual[48] = 0xe9;  // "ASCII" with a byte above 0x7f
  EXPECT_EQ(error_of(f), CodeError::kBadString);
  f = FakeCode();
  FakeCode::Put<int64_t>(f.table, 16, int64_t{1} << 30);
  EXPECT_EQ(error_of(f), CodeError::kLineTableTooLong);
  f = FakeCode();
  FakeCode::Put<int64_t>(f.table, 16, -1);
  EXPECT_EQ(error_of(f), CodeError::kBadLineTable);
  f = FakeCode();
  FakeCode::Put<uint64_t>(f.code, 136, FakeCode::kQual);  // a str, not bytes
  EXPECT_EQ(error_of(f), CodeError::kBadLineTable);
  f = FakeCode();
  FakeCode::Put<uint64_t>(f.code, 136, 0);
  EXPECT_EQ(error_of(f), CodeError::kBadLineTable);
  // With the type objects unknown, garbage that happens to be readable still gives a reason
  // or an object, never a crash.
  f = FakeCode();
  f.types = {};
  FakeCode::Put<uint64_t>(f.code, 128, FakeCode::kTable);
  (void)f.Read();
}

// A process that exited between its sample and the read.
class GoneMemory : public MemoryReader {
 public:
  bool Read(uint64_t, std::span<uint8_t>) override { return false; }
  bool gone() const override { return true; }
};

// A cycle of the evaluator's own frames (3.12+: read, not kept) in damaged memory: the walk
// ends at its bound (found by fuzz_python_code, which looped forever).
TEST(FrameWalkTest, CycleOfShimFramesEnds) {
  for (uint8_t minor : {uint8_t{12}, uint8_t{13}}) {
    std::optional<Layout> layout = BuiltinLayout({3, minor, 0, 0});
    ASSERT_TRUE(layout);
    ASSERT_NE(layout->shim_owner, 0xff);
    BufferMemory memory;
    const uint64_t tstate = 0x10000, cframe = 0x20000, frame = 0x30000;
    auto word = [&](uint64_t at, uint64_t value) {
      std::vector<uint8_t> b(8);
      std::memcpy(b.data(), &value, 8);
      memory.Add(at, b);
    };
    uint64_t holder = tstate;
    if (layout->tstate_cframe != kAbsent) {
      word(tstate + layout->tstate_cframe, cframe);
      holder = cframe;
    }
    word(holder + layout->current_frame, frame);
    std::vector<uint8_t> f(layout->FrameBytes(), 0);
    f[layout->frame_owner] = layout->shim_owner;
    std::memcpy(f.data() + layout->frame_previous, &frame, 8);  // itself
    memory.Add(frame, f);
    FrameWalk walk = WalkFrames(memory, *layout, tstate, 64);
    EXPECT_EQ(walk.end, WalkEnd::kDepth) << "3." << int{minor};
    EXPECT_TRUE(walk.frames.empty());
  }
}

TEST(CodeObjectTest, ProcessGone) {
  GoneMemory gone;
  EXPECT_EQ(ReadCodeObject(gone, Layout311(), {}, 0x1000).error, CodeError::kProcessGone);
}

// Every byte of every part of real code objects damaged in turn, and every part cut short:
// a reason or an object, never a crash (the sanitizer build checks the reads).
TEST(CodeObjectTest, DamagedRealCodeObjects) {
  LOAD_DUMP_OR_SKIP(dump);
  std::mt19937 rng(42);
  Layout layout = Layout311();
  size_t failures = 0;
  for (size_t n = 0; n < 8; ++n) {
    const DumpedCode& code = dump->codes[n * 13 % dump->codes.size()];
    for (size_t part = 0; part < code.regions.size(); ++part) {
      const std::vector<uint8_t>& original = code.regions[part].second;
      for (size_t i = 0; i < std::min<size_t>(original.size(), 200); ++i) {
        DumpedCode damaged = code;
        damaged.regions[part].second[i] ^= static_cast<uint8_t>(1 + rng() % 255);
        BufferMemory memory = MemoryOf(damaged);
        for (const TypeAddresses& types : {dump->types, TypeAddresses{}}) {
          CodeRead read = ReadCodeObject(memory, layout, types, code.address);
          if (!read.code) ++failures;
          if (read.code) (void)read.code->Line(static_cast<int64_t>(rng() % 64));
        }
      }
      for (size_t cut = 0; cut < original.size(); cut += 7) {
        DumpedCode damaged = code;
        damaged.regions[part].second.resize(cut);
        BufferMemory memory = MemoryOf(damaged);
        CodeRead read = ReadCodeObject(memory, layout, dump->types, code.address);
        // Cut before its end (the code object: before the fields read; a string or the line
        // table: before its last byte, the terminator), a part no other part stands in for
        // must fail the read.
        size_t needed = part == 0 ? layout.CodeBytes() : original.size() - 1;
        size_t same_address = 0;
        for (const auto& r : code.regions) same_address += r.first == code.regions[part].first;
        if (cut < needed && same_address == 1) {
          EXPECT_FALSE(read.code) << part << " " << cut;
        }
      }
    }
  }
  EXPECT_GT(failures, 0u);
}

// A freed code object's first word is the allocator's (pymalloc's link to the next free block
// of its pool, or null): it is not read, since its strings may have been freed and reused with
// it. Nor is one freed (or changed) while its strings were read.
TEST(CodeObjectTest, FreedObjectsAreNotRead) {
  for (uint64_t first_word : {uint64_t{0}, FakeCode::kCode + 0x1c0, FakeCode::kCode + 0x3fc0}) {
    FakeCode fake;
    FakeCode::Put<uint64_t>(fake.code, 0, first_word);
    EXPECT_EQ(fake.Read().error, CodeError::kFreed) << std::hex << first_word;
  }
  // A free-list link to another pool is no reference count either way: only the same pool's.
  FakeCode far;
  FakeCode::Put<uint64_t>(far.code, 0, FakeCode::kCode + 0x10000);
  EXPECT_TRUE(far.Read().code);

  // Memory in which the code object changes after its first read.
  class ChangingMemory : public MemoryReader {
   public:
    ChangingMemory(BufferMemory before, BufferMemory after)
        : before_(std::move(before)), after_(std::move(after)) {}
    bool Read(uint64_t address, std::span<uint8_t> out) override {
      bool later = address == FakeCode::kCode && code_reads_++ > 0;
      return (later ? after_ : before_).Read(address, out);
    }

   private:
    BufferMemory before_, after_;
    int code_reads_ = 0;
  };
  FakeCode live, freed, other;
  FakeCode::Put<uint64_t>(freed.code, 0, 0);
  FakeCode::Put<uint64_t>(other.code, 128, FakeCode::kName);  // another qualified name
  for (const FakeCode* after : {&freed, &other}) {
    ChangingMemory memory(live.Memory(), after->Memory());
    EXPECT_EQ(ReadCodeObject(memory, Layout311(), live.types, FakeCode::kCode).error,
              CodeError::kFreed);
  }
  // Its reference count changes while it lives: that is no change.
  FakeCode more_references;
  FakeCode::Put<uint64_t>(more_references.code, 0, 4);
  ChangingMemory memory(live.Memory(), more_references.Memory());
  EXPECT_TRUE(ReadCodeObject(memory, Layout311(), live.types, FakeCode::kCode).code);
}

TEST(CodeCacheTest, ReadsOnceAndAgainWhenAFrameStandsPastTheCode) {
  FakeCode fake;
  BufferMemory memory = fake.Memory();
  CodeCache cache;
  Layout layout = Layout311();
  uint16_t check = fake.Read().code->Check();
  const CodeCache::Entry& a = cache.Get(1, FakeCode::kCode, memory, layout, fake.types, -1, check);
  ASSERT_TRUE(a.code);
  EXPECT_EQ(a.code->qualname, "Worker.run");
  cache.Get(1, FakeCode::kCode, memory, layout, fake.types, 1, check);
  EXPECT_EQ(cache.stats().lookups, 2u);
  EXPECT_EQ(cache.stats().reads, 1u);
  // A frame at an instruction past the cached code's end: another object lives there now.
  cache.Get(1, FakeCode::kCode, memory, layout, fake.types, 2, check);
  EXPECT_EQ(cache.stats().rereads, 1u);
  // Failures are kept too, and counted by reason.
  EXPECT_FALSE(cache.Get(1, 0xdead0000, memory, layout, fake.types).code);
  EXPECT_FALSE(cache.Get(1, 0xdead0000, memory, layout, fake.types).code);
  EXPECT_EQ(cache.stats().failures[static_cast<size_t>(CodeError::kUnreadable)], 1u);
  // Another process's address space is another key.
  cache.Get(2, FakeCode::kCode, memory, layout, fake.types);
  EXPECT_EQ(cache.size(), 3u);
  cache.ForgetProcess(1);
  EXPECT_EQ(cache.size(), 1u);
}

// The sample saw one code object; by the time it is read, its address holds another (the first
// freed, the address reused): the frame gets a reason, not the newcomer's name. Samples that saw
// the newcomer get its name, from the same address.
TEST(CodeCacheTest, AnObjectWithAnotherFingerprintIsNotTheSamples) {
  FakeCode fake;
  Layout layout = Layout311();
  uint16_t first = fake.Read().code->Check();
  for (bool same_name : {true, false}) {
    SCOPED_TRACE(same_name ? "another first line" : "another qualified name");
    FakeCode newcomer;
    if (same_name) {
      FakeCode::Put<int32_t>(newcomer.code, 72, 99);
    } else {
      FakeCode::Put<uint64_t>(newcomer.code, 128, FakeCode::kQual + 0x100);
    }
    BufferMemory memory = newcomer.Memory();
    memory.Add(FakeCode::kQual + 0x100, FakeCode::Ascii("<module>"));
    uint16_t second = ReadCodeObject(memory, layout, newcomer.types, FakeCode::kCode).code->Check();
    ASSERT_NE(first, second);
    CodeCache cache;
    for (int twice = 0; twice < 2; ++twice) {
      const CodeCache::Entry& old =
          cache.Get(1, FakeCode::kCode, memory, layout, fake.types, -1, first);
      EXPECT_FALSE(old.code);
      EXPECT_EQ(old.error, CodeError::kReplaced);
    }
    EXPECT_EQ(cache.stats().failures[static_cast<size_t>(CodeError::kReplaced)], 1u);
    const CodeCache::Entry& now =
        cache.Get(1, FakeCode::kCode, memory, layout, fake.types, -1, second);
    ASSERT_TRUE(now.code);
    EXPECT_EQ(now.code->qualname, same_name ? "Worker.run" : "<module>");
    EXPECT_EQ(cache.stats().reads, 2u);
    // A frame the BPF program could not fingerprint is named by what is there.
    EXPECT_TRUE(cache.Get(1, FakeCode::kCode, memory, layout, fake.types).code);
  }
  EXPECT_STREQ(CodeErrorName(CodeError::kReplaced), "replaced");
}

// A failure is kept for a while, then read again: a sample may have caught a frame whose object
// was being freed, and the same code compiled again can land at the same address with the same
// fingerprint (a sub-interpreter running one string over and over).
double fake_now = 0;
double FakeNow() { return fake_now; }

TEST(CodeCacheTest, AFailureIsReadAgainAfterAWhile) {
  FakeCode fake;
  Layout layout = Layout311();
  uint16_t check = fake.Read().code->Check();
  BufferMemory empty;
  BufferMemory memory = fake.Memory();
  fake_now = 100;
  CodeCache cache(1 << 16, FakeNow);
  EXPECT_FALSE(cache.Get(1, FakeCode::kCode, empty, layout, fake.types, -1, check).code);
  fake_now += CodeCache::kRetryFailedSeconds / 2;
  // Within the interval the failure stands, even though the object is readable now.
  EXPECT_FALSE(cache.Get(1, FakeCode::kCode, memory, layout, fake.types, -1, check).code);
  EXPECT_EQ(cache.stats().reads, 1u);
  fake_now += CodeCache::kRetryFailedSeconds;
  const CodeCache::Entry& later =
      cache.Get(1, FakeCode::kCode, memory, layout, fake.types, -1, check);
  ASSERT_TRUE(later.code);
  EXPECT_EQ(later.code->qualname, "Worker.run");
  EXPECT_EQ(cache.stats().reads, 2u);
  EXPECT_EQ(cache.stats().rereads, 1u);
  // A success is kept however long.
  fake_now += 1000;
  EXPECT_TRUE(cache.Get(1, FakeCode::kCode, empty, layout, fake.types, -1, check).code);
  EXPECT_EQ(cache.stats().reads, 2u);
}

TEST(CodeCacheTest, BoundedPerProcess) {
  FakeCode fake;
  BufferMemory memory = fake.Memory();
  CodeCache cache(4);
  for (uint64_t a = 0; a < 10; ++a) cache.Get(1, 0x50000 + a * 8, memory, Layout311(), fake.types);
  EXPECT_LE(cache.size(), 4u);
}

}  // namespace
}  // namespace stacksym::interp::python
