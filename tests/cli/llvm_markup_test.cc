// The llvm-symbolizer drop-in's --filter-markup: the markup parser (nodes, field types), the
// filter's state and output on a scripted symbolizer, and the whole drop-in against
// llvm-symbolizer 16 on a fixture compiled at build time (stdout and stderr byte for byte).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../symbolize/test_util.h"
#include "llvm_markup_filter.h"
#include "llvm_markup_parser.h"
#include "stacksym/elf.h"
#include "stacksym/hex.h"

namespace stacksym::cli {
namespace {

// A node as "text" (plain or SGR) or "tag|field|field" for an element, to compare in one go.
std::vector<std::string> Describe(std::string_view line) {
  MarkupParser parser;
  std::vector<std::string> out;
  for (const MarkupNode& node : parser.Parse(line)) {
    if (!node.is_element()) {
      out.emplace_back(node.text);
      continue;
    }
    std::string d(node.tag);
    for (std::string_view f : node.fields) d += "|" + std::string(f);
    out.push_back(d);
  }
  return out;
}

using Nodes = std::vector<std::string>;

TEST(LlvmMarkupParser, SplitsTextAndElements) {
  EXPECT_EQ(Describe("a{{{pc:0x10:ra}}}b\n"), (Nodes{"a", "pc|0x10|ra", "b\n"}));
  EXPECT_EQ(Describe("{{{reset}}}"), (Nodes{"reset"}));
  EXPECT_EQ(Describe("{{{reset:}}}"), (Nodes{"reset|"}));  // one empty field
  EXPECT_EQ(Describe("{{{bt:0:0:pc:}}}"), (Nodes{"bt|0|0|pc|"}));
  EXPECT_EQ(Describe("{{{a::b}}}{{{c}}}"), (Nodes{"a||b", "c"}));
  EXPECT_EQ(Describe("plain line\n"), (Nodes{"plain line\n"}));
  EXPECT_EQ(Describe(""), (Nodes{}));
}

TEST(LlvmMarkupParser, ElementsWithoutTagAreTextAndUnfinishedOnesToo) {
  // No tag: the braces stay text, and the next element is still found.
  EXPECT_EQ(Describe("{{{:x}}} {{{}}} {{{pc:1}}}"), (Nodes{"{{{:x}}} {{{}}} ", "pc|1"}));
  EXPECT_EQ(Describe("x{{{pc:1"), (Nodes{"x{{{pc:1"}));
  EXPECT_EQ(Describe("}}}{{{"), (Nodes{"}}}{{{"}));
  // From the first "{{{" to the first "}}}" after it, whatever lies between.
  EXPECT_EQ(Describe("{{{{{{a}}}}"), (Nodes{"{{{a", "}"}));
  EXPECT_EQ(Describe("{{{s:{{{x}}}"), (Nodes{"s|{{{x"}));
}

TEST(LlvmMarkupParser, SgrSequencesAreTheirOwnNodesOutsideElements) {
  EXPECT_EQ(Describe("\033[1mbold\033[0m"), (Nodes{"\033[1m", "bold", "\033[0m"}));
  EXPECT_EQ(Describe("a\033[37mb\033[30m"), (Nodes{"a", "\033[37m", "b", "\033[30m"}));
  // Only reset, bold and the eight foreground colours.
  EXPECT_EQ(Describe("\033[38m\033[2m\033[31;1m"), (Nodes{"\033[38m\033[2m\033[31;1m"}));
  EXPECT_EQ(Describe("\033[\033[1m"), (Nodes{"\033[", "\033[1m"}));
  // Inside an element they are the element's.
  EXPECT_EQ(Describe("{{{symbol:\033[1m}}}"), (Nodes{"symbol|\033[1m"}));
  EXPECT_TRUE(IsMarkupSgr("\033[34m"));
  EXPECT_FALSE(IsMarkupSgr("\033[34mx"));
  EXPECT_FALSE(IsMarkupSgr("\033[3m"));
}

TEST(LlvmMarkupParser, NodesPointIntoTheLine) {
  std::string line = "ab{{{pc:0x1}}}cd";
  MarkupParser parser;
  std::span<const MarkupNode> nodes = parser.Parse(line);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[1].text.data(), line.data() + 2);
  EXPECT_EQ(nodes[1].tag.data(), line.data() + 5);
  EXPECT_EQ(nodes[1].fields[0].data(), line.data() + 8);
  // A second line replaces the first's nodes.
  EXPECT_EQ(parser.Parse("{{{x:1:2:3}}}").front().fields.size(), 3u);
}

TEST(LlvmMarkupParser, FieldTypes) {
  EXPECT_EQ(ParseMarkupAddress("0x1F"), 0x1fu);
  EXPECT_EQ(ParseMarkupAddress("0"), 0u);
  EXPECT_EQ(ParseMarkupAddress("000"), 0u);
  EXPECT_EQ(ParseMarkupAddress("0xffffffffffffffff"), UINT64_MAX);
  for (std::string_view bad : {"", "42", "0X10", "0x", "0xgg", "0x0x1", "0x10000000000000000"})
    EXPECT_FALSE(ParseMarkupAddress(bad)) << bad;

  EXPECT_EQ(ParseMarkupInteger("077"), 077u);
  EXPECT_EQ(ParseMarkupInteger("0xff"), 0xffu);
  EXPECT_EQ(ParseMarkupInteger("10000000"), 10000000u);
  for (std::string_view bad : {"", "-1", "079", "0xfg", "0x", "1k"})
    EXPECT_FALSE(ParseMarkupInteger(bad)) << bad;

  EXPECT_EQ(ParseMarkupFrameNumber("12"), 12u);
  for (std::string_view bad : {"", "0x1", "-1", "99999999999999999999"})
    EXPECT_FALSE(ParseMarkupFrameNumber(bad)) << bad;

  EXPECT_EQ(ParseMarkupBuildId("aBcD"), (std::vector<uint8_t>{0xab, 0xcd}));
  for (std::string_view bad : {"", "0", "abc", "fg"}) EXPECT_FALSE(ParseMarkupBuildId(bad)) << bad;

  EXPECT_EQ(ParseMarkupMode("RwX"), "rwx");
  EXPECT_EQ(ParseMarkupMode("x"), "x");
  EXPECT_EQ(ParseMarkupMode("rx"), "rx");
  for (std::string_view bad : {"", "wr", "g", "rr", "rwxr"})
    EXPECT_FALSE(ParseMarkupMode(bad)) << bad;
}

// A symbolizer with scripted answers that records what it was asked.
class ScriptedSymbolizer : public MarkupSymbolizer {
 public:
  std::map<uint64_t, std::vector<MarkupFrame>> code;  // by module-relative address
  std::map<uint64_t, std::string> data;
  std::string error;  // given to every question when set
  std::vector<std::string> asked;

