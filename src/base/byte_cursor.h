// ByteCursor — the one bounds-checked reader every parser uses (ELF, DWARF, /proc text).
//
// Zero-copy over a byte span. Reads past the end do not throw or crash: they return 0 / an
// empty view and set a sticky failure flag, so a parser reads a whole record and checks
// `ok()` once. Multi-byte integers are little-endian (big-endian files are rejected earlier).
//
//   ByteCursor c(bytes);
//   uint32_t len = c.U32();
//   uint64_t n = c.Uleb128();
//   std::string_view name = c.CStr();
//   if (!c.ok()) return MalformedError(...);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace stacksym {

class ByteCursor {
 public:
  ByteCursor() = default;
  ByteCursor(const uint8_t* data, size_t size) : begin_(data), pos_(data), end_(data + size) {}
  explicit ByteCursor(std::span<const uint8_t> bytes) : ByteCursor(bytes.data(), bytes.size()) {}

  bool ok() const { return ok_; }
  bool failed() const { return !ok_; }
  bool at_end() const { return pos_ >= end_; }
  size_t offset() const { return static_cast<size_t>(pos_ - begin_); }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  const uint8_t* position() const { return pos_; }
  std::span<const uint8_t> whole() const { return {begin_, size()}; }

  void Fail() {
    ok_ = false;
    pos_ = end_;
  }
  // Moves to an absolute offset; an offset past the end fails the cursor.
  void Seek(size_t offset) {
    if (offset > size()) return Fail();
    pos_ = begin_ + offset;
  }
  void Skip(size_t n) {
    if (n > remaining()) return Fail();
    pos_ += n;
  }

  uint8_t U8() {
    if (pos_ >= end_) return Fail(), 0;
    return *pos_++;
  }
  uint16_t U16() { return static_cast<uint16_t>(Fixed<2>()); }
  uint32_t U24() { return static_cast<uint32_t>(Fixed<3>()); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed<4>()); }
  uint64_t U64() { return Fixed<8>(); }
  int8_t S8() { return static_cast<int8_t>(U8()); }
  int16_t S16() { return static_cast<int16_t>(U16()); }
  int32_t S32() { return static_cast<int32_t>(U32()); }
  int64_t S64() { return static_cast<int64_t>(U64()); }

  // An unsigned little-endian integer of 1..8 bytes (DWARF's address and offset sizes).
  uint64_t UN(size_t n) {
    switch (n) {
      case 1:
        return U8();
      case 2:
        return U16();
      case 3:
        return U24();
      case 4:
        return U32();
      case 8:
        return U64();
      default:
        if (n == 0 || n > 8 || n > remaining()) return Fail(), 0;
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(pos_[i]) << (8 * i);
        pos_ += n;
        return v;
    }
  }

  // LEB128 longer than 10 bytes, or with bits beyond 64, fails the cursor ("absurd LEB128").
  uint64_t Uleb128() {
    uint64_t result = 0;
    unsigned shift = 0;
    while (true) {
      if (pos_ >= end_) return Fail(), 0;
      uint8_t byte = *pos_++;
      if (shift == 63 && (byte & 0x7e) != 0) return Fail(), 0;
      if (shift > 63) return Fail(), 0;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return result;
      shift += 7;
    }
  }
  int64_t Sleb128() {
    uint64_t result = 0;
    unsigned shift = 0;
    uint8_t byte = 0;
    do {
      if (pos_ >= end_ || shift > 63) return Fail(), 0;
      byte = *pos_++;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) result |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(result);
  }
  void SkipLeb128() {
    while (true) {
      if (pos_ >= end_) return Fail();
      if ((*pos_++ & 0x80) == 0) return;
    }
  }

  // A NUL-terminated string; a missing terminator fails the cursor.
  std::string_view CStr() {
    // (An empty cursor may have no bytes at all: memchr must not see its null pointer.)
    if (remaining() == 0) return Fail(), std::string_view();
    const void* nul = std::memchr(pos_, 0, remaining());
    if (nul == nullptr) return Fail(), std::string_view();
    const char* start = reinterpret_cast<const char*>(pos_);
    size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nul) - pos_);
    pos_ += len + 1;
    return {start, len};
  }

  std::span<const uint8_t> Bytes(size_t n) {
    if (n > remaining()) return Fail(), std::span<const uint8_t>();
    std::span<const uint8_t> out(pos_, n);
    pos_ += n;
    return out;
  }
  // A cursor over the next n bytes; this cursor moves past them.
  ByteCursor Sub(size_t n) {
    if (n > remaining()) {
      Fail();
      ByteCursor bad;
      bad.ok_ = false;
      return bad;
    }
    ByteCursor sub(pos_, n);
    pos_ += n;
    return sub;
  }

 private:
  template <size_t N>
  uint64_t Fixed() {
    if (remaining() < N) return Fail(), 0;
    uint64_t v = 0;
    std::memcpy(&v, pos_, N);  // little-endian host (x86_64, aarch64)
    pos_ += N;
    return v;
  }

  const uint8_t* begin_ = nullptr;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool ok_ = true;
};

// A NUL-terminated string at `offset` inside a string table, or nullopt-like empty+false.
inline bool StringAt(std::span<const uint8_t> table, uint64_t offset, std::string_view* out) {
  if (offset >= table.size()) return false;
  const uint8_t* start = table.data() + offset;
  const void* nul = std::memchr(start, 0, table.size() - offset);
  if (nul == nullptr) return false;
  *out = std::string_view(reinterpret_cast<const char*>(start),
                          static_cast<size_t>(static_cast<const uint8_t*>(nul) - start));
  return true;
}

}  // namespace stacksym
