// The call tree behind a flame graph: root "all" → comm → frames, root first, and for an off-CPU
// stack its state as the leaf ("[off-cpu: sleeping]"), with the samples and off-CPU time of
// each node's subtree: one tree serves every sample type. Built once per render from the
// profile's distinct stacks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/frame_names.h"
#include "stacksym/profile.h"

namespace stacksym::output {

// The page's script knows these numbers.
enum class FlameKind : uint8_t { kRoot, kComm, kUser, kKernel, kInline, kState };

struct FlameNode {
  std::string name;
  FlameKind kind = FlameKind::kUser;
  // This subtree's CPU samples and off-CPU nanoseconds (every sample type is made of these two:
  // FlameTree::Value); what ends at a node is its value less its children's.
  uint64_t samples = 0;
  uint64_t off_cpu_ns = 0;
  std::vector<uint32_t> children;  // sorted by name, then kind (stable layout)
};

struct FlameTree {
  std::vector<FlameNode> nodes;  // nodes[0] is the root
  uint32_t max_depth = 0;        // root has depth 0
  uint64_t period_ns = 0;        // the profile's: CPU time is samples × period

  // The node's value of `type`, as Profile::Value gives a stack's.
  uint64_t Value(const FlameNode& node, SampleType type) const;
  // All of the node's time was spent off CPU: the outputs mark it.
  static bool OffCpuOnly(const FlameNode& node) { return node.samples == 0 && node.off_cpu_ns > 0; }
};

FlameTree BuildFlameTree(const Profile& profile);

// A value as the flame graphs show it: "80 samples", "808.08 ms on CPU", "2.60 s off CPU",
// "3.41 s wall" (milliseconds under a second). The page's script formats it the same way.
std::string FormatFlameValue(uint64_t value, SampleType type);

// The text with every byte that is not part of valid UTF-8 replaced by '?'.
std::string ToValidUtf8(std::string_view text);
// Valid UTF-8 out (invalid bytes become '?'), escaped for a JSON string body.
void AppendJsonEscaped(std::string_view text, std::string* out);
// Valid UTF-8 out, escaped for XML/HTML text and attribute values.
void AppendXmlEscaped(std::string_view text, std::string* out);

}  // namespace stacksym::output
