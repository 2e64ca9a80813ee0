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

// Drives the sample-type switch of a page with off-CPU time (MakeOffCpuProfile: 1 s on CPU,
// 2.6 s off) and writes what it sees as "key=value" lines into <pre id="probe">.
const char kTypeProbe[] = R"JS(<script>
window.addEventListener("load", () => {
  const out = [];
  const frame = name => [...document.querySelectorAll(".frame")].find(e => e.dataset.name === name);
  const show = name => {
    const e = frame(name);
    return e ? e.style.width + " " + e.dataset.samples + " " + e.className : "gone";
  };
  const tip = () => document.getElementById("tooltip").textContent.split("\n").join(" | ");
  const select = document.getElementById("sample-type");
  const setType = t => { select.value = t; select.dispatchEvent(new Event("change")); };
  const state = prefix => {
    out.push(prefix + " type=" + document.body.dataset.sampleType + "," + select.value +
             " total=" + document.body.dataset.totalSamples);
    for (const name of ["all", "worker", "ns::hot_leaf(int)", "schedule", "do_syscall_64",
                        "[off-cpu: sleeping]", "[off-cpu: preempted]", "other"]) {
      out.push(prefix + " " + name + "=" + show(name));
    }
    out.push(prefix + " matched=" + document.getElementById("matched").textContent);
  };
  try {
    out.push("options=" + [...select.options].map(o => o.value + ":" + o.text).join(","));
    out.push("legend=" + (document.getElementById("legend-off-cpu").hidden ? "hidden" : "shown"));
    if (window.location.search) { state("url"); throw "opened with a query: measured only"; }
    frame("ns::hot_leaf(int)").dispatchEvent(
        new MouseEvent("mousemove", {bubbles: true, clientX: 50, clientY: 50}));
    out.push("tooltip wall=" + tip());
    document.getElementById("search").value = "hot_leaf";
    document.getElementById("search-button").click();
    state("wall");
    document.getElementById("search").value = "schedule";  // typed, not searched: not kept
    for (const t of ["cpu", "off_cpu", "samples"]) { setType(t); state(t); }
    frame("ns::hot_leaf(int)").dispatchEvent(
        new MouseEvent("mousemove", {bubbles: true, clientX: 50, clientY: 50}));
    out.push("tooltip samples=" + tip());
    // Zoomed into a frame with no CPU time, the CPU view zooms to its nearest ancestor with some.
    setType("wall");
    document.getElementById("clear-search").click();
    frame("schedule").click();
    out.push("zoomed wall schedule=" + show("schedule") + " root=" + show("all"));
    setType("cpu");
    out.push("zoomed cpu do_syscall_64=" + show("do_syscall_64") + " schedule=" + show("schedule") +
             " hot_leaf=" + show("ns::hot_leaf(int)"));
    setType("wall");
    out.push("zoomed wall again do_syscall_64=" + show("do_syscall_64"));
  } catch (e) {
    out.push("error=" + e);
  }
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
});
</script>)JS";

