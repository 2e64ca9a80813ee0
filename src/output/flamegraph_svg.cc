// A static flame graph as SVG (in the style of flamegraph.pl) of one sample type: one rect +
// label per frame, hover titles with the value and percent.
#include <algorithm>
#include <cstdio>

#include "output/flame_tree.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

constexpr double kFrameHeight = 16;
constexpr double kFontSize = 11;
constexpr double kCharWidth = kFontSize * 0.59;  // average glyph width of Verdana
constexpr double kPadTop = 44;
constexpr double kPadBottom = 24;
constexpr double kPadSide = 10;
constexpr double kMinFrameWidth = 0.1;  // pixels; narrower frames are not drawn

uint32_t Hash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// Same palette as the HTML page: warm user frames, aqua inlined, green kernel, lilac comm; blue
// for frames whose shown time is all off CPU (in a wall graph those only ever off CPU, in an
// off-CPU graph all), and the off-CPU state frames a darker blue.
std::string Color(const output::FlameNode& node, SampleType type) {
  double v = (Hash(node.name) % 1000) / 1000.0;
  char buf[48];
  if (node.kind == output::FlameKind::kState) return "hsl(225,55%,68%)";
  bool off_cpu = type == SampleType::kOffCpu ||
                 (type == SampleType::kWall && output::FlameTree::OffCpuOnly(node));
  if (off_cpu && node.kind != output::FlameKind::kRoot && node.kind != output::FlameKind::kComm) {
    std::snprintf(buf, sizeof buf, "hsl(%d,65%%,%d%%)", static_cast<int>(195 + 25 * v),
                  static_cast<int>(65 + 10 * v));
    return buf;
  }
  switch (node.kind) {
    case output::FlameKind::kRoot:
      return "rgb(204,204,204)";
    case output::FlameKind::kComm:
      std::snprintf(buf, sizeof buf, "hsl(260,35%%,%d%%)", static_cast<int>(70 + 10 * v));
      break;
    case output::FlameKind::kKernel:
      std::snprintf(buf, sizeof buf, "hsl(%d,50%%,%d%%)", static_cast<int>(95 + 20 * v),
                    static_cast<int>(52 + 10 * v));
      break;
    case output::FlameKind::kInline:
      std::snprintf(buf, sizeof buf, "hsl(%d,55%%,%d%%)", static_cast<int>(175 + 20 * v),
                    static_cast<int>(55 + 10 * v));
      break;
    case output::FlameKind::kUser:
    case output::FlameKind::kState:
      std::snprintf(buf, sizeof buf, "hsl(%d,85%%,%d%%)", static_cast<int>(50 * v),
                    static_cast<int>(55 + 12 * v));
      break;
  }
  return buf;
}

// Cuts a label to what fits in `width` pixels ("..." when shortened); counts UTF-8 code
// points, not bytes.
std::string FitLabel(const std::string& name, double width) {
  size_t fits = width > 6 ? static_cast<size_t>((width - 6) / kCharWidth) : 0;
  if (fits < 3) return "";
  size_t chars = 0, i = 0;
  for (; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xc0) != 0x80 && ++chars > fits) break;
  }
  if (i >= name.size()) return name;
  // Shorten to fits - 2 code points, then "..".
  size_t keep = 0;
  chars = 0;
  for (; keep < name.size(); ++keep) {
    if ((static_cast<unsigned char>(name[keep]) & 0xc0) != 0x80 && ++chars > fits - 2) break;
  }
  return name.substr(0, keep) + "..";
}

// Depth of the deepest frame at least kMinFrameWidth wide: a static image cannot open on its
// base as the page does, but towers too narrow to draw need not make it taller (a few rare
// 190-frame stacks would otherwise put ~3,000 px of empty background above the graph).
uint32_t DrawnDepth(const output::FlameTree& tree, SampleType type, double scale) {
  uint32_t deepest = 0;
  std::vector<std::pair<uint32_t, uint32_t>> stack = {{0, 0}};  // node, depth
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (tree.Value(tree.nodes[node], type) * scale < kMinFrameWidth) continue;
    deepest = std::max(deepest, depth);
    for (uint32_t child : tree.nodes[node].children) stack.push_back({child, depth + 1});
  }
  return deepest;
}

}  // namespace

std::string RenderFlameGraphSvg(const Profile& profile, const FlameGraphOptions& options) {
  output::FlameTree tree = output::BuildFlameTree(profile);
  const SampleType type = options.sample_type.value_or(profile.DefaultSampleType());
  const double width = options.svg_width < 200 ? 200 : options.svg_width;
  const double chart_width = width - 2 * kPadSide;
  const uint64_t total = tree.Value(tree.nodes[0], type);
  const double scale = total > 0 ? chart_width / static_cast<double>(total) : 0;
  const uint32_t max_depth = DrawnDepth(tree, type, scale);
  const double height = kPadTop + (max_depth + 1) * kFrameHeight + kPadBottom;
  char buf[512];

  std::string out;
  std::snprintf(buf, sizeof buf,
                "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "xmlns=\"http://www.w3.org/2000/svg\">\n",
                width, height, width, height);
  out += buf;
  out +=
      "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%\"/>"
      "</linearGradient></defs>\n"
      "<style>text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 11px; "
      "fill: #000; } .title { font-size: 17px; } rect:hover { stroke: #000; "
      "stroke-width: 0.5; }</style>\n";
  std::snprintf(buf, sizeof buf,
                "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
                "fill=\"url(#background)\"/>\n",
                width, height);
  out += buf;
  std::string title;
  output::AppendXmlEscaped(options.title, &title);
  std::snprintf(buf, sizeof buf,
                "<text class=\"title\" x=\"%.1f\" y=\"24\" "
                "text-anchor=\"middle\">",
                width / 2);
  out += buf;
  out += title;
  out += "</text>\n";
  std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.0f\">", kPadSide, height - 8);
  out += buf;
  out += output::FormatFlameValue(total, type) +
         "; green: kernel, aqua: inlined, lilac: thread name" +
         (profile.has_off_cpu() ? ", blue: off CPU" : "") + "</text>\n";

  // Depth-first walk carrying each node's x position (in samples) and depth.
  struct Item {
    uint32_t node;
    uint64_t x;
    uint32_t depth;
  };
  std::vector<Item> stack = {{0, 0, 0}};
  out += "<g>\n";
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    const output::FlameNode& node = tree.nodes[item.node];
    const uint64_t value = tree.Value(node, type);
    double w = value * scale;
    if (w < kMinFrameWidth) continue;
    double x = kPadSide + item.x * scale;
    double y = kPadTop + (max_depth - item.depth) * kFrameHeight;
    std::string name;
    output::AppendXmlEscaped(node.name, &name);
    double pct = total > 0 ? 100.0 * value / total : 0;
    out += "<g><title>" + name + " (" + output::FormatFlameValue(value, type);
    std::snprintf(buf, sizeof buf,
                  ", %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" "
                  "width=\"%.2f\" height=\"%.1f\" rx=\"2\" fill=\"%s\"/>",
                  pct, x, y, w, kFrameHeight - 1, Color(node, type).c_str());
    out += buf;
    std::string label = FitLabel(node.name, w);
    if (!label.empty()) {
      std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + kFrameHeight - 4.5);
      out += buf;
      output::AppendXmlEscaped(label, &out);
      out += "</text>";
    }
    out += "</g>\n";
    uint64_t cx = item.x;
    for (uint32_t child : node.children) {
      stack.push_back({child, cx, item.depth + 1});
      cx += tree.Value(tree.nodes[child], type);
    }
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace stacksym
