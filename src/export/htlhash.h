// The OpenTelemetry eBPF profiler's file identity ("htlhash", the mapping attribute
// process.executable.build_id.htlhash): SHA-256 over the file's first 4 KiB, its last 4 KiB and
// its length as a big-endian uint64, truncated to 16 bytes, written as 32 lower-case hex
// digits. Defined by libpf.FileIDFromExecutableReader (opentelemetry-ebpf-profiler).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace stacksym::exporter {

// SHA-256 (FIPS 180-4) of `data`.
std::array<uint8_t, 32> Sha256(std::span<const uint8_t> data);

// The htlhash of a whole file's bytes.
std::string HtlHash(std::span<const uint8_t> file);

}  // namespace stacksym::exporter
