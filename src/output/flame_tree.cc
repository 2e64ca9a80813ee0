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
  FlameTree tree;
  tree.nodes.push_back({"all", FlameKind::kRoot, 0, 0, {}});
  // Child lookup keyed by (parent, kind, name).
  std::unordered_map<std::string, uint32_t> child_index;
  std::string key;
  auto child = [&](uint32_t parent, FlameKind kind, const std::string& name) {
    key.assign(reinterpret_cast<const char*>(&parent), sizeof parent);
    key.push_back(static_cast<char>(kind));
    key += name;
    auto [it, inserted] = child_index.try_emplace(key, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(tree.nodes.size());
      tree.nodes.push_back({name, kind, 0, 0, {}});
      tree.nodes[parent].children.push_back(it->second);
    }
    return it->second;
  };

  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    uint64_t count = s < profile.counts.size() ? profile.counts[s] : 0;
    if (count == 0) continue;
    const ProfileStack& stack = profile.stacks[s];
    uint32_t node = 0;
    uint32_t depth = 0;
    tree.nodes[0].total += count;
    node = child(node, FlameKind::kComm, stack.comm.empty() ? "[unknown]" : stack.comm);
    tree.nodes[node].total += count;
    ++depth;
    for (size_t f = stack.frames.size(); f-- > 0;) {
      if (stack.frames[f] >= names.size()) continue;
      for (const NamedEntry& entry : names[stack.frames[f]]) {
        node = child(node, KindOf(entry.kind), entry.name);
        tree.nodes[node].total += count;
        ++depth;
      }
    }
    tree.nodes[node].self += count;
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

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out.push_back('?');
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out->push_back('?');
      ++i;
      continue;
    }
    if (len > 1) {
      out->append(text.substr(i, len));
      i += len;
      continue;
    }
    char c = text[i++];
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '<':  // never "</script>" inside the page's script element
        *out += "\\u003c";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
}

void AppendXmlEscaped(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out->push_back('?');
      ++i;
      continue;
    }
    if (len > 1) {
      out->append(text.substr(i, len));
      i += len;
      continue;
    }
    char c = text[i++];
    switch (c) {
      case '&':
        *out += "&amp;";
        break;
      case '<':
        *out += "&lt;";
        break;
      case '>':
        *out += "&gt;";
        break;
      case '"':
        *out += "&quot;";
        break;
      case '\'':
        *out += "&#39;";
        break;
      default:
        // XML 1.0 forbids most control characters.
        out->push_back(static_cast<unsigned char>(c) < 0x20 && c != '\t' ? '?' : c);
    }
  }
}

}  // namespace stacksym::output
