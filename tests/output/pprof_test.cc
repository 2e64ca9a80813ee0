#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "output/gzip.h"
#include "profile.pb.h"
#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

namespace pb = perftools::profiles;
using testing::MakeNormalizedOnlyProfile;
using testing::MakeOffCpuProfile;
using testing::MakeSampleProfile;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

pb::Profile EncodeToMessage(const Profile& p) {
  Result<std::string> raw = EncodePprof(p, /*gzip=*/false);
  EXPECT_TRUE(raw);
  pb::Profile message;
  EXPECT_TRUE(message.ParseFromString(*raw));
  return message;
}

const std::string& Str(const pb::Profile& m, int64_t index) {
  return m.string_table(static_cast<int>(index));
}

// A stack written out as "comm pid/tid xCOUNT [off NS STATE]: module!function|..." so that two
// profiles can be compared independent of frame numbering.
std::vector<std::string> DescribeStacks(const Profile& p) {
  std::vector<std::string> out;
  for (size_t s = 0; s < p.stacks.size(); ++s) {
    const ProfileStack& stack = p.stacks[s];
    std::string d = stack.comm + " " + std::to_string(stack.pid) + "/" + std::to_string(stack.tid) +
                    " x" + std::to_string(p.counts[s]);
    if (p.has_off_cpu()) d += " off " + std::to_string(p.Value(s, SampleType::kOffCpu));
    if (stack.state != ThreadState::kRunning) d += std::string(" ") + ThreadStateName(stack.state);
    d += ":";
    for (uint32_t f : stack.frames) {
      const ProfileFrame& frame = p.frames[f];
      d += " " + std::to_string(static_cast<int>(frame.kind)) + ":";
      if (frame.kind != FrameKind::kUserRaw) d += p.modules[frame.module].path + "!";
      char hex[32];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(frame.address));
      d += hex;
      if (f < p.symbols.size() && p.symbols[f]) {
        for (const SourceFrame& l : p.symbols[f]->lines) {
          d += "[" + l.function + "|" + l.raw_function + "|" + l.file + ":" +
               std::to_string(l.line) + ":" + std::to_string(l.column) + (l.inlined ? "|i" : "") +
               "]";
        }
      }
    }
    out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PprofTest, RoundTripKeepsSamplesSymbolsAndMetadata) {
  Profile original = MakeSampleProfile();
  Result<std::string> encoded = EncodePprof(original);
  ASSERT_TRUE(encoded) << encoded.error().ToString();
  ASSERT_GE(encoded->size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>((*encoded)[0]), 0x1f);  // gzip
  Result<Profile> decoded = DecodePprof(Bytes(*encoded));
  ASSERT_TRUE(decoded) << decoded.error().ToString();

  EXPECT_EQ(DescribeStacks(*decoded), DescribeStacks(original));
  EXPECT_EQ(decoded->period_ns, original.period_ns);
  EXPECT_EQ(decoded->start_time_ns, original.start_time_ns);
  EXPECT_EQ(decoded->duration_ns, original.duration_ns);
  EXPECT_EQ(decoded->lost_samples, 2u);
  EXPECT_EQ(decoded->event, "cpu-clock");
  EXPECT_EQ(decoded->total_samples(), 100u);
  // Build IDs survive, as bytes.
  bool found_app = false;
  for (const Module& m : decoded->modules) {
    if (m.path == "/usr/bin/app") {
      found_app = true;
      EXPECT_EQ(m.build_id, (std::vector<uint8_t>{0xab, 0xcd, 0x01, 0x02}));
      EXPECT_EQ(m.kind, ModuleKind::kElf);
    }
  }
  EXPECT_TRUE(found_app);
  // And the folded view of both is identical.
  EXPECT_EQ(FormatFolded(*decoded), FormatFolded(original));
}

