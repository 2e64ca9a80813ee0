// gzip in and out of memory (zlib), for pprof files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stacksym/result.h"

namespace stacksym::output {

// Decompressed output larger than this is refused: a small hostile file must not exhaust
// memory (a gzip stream expands up to ~1000x).
inline constexpr size_t kMaxInflatedBytes = size_t{1} << 30;

bool IsGzip(std::span<const uint8_t> bytes);
Result<std::string> GzipCompress(std::string_view data);
Result<std::string> GzipDecompress(std::span<const uint8_t> data,
                                   size_t max_bytes = kMaxInflatedBytes);

}  // namespace stacksym::output
