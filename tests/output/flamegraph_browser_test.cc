// The flame graph page in a real browser: headless Chromium loads the page with a search in
// its URL, runs the page's script, and dumps the resulting DOM; a screenshot is kept as a test
// artifact under <build>/test-artifacts/output/browser/ScreenshotIsWritten/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

std::string FindChromium() {
  for (const char* path :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs chromium headless on `url` with extra flags; returns its stdout.
std::string RunChromium(const std::string& chromium, const std::string& dir,
                        const std::string& flags, const std::string& url) {
  std::string profile_dir = dir + "/chromium-profile";
  std::string out = dir + "/chromium.out";
  std::string cmd = "timeout 90 " + chromium +
                    " --headless --no-sandbox --disable-gpu --disable-background-networking"
                    " --disable-component-update --disable-sync --no-first-run"
                    " --disable-dev-shm-usage --hide-scrollbars --user-data-dir=" +
                    profile_dir + " " + flags + " '" + url + "' > " + out + " 2> " + dir +
                    "/chromium.err";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd << "\n" << testing::ReadFileOrDie(dir + "/chromium.err");
  return testing::ReadFileOrDie(out);
}

class BrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (Debian package chromium, in setup.sh's "
                      "OPTIONAL_PACKAGES): the flame graph page is not tested in a browser";
    }
    dir_ = testing::TestOutputDir("browser");
    page_ = dir_ + "/sample.html";
    FlameGraphOptions options;
    options.title = "browser test";
    ASSERT_TRUE(
        WriteProfile(testing::MakeSampleProfile(), page_, {.flame_graph = options, .folded = {}}));
  }
  std::string chromium_, dir_, page_;
};

// The attributes of the first frame element whose data-name matches `name`.
std::string FrameElement(const std::string& dom, const std::string& name) {
  std::regex re("<div class=\"([^\"]*)\"[^>]*data-name=\"" + name + "\"[^>]*>");
  std::smatch m;
  if (!std::regex_search(dom, m, re)) return "";
  return m[0];
}

// Frame elements whose class list contains "match" (the page's script text also has the
// word, so only element tags count).
size_t CountMatchedFrames(const std::string& dom) {
  std::regex re("<div class=\"frame [^\"]*\\bmatch\\b");
  return std::distance(std::sregex_iterator(dom.begin(), dom.end(), re), std::sregex_iterator());
}

TEST_F(BrowserTest, SearchHighlightsTheHotFrame) {
  std::string dom = RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000",
                                "file://" + page_ + "?search=hot_leaf");
  ASSERT_NE(dom.find("<body"), std::string::npos) << dom;
  // The root frame is drawn, full width, with every sample.
  std::string root = FrameElement(dom, "all");
  ASSERT_FALSE(root.empty()) << dom;
  EXPECT_NE(root.find("id=\"frame-root\""), std::string::npos) << root;
  EXPECT_NE(root.find("data-samples=\"100\""), std::string::npos) << root;
  EXPECT_NE(root.find("width:100.0000%"), std::string::npos) << root;
  // The hot frame is there, 80% wide, and the search marked it (and nothing else).
  std::string hot = FrameElement(dom, "ns::hot_leaf\\(int\\)");
  ASSERT_FALSE(hot.empty()) << dom;
  EXPECT_NE(hot.find("frame kind-user match"), std::string::npos) << hot;
  EXPECT_NE(hot.find("data-samples=\"80\""), std::string::npos) << hot;
  EXPECT_NE(hot.find("width:80.0000%"), std::string::npos) << hot;
  size_t matches = CountMatchedFrames(dom);
  EXPECT_EQ(matches, 1u);
  EXPECT_NE(dom.find("Matched: 1 frames, 80 samples (80.00%)"), std::string::npos);
  // Kernel and inlined frames are drawn as such.
  EXPECT_NE(FrameElement(dom, "do_syscall_64").find("kind-kernel"), std::string::npos);
  EXPECT_NE(FrameElement(dom, "inline_helper").find("kind-inline"), std::string::npos);
  // A search that matches nothing highlights nothing.
  std::string none = RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000",
                                 "file://" + page_ + "?search=no_such_function");
  EXPECT_EQ(CountMatchedFrames(none), 0u);
  EXPECT_NE(none.find("Matched: 0 frames, 0 samples"), std::string::npos);
}