TEST(PprofTest, NormalizedOnlyProfileRoundTripsWithoutSymbols) {
  Profile original = MakeNormalizedOnlyProfile();
  Result<std::string> encoded = EncodePprof(original);
  ASSERT_TRUE(encoded);
  Result<Profile> decoded = DecodePprof(Bytes(*encoded));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(DescribeStacks(*decoded), DescribeStacks(original));
  for (const auto& s : decoded->symbols) EXPECT_FALSE(s.has_value());

  pb::Profile m = EncodeToMessage(original);
  EXPECT_EQ(m.function_size(), 0);
  for (const pb::Location& loc : m.location()) EXPECT_EQ(loc.line_size(), 0);
  for (const pb::Mapping& map : m.mapping()) {
    EXPECT_FALSE(map.has_functions()) << Str(m, map.filename());
    EXPECT_FALSE(map.has_line_numbers());
  }
}

TEST(PprofTest, MessageFollowsTheFormat) {
  pb::Profile m = EncodeToMessage(MakeSampleProfile());
  ASSERT_GE(m.string_table_size(), 1);
  EXPECT_EQ(m.string_table(0), "");
  ASSERT_EQ(m.sample_type_size(), 2);
  EXPECT_EQ(Str(m, m.sample_type(0).type()), "samples");
  EXPECT_EQ(Str(m, m.sample_type(0).unit()), "count");
  EXPECT_EQ(Str(m, m.sample_type(1).type()), "cpu");
  EXPECT_EQ(Str(m, m.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(Str(m, m.period_type().type()), "cpu");
  EXPECT_EQ(m.period(), 10101010);
  EXPECT_EQ(m.duration_nanos(), 3000000000);
  EXPECT_EQ(m.time_nanos(), 1700000000000000000);

  std::map<uint64_t, const pb::Mapping*> mappings;
  for (const pb::Mapping& map : m.mapping()) mappings[map.id()] = &map;
  std::map<uint64_t, const pb::Function*> functions;
  for (const pb::Function& f : m.function()) functions[f.id()] = &f;

  // Mapping flags are truthful per module.
  for (const pb::Mapping& map : m.mapping()) {
    const std::string& file = Str(m, map.filename());
    if (file == "/usr/bin/app") {
      EXPECT_EQ(Str(m, map.build_id()), "abcd0102");
      EXPECT_TRUE(map.has_functions());
      EXPECT_TRUE(map.has_filenames());
      EXPECT_TRUE(map.has_line_numbers());
      EXPECT_TRUE(map.has_inline_frames());
      EXPECT_EQ(map.file_offset(), 0u);
    } else if (file == "/usr/lib/libfoo.so") {
      // Symbolization found nothing there.
      EXPECT_FALSE(map.has_functions());
      EXPECT_FALSE(map.has_filenames());
      EXPECT_FALSE(map.has_line_numbers());
    } else if (file == "[kernel.kallsyms]") {
      EXPECT_TRUE(map.has_functions());
      EXPECT_FALSE(map.has_filenames());
      EXPECT_FALSE(map.has_line_numbers());
      EXPECT_FALSE(map.has_inline_frames());
      EXPECT_EQ(map.memory_start(), 0xffffffff81000100u);
    }
  }
  // User mappings do not overlap.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const pb::Mapping& map : m.mapping()) {
    if (Str(m, map.filename())[0] == '/')
      ranges.push_back({map.memory_start(), map.memory_limit()});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first);

  // The inlined location has two Lines, innermost first; addresses map back to file offsets.
  bool saw_inline = false;
  for (const pb::Location& loc : m.location()) {
    if (loc.line_size() != 2) continue;
    saw_inline = true;
    EXPECT_EQ(Str(m, functions.at(loc.line(0).function_id())->name()), "inline_helper");
    EXPECT_EQ(Str(m, functions.at(loc.line(1).function_id())->name()), "work");
    EXPECT_EQ(Str(m, functions.at(loc.line(1).function_id())->system_name()), "_Z4workv");
    EXPECT_EQ(Str(m, functions.at(loc.line(1).function_id())->filename()), "app.cc");
    EXPECT_EQ(loc.line(1).line(), 30);
    const pb::Mapping* map = mappings.at(loc.mapping_id());
    EXPECT_EQ(loc.address() - map->memory_start() + map->file_offset(), 0x1100u);
  }
  EXPECT_TRUE(saw_inline);

  // Samples: leaf first, values [count, count * period], labels pid / tid / comm.
  uint64_t total = 0;
  bool saw_tid_101 = false;
  for (const pb::Sample& s : m.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    EXPECT_EQ(s.value(1), s.value(0) * 10101010);
    total += s.value(0);
    std::map<std::string, std::string> labels;
    for (const pb::Label& l : s.label()) {
      labels[Str(m, l.key())] = l.str() ? Str(m, l.str()) : std::to_string(l.num());
    }
    ASSERT_EQ(labels.size(), 3u);
    if (labels["tid"] == "101") {
      saw_tid_101 = true;
      EXPECT_EQ(labels["pid"], "100");
      EXPECT_EQ(labels["comm"], "app");
      EXPECT_EQ(s.value(0), 20);
      ASSERT_EQ(s.location_id_size(), 3);
      const pb::Location* leaf = nullptr;
      for (const pb::Location& loc : m.location()) {
        if (loc.id() == s.location_id(0)) leaf = &loc;
      }
      ASSERT_NE(leaf, nullptr);
      ASSERT_EQ(leaf->line_size(), 1);
      EXPECT_EQ(Str(m, functions.at(leaf->line(0).function_id())->name()), "ns::hot_leaf(int)");
    }
  }
  EXPECT_EQ(total, 100u);
  EXPECT_TRUE(saw_tid_101);
}

TEST(PprofTest, OffCpuProfileRoundTripsExactly) {
  Profile original = MakeOffCpuProfile();
  Result<std::string> encoded = EncodePprof(original);
  ASSERT_TRUE(encoded) << encoded.error().ToString();
  Result<Profile> decoded = DecodePprof(Bytes(*encoded));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_TRUE(decoded->has_off_cpu());
  EXPECT_EQ(DescribeStacks(*decoded), DescribeStacks(original));
  ASSERT_EQ(decoded->stacks.size(), 7u);  // 4 on CPU, 3 off: a state keeps its stack apart
  EXPECT_EQ(decoded->off_cpu_ns.size(), decoded->stacks.size());
  for (SampleType type :
       {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall}) {
    EXPECT_EQ(decoded->Total(type), original.Total(type)) << SampleTypeName(type);
  }
  EXPECT_EQ(decoded->Total(SampleType::kWall), 3'600'000'000u);
  // Encoded again, the same bytes.
  Result<std::string> again = EncodePprof(*decoded, /*gzip=*/false);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *EncodePprof(original, /*gzip=*/false));
}

TEST(PprofTest, OffCpuMessageHasThreeTypesAndStateLabels) {
  pb::Profile m = EncodeToMessage(MakeOffCpuProfile());
  ASSERT_EQ(m.sample_type_size(), 3);
  EXPECT_EQ(Str(m, m.sample_type(0).type()), "samples");
  EXPECT_EQ(Str(m, m.sample_type(1).type()), "cpu");
  EXPECT_EQ(Str(m, m.sample_type(2).type()), "off_cpu");
  EXPECT_EQ(Str(m, m.sample_type(2).unit()), "nanoseconds");
  std::map<std::string, int64_t> off_by_state;
  ASSERT_EQ(m.sample_size(), 7);
  for (const pb::Sample& s : m.sample()) {
    ASSERT_EQ(s.value_size(), 3);
    EXPECT_EQ(s.value(1), s.value(0) * 10'000'000);
    std::map<std::string, std::string> labels;
    for (const pb::Label& l : s.label()) {
      labels[Str(m, l.key())] = l.str() ? Str(m, l.str()) : std::to_string(l.num());
    }
    if (s.value(2) == 0) {
      // On CPU: no state label.
      EXPECT_EQ(labels.size(), 3u);
      EXPECT_GT(s.value(0), 0);
    } else {
      ASSERT_EQ(labels.size(), 4u);
      EXPECT_EQ(s.value(0), 0);
      off_by_state[labels["thread_state"]] += s.value(2);
    }
  }
  EXPECT_EQ(off_by_state, (std::map<std::string, int64_t>{{"preempted", 100'000'000},
                                                          {"sleeping", 2'000'000'000},
                                                          {"uninterruptible", 500'000'000}}));
}

// A recording of off-CPU time in which no thread left the CPU still has the type, so that
// wall and off_cpu stay valid choices after a round trip.
TEST(PprofTest, OffCpuRecordedWithoutIntervalsIsKept) {
  Profile p = MakeSampleProfile();
  p.off_cpu_recorded = true;
  Result<std::string> encoded = EncodePprof(p);
  ASSERT_TRUE(encoded);
  Result<Profile> decoded = DecodePprof(Bytes(*encoded));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_TRUE(decoded->has_off_cpu());
  EXPECT_EQ(decoded->Total(SampleType::kOffCpu), 0u);
  EXPECT_EQ(decoded->DefaultSampleType(), SampleType::kWall);
  EXPECT_FALSE(MakeSampleProfile().has_off_cpu());
}

// Files of other tools: only cpu/nanoseconds (its values become the counts, as before), a state
// this reader does not know, off_cpu in another unit (not off-CPU time).
TEST(PprofTest, OtherToolsFilesReadAsBefore) {
  pb::Profile m = EncodeToMessage(MakeSampleProfile());
  pb::Profile cpu_only = m;
  cpu_only.mutable_sample_type()->DeleteSubrange(0, 1);
  for (pb::Sample& s : *cpu_only.mutable_sample()) {
    int64_t cpu = s.value(1);
    s.clear_value();
    s.add_value(cpu);
  }
  Result<Profile> r = DecodePprof(Bytes(cpu_only.SerializeAsString()));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->has_off_cpu());
  EXPECT_EQ(r->total_samples(), 100u * 10101010);

  pb::Profile other_unit = EncodeToMessage(MakeOffCpuProfile());
  other_unit.mutable_sample_type(2)->set_unit(other_unit.sample_type(0).unit());  // "count"
  other_unit.add_string_table("waiting");
  for (pb::Sample& s : *other_unit.mutable_sample()) {
    for (pb::Label& l : *s.mutable_label()) {
      if (Str(other_unit, l.key()) == "thread_state") l.set_str(other_unit.string_table_size() - 1);
    }
  }
  r = DecodePprof(Bytes(other_unit.SerializeAsString()));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->has_off_cpu());
  size_t other_states = 0;
  for (const ProfileStack& s : r->stacks) other_states += s.state == ThreadState::kOther;
  EXPECT_EQ(other_states, 3u);
}