// The page embeds every sample type and switches between them: widths, totals, the search's
// total and the tooltip follow the type; state frames and frames only ever off CPU are marked;
// the zoom survives a switch.
TEST_F(BrowserTest, SampleTypeSwitch) {
  std::string page = dir_ + "/off_cpu.html";
  std::string html = RenderFlameGraphHtml(testing::MakeOffCpuProfile());
  ASSERT_NE(html.rfind("</body>"), std::string::npos);
  std::ofstream(page) << html.insert(html.rfind("</body>"), kTypeProbe);
  std::string dom =
      RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000", "file://" + page);
  std::map<std::string, std::string> probe = ProbeResults(dom);
  ASSERT_FALSE(probe.empty()) << dom.substr(0, 2000);
  ASSERT_EQ(probe.count("error"), 0u) << probe["error"];
  EXPECT_EQ(probe["options"],
            "samples:Samples,cpu:CPU time,off_cpu:Off-CPU time,wall:Wall time (CPU + off-CPU)");
  EXPECT_EQ(probe["legend"], "shown");
  // Wall time by default: 3.6 s; the state frame leaf of the sleeping stack, schedule blue.
  EXPECT_EQ(probe["tooltip wall"],
            "ns::hot_leaf(int) | 900.00 ms wall (25.00% of all) | self: 800.00 ms wall (22.22%) | "
            "off CPU: 11.11% of it | kind: user");
  EXPECT_EQ(probe["wall type"], "wall,wall total=3600000000");
  EXPECT_EQ(probe["wall all"], "100% 3600000000 frame kind-root");
  EXPECT_EQ(probe["wall worker"], "59.7222% 2150000000 frame kind-comm");
  EXPECT_EQ(probe["wall ns::hot_leaf(int)"], "25% 900000000 frame kind-user match");
  EXPECT_EQ(probe["wall schedule"], "55.5556% 2000000000 frame kind-kernel off-cpu");
  EXPECT_EQ(probe["wall do_syscall_64"], "59.7222% 2150000000 frame kind-kernel");
  EXPECT_EQ(probe["wall [off-cpu: sleeping]"], "55.5556% 2000000000 frame kind-state off-cpu");
  EXPECT_EQ(probe["wall [off-cpu: preempted]"], "2.7778% 100000000 frame kind-state off-cpu");
  EXPECT_EQ(probe["wall matched"], "Matched: 1 frames, 900.00 ms wall (25.00%)");
  // CPU time: 1 s, no off-CPU frame drawn, the search kept and counted again.
  EXPECT_EQ(probe["cpu type"], "cpu,cpu total=1000000000");
  EXPECT_EQ(probe["cpu worker"], "15% 150000000 frame kind-comm");
  EXPECT_EQ(probe["cpu ns::hot_leaf(int)"], "80% 800000000 frame kind-user match");
  EXPECT_EQ(probe["cpu schedule"], "gone");
  EXPECT_EQ(probe["cpu [off-cpu: sleeping]"], "gone");
  EXPECT_EQ(probe["cpu matched"], "Matched: 1 frames, 800.00 ms on CPU (80.00%)");
  // Off-CPU time: 2.6 s; "other" never left the CPU.
  EXPECT_EQ(probe["off_cpu type"], "off_cpu,off_cpu total=2600000000");
  EXPECT_EQ(probe["off_cpu [off-cpu: sleeping]"], "76.9231% 2000000000 frame kind-state off-cpu");
  // Every frame of the off-CPU view shows off-CPU time only: all marked.
  EXPECT_EQ(probe["off_cpu ns::hot_leaf(int)"], "3.8462% 100000000 frame kind-user off-cpu match");
  EXPECT_EQ(probe["off_cpu do_syscall_64"], "76.9231% 2000000000 frame kind-kernel off-cpu");
  EXPECT_EQ(probe["off_cpu other"], "gone");
  EXPECT_EQ(probe["off_cpu matched"], "Matched: 1 frames, 100.00 ms off CPU (3.85%)");
  // Samples: the CPU profile's page.
  EXPECT_EQ(probe["samples type"], "samples,samples total=100");
  EXPECT_EQ(probe["samples ns::hot_leaf(int)"], "80% 80 frame kind-user match");
  EXPECT_EQ(probe["samples matched"], "Matched: 1 frames, 80 samples (80.00%)");
  EXPECT_EQ(probe["tooltip samples"],
            "ns::hot_leaf(int) | 80 samples (80.00% of all) | self: 80 samples (80.00%) | "
            "kind: user");
  // Zoom: schedule spans the chart; the CPU view has none of it and zooms to do_syscall_64,
  // which the wall view then keeps.
  EXPECT_EQ(
      probe["zoomed wall schedule"],
      "100% 2000000000 frame kind-kernel off-cpu root=100% 3600000000 frame kind-root dimmed");
  EXPECT_EQ(probe["zoomed cpu do_syscall_64"],
            "100% 150000000 frame kind-kernel schedule=gone hot_leaf=gone");
  EXPECT_EQ(probe["zoomed wall again do_syscall_64"], "100% 2150000000 frame kind-kernel");

  // ?type= opens on that type.
  dom = RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000",
                    "file://" + page + "?type=off_cpu&search=schedule");
  probe = ProbeResults(dom);
  EXPECT_EQ(probe["error"], "opened with a query: measured only");
  EXPECT_EQ(probe["url type"], "off_cpu,off_cpu total=2600000000");
  EXPECT_EQ(probe["url schedule"], "76.9231% 2000000000 frame kind-kernel off-cpu match");
  EXPECT_EQ(probe["url matched"], "Matched: 1 frames, 2.00 s off CPU (76.92%)");

  // A CPU profile's page offers samples and CPU time, without the off-CPU legend.
  std::string cpu_page = dir_ + "/cpu.html";
  html = RenderFlameGraphHtml(testing::MakeSampleProfile());
  std::ofstream(cpu_page) << html.insert(html.rfind("</body>"), kTypeProbe);
  probe = ProbeResults(RunChromium(chromium_, dir_, "--dump-dom --virtual-time-budget=3000",
                                   "file://" + cpu_page + "?type=cpu"));
  EXPECT_EQ(probe["options"], "samples:Samples,cpu:CPU time");
  EXPECT_EQ(probe["legend"], "hidden");
  EXPECT_EQ(probe["url type"], "cpu,cpu total=1010101000");
  EXPECT_EQ(probe["url ns::hot_leaf(int)"], "80% 808080800 frame kind-user");
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
