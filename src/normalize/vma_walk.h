// The sorted merge walk of addresses against a process's VMAs: one lookup per VMA touched or
// per gap, not per address. The Normalizer's (its one user); internal to the library.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "normalize/vma_sources.h"
#include "stacksym/reason.h"

namespace stacksym::normalize {

// Indices of `addrs` in ascending address order (stable). Empty result when `addrs` is
// already sorted, so sorted input costs one pass and no allocation.
std::vector<uint32_t> SortedOrder(std::span<const uint64_t> addrs);

// Called once per run of addresses (consecutive in sorted order) that share one outcome:
// `vma` is the VMA that covers them, or nullptr with `reason` set (unmapped, process gone...).
// `indices` are positions in the caller's `addrs`.
using VmaVisitor =
    std::function<void(const Vma* vma, Reason reason, std::span<const uint32_t> indices)>;

struct WalkStats {
  uint64_t lookups = 0;           // FindCoveringOrNext calls
  uint64_t range_cache_hits = 0;  // addresses answered by the VMA found for an earlier one
};

// Merge-walks addresses (in `order`, or in input order when `order` is empty — then they must
// be ascending) against the source's VMAs. Never fails: source errors become per-address
// Reasons.
WalkStats WalkVmas(VmaSource& source, std::span<const uint64_t> addrs,
                   std::span<const uint32_t> order, const VmaVisitor& visit);

}  // namespace stacksym::normalize
