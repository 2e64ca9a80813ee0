#include "llvm_symbolizer_request.h"

#include <cstdint>

#include "stacksym/elf.h"

namespace stacksym::cli {
namespace {

constexpr const char* kDelimiters = " \n\r";

// Architecture suffixes llvm-symbolizer strips from "module:arch" (those it knows as
// triples' architectures; the file name keeps any other colon part).
bool IsArchName(std::string_view s) {
  static constexpr std::string_view kArchs[] = {
      "x86_64",  "x86-64", "amd64", "i386",   "i486",    "i586",    "i686",
      "x86",     "arm",    "armv7", "arm64",  "aarch64", "ppc64",   "ppc64le",
      "riscv64", "s390x",  "mips",  "mipsel", "mips64",  "mips64el"};
  for (std::string_view a : kArchs) {
    if (s == a) return true;
  }
  return false;
}

}  // namespace

bool ParseLlvmAddress(std::string_view text, uint64_t* value) {
  // The base as LLVM 16's StringRef::getAsInteger(0) senses it: 0x/0X hexadecimal, 0b/0B
  // binary, 0o (lower case only) and a 0 before a digit octal, else decimal.
  unsigned base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.starts_with("0b") || text.starts_with("0B")) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.starts_with("0o")) {
    base = 8;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0' && text[1] >= '0' && text[1] <= '9') {
    base = 8;
    text.remove_prefix(1);
  }
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    unsigned digit;
    if (c >= '0' && c <= '9')
      digit = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = static_cast<unsigned>(c - 'A' + 10);
    else
      return false;
    if (digit >= base) return false;
    if (v > (UINT64_MAX - digit) / base) return false;  // overflow
    v = v * base + digit;
  }
  *value = v;
  return true;
}

std::optional<std::vector<uint8_t>> ParseLlvmBuildId(std::string_view hex) {
  if (hex.empty()) return std::nullopt;
  if (hex.size() % 2 == 0) return FromHex(hex);
  return FromHex("0" + std::string(hex));  // an odd count: as if it had a leading 0
}

std::string LlvmBuildIdName(std::span<const uint8_t> build_id) {
  std::string name = ToHex(build_id);
  for (char& c : name) {
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  }
  return name;
}

uint64_t LlvmXxh64(std::string_view data) {
  // XXH64 with seed 0, from its specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md).
  constexpr uint64_t kP1 = 11400714785074694791ull, kP2 = 14029467366897019727ull,
                     kP3 = 1609587929392839161ull, kP4 = 9650029242287828579ull,
                     kP5 = 2870177450012600261ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto read64 = [&](size_t at) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(data[at + k]);
    return v;
  };
  auto read32 = [&](size_t at) {
    uint64_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(data[at + k]);
    return v;
  };
  auto round = [&](uint64_t acc, uint64_t input) { return rotl(acc + input * kP2, 31) * kP1; };
  size_t i = 0, n = data.size();
  uint64_t h;
  if (n >= 32) {
    uint64_t v[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
    for (; i + 32 <= n; i += 32) {
      for (int k = 0; k < 4; ++k) v[k] = round(v[k], read64(i + 8 * k));
    }
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (uint64_t lane : v) h = (h ^ round(0, lane)) * kP1 + kP4;
  } else {
    h = kP5;
  }
  h += n;
  for (; i + 8 <= n; i += 8) h = rotl(h ^ round(0, read64(i)), 27) * kP1 + kP4;
  if (i + 4 <= n) {
    h = rotl(h ^ (read32(i) * kP1), 23) * kP2 + kP3;
    i += 4;
  }
  for (; i < n; ++i) h = rotl(h ^ (static_cast<uint8_t>(data[i]) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::string LlvmDebuginfodCacheName(std::span<const uint8_t> build_id, bool debuginfo) {
  std::string key = "buildid/" + ToHex(build_id) + (debuginfo ? "/debuginfo" : "/executable");
  return "llvmcache-" + std::to_string(LlvmXxh64(key));
}

std::optional<LlvmRequest> ParseLlvmRequest(std::string_view line,
                                            const std::string& default_module,
                                            std::string* written_module,
                                            std::span<const uint8_t> default_build_id) {
  LlvmRequest request;
  if (written_module) written_module->clear();
  if (line.starts_with("CODE ")) {
    line.remove_prefix(5);
  } else if (line.starts_with("DATA ")) {
    request.command = LlvmCommand::kData;
    line.remove_prefix(5);
  } else if (line.starts_with("FRAME ")) {
    request.command = LlvmCommand::kFrame;
    line.remove_prefix(6);
  }
  auto skip_delimiters = [&] {
    size_t n = line.find_first_not_of(kDelimiters);
    line.remove_prefix(n == std::string_view::npos ? line.size() : n);
  };
  auto token = [&] {
    size_t n = line.find_first_of(kDelimiters);
    std::string_view t = line.substr(0, n);
    line.remove_prefix(t.size());
    return t;
  };
  if (!default_build_id.empty()) {
    request.build_id.assign(default_build_id.begin(), default_build_id.end());
    request.module = LlvmBuildIdName(default_build_id);
    // (ModuleName stays empty for a line that does not parse, as in llvm-symbolizer.)
  } else if (default_module.empty()) {
    // LLVM 16's prefixes, right after the command (before any delimiter), each at most once.
    bool file_prefix = false, build_id_prefix = false;
    for (;;) {
      if (line.starts_with("FILE:")) {
        if (file_prefix) return std::nullopt;
        file_prefix = true;
        line.remove_prefix(5);
      } else if (line.starts_with("BUILDID:")) {
        if (build_id_prefix) return std::nullopt;
        build_id_prefix = true;
        line.remove_prefix(8);
      } else {
        break;
      }
    }
    if (file_prefix && build_id_prefix) return std::nullopt;
    skip_delimiters();
    if (!line.empty() && (line[0] == '"' || line[0] == '\'')) {
      size_t end = line.find(line[0], 1);
      if (end == std::string_view::npos) return std::nullopt;
      request.module = std::string(line.substr(1, end - 1));
      line.remove_prefix(end + 1);
    } else {
      request.module = std::string(token());
    }
    if (written_module) *written_module = request.module;
    if (build_id_prefix) {
      std::optional<std::vector<uint8_t>> id = ParseLlvmBuildId(request.module);
      if (!id) return std::nullopt;
      request.build_id = std::move(*id);
      request.module = LlvmBuildIdName(request.build_id);
      if (written_module) *written_module = request.module;
    } else {
      size_t colon = request.module.rfind(':');
      if (colon != std::string::npos &&
          IsArchName(std::string_view(request.module).substr(colon + 1)))
        request.module.resize(colon);
    }
  } else {
    request.module = default_module;
    if (written_module) *written_module = default_module;
  }
  skip_delimiters();
  if (!ParseLlvmAddress(token(), &request.address)) return std::nullopt;
  if (written_module && !default_build_id.empty()) *written_module = request.module;
  return request;
}

}  // namespace stacksym::cli
