// Helpers of the index tests: answers of the direct path and of the index side by side, and
// addresses to ask.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/symbolize.h"

namespace stacksym::testing {

// Every field of an answer, one line per frame, so that two answers compare as strings.
std::string Describe(const SymbolizedAddress& a);

// Every `stride`-th address of the file's executable PT_LOAD segments (plus each segment's
// last byte and the bytes just past it).
std::vector<uint64_t> SegmentAddresses(const ElfFile& elf, uint64_t stride);
// Start, middle and last byte of every sized function symbol.
std::vector<uint64_t> SymbolAddresses(const ElfFile& elf);

// Answers of `path` for `addresses` with `options` (cache_dir as given), in one batch.
std::vector<std::string> Answers(const std::string& path, const std::vector<uint64_t>& addresses,
                                 const SymbolizeOptions& options,
                                 AddressKind kind = AddressKind::kVirtual);

// The first differences (at most `limit`), "" when the lists are equal.
std::string FirstDifferences(const std::vector<uint64_t>& addresses,
                             const std::vector<std::string>& expected,
                             const std::vector<std::string>& actual, size_t limit = 5);

// A file's bytes (empty when unreadable), and a file written with exactly `bytes`: the
// corruption tests' tools.
std::vector<uint8_t> ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

// The index file the cache in `dir` uses for `path` under `options`.
std::string IndexPathFor(const std::string& path, const std::string& dir,
                         const SymbolizeOptions& options = {});

}  // namespace stacksym::testing
