#include "output/flame_tree.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace stacksym::output {
namespace {

FlameKind KindOf(EntryKind kind) {
  switch (kind) {
    case EntryKind::kKernel:
      return FlameKind::kKernel;
    case EntryKind::kInline:
      return FlameKind::kInline;
    case EntryKind::kUser:
      break;
  }
  return FlameKind::kUser;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not valid UTF-8.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    len = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  uint32_t cp = c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (cc & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

}  // namespace

FlameTree BuildFlameTree(const Profile& profile) {
  std::vector<std::vector<NamedEntry>> names = NameAllFrames(profile);
  // Every distinct (kind, name) gets a small id once, so that a child is found by the integer
  // key (parent, id) instead of hashing strings for every frame of every stack.
  std::unordered_map<std::string, uint32_t> label_ids;
  std::vector<std::pair<FlameKind, const std::string*>> labels;
  auto label_id = [&](FlameKind kind, const std::string& name) {
    std::string key(1, static_cast<char>(kind));
    key += name;
    auto [it, inserted] = label_ids.try_emplace(std::move(key), labels.size());
    if (inserted) labels.push_back({kind, &name});
    return it->second;
  };
  std::vector<std::vector<uint32_t>> frame_labels(names.size());
  for (size_t f = 0; f < names.size(); ++f) {
    for (const NamedEntry& entry : names[f]) {
      frame_labels[f].push_back(label_id(KindOf(entry.kind), entry.name));
    }
  }
  std::vector<std::string> comm_names;  // owned here so labels can point at them
  comm_names.reserve(profile.stacks.size());

  // Off-CPU stacks end in their state's frame.
  std::vector<std::string> state_names;
  for (ThreadState state :
       {ThreadState::kRunning, ThreadState::kSleeping, ThreadState::kUninterruptible,
        ThreadState::kPreempted, ThreadState::kOther}) {
    state_names.push_back(OffCpuStateFrameName(state));
  }
  std::vector<uint32_t> state_labels;
  for (const std::string& name : state_names) {
    state_labels.push_back(label_id(FlameKind::kState, name));
  }

  FlameTree tree;
  tree.period_ns = profile.period_ns;
  tree.nodes.push_back({"all", FlameKind::kRoot, 0, 0, {}});
  std::unordered_map<uint64_t, uint32_t> child_index;
  size_t max_nodes = 1;  // every frame of every stack, plus its comm: no rehashing later
  for (const ProfileStack& stack : profile.stacks) max_nodes += stack.frames.size() + 1;
  child_index.reserve(max_nodes);
  tree.nodes.reserve(std::min<size_t>(max_nodes, size_t{1} << 20));
  auto child = [&](uint32_t parent, uint32_t label) {
    auto [it, inserted] =
        child_index.try_emplace(uint64_t{parent} << 32 | label, static_cast<uint32_t>(0));
    if (inserted) {
      it->second = static_cast<uint32_t>(tree.nodes.size());
      tree.nodes.push_back({*labels[label].second, labels[label].first, 0, 0, {}});
      tree.nodes[parent].children.push_back(it->second);
    }
    return it->second;
  };

  std::unordered_map<std::string, uint32_t> comm_labels;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    uint64_t count = profile.Value(s, SampleType::kSamples);
    uint64_t off_cpu = profile.Value(s, SampleType::kOffCpu);
    if (count == 0 && off_cpu == 0) continue;
    const ProfileStack& stack = profile.stacks[s];
    auto add = [&](uint32_t node) {
      tree.nodes[node].samples += count;
      tree.nodes[node].off_cpu_ns += off_cpu;
    };
    const std::string& comm = stack.comm.empty() ? std::string("[unknown]") : stack.comm;
    auto comm_it = comm_labels.find(comm);
    if (comm_it == comm_labels.end()) {
      comm_names.push_back(comm);
      comm_it = comm_labels.emplace(comm, label_id(FlameKind::kComm, comm_names.back())).first;
    }
    add(0);
    uint32_t node = child(0, comm_it->second);
    add(node);
    uint32_t depth = 1;
    for (size_t f = stack.frames.size(); f-- > 0;) {
      if (stack.frames[f] >= frame_labels.size()) continue;
      for (uint32_t label : frame_labels[stack.frames[f]]) {
        node = child(node, label);
        add(node);
        ++depth;
      }
    }
    if (stack.state != ThreadState::kRunning) {
      size_t state = std::min(static_cast<size_t>(stack.state), state_labels.size() - 1);
      node = child(node, state_labels[state]);
      add(node);
      ++depth;
    }
    tree.max_depth = std::max(tree.max_depth, depth);
  }
  for (FlameNode& node : tree.nodes) {
    std::sort(node.children.begin(), node.children.end(), [&](uint32_t a, uint32_t b) {
      const FlameNode& x = tree.nodes[a];
      const FlameNode& y = tree.nodes[b];
      if (x.name != y.name) return x.name < y.name;
      return x.kind < y.kind;
    });
  }
  return tree;
}

uint64_t FlameTree::Value(const FlameNode& node, SampleType type) const {
  switch (type) {
    case SampleType::kSamples:
      return node.samples;
    case SampleType::kCpu:
      return node.samples * period_ns;
    case SampleType::kOffCpu:
      return node.off_cpu_ns;
    case SampleType::kWall:
      break;
  }
  return node.samples * period_ns + node.off_cpu_ns;
}

std::string FormatFlameValue(uint64_t value, SampleType type) {
  if (type == SampleType::kSamples) return std::to_string(value) + " samples";
  const char* what = type == SampleType::kCpu      ? "on CPU"
                     : type == SampleType::kOffCpu ? "off CPU"
                                                   : "wall";
  double seconds = static_cast<double>(value) / 1e9;
  char buf[64];
  if (seconds < 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms %s", seconds * 1e3, what);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s %s", seconds, what);
  }
  return buf;
}

namespace {

// Walks UTF-8 text: valid multi-byte sequences are copied, bytes that start no valid sequence
// become '?', and each ASCII character goes through escape_ascii(c, out).
template <class EscapeAscii>
void AppendUtf8(std::string_view text, std::string* out, EscapeAscii&& escape_ascii) {
  for (size_t i = 0; i < text.size();) {
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out->push_back('?');
      ++i;
    } else if (len > 1) {
      out->append(text.substr(i, len));
      i += len;
    } else {
      escape_ascii(text[i++], out);
    }
  }
}

}  // namespace

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendUtf8(text, &out, [](char c, std::string* o) { o->push_back(c); });
  return out;
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  AppendUtf8(text, out, [](char c, std::string* o) {
    switch (c) {
      case '"':
        *o += "\\\"";
        break;
      case '\\':
        *o += "\\\\";
        break;
      case '<':  // never "</script>" inside the page's script element
        *o += "\\u003c";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *o += buf;
        } else {
          o->push_back(c);
        }
    }
  });
}

void AppendXmlEscaped(std::string_view text, std::string* out) {
  AppendUtf8(text, out, [](char c, std::string* o) {
    switch (c) {
      case '&':
        *o += "&amp;";
        break;
      case '<':
        *o += "&lt;";
        break;
      case '>':
        *o += "&gt;";
        break;
      case '"':
        *o += "&quot;";
        break;
      case '\'':
        *o += "&#39;";
        break;
      default:
        // XML 1.0 forbids most control characters.
        o->push_back(static_cast<unsigned char>(c) < 0x20 && c != '\t' ? '?' : c);
    }
  });
}

}  // namespace stacksym::output