TEST(PprofTest, BadOffCpuValuesAreRefused) {
  pb::Profile m = EncodeToMessage(MakeOffCpuProfile());
  pb::Profile negative = m;
  negative.mutable_sample(4)->set_value(2, -1);
  Result<Profile> r = DecodePprof(Bytes(negative.SerializeAsString()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "pprof: sample 4 has a negative off-CPU time");
  pb::Profile doubled = m;
  for (int i = 4; i < 6; ++i) doubled.mutable_sample(i)->set_value(2, (int64_t{1} << 62) + 1);
  r = DecodePprof(Bytes(doubled.SerializeAsString()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "pprof: sample off-CPU times add up to more than 2^63-1 (at sample 5)");
  Profile huge = MakeOffCpuProfile();
  huge.off_cpu_ns[4] = uint64_t{1} << 63;
  Result<std::string> encoded = EncodePprof(huge);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().message, "pprof: stack 4 has off-CPU time above 2^63-1");
}

// A small profile with every kind of message: a module with a build ID, an inlined location,
// a kernel frame on the synthetic kernel mapping, a raw address, two threads.
Profile MakeSmallProfile() {
  Profile p;
  p.period_ns = 1000000;
  p.start_time_ns = 5;
  p.duration_ns = 7;
  p.lost_samples = 1;
  p.event = "cycles";
  uint32_t app = p.AddModule({ModuleKind::kElf, "/bin/app", {0xbe, 0xef}});
  uint32_t leaf = p.InternFrame({FrameKind::kUser, app, 0x1234});
  uint32_t kernel = p.InternFrame({FrameKind::kKernel, 0, 0xffffffff81000010});
  uint32_t raw = p.InternFrame({FrameKind::kUserRaw, 0, 0x7f00});
  p.symbols.resize(p.frames.size());
  p.symbols[leaf].emplace();
  p.symbols[leaf]->lines = {{"inl", "", "a.h", 3, 1, true}, {"f()", "_Z1fv", "a.cc", 9, 2, false}};
  p.symbols[kernel].emplace();
  p.symbols[kernel]->lines = {{"do_sys", "", "", 0, 0, false}};
  p.AddSample({10, 11, "app", {kernel, leaf}}, 3);
  p.AddSample({10, 12, "io", {raw}}, 1);
  return p;
}

std::string Hex(const std::string& bytes) {
  std::string out;
  char byte[3];
  for (unsigned char c : bytes) {
    std::snprintf(byte, sizeof byte, "%02x", c);
    out += byte;
  }
  return out;
}

// The writer's exact bytes, pinned: the string table's order, the messages' order and every
// field they set (a reworked writer must write the same file).
TEST(PprofTest, EncodedBytesArePinned) {
  Result<std::string> raw = EncodePprof(MakeSmallProfile(), /*gzip=*/false);
  ASSERT_TRUE(raw) << raw.error().ToString();
  pb::Profile m;
  ASSERT_TRUE(m.ParseFromString(*raw));
  std::string table;
  for (const std::string& str : m.string_table()) table += str + "|";
  EXPECT_EQ(table,
            "|samples|count|cpu|nanoseconds|stacksym event: cycles|stacksym lost samples: 1|"
            "/bin/app|beef|[kernel.kallsyms]|inl|a.h|f()|_Z1fv|a.cc|do_sys|pid|tid|comm|app|io|");
  EXPECT_EQ(
      Hex(*raw),
      "0a04080110020a0408031004121d0a020201120503c08db7011a040810180a1a040811180b1a040812101312"
      "1b0a0103120401c0843d1a040810180a1a040811180c1a04081210141a1c08011080808080802018b5a48080"
      "80202807300838014001480150011a1c08021090808088f8ffffffff011891808088f8ffffffff0128093801"
      "221b0801100118b4a480808020220608011003180122060802100918022213080210021890808088f8ffffff"
      "ff0122020803220608031880fe012a080801100a180a200b2a080802100c180d200e2a060803100f180f3200"
      "320773616d706c65733205636f756e743203637075320b6e616e6f7365636f6e64733216737461636b73796d"
      "206576656e743a206379636c65733218737461636b73796d206c6f73742073616d706c65733a203132082f62"
      "696e2f61707032046265656632115b6b65726e656c2e6b616c6c73796d735d3203696e6c3203612e68320366"
      "282932055f5a3166763204612e63633206646f5f737973320370696432037469643204636f6d6d3203617070"
      "3202696f480550075a040803100460c0843d6a020506");
}

// Which error the reader gives when a message has several faults: a string index out of range
// is reported once the sample being read is done, any other fault at once.
TEST(PprofTest, FirstFaultIsTheErrorGiven) {
  const pb::Profile m = EncodeToMessage(MakeSmallProfile());
  auto error_of = [](const pb::Profile& message) {
    Result<Profile> r = DecodePprof(Bytes(message.SerializeAsString()));
    return r ? std::string("ok") : r.error().message;
  };
  pb::Profile bad_name = m;
  bad_name.mutable_function(0)->set_name(99);
  EXPECT_EQ(error_of(bad_name), "pprof: function name string index 99 out of range");
  pb::Profile then_negative = bad_name;
  then_negative.mutable_sample(0)->set_value(0, -1);
  EXPECT_EQ(error_of(then_negative), "pprof: sample 0 has a negative count");
  pb::Profile then_duplicate = bad_name;
  then_duplicate.mutable_location(1)->set_id(1);
  EXPECT_EQ(error_of(then_duplicate), "pprof: duplicate location id 1");
  pb::Profile two_strings = bad_name;
  two_strings.add_comment(-3);  // read before the functions' names
  EXPECT_EQ(error_of(two_strings), "pprof: comment string index -3 out of range");
  pb::Profile then_mapping = two_strings;
  then_mapping.mutable_mapping(1)->set_id(0);
  EXPECT_EQ(error_of(then_mapping), "pprof: mapping with id 0");
  pb::Profile missing_function = m;
  missing_function.mutable_location(0)->mutable_line(1)->set_function_id(7);
  EXPECT_EQ(error_of(missing_function), "pprof: location 1 refers to missing function 7");
}

// The independent check: Debian's protoc decodes the file against the project's schema.
TEST(PprofTest, ProtocDecodesTheFile) {
  if (std::system("command -v protoc >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "protoc not installed (Debian package protobuf-compiler)";
  }
  std::string dir = testing::TestOutputDir("protoc");
  std::string gz = dir + "/sample.pb.gz";
  ASSERT_TRUE(WriteProfile(MakeSampleProfile(), gz));
  std::string decoded = dir + "/decoded.txt";
  std::string cmd = "gunzip -c " + gz +
                    " | protoc --decode perftools.profiles.Profile --proto_path=" +
                    std::string(STACKSYM_SOURCE_DIR) + "/src/output profile.proto > " + decoded +
                    " 2>" + dir + "/protoc.err";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadFileOrDie(dir + "/protoc.err");
  std::string text = testing::ReadFileOrDie(decoded);
  EXPECT_NE(text.find("string_table: \"ns::hot_leaf(int)\""), std::string::npos) << text;
  EXPECT_NE(text.find("string_table: \"_ZN2ns8hot_leafEi\""), std::string::npos);
  EXPECT_NE(text.find("has_inline_frames: true"), std::string::npos);
  EXPECT_NE(text.find("period: 10101010"), std::string::npos);
  EXPECT_NE(text.find("string_table: \"abcd0102\""), std::string::npos);
  size_t samples = 0;
  for (size_t pos = 0; (pos = text.find("\nsample {", pos)) != std::string::npos; ++pos) ++samples;
  EXPECT_EQ(samples, 4u);

  // With off-CPU time: the third sample type, three values a sample, the state labels.
  gz = dir + "/off_cpu.pb.gz";
  ASSERT_TRUE(WriteProfile(MakeOffCpuProfile(), gz));
  cmd = "gunzip -c " + gz + " | protoc --decode perftools.profiles.Profile --proto_path=" +
        std::string(STACKSYM_SOURCE_DIR) + "/src/output profile.proto > " + decoded + " 2>" + dir +
        "/protoc.err";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadFileOrDie(dir + "/protoc.err");
  text = testing::ReadFileOrDie(decoded);
  EXPECT_NE(text.find("string_table: \"off_cpu\""), std::string::npos) << text;
  EXPECT_NE(text.find("string_table: \"thread_state\""), std::string::npos);
  EXPECT_NE(text.find("string_table: \"uninterruptible\""), std::string::npos);
  EXPECT_NE(text.find("  value: 0\n  value: 0\n  value: 2000000000\n"), std::string::npos);
  EXPECT_NE(text.find("  value: 60\n  value: 600000000\n  value: 0\n"), std::string::npos);
  size_t types = 0;
  for (size_t pos = 0; (pos = text.find("sample_type {", pos)) != std::string::npos; ++pos) {
    ++types;
  }
  EXPECT_EQ(types, 3u);
}

TEST(PprofTest, NamesThatAreNotUtf8AreRepaired) {
  // protobuf refuses to parse proto3 strings that are not UTF-8; the writer must not produce
  // a file that its own reader (or pprof) rejects.
  Result<Profile> p = ParseFolded("app;bad\xff\xfename;ok\xc3\xa9 2\n");
  ASSERT_TRUE(p);
  Result<std::string> encoded = EncodePprof(*p);
  ASSERT_TRUE(encoded);
  Result<Profile> back = DecodePprof(Bytes(*encoded));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(FormatFolded(*back), "app;bad??name;ok\xc3\xa9 2\n");
}

TEST(PprofTest, PlainProtobufIsAcceptedToo) {
  Result<std::string> raw = EncodePprof(MakeSampleProfile(), /*gzip=*/false);
  ASSERT_TRUE(raw);
  Result<Profile> decoded = DecodePprof(Bytes(*raw));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(decoded->total_samples(), 100u);
}

TEST(PprofTest, BadInputIsAClearError) {
  Result<std::string> encoded = EncodePprof(MakeSampleProfile());
  ASSERT_TRUE(encoded);
  // Truncated gzip.
  std::string truncated = encoded->substr(0, encoded->size() / 2);
  Result<Profile> r1 = DecodePprof(Bytes(truncated));
  ASSERT_FALSE(r1);
  EXPECT_NE(r1.error().message.find("gzip"), std::string::npos) << r1.error().message;
  // Not protobuf at all.
  Result<Profile> r2 = DecodePprof(Bytes(std::string("\xff\xff\xff\xff\xff", 5)));
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().code, ErrorCode::kMalformed);

  // Structurally valid protobuf with dangling references.
  pb::Profile m = EncodeToMessage(MakeSampleProfile());
  pb::Profile dangling_location = m;
  dangling_location.mutable_sample(0)->set_location_id(0, 9999);
  pb::Profile bad_string = m;
  bad_string.mutable_function(0)->set_name(123456);
  pb::Profile dangling_mapping = m;
  dangling_mapping.mutable_location(0)->set_mapping_id(77);
  pb::Profile dangling_function = m;
  dangling_function.mutable_location(0)->mutable_line(0)->set_function_id(555);
  pb::Profile negative = m;
  negative.mutable_sample(0)->set_value(0, -4);
  for (const auto& [name, message] :
       std::vector<std::pair<std::string, pb::Profile>>{{"location", dangling_location},
                                                        {"string", bad_string},
                                                        {"mapping", dangling_mapping},
                                                        {"function", dangling_function},
                                                        {"negative", negative}}) {
    std::string bytes = message.SerializeAsString();
    Result<Profile> r = DecodePprof(Bytes(bytes));
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().code, ErrorCode::kMalformed) << name;
    EXPECT_NE(r.error().message.find(name == "negative" ? "negative" : name), std::string::npos)
        << name << ": " << r.error().message;
  }
}

