#include "output/gzip.h"

#include <zlib.h>

#include <limits>

namespace stacksym::output {

bool IsGzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

Result<std::string> GzipCompress(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16 = gzip wrapper.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return MakeError(ErrorCode::kInternal, "gzip: deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&z, data.size()) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  if (data.size() > std::numeric_limits<uInt>::max()) {
    deflateEnd(&z);
    return MakeError(ErrorCode::kUnsupported, "gzip: input larger than 4 GiB");
  }
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return MakeError(ErrorCode::kInternal, "gzip: deflate failed");
  out.resize(written);
  return out;
}

Result<std::string> GzipDecompress(std::span<const uint8_t> data, size_t max_bytes) {
  z_stream z{};
  // windowBits 15 + 32 = detect gzip or zlib header.
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    return MakeError(ErrorCode::kInternal, "gzip: inflateInit2 failed");
  }
  std::string out;
  const uint8_t* next = data.data();
  size_t left = data.size();
  char buffer[64 * 1024];
  int rc = Z_OK;
  while (true) {
    if (z.avail_in == 0 && left > 0) {
      size_t chunk = std::min<size_t>(left, std::numeric_limits<uInt>::max());
      z.next_in = const_cast<Bytef*>(next);
      z.avail_in = static_cast<uInt>(chunk);
      next += chunk;
      left -= chunk;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return MakeError(ErrorCode::kUnsupported,
                       "gzip: decompressed data exceeds " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) {
      inflateEnd(&z);
      return MakeError(ErrorCode::kMalformed, "gzip: data is truncated");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string msg = z.msg ? z.msg : "inflate failed";
      inflateEnd(&z);
      return MakeError(ErrorCode::kMalformed, "gzip: " + msg);
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace stacksym::output
