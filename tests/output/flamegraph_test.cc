// Static checks of the flame graph writers (the page's behaviour is tested in Chromium by
// flamegraph_browser_test.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

TEST(FlameGraphTest, HtmlPageIsSelfContained) {
  FlameGraphOptions options;
  options.title = "demo <&> \"title\"";
  std::string html = RenderFlameGraphHtml(testing::MakeSampleProfile(), options);
  // The data is embedded, the placeholders are gone, the title is escaped.
  EXPECT_EQ(html.find("/*STACKSYM_DATA*/"), std::string::npos);
  EXPECT_EQ(html.find("{{STACKSYM_TITLE}}"), std::string::npos);
  EXPECT_NE(html.find("<title>demo &lt;&amp;&gt; &quot;title&quot;</title>"), std::string::npos);
  EXPECT_NE(html.find("\"ns::hot_leaf(int)\""), std::string::npos);
  // Nothing is fetched: no external scripts, styles, images or URLs.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("fetch("), std::string::npos);
  EXPECT_EQ(html.find("XMLHttpRequest"), std::string::npos);
  EXPECT_EQ(html.find("import("), std::string::npos);
}

TEST(FlameGraphTest, NamesCannotBreakOutOfTheScript) {
  Profile p;
  uint32_t m = p.AddModule({ModuleKind::kElf, "/bin/x", {}});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, 1});
  p.symbols.resize(1);
  p.symbols[0] = FrameSymbols{
      std::nullopt,
      {SourceFrame{"</script><script>alert(1)</script>\"\\\x01\xff", "", "", 0, 0, false}}};
  p.AddSample({1, 1, "x", {f}}, 1);
  std::string html = RenderFlameGraphHtml(p);
  EXPECT_EQ(html.find("</script><script>alert"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)\\u003c/script>\\\"\\\\\\u0001?"),
            std::string::npos);
  std::string svg = RenderFlameGraphSvg(p);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(FlameGraphTest, SvgHasOneBoxPerVisibleFrameWithProportionalWidth) {
  FlameGraphOptions options;
  options.svg_width = 1020;  // 1000 px of chart
  std::string svg = RenderFlameGraphSvg(testing::MakeSampleProfile(), options);
  // Frames: all, 3 comms, app: main work inline_helper hot_leaf, worker: main lib entry
  // do_syscall, other: raw → 1 + 3 + 4 + 4 + 1 = 13.
  std::regex rect("<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"15.0\"");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
       ++it) {
    widths.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(widths.size(), 13u) << svg;
  EXPECT_DOUBLE_EQ(widths[0], 1000.0);  // root
  EXPECT_NE(svg.find("<title>ns::hot_leaf(int) (80 samples, 80.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>do_syscall_64 (15 samples, 15.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("width=\"800.00\""), std::string::npos);  // app subtree: 80%

  // Well-formed XML, checked by an independent parser when python3 is there.
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    std::string dir = testing::TestOutputDir("svg");
    std::ofstream(dir + "/sample.svg") << svg;
    std::string cmd = "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' " +
                      dir + "/sample.svg";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// The SVG is as tall as its deepest drawn frame: towers too narrow to draw add no height.
TEST(FlameGraphTest, SvgHeightFollowsTheDeepestDrawnFrame) {
  FlameGraphOptions options;
  options.svg_width = 220;  // 200 px of chart: 1 sample of 10 000 is 0.02 px, under 0.1 px
  auto height = [](const std::string& svg) {
    std::smatch m;
    std::regex re("<svg version=\"1.1\" width=\"220\" height=\"([0-9]+)\"");
    return std::regex_search(svg, m, re) ? std::stoi(m[1]) : -1;
  };
  auto rects = [](const std::string& svg, const std::string& name) {
    std::regex re("<title>" + name + " \\(");
    return std::distance(std::sregex_iterator(svg.begin(), svg.end(), re), std::sregex_iterator());
  };
  // 44 px above the chart, 24 below, 16 per row.
  Result<Profile> thin = ParseFolded(testing::DeepFolded(1));  // 190-frame towers, 1 sample each
  ASSERT_TRUE(thin) << thin.error().message;
  std::string svg = RenderFlameGraphSvg(*thin, options);
  EXPECT_EQ(height(svg), 44 + 7 * 16 + 24) << "rows: all, python3 .. compute, helper";
  EXPECT_EQ(rects(svg, "deep_leaf"), 0);
  EXPECT_EQ(rects(svg, "helper"), 1);
  // 25 samples each: 0.5 px wide, drawn, and the image is 192 rows tall (the 1-sample spin
  // tower, 255 deep, is still too thin to count).
  Result<Profile> wide = ParseFolded(testing::DeepFolded(25));
  ASSERT_TRUE(wide) << wide.error().message;
  svg = RenderFlameGraphSvg(*wide, options);
  EXPECT_EQ(height(svg), 44 + 192 * 16 + 24);
  EXPECT_EQ(rects(svg, "deep_leaf"), 2);
  EXPECT_EQ(rects(svg, "spin"), 0);
  // The root row is the bottom row.
  EXPECT_NE(svg.find("<title>all (10000 samples, 100.00%)</title><rect x=\"10.00\" y=\"" +
                     std::to_string(44 + 191 * 16) + ".0\""),
            std::string::npos);
}

// The SVG draws one sample type: widths, titles and the footer follow it; off-CPU stacks end
// in their state's frame, and frames only ever off CPU are blue.
TEST(FlameGraphTest, SvgDrawsTheChosenSampleType) {
  FlameGraphOptions options;
  options.svg_width = 1020;  // 1000 px of chart
  Profile p = testing::MakeOffCpuProfile();
  std::string wall = RenderFlameGraphSvg(p, options);  // the default with off-CPU time
  EXPECT_NE(wall.find("<title>all (3.60 s wall, 100.00%)</title><rect x=\"10.00\""),
            std::string::npos)
      << wall;
  // 2 s of 3.6 s: 555.56 px, a state frame's colour; schedule (only off CPU) blue; do_syscall_64
  // (150 ms on CPU too) kernel green.
  EXPECT_NE(wall.find("<title>[off-cpu: sleeping] (2.00 s wall, 55.56%)</title><rect x=\"412.78\""),
            std::string::npos);
  EXPECT_NE(wall.find("width=\"555.56\" height=\"15.0\" rx=\"2\" fill=\"hsl(225,55%,68%)\""),
            std::string::npos);
  std::regex schedule(
      "<title>schedule \\(2.00 s wall, 55.56%\\)</title><rect "
      "[^>]*fill=\"hsl\\((19[5-9]|2[0-2][0-9]),");
  EXPECT_TRUE(std::regex_search(wall, schedule)) << wall;
  std::regex syscall(
      "<title>do_syscall_64 \\(2.15 s wall, 59.72%\\)</title><rect "
      "[^>]*fill=\"hsl\\((9[5-9]|1[01][0-9]),");
  EXPECT_TRUE(std::regex_search(wall, syscall)) << wall;
  EXPECT_NE(
      wall.find("3.60 s wall; green: kernel, aqua: inlined, lilac: thread name, blue: off CPU"),
      std::string::npos);

  options.sample_type = SampleType::kCpu;
  std::string cpu = RenderFlameGraphSvg(p, options);
  EXPECT_NE(cpu.find("<title>all (1.00 s on CPU, 100.00%)</title>"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("<title>ns::hot_leaf(int) (800.00 ms on CPU, 80.00%)</title>"),
            std::string::npos);
  EXPECT_EQ(cpu.find("off-cpu"), std::string::npos) << "no CPU time: not drawn";
  EXPECT_EQ(cpu.find("schedule"), std::string::npos);

  options.sample_type = SampleType::kOffCpu;
  std::string off = RenderFlameGraphSvg(p, options);
  EXPECT_NE(off.find("<title>all (2.60 s off CPU, 100.00%)</title>"), std::string::npos) << off;
  EXPECT_NE(off.find("<title>[off-cpu: preempted] (100.00 ms off CPU, 3.85%)</title>"),
            std::string::npos);
  EXPECT_EQ(off.find("<title>other"), std::string::npos) << "no off-CPU time: not drawn";
  // Every frame shows off-CPU time only: blue, hot_leaf too (it has CPU time, not shown here).
  std::regex leaf(
      "<title>ns::hot_leaf\\(int\\) \\(100.00 ms off CPU, 3.85%\\)</title><rect "
      "[^>]*fill=\"hsl\\((19[5-9]|2[0-2][0-9]),");
  EXPECT_TRUE(std::regex_search(off, leaf)) << off;

  // A profile without off-CPU time: as before, no off-CPU legend.
  std::string samples = RenderFlameGraphSvg(testing::MakeSampleProfile(), options = {});
  EXPECT_NE(samples.find(">100 samples; green: kernel, aqua: inlined, lilac: thread name</text>"),
            std::string::npos);
}

// The page embeds one tree whose nodes carry [samples, off-CPU ns], the types it can show and
// the one it opens on.
TEST(FlameGraphTest, PageEmbedsEverySampleTypeInOneTree) {
  std::string html = RenderFlameGraphHtml(testing::MakeOffCpuProfile());
  EXPECT_NE(html.find("\"period\":10000000,\"types\":[\"samples\",\"cpu\",\"off_cpu\",\"wall\"],"
                      "\"type\":\"wall\",\"tree\":[0,0,[100,2600000000],["),
            std::string::npos)
      << html.substr(html.find("const DATA"), 300);
  // The sleeping state's frame: a leaf with no samples and 2 s off CPU.
  std::regex state("\\[[0-9]+,5,\\[0,2000000000\\],\\[\\]\\]");
  EXPECT_TRUE(std::regex_search(html, state));
  FlameGraphOptions options;
  options.sample_type = SampleType::kCpu;
  EXPECT_NE(RenderFlameGraphHtml(testing::MakeOffCpuProfile(), options).find("\"type\":\"cpu\""),
            std::string::npos);
  // Without off-CPU time: samples and cpu, one value a node.
  EXPECT_NE(RenderFlameGraphHtml(testing::MakeSampleProfile())
                .find("\"period\":10101010,\"types\":[\"samples\",\"cpu\"],\"type\":\"samples\","
                      "\"tree\":[0,0,[100],["),
            std::string::npos);
}

TEST(FlameGraphTest, EmptyProfileStillRenders) {
  Profile empty;
  EXPECT_NE(RenderFlameGraphHtml(empty).find("\"tree\":[0,0,[0],[]]"), std::string::npos);
  EXPECT_NE(RenderFlameGraphSvg(empty).find("</svg>"), std::string::npos);
  EXPECT_EQ(FormatFolded(empty), "");
}

}  // namespace
}  // namespace stacksym
