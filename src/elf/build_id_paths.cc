// BuildIdPaths: where a build ID's files live under a debug directory.
#include "stacksym/elf.h"

namespace stacksym {

std::vector<std::string> BuildIdPaths(const std::string& debug_dir,
                                      std::span<const uint8_t> build_id) {
  std::vector<std::string> out;
  if (build_id.size() < 2) return out;
  std::string hex = ToHex(build_id);
  std::string base = debug_dir;
  if (!base.empty() && base.back() == '/') base.pop_back();
  base += "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  out.push_back(base);
  out.push_back(base + ".debug");
  return out;
}

}  // namespace stacksym
