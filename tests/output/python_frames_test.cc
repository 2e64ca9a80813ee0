// Python frames (FrameKind::kPython, issue 32) in every output: folded marks them "_[py]" and
// reads them back as Python frames; pprof gives their Function name, system name, file and
// start line and their Line's line, and reads them back as Python frames; the flame graphs draw
// them as a kind of their own; the profile symbolizer leaves them as recorded.
#include <gtest/gtest.h>

#include <string>

#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

// python3.11: main (native) → <module> → Worker.run → zlib_compress (native), innermost first
// in the stack.
Profile MakePythonProfile() {
  Profile p;
  uint32_t exe = p.AddModule({ModuleKind::kElf, "/usr/bin/python3.11", {0xab, 0xcd}});
  uint32_t py = p.AddModule({ModuleKind::kAnonymous, std::string(kPythonModulePath), {}});
  auto frame = [&](FrameKind kind, uint32_t module, uint64_t address, SourceFrame sf) {
    uint32_t f = p.InternFrame({kind, module, address});
    p.symbols.resize(p.frames.size());
    p.symbols[f] = FrameSymbols{std::nullopt, {sf}};
    return f;
  };
  uint32_t main_f = frame(FrameKind::kUser, exe, 0x1000, {"main", "main", "main.c", 10, 0});
  SourceFrame module_sf{"<module>", "<module>", "/srv/app.py", 40, 0};
  module_sf.start_line = 1;
  SourceFrame run_sf{"Worker.run", "run", "/srv/app.py", 17, 0};
  run_sf.start_line = 15;
  uint32_t module_f = frame(FrameKind::kPython, py, 0, module_sf);
  uint32_t run_f = frame(FrameKind::kPython, py, 1, run_sf);
  uint32_t zlib_f =
      frame(FrameKind::kUser, exe, 0x2000, {"zlib_compress", "zlib_compress", "zlib.c", 5, 0});
  ProfileStack s;
  s.pid = s.tid = 7;
  s.comm = "python3.11";
  s.frames = {zlib_f, run_f, module_f, main_f};
  p.AddSample(s, 3);
  // A plain function whose name ends like the marker stays plain.
  uint32_t odd = frame(FrameKind::kUser, exe, 0x3000, {"odd_[py]", "odd_[py]", "", 0, 0});
  s.frames = {odd, main_f};
  p.AddSample(s, 1);
  return p;
}

TEST(PythonFramesTest, FoldedMarksAndReadsBack) {
  Profile p = MakePythonProfile();
  const std::string folded =
      "python3.11;main;<module>_[py];Worker.run_[py];zlib_compress 3\n"
      "python3.11;main;odd_[py]  1\n";
  EXPECT_EQ(FormatFolded(p), folded);
  FoldedOptions plain;
  plain.mark_python = false;
  EXPECT_EQ(FormatFolded(p, plain).substr(0, 50),
            "python3.11;main;<module>;Worker.run;zlib_compress ");
  Result<Profile> back = ParseFolded(folded);
  ASSERT_TRUE(back) << back.error().ToString();
  int python = 0;
  for (size_t i = 0; i < back->frames.size(); ++i) {
    if (back->frames[i].kind != FrameKind::kPython) continue;
    ++python;
    EXPECT_EQ(back->modules[back->frames[i].module].path, kPythonModulePath);
  }
  EXPECT_EQ(python, 2);
  EXPECT_EQ(FormatFolded(*back), folded);
}

TEST(PythonFramesTest, PprofFunctionsAndLinesRoundTrip) {
  Profile p = MakePythonProfile();
  Result<std::string> bytes = EncodePprof(p, false);
  ASSERT_TRUE(bytes);
  Result<Profile> back =
      DecodePprof({reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()});
  ASSERT_TRUE(back) << back.error().ToString();
  bool run_seen = false;
  for (size_t i = 0; i < back->frames.size(); ++i) {
    const FrameSymbols& sym = *back->symbols[i];
    bool python = sym.lines[0].file == "/srv/app.py";
    EXPECT_EQ(back->frames[i].kind == FrameKind::kPython, python) << sym.lines[0].function;
    if (sym.lines[0].function == "Worker.run") {
      run_seen = true;
      EXPECT_EQ(sym.lines[0].raw_function, "run");
      EXPECT_EQ(sym.lines[0].line, 17u);
      EXPECT_EQ(sym.lines[0].start_line, 15u);
    }
  }
  EXPECT_TRUE(run_seen);
  EXPECT_EQ(FormatFolded(*back), FormatFolded(p));
}

TEST(PythonFramesTest, FlameGraphsDrawThemAsTheirKind) {
  Profile p = MakePythonProfile();
  std::string svg = RenderFlameGraphSvg(p);
  EXPECT_NE(svg.find("pink: Python"), std::string::npos);
  std::string html = RenderFlameGraphHtml(p);
  // Kind 6 in the embedded tree, and the legend entry the page shows when there is one.
  EXPECT_NE(html.find(",6,["), std::string::npos);
  EXPECT_NE(html.find("legend-python"), std::string::npos);
  Profile native;
  native.AddSample({}, 1);
  EXPECT_EQ(RenderFlameGraphSvg(native).find("pink: Python"), std::string::npos);
}

TEST(PythonFramesTest, SymbolizerLeavesThemAsRecorded) {
  Profile p = MakePythonProfile();
  ProfileSymbolizeOptions options;
  options.resymbolize = true;
  (void)SymbolizeProfile(p, options);
  for (size_t i = 0; i < p.frames.size(); ++i) {
    if (p.frames[i].kind != FrameKind::kPython) continue;
    ASSERT_TRUE(p.symbols[i]);
    EXPECT_FALSE(p.symbols[i]->reason);
    EXPECT_EQ(p.symbols[i]->lines[0].file, "/srv/app.py");
  }
}

}  // namespace
}  // namespace stacksym