TEST_F(BrowserTest, ZoomAndInvertedView) {
  std::string dom = RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000",
                                "file://" + page_ + "?zoom=work&inverted=1");
  // Zoomed into "work": it spans the chart, ancestors are dimmed, other threads are gone.
  std::string work = FrameElement(dom, "work");
  ASSERT_FALSE(work.empty()) << dom;
  EXPECT_NE(work.find("width:100.0000%"), std::string::npos) << work;
  EXPECT_NE(FrameElement(dom, "all").find("dimmed"), std::string::npos);
  EXPECT_TRUE(FrameElement(dom, "do_syscall_64").empty());
  EXPECT_TRUE(FrameElement(dom, "other").empty());
  EXPECT_NE(FrameElement(dom, "ns::hot_leaf\\(int\\)").find("width:100.0000%"), std::string::npos);
  // Inverted (icicle): the root is at the top.
  EXPECT_NE(FrameElement(dom, "all").find("top:0px"), std::string::npos);

  // Not inverted: the root is at the bottom (depth 0 → max depth rows down).
  std::string flame =
      RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000", "file://" + page_);
  EXPECT_EQ(FrameElement(flame, "all").find("top:0px"), std::string::npos);
  EXPECT_NE(FrameElement(flame, "do_syscall_64").find("top:0px"), std::string::npos)
      << "the deepest frame (depth 5) is the top row";
}

// Clicks, mouse moves and buttons, driven by a wrapper page that loads the flame graph in an
// iframe (file:// access between frames needs --allow-file-access-from-files) and writes what
// it observed into its own DOM, which --dump-dom then prints.
TEST_F(BrowserTest, ClickZoomTooltipResetSearchButtonAndInvertToggle) {
  std::string wrapper = dir_ + "/interact.html";
  std::ofstream(wrapper) << R"HTML(<!DOCTYPE html><html><body>
<iframe id="f" src="sample.html" style="width:1200px;height:500px"></iframe>
<pre id="result">not run</pre>
<script>
const f = document.getElementById("f");
window.addEventListener("load", () => {  // after the iframe has loaded
  const out = [];
  try {
    const d = f.contentDocument, w = f.contentWindow;
    const frame = name => [...d.querySelectorAll(".frame")].find(e => e.dataset.name === name);
    frame("ns::hot_leaf(int)").dispatchEvent(
        new w.MouseEvent("mousemove", {bubbles: true, clientX: 50, clientY: 50}));
    const tip = d.getElementById("tooltip");
    out.push("tooltip=" + (tip.hidden ? "hidden" : tip.textContent.split(String.fromCharCode(10)).join(" | ")));
    frame("work").dispatchEvent(new w.MouseEvent("click", {bubbles: true}));
    out.push("zoomed work=" + frame("work").style.width + " other=" + (frame("other") ? "shown" : "gone"));
    frame("work").dispatchEvent(new w.MouseEvent("click", {bubbles: true}));
    out.push("zoomed-out main=" + frame("main").style.width);
    d.getElementById("reset-zoom").click();
    out.push("reset work=" + frame("work").style.width + " other=" + (frame("other") ? "shown" : "gone"));
    d.getElementById("search").value = "do_sys";
    d.getElementById("search-button").click();
    out.push("search=" + d.getElementById("matched").textContent + " marked=" +
             d.querySelectorAll(".frame.match").length + " on=" +
             d.querySelector(".frame.match").dataset.name);
    d.getElementById("clear-search").click();
    out.push("cleared marked=" + d.querySelectorAll(".frame.match").length);
    const before = frame("all").style.top;
    d.getElementById("inverted").click();
    out.push("root top=" + before + " inverted top=" + frame("all").style.top);
  } catch (e) {
    out.push("error=" + e);
  }
  document.getElementById("result").textContent = out.join(String.fromCharCode(10));
});
</script></body></html>)HTML";
  std::string dom = RunChromium(chromium_, dir_,
                                "--dump-dom --virtual-time-budget=5000 "
                                "--allow-file-access-from-files",
                                "file://" + wrapper);
  size_t begin = dom.find("<pre id=\"result\">");
  ASSERT_NE(begin, std::string::npos) << dom;
  std::string result = dom.substr(begin, dom.find("</pre>", begin) - begin);
  EXPECT_EQ(result.find("error="), std::string::npos) << result;
  EXPECT_NE(result.find("tooltip=ns::hot_leaf(int) | 80 samples (80.00% of all) | self: 80 "
                        "samples (80.00%) | kind: user"),
            std::string::npos)
      << result;
  EXPECT_NE(result.find("zoomed work=100% other=gone"), std::string::npos) << result;
  EXPECT_NE(result.find("zoomed-out main=100%"), std::string::npos) << result;
  EXPECT_NE(result.find("reset work=80% other=shown"), std::string::npos) << result;
  EXPECT_NE(result.find("search=Matched: 1 frames, 15 samples (15.00%) marked=1 on=do_syscall_64"),
            std::string::npos)
      << result;
  EXPECT_NE(result.find("cleared marked=0"), std::string::npos) << result;
  EXPECT_NE(result.find("inverted top=0px"), std::string::npos) << result;
  EXPECT_EQ(result.find("root top=0px"), std::string::npos) << result;
}

