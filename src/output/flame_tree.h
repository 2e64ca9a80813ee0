// The call tree behind a flame graph: root "all" → comm → frames, root first, with total and
// self samples per node. Built once per render from the profile's distinct stacks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/frame_names.h"
#include "stacksym/profile.h"

namespace stacksym::output {

enum class FlameKind : uint8_t { kRoot, kComm, kUser, kKernel, kInline };

struct FlameNode {
  std::string name;
  FlameKind kind = FlameKind::kUser;
  uint64_t total = 0;              // samples in this subtree
  uint64_t self = 0;               // samples that end here
  std::vector<uint32_t> children;  // sorted by name, then kind (stable layout)
};

struct FlameTree {
  std::vector<FlameNode> nodes;  // nodes[0] is the root
  uint32_t max_depth = 0;        // root has depth 0
};

FlameTree BuildFlameTree(const Profile& profile);

// The text with every byte that is not part of valid UTF-8 replaced by '?'.
std::string ToValidUtf8(std::string_view text);
// Valid UTF-8 out (invalid bytes become '?'), escaped for a JSON string body.
void AppendJsonEscaped(std::string_view text, std::string* out);
// Valid UTF-8 out, escaped for XML/HTML text and attribute values.
void AppendXmlEscaped(std::string_view text, std::string* out);

}  // namespace stacksym::output
