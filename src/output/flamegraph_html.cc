// The interactive flame graph page: the embedded template with the tree as JSON.
#include <unordered_map>

#include "output/flame_tree.h"
#include "output/flamegraph_template.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = text->find(from, pos)) != std::string::npos; pos += to.size()) {
    text->replace(pos, from.size(), to);
  }
}

// {"names":[...],"period":NS,"types":[...],"type":"wall","tree":[name,kind,[values],[children]]}:
// names are shared through a table because the same function appears under many parents. Each
// node carries the two values every sample type is made of, [samples, off-CPU ns] (only
// [samples] without off-CPU time): one tree for every type, which the page computes from them
// (cpu = samples × period, wall = cpu + off-CPU), at a quarter of the size four trees would take.
std::string TreeJson(const output::FlameTree& tree, bool off_cpu, SampleType first) {
  std::unordered_map<std::string_view, size_t> name_index;
  std::vector<std::string_view> names;
  std::vector<size_t> node_name(tree.nodes.size());
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    auto [it, inserted] = name_index.try_emplace(tree.nodes[i].name, names.size());
    if (inserted) names.push_back(tree.nodes[i].name);
    node_name[i] = it->second;
  }
  std::string out = "{\"names\":[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('"');
    output::AppendJsonEscaped(names[i], &out);
    out.push_back('"');
  }
  out += "],\"period\":" + std::to_string(tree.period_ns) + ",\"types\":[";
  const std::vector<SampleType> types =
      off_cpu ? std::vector<SampleType>{SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu,
                                        SampleType::kWall}
              : std::vector<SampleType>{SampleType::kSamples, SampleType::kCpu};
  for (size_t i = 0; i < types.size(); ++i) {
    out += std::string(i ? ",\"" : "\"") + SampleTypeName(types[i]) + '"';
  }
  out += std::string("],\"type\":\"") + SampleTypeName(first) + "\",\"tree\":";
  // Iterative pre-order walk; a closing marker finishes each node's children array.
  struct Step {
    uint32_t node;
    bool close;
  };
  std::vector<Step> steps = {{0, false}};
  std::vector<bool> first_child = {true};
  while (!steps.empty()) {
    Step step = steps.back();
    steps.pop_back();
    if (step.close) {
      out += "]]";
      continue;
    }
    const output::FlameNode& node = tree.nodes[step.node];
    if (out.back() != ':' && out.back() != '[') out.push_back(',');
    out += '[' + std::to_string(node_name[step.node]) + ',' +
           std::to_string(static_cast<int>(node.kind)) + ",[" + std::to_string(node.samples);
    if (off_cpu) out += ',' + std::to_string(node.off_cpu_ns);
    out += "],[";
    steps.push_back({step.node, true});
    for (size_t c = node.children.size(); c-- > 0;) steps.push_back({node.children[c], false});
  }
  out += '}';
  return out;
}

}  // namespace

std::string RenderFlameGraphHtml(const Profile& profile, const FlameGraphOptions& options) {
  output::FlameTree tree = output::BuildFlameTree(profile);
  const SampleType first = options.sample_type.value_or(profile.DefaultSampleType());
  // The title goes only into the part before the data, so that neither can inject the other's
  // placeholder.
  std::string_view templ = output::kFlameGraphTemplate;
  size_t data = templ.find(output::kDataPlaceholder);
  std::string page(templ.substr(0, data));
  std::string title;
  output::AppendXmlEscaped(options.title, &title);
  ReplaceAll(&page, output::kTitlePlaceholder, title);
  if (data != std::string_view::npos) {
    page += TreeJson(tree, profile.has_off_cpu(), first);
    page += templ.substr(data + output::kDataPlaceholder.size());
  }
  return page;
}

}  // namespace stacksym