// A script appended to a copy of the page: once the page has loaded (its own script has run),
// it measures and drives the page in the real window and writes "key=value" lines into
// <pre id="probe">, which --dump-dom prints. Rectangles are "left,top,right,bottom" in window
// pixels, followed by ",hidden" when the element does not show at its centre.
const char kDeepProbe[] = R"JS(<script>
window.addEventListener("load", () => {
  const out = [];
  // ",hidden" when the element's centre shows something else (clipped by the chart's box).
  const rect = e => {
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    return [r.left, r.top, r.right, r.bottom].map(Math.round).join(",") +
           (hit === e ? "" : ",hidden");
  };
  const frame = name => [...document.querySelectorAll(".frame")].find(e => e.dataset.name === name);
  const root = () => document.getElementById("frame-root");
  const deepest = () => Math.max(...[...document.querySelectorAll(".frame")].map(
      e => +e.dataset.depth));
  const tip = () => document.getElementById("tooltip").textContent.split("\n").join(" | ");
  const hover = e => e.dispatchEvent(
      new MouseEvent("mousemove", {bubbles: true, clientX: 100, clientY: 100}));
  try {
    out.push("viewport=" + window.innerWidth + "," + window.innerHeight);
    out.push("root=" + rect(root()));
    out.push("search box=" + rect(document.getElementById("search")));
    const total = +root().dataset.samples;
    let wide = 0;
    for (const e of document.querySelectorAll(".frame")) {
      if (+e.dataset.samples * 10 >= total) out.push("wide " + (++wide) + "=" + rect(e));
    }
    out.push("wide frames=" + wide);
    out.push("deepest drawn=" + deepest());
    out.push("zoomed frame=" + (frame("deep_leaf") ? rect(frame("deep_leaf")) : "none"));
    if (window.location.search) throw "opened with a query: measured only";
    hover(root());
    out.push("tooltip all=" + tip());
    hover(frame("compute"));
    out.push("tooltip compute=" + tip());
    document.getElementById("search").value = "recurse|visit";
    document.getElementById("search-button").click();
    out.push("search=" + document.getElementById("matched").textContent + " marked=" +
             document.querySelectorAll(".frame.match").length);
    out.push("root after search=" + rect(root()));
    // Zoomed into compute (7 rows deep), the tower, or read_file (whose spin tower, 255 deep, is
    // drawn only then), a frame stays where it was clicked (within a pixel: scroll offsets are
    // whole pixels, the box's height need not be).
    for (const name of ["compute", "recurse", "read_file"]) {
      const before = frame(name).getBoundingClientRect().top;
      frame(name).click();
      const moved = frame(name).getBoundingClientRect().top - before;
      out.push("zoom " + name + " moved=" + (Math.abs(moved) < 1 ? 0 : moved) +
               " width=" + frame(name).style.width + " deepest=" + deepest());
      document.getElementById("reset-zoom").click();
    }
    out.push("root after reset=" + rect(root()));
    document.getElementById("inverted").click();
    out.push("root inverted=" + rect(root()));
    document.getElementById("inverted").click();
    out.push("root flame again=" + rect(root()));
  } catch (e) {
    out.push("error=" + e);
  }
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
});
</script>)JS";