// Counts that only overflow once equal stacks are merged (found by fuzz_pprof_reader): the
// reader refuses them rather than hold a count the writer cannot write; the writer refuses a
// count above int64 rather than write a negative one.
TEST(PprofTest, CountsBeyondInt64AreRefused) {
  pb::Profile m = EncodeToMessage(MakeSampleProfile());
  ASSERT_GE(m.sample_size(), 1);
  pb::Profile near_limit = m;
  near_limit.mutable_sample(0)->set_value(0, INT64_MAX - 1000);
  Result<Profile> ok = DecodePprof(Bytes(near_limit.SerializeAsString()));
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_TRUE(EncodePprof(*ok));

  pb::Profile doubled = m;
  doubled.clear_sample();
  for (int i = 0; i < 2; ++i) {
    pb::Sample* s = doubled.add_sample();
    *s = m.sample(0);
    s->set_value(0, (int64_t{1} << 62) + 1);
  }
  Result<Profile> r = DecodePprof(Bytes(doubled.SerializeAsString()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kMalformed);
  EXPECT_NE(r.error().message.find("2^63-1"), std::string::npos) << r.error().message;

  Profile huge = MakeSampleProfile();
  ASSERT_FALSE(huge.counts.empty());
  huge.counts[0] = uint64_t{1} << 63;
  Result<std::string> encoded = EncodePprof(huge);
  ASSERT_FALSE(encoded);
  EXPECT_NE(encoded.error().message.find("2^63-1"), std::string::npos);
}

TEST(PprofTest, GzipBombIsRefused) {
  // 64 MiB of zeros compress to ~64 KiB; inflating stops at the limit instead of growing.
  std::string zeros(size_t{64} << 20, '\0');
  Result<std::string> bomb = output::GzipCompress(zeros);
  ASSERT_TRUE(bomb);
  EXPECT_LT(bomb->size(), size_t{1} << 20);
  Result<std::string> r = output::GzipDecompress(Bytes(*bomb), size_t{1} << 20);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exceeds"), std::string::npos) << r.error().message;
  Result<std::string> ok = output::GzipDecompress(Bytes(*bomb));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->size(), zeros.size());
}

}  // namespace
}  // namespace stacksym
