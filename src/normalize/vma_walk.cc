#include "normalize/vma_walk.h"

#include <algorithm>
#include <numeric>

namespace stacksym::normalize {

std::vector<uint32_t> SortedOrder(std::span<const uint64_t> addrs) {
  if (std::is_sorted(addrs.begin(), addrs.end())) return {};
  std::vector<uint32_t> order(addrs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [addrs](uint32_t a, uint32_t b) { return addrs[a] < addrs[b]; });
  return order;
}

WalkStats WalkVmas(VmaSource& source, std::span<const uint64_t> addrs,
                   std::span<const uint32_t> order, const VmaVisitor& visit) {
  WalkStats stats;
  std::vector<uint32_t> identity;
  if (order.empty() && !addrs.empty()) {
    identity.resize(addrs.size());
    std::iota(identity.begin(), identity.end(), 0u);
    order = identity;
  }
  const size_t n = order.size();
  auto addr_at = [&](size_t i) { return addrs[order[i]]; };

  Vma vma;
  bool have_vma = false;
  bool just_looked_up = false;
  size_t i = 0;
  while (i < n) {
    uint64_t a = addr_at(i);
    if (have_vma && vma.contains(a)) {
      size_t j = i + 1;
      while (j < n && vma.contains(addr_at(j))) ++j;
      stats.range_cache_hits += (j - i) - (just_looked_up ? 1 : 0);
      visit(&vma, Reason::kUnmapped, order.subspan(i, j - i));
      i = j;
      just_looked_up = false;
      continue;
    }
    if (have_vma && a < vma.start) {  // in the gap below the VMA found for an earlier address
      size_t j = i + 1;
      while (j < n && addr_at(j) < vma.start) ++j;
      stats.range_cache_hits += (j - i) - (just_looked_up ? 1 : 0);
      visit(nullptr, Reason::kUnmapped, order.subspan(i, j - i));
      i = j;
      just_looked_up = false;
      continue;
    }
    if (just_looked_up) {  // a misbehaving source returned a VMA below a: do not spin
      visit(nullptr, Reason::kUnmapped, order.subspan(i, 1));
      ++i;
      just_looked_up = false;
      continue;
    }
    ++stats.lookups;
    Result<bool> found = source.FindCoveringOrNext(a, &vma);
    if (!found) {
      visit(nullptr, ReasonForError(found.error()), order.subspan(i));
      break;
    }
    if (!*found) {  // nothing at or above a: all the rest are unmapped
      visit(nullptr, Reason::kUnmapped, order.subspan(i));
      break;
    }
    have_vma = true;
    just_looked_up = true;
  }
  return stats;
}

}  // namespace stacksym::normalize