// The probe's lines as key → value.
std::map<std::string, std::string> ProbeResults(const std::string& dom) {
  std::map<std::string, std::string> results;
  size_t begin = dom.find("<pre id=\"probe\">");
  if (begin == std::string::npos) return results;
  begin += std::strlen("<pre id=\"probe\">");
  std::istringstream lines(dom.substr(begin, dom.find("</pre>", begin) - begin));
  for (std::string line; std::getline(lines, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) results[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return results;
}

// True when the rectangle "left,top,right,bottom" lies inside the viewport "width,height" and
// shows there.
bool InsideViewport(const std::string& rect, const std::string& viewport) {
  double l, t, r, b, w, h;
  return rect.find("hidden") == std::string::npos &&
         std::sscanf(rect.c_str(), "%lf,%lf,%lf,%lf", &l, &t, &r, &b) == 4 &&
         std::sscanf(viewport.c_str(), "%lf,%lf", &w, &h) == 2 && l >= 0 && t >= 0 && r <= w &&
         b <= h && b > t;
}

// Issue 33: two rare 190-frame towers over wide shallow stacks. The page opens with the root
// row, every frame of at least 10 % and the controls inside a laptop's window (the page used
// to be ~3,500 px tall with its root at the bottom); tooltips give samples and percent, a
// search totals its matches once per sample, zoom and reset keep the base in view.
TEST_F(BrowserTest, DeepProfileOpensOnItsBase) {
  Result<Profile> profile = ParseFolded(testing::DeepFolded(25));
  ASSERT_TRUE(profile) << profile.error().message;
  std::string page = dir_ + "/deep.html";
  FlameGraphOptions options;
  options.title = "deep towers";
  std::string html = RenderFlameGraphHtml(*profile, options);
  size_t body_end = html.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  std::ofstream(page) << html.insert(body_end, kDeepProbe);

  for (const char* window : {"1366,768", "1280,720"}) {
    SCOPED_TRACE(window);
    std::string dom =
        RunChromium(chromium_, dir_,
                    std::string("--dump-dom --virtual-time-budget=3000 --window-size=") + window,
                    "file://" + page);
    std::map<std::string, std::string> probe = ProbeResults(dom);
    ASSERT_FALSE(probe.empty()) << dom.substr(0, 2000);
    ASSERT_EQ(probe.count("error"), 0u) << probe["error"];
    const std::string& viewport = probe["viewport"];
    // The towers are drawn (so the profile really is 191 rows deep), yet the base is on screen.
    EXPECT_EQ(probe["deepest drawn"], "191");
    EXPECT_TRUE(InsideViewport(probe["root"], viewport))
        << "root row " << probe["root"] << " outside the window " << viewport;
    EXPECT_TRUE(InsideViewport(probe["search box"], viewport)) << probe["search box"];
    // all, python3, _start, main, run, compute, parse_json, read_file.
    ASSERT_EQ(probe["wide frames"], "8");
    for (int i = 1; i <= 8; ++i) {
      std::string key = "wide " + std::to_string(i);
      EXPECT_TRUE(InsideViewport(probe[key], viewport)) << key << ": " << probe[key];
    }
    EXPECT_EQ(probe["tooltip all"], "all | 10000 samples (100.00% of all)");
    EXPECT_EQ(probe["tooltip compute"],
              "compute | 6450 samples (64.50% of all) | self: 6050 samples (60.50%) | kind: user");
    // 2 x 186 recursive frames, 50 samples: each tower's 25 counted once, not 186 times.
    EXPECT_EQ(probe["search"], "Matched: 372 frames, 50 samples (0.50%) marked=372");
    EXPECT_TRUE(InsideViewport(probe["root after search"], viewport)) << probe["root after search"];
    // A clicked frame stays where it was and spans the chart.
    EXPECT_EQ(probe["zoom compute moved"], "0 width=100% deepest=6");
    EXPECT_EQ(probe["zoom recurse moved"], "0 width=100% deepest=191");
    EXPECT_EQ(probe["zoom read_file moved"], "0 width=100% deepest=255");
    EXPECT_TRUE(InsideViewport(probe["root after reset"], viewport)) << probe["root after reset"];
    EXPECT_TRUE(InsideViewport(probe["root inverted"], viewport)) << probe["root inverted"];
    EXPECT_TRUE(InsideViewport(probe["root flame again"], viewport)) << probe["root flame again"];
  }

  // Opened zoomed into the tower's leaf: the leaf is on screen, not the base.
  std::string dom =
      RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000 --window-size=1366,768",
                  "file://" + page + "?zoom=deep_leaf");
  std::map<std::string, std::string> probe = ProbeResults(dom);
  EXPECT_EQ(probe["error"], "opened with a query: measured only");
  EXPECT_TRUE(InsideViewport(probe["zoomed frame"], probe["viewport"]))
      << probe["zoomed frame"] << " " << probe["viewport"];
  EXPECT_FALSE(InsideViewport(probe["root"], probe["viewport"])) << probe["root"];
}

TEST_F(BrowserTest, ScreenshotIsWritten) {
  std::string png = dir_ + "/flamegraph.png";
  RunChromium(chromium_, dir_, "--screenshot=" + png + " --window-size=1280,600",
              "file://" + page_ + "?search=hot_leaf");
  std::string bytes = testing::ReadFileOrDie(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  std::printf("flame graph screenshot: %s\n", png.c_str());
}

}  // namespace
}  // namespace stacksym