  MarkupFrame Code(std::span<const uint8_t> build_id, uint64_t address, std::string* err) override {
    std::vector<MarkupFrame> frames = Ask("code", build_id, address, err);
    return frames.empty() ? MarkupFrame() : frames.back();
  }
  std::vector<MarkupFrame> InlinedCode(std::span<const uint8_t> build_id, uint64_t address,
                                       std::string* err) override {
    return Ask("inlined", build_id, address, err);
  }
  std::string DataName(std::span<const uint8_t> build_id, uint64_t address,
                       std::string* err) override {
    asked.push_back("data " + ToHex(build_id) + " " + std::to_string(address));
    *err = error;
    auto it = data.find(address);
    return it == data.end() ? std::string() : it->second;
  }

 private:
  std::vector<MarkupFrame> Ask(const char* what, std::span<const uint8_t> build_id,
                               uint64_t address, std::string* err) {
    asked.push_back(std::string(what) + " " + ToHex(build_id) + " " + std::to_string(address));
    *err = error;
    auto it = code.find(address);
    return it == code.end() ? std::vector<MarkupFrame>{MarkupFrame()} : it->second;
  }
};

struct Filtered {
  std::string out;
  std::string err;
};

Filtered FilterLines(MarkupSymbolizer& symbolizer, const std::vector<std::string>& lines,
                     bool color = false, bool color_errors = false) {
  MarkupFilter filter(symbolizer, color, color_errors);
  Filtered f;
  for (const std::string& line : lines) filter.Filter(line, &f.out, &f.err);
  filter.Finish(&f.out);
  return f;
}

const std::vector<std::string> kContext = {
    "{{{module:0:libx.so:elf:abcd}}}\n",
    "{{{mmap:0x7000:0x1000:load:0:rx:0x1000}}}\n",
    "{{{mmap:0x5000:0x100:load:0:r:0}}}\n",
};

TEST(LlvmMarkupFilter, ModulesAndMmapsPrintOneSummaryLineEach) {
  ScriptedSymbolizer s;
  std::vector<std::string> lines = kContext;
  lines.push_back("{{{module:0x2:b.o:elf:00ff}}}\n");
  lines.push_back("before {{{mmap:0x100:010:load:0:RW:0x3000}}} after\n");  // libx's again
  lines.push_back("text\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(
      f.out,
      "[[[ELF module #0x0 \"libx.so\"; BuildID=abcd [0x5000-0x50ff](r),[0x7000-0x7fff](rx)]]]\n"
      "[[[ELF module #0x2 \"b.o\"; BuildID=00ff]]]\n"
      "before [[[ELF module #0x0 \"libx.so\"; adds [0x100-0x107](rw)]]]\n"
      "text\n");
  EXPECT_EQ(f.err, "");
  EXPECT_TRUE(s.asked.empty());
}

TEST(LlvmMarkupFilter, ContextualLinesDropTheirOtherText) {
  ScriptedSymbolizer s;
  Filtered f =
      FilterLines(s, {"keep{{{module:0:a.o:elf:ab}}}drop\n", "drop{{{mmap:0:1:load:0:r:0}}}drop\n",
                      "{{{reset}}}\n", "  {{{reset}}} x\n"});
  // (A reset with nothing to forget prints nothing.)
  EXPECT_EQ(f.out,
            "keep[[[ELF module #0x0 \"a.o\"; BuildID=ab [0x0-0x0](r)]]]\n"
            "[[[reset]]]\n");
}

TEST(LlvmMarkupFilter, SummariesEndAsTheLineThatEndsThemEnds) {
  ScriptedSymbolizer s;
  Filtered f =
      FilterLines(s, {"{{{module:0:a:elf:ab}}}\r\n", "{{{mmap:0:1:load:0:r:0}}}\r\n", "x\r\n"});
  EXPECT_EQ(f.out, "[[[ELF module #0x0 \"a\"; BuildID=ab [0x0-0x0](r)]]]\r\nx\r\n");
}

TEST(LlvmMarkupFilter, PcAnswersThroughTheMmapsModuleRelativeAddress) {
  ScriptedSymbolizer s;
  s.code[0x1200] = {{"inner", "/src/a.h", 3, 9}, {"outer", "/src/a.c", 12, 5}};
  s.code[0x11ff] = {{"", "/src/a.c", 11, 0}};
  s.code[0x1300] = {{"symbol_only", "", 0, 0}};
  std::vector<std::string> lines = kContext;
  lines.push_back("at {{{pc:0x7200}}} {{{pc:0x7200:ra}}} {{{pc:0x7201:ra}}} {{{pc:0x7300:pc}}}\n");
  lines.push_back("{{{pc:0x7400}}}\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(f.out.substr(f.out.find("at ")),
            "at outer[/src/a.c:12] <invalid>[/src/a.c:11] outer[/src/a.c:12] "
            "symbol_only[<invalid>:0]\n"
            "[[[pc:0x7400]]]\n");  // nothing known: the element as it was
  EXPECT_EQ(s.asked, (std::vector<std::string>{"code abcd 4608", "code abcd 4607", "code abcd 4608",
                                               "code abcd 4864", "code abcd 5120"}));
  EXPECT_EQ(f.err, "");
}

TEST(LlvmMarkupFilter, BacktraceFramesPerInlinedFunction) {
  ScriptedSymbolizer s;
  s.code[0x1200] = {
      {"inner", "/src/a.h", 3, 9}, {"mid", "/src/a.h", 8, 1}, {"outer", "/a.c", 12, 5}};
  std::vector<std::string> lines = kContext;
  lines.push_back("{{{bt:0:0x7201}}}\n");
  lines.push_back("{{{bt:1234567:0x7400:pc}}}\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(f.out.substr(f.out.find("    #0")),
            "    #0.1  0x0000000000007200 inner /src/a.h:3:9 (libx.so+0x1200)\n"
            "    #0.2  0x0000000000007200 mid /src/a.h:8:1 (libx.so+0x1200)\n"
            "    #0    0x0000000000007200 outer /a.c:12:5 (libx.so+0x1200)\n"
            "#1234567    0x0000000000007400 (libx.so+0x1400)\n");
}

TEST(LlvmMarkupFilter, DataAndSymbols) {
  ScriptedSymbolizer s;
  s.data[0x20] = "g_var";
  std::vector<std::string> lines = kContext;
  lines.push_back(
      "{{{data:0x5020}}} {{{data:0x5021}}} {{{symbol:_ZN1a1bEv}}} {{{symbol:plain}}}\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(f.out.substr(f.out.find("g_var")), "g_var <invalid> a::b() plain\n");
}

TEST(LlvmMarkupFilter, SymbolizerErrorsAreReportedAndTheElementKept) {
  ScriptedSymbolizer s;
  s.error = "could not find build ID 'ABCD'";
  std::vector<std::string> lines = kContext;
  lines.push_back("{{{pc:0x7000}}} {{{bt:0:0x7001}}} {{{data:0x5000}}}\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(f.out.substr(f.out.find("[[[pc")),
            "[[[pc:0x7000]]] [[[bt:0:0x7001]]] [[[data:0x5000]]]\n");
  EXPECT_EQ(f.err,
            "error: could not find build ID 'ABCD'\n"
            "error: could not find build ID 'ABCD'\n"
            "error: could not find build ID 'ABCD'\n");
}

TEST(LlvmMarkupFilter, InvalidElementsAreReportedWithACaretAndDropped) {
  ScriptedSymbolizer s;
  Filtered f =
      FilterLines(s, {"a{{{pc}}}b{{{Pc:1}}}c{{{unknown:x}}}\n", "{{{module:1:m:elf:abc}}}\n",
                      "{{{pc:0x10}}}\n", "{{{module:0:a:elf:ab}}}\n", "{{{module:0:b:elf:ab}}}\n",
                      "{{{mmap:0:0x10:load:0:r:0}}}\n", "{{{mmap:0x8:0x10:load:0:r:0}}}\n",
                      "{{{mmap:0x10:0x10:load:9:r:0}}}\n"});
  EXPECT_EQ(f.err,
            "error: expected at least 1 field(s); found 0\n"
            "a{{{pc}}}b{{{Pc:1}}}c{{{unknown:x}}}\n"
            "      ^\n"
            "error: tags must be all lowercase characters\n"
            "a{{{pc}}}b{{{Pc:1}}}c{{{unknown:x}}}\n"
            "             ^\n"
            "error: expected build ID; found 'abc'\n"
            "{{{module:1:m:elf:abc}}}\n"
            "                  ^\n"
            "error: no mmap covers address\n"
            "{{{pc:0x10}}}\n"
            "      ^\n"
            "error: duplicate module ID\n"
            "{{{module:0:b:elf:ab}}}\n"
            "          ^\n"
            "error: overlapping mmap: #0x0 [0x0-0xf]\n"
            "{{{mmap:0x8:0x10:load:0:r:0}}}\n"
            "        ^\n"
            "error: unknown module ID\n"
            "{{{mmap:0x10:0x10:load:9:r:0}}}\n"
            "                       ^\n");
  // Unknown tags are kept as they are; the one that could not be symbolized printed raw.
  EXPECT_EQ(f.out,
            "abc{{{unknown:x}}}\n"
            "[[[pc:0x10]]]\n"
            "[[[ELF module #0x0 \"a\"; BuildID=ab [0x0-0xf](r)]]]\n");
}

TEST(LlvmMarkupFilter, ResetForgetsModulesAndMmaps) {
  ScriptedSymbolizer s;
  s.code[0x1000] = {{"f", "a.c", 1, 1}};
  std::vector<std::string> lines = kContext;
  lines.push_back("{{{pc:0x7000}}}\n");
  lines.push_back("{{{reset}}}\n");
  lines.push_back("{{{pc:0x7000}}}\n");
  lines.push_back("{{{mmap:0x7000:1:load:0:r:0}}}\n");
  Filtered f = FilterLines(s, lines);
  EXPECT_EQ(f.out.substr(f.out.find("f[")), "f[a.c:1]\n[[[reset]]]\n[[[pc:0x7000]]]\n");
  EXPECT_EQ(f.err,
            "error: no mmap covers address\n{{{pc:0x7000}}}\n      ^\n"
            "error: unknown module ID\n{{{mmap:0x7000:1:load:0:r:0}}}\n                      ^\n");
}

TEST(LlvmMarkupFilter, ColorsFollowTheLogsSgrState) {
  ScriptedSymbolizer s;
  const std::vector<std::string> lines = {"\033[1mbold\033[0mreset\n",
                                          "\033[1mboldnoreset\n",
                                          "resetafternewline\n",
                                          "\033[33mbefore{{{symbol:highlight}}}after\033[0m\n",
                                          "\033[34msame{{{symbol:highlight}}}after\033[0m\n",
                                          "\033[1mbold{{{symbol:highlight}}}after\033[0m\n"};
  Filtered f = FilterLines(s, lines, /*color=*/true);
  EXPECT_EQ(f.out,
            "\033[1mbold\033[0mreset\n"
            "\033[1mboldnoreset\n"
            "\033[0mresetafternewline\n"
            "\033[0;33mbefore\033[0;34mhighlight\033[0;33mafter\033[0m\n"
            "\033[0;34msame\033[0;36mhighlight\033[0;34mafter\033[0m\n"
            "\033[1mbold\033[0;1;34mhighlight\033[0m\033[1mafter\033[0m\n");
  // Without colour the sequences are taken out.
  EXPECT_EQ(FilterLines(s, lines).out,
            "boldreset\nboldnoreset\nresetafternewline\nbeforehighlightafter\n"
            "samehighlightafter\nboldhighlightafter\n");
}

TEST(LlvmMarkupFilter, ColoredValuesAndErrors) {
  ScriptedSymbolizer s;
  s.code[0x1000] = {{"f", "a.c", 4, 2}};
  std::vector<std::string> lines = {"{{{module:0:m:elf:ab}}}\n",
                                    "{{{mmap:0x7000:1:load:0:r:0x1000}}}\n",
                                    "{{{pc:0x7000}}}{{{pc}}}\n"};
  Filtered f = FilterLines(s, lines, true, true);
  const std::string blue = "\033[0;34m", green = "\033[0;32m", reset = "\033[0m";
  EXPECT_EQ(f.out, blue + "[[[ELF module" + green + " #0x0 " + blue + "\"" + green + "m" + blue +
                       "\"; BuildID=" + green + "ab" + blue + " [" + green + "0x7000" + blue + "-" +
                       green + "0x7000" + blue + "](" + green + "r" + blue + ")]]]\n" + reset +
                       blue + green + "f" + blue + "[" + green + "a.c" + blue + ":" + green + "4" +
                       blue + "]" + reset + "\n");
  EXPECT_EQ(f.err,
            "\033[0;1;31merror: \033[0mexpected at least 1 field(s); found 0\n"
            "{{{pc:0x7000}}}{{{pc}}}\n"
            "                    \033[0;32m^\033[0m\n");
}

// --- the drop-in against llvm-symbolizer 16 ---

constexpr const char* kLlvm16 = "/usr/lib/llvm-16/bin/llvm-symbolizer";

class LlvmMarkupDifferential : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kLlvm16, X_OK) != 0)
      GTEST_SKIP() << kLlvm16 << " is not installed (Debian package llvm-16)";
    dir_ = std::string(::testing::TempDir()) + "/markup-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // The drop-in is the stacksym command under the name llvm-symbolizer.
    std::filesystem::create_symlink(STACKSYM_CLI, dir_ + "/llvm-symbolizer");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The fixture as <dir>/debug/.build-id/xx/rest.debug; returns its build ID in hex.
  std::string PlaceByBuildId(const std::string& path) {
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
    EXPECT_TRUE(elf);
    if (!elf) return {};
    std::string id = ToHex((*elf)->build_id());
    EXPECT_GE(id.size(), 4u);
    std::string sub = dir_ + "/debug/.build-id/" + id.substr(0, 2);
    std::filesystem::create_directories(sub);
    std::filesystem::create_symlink(path, sub + "/" + id.substr(2) + ".debug");
    segments_ = (*elf)->segments();
    return id;
  }

  // Both tools' stdout and stderr for `input` with `options`.
  void ExpectSame(const std::string& input, const std::string& options) {
    std::string in = dir_ + "/input";
    std::ofstream(in, std::ios::binary) << input;
    auto run = [&](const std::string& tool, const std::string& name) {
      int code = -1;
      std::string out =
          testing::RunCommand("env -u DEBUGINFOD_URLS " + tool + " --debug-file-directory='" +
                                  dir_ + "/debug' --filter-markup " + options + " < '" + in +
                                  "' 2>'" + dir_ + "/" + name + ".err'",
                              &code);
      EXPECT_EQ(code, 0) << tool;
      std::ifstream err_file(dir_ + "/" + name + ".err", std::ios::binary);
      std::string err((std::istreambuf_iterator<char>(err_file)), std::istreambuf_iterator<char>());
      return std::make_pair(out, err);
    };
    auto [llvm_out, llvm_err] = run(kLlvm16, "llvm");
    auto [our_out, our_err] = run(dir_ + "/llvm-symbolizer", "ours");
    EXPECT_EQ(our_out, llvm_out) << "options: " << options;
    EXPECT_EQ(our_err, llvm_err) << "options: " << options;
  }

  std::string dir_;
  std::vector<ElfSegment> segments_;
};

std::string Hex(uint64_t v) { return testing::Hex(v); }

TEST_F(LlvmMarkupDifferential, FixtureLogMatchesLlvmSymbolizer16) {
  const std::string fixture = testing::FixturePath("markup_cpp");
  const std::string id = PlaceByBuildId(fixture);
  ASSERT_FALSE(id.empty());
  // The fixture loaded at a base, one mmap per PT_LOAD segment (pages), as a log would say.
  const uint64_t base = 0x7f3a12340000;
  std::string log = "[log] starting\n{{{reset}}}\n{{{module:0x0:markup_cpp:elf:" + id + "}}}\n";
  uint64_t text_start = 0, text_end = 0;
  for (const ElfSegment& seg : segments_) {
    if (seg.type != 1 /* PT_LOAD */) continue;
    const uint64_t page = seg.vaddr & ~uint64_t{0xfff};
    const uint64_t size = (seg.vaddr + seg.memsz - page + 0xfff) & ~uint64_t{0xfff};
    std::string mode = std::string(seg.flags & 4 ? "r" : "") + (seg.flags & 2 ? "w" : "") +
                       (seg.flags & 1 ? "x" : "");
    log += "{{{mmap:" + Hex(base + page) + ":" + Hex(size) + ":load:0:" + mode + ":" + Hex(page) +
           "}}}\n";
    if (seg.flags & 1) {
      text_start = seg.vaddr;
      text_end = seg.vaddr + seg.filesz;
    }
  }
  ASSERT_LT(text_start, text_end);
  // Code: every third byte as pc, as pc:ra and as a backtrace's return address.
  int frame = 0;
  for (uint64_t a = text_start; a < text_end; a += 3) {
    log += "pc " + Hex(a) + " {{{pc:" + Hex(base + a) + "}}} {{{pc:" + Hex(base + a) + ":ra}}}\n";
    log += "{{{bt:" + std::to_string(frame++ % 12) + ":" + Hex(base + a) + "}}}\n";
  }
  // Data: every data and function symbol, at its start and inside; its name as {{{symbol}}}.
  std::vector<testing::NmSymbol> symbols = testing::RunNm(fixture, "");
  int data = 0;
  for (const testing::NmSymbol& sym : symbols) {
    log += "data {{{data:" + Hex(base + sym.address) +
           "}}} {{{data:" + Hex(base + sym.address + sym.size / 2) + "}}} {{{symbol:" + sym.name +
           "}}}\n";
    data +=
        sym.type == 'D' || sym.type == 'B' || sym.type == 'R' || sym.type == 'r' || sym.type == 'b';
  }
  ASSERT_GE(data, 4) << "the fixture's globals";
  // Errors and odd lines.
  log +=
      "{{{pc:0x10}}} {{{bt:x:0x1}}} {{{data}}} {{{pc:0x1:xx}}} {{{bt:1}}}\n"
      "{{{mmap:0x1:2:load:0:q:0}}}\n"
      "\033[31mred {{{pc:" +
      Hex(base + text_start) +
      "}}}\033[0m {{{Tag}}} {{{other:1:2}}}\r\n"
      "{{{module:1:missing.so:elf:0123456789}}}\n{{{mmap:0x1000:0x100:load:1:r:0}}}\n"
      "{{{pc:0x1010}}} {{{bt:3:0x1010}}} {{{data:0x1010}}}\n"
      "{{{reset}}}\n{{{pc:" +
      Hex(base + text_start) + "}}}\nno newline at the end";
  for (const char* options :
       {"", "--color=always", "--no-demangle --functions=short --basenames", "--no-inlines"})
    ExpectSame(log, options);
  // (How much of the log the answers cover: most code addresses named by a function.)
  std::string ours =
      testing::RunCommand(dir_ + "/llvm-symbolizer --debug-file-directory='" + dir_ +
                          "/debug' --filter-markup < '" + dir_ + "/input' 2>/dev/null");
  size_t named = 0;
  for (size_t at = ours.find("markup_fixture.cc:"); at != std::string::npos;
       at = ours.find("markup_fixture.cc:", at + 1))
    ++named;
  EXPECT_GT(named, (text_end - text_start) / 3) << "too few answers with a source line";
  EXPECT_NE(ours.find("markup::Worker::run(int) const"), std::string::npos);
  EXPECT_NE(ours.find("    #"), std::string::npos);
}

// An object (no build ID note) under a .build-id path, as LLVM's own markup tests symbolize
// theirs: LLVM only asks that the file exists there, and so does the drop-in when the file
// names no build ID. Offsets into .text, every other byte.
TEST_F(LlvmMarkupDifferential, ObjectWithoutBuildIdNote) {
  const std::string object = testing::FixturePath("markup_object.o");
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(object);
  ASSERT_TRUE(elf);
  ASSERT_TRUE((*elf)->build_id().empty());
  const ElfSection* text = (*elf)->FindSection(".text");
  ASSERT_TRUE(text && text->size > 32);
  std::filesystem::create_directories(dir_ + "/debug/.build-id/ab");
  std::filesystem::create_symlink(object, dir_ + "/debug/.build-id/ab/cdef.debug");
  std::string log = "{{{module:0:markup_object.o:elf:abcdef}}}\n{{{mmap:0x1000:" + Hex(text->size) +
                    ":load:0:rx:0}}}\n";
  for (uint64_t a = 0; a < text->size; a += 2) {
    log += "{{{pc:" + Hex(0x1000 + a) + "}}} {{{bt:1:" + Hex(0x1001 + a) +
           "}}} {{{data:" + Hex(0x1000 + a) + "}}}\n";
  }
  ExpectSame(log, "");
  ExpectSame(log, "--functions=short --basenames");
  // (Answered from its DWARF: the inline chain's functions by name.)
  std::string ours = testing::RunCommand(dir_ + "/llvm-symbolizer --debug-file-directory='" + dir_ +
                                         "/debug' --filter-markup < '" + dir_ + "/input'");
  EXPECT_NE(ours.find("around "), std::string::npos) << ours;
  EXPECT_NE(ours.find("walk["), std::string::npos) << ours;
}

// --color as LLVM 16 reads it (alone it wins over any --color=, else the last --color= counts;
// auto is off when stdout is not a terminal), and requests and --obj/--build-id unused.
TEST_F(LlvmMarkupDifferential, CommandLineAsLlvm16) {
  const std::string log = "a{{{symbol:_Z1fv}}}b\n\033[1m{{{symbol:bar}}}\n";
  for (const char* options :
       {"--color", "--color=never --color", "--color --color=never", "--color=always --color=never",
        "--color=never --color=always", "--color=auto", "--obj=/nonexistent 0x10",
        "--build-id=abcd --obj=/nonexistent", "-C --no-demangle"})
    ExpectSame(log, options);
  // A value LLVM 16 reads as undefined behaviour is refused.
  int code = -1;
  std::string err = testing::RunCommand(
      "echo | " + dir_ + "/llvm-symbolizer --filter-markup --color=yes 2>&1 >/dev/null", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("--color=yes"), std::string::npos) << err;
}

}  // namespace
}  // namespace stacksym::cli
