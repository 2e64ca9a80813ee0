#include "elf/mini_debug_info.h"

#include <lzma.h>

#include <algorithm>
#include <iterator>
#include <string>

namespace stacksym::elf {

namespace {

const char* XzErrorText(lzma_ret ret) {
  switch (ret) {
    case LZMA_FORMAT_ERROR:
      return "not xz data";
    case LZMA_OPTIONS_ERROR:
      return "unsupported xz options";
    case LZMA_DATA_ERROR:
      return "corrupt xz data";
    case LZMA_BUF_ERROR:
      return "truncated xz data";
    case LZMA_MEM_ERROR:
      return "out of memory while decoding xz data";
    case LZMA_MEMLIMIT_ERROR:
      return "xz data needs more decoder memory than allowed";
    default:
      return "xz decoding failed";
  }
}

// Owns the decoder state for the one decode it is used for.
class XzDecoder {
 public:
  XzDecoder() = default;
  XzDecoder(const XzDecoder&) = delete;
  XzDecoder& operator=(const XzDecoder&) = delete;
  ~XzDecoder() { lzma_end(&stream_); }
  lzma_stream& stream() { return stream_; }

 private:
  lzma_stream stream_ = LZMA_STREAM_INIT;
};

}  // namespace

Result<std::vector<uint8_t>> DecompressXz(std::span<const uint8_t> input, size_t max_bytes) {
  static constexpr uint8_t kXzMagic[] = {0xfd, '7', 'z', 'X', 'Z', 0x00};
  if (input.size() < sizeof kXzMagic ||
      !std::equal(std::begin(kXzMagic), std::end(kXzMagic), input.begin())) {
    return Error(ErrorCode::kMalformed, "not xz data (no xz stream header)");
  }
  XzDecoder decoder;
  lzma_stream& s = decoder.stream();
  // LZMA_CONCATENATED: several streams one after the other decode as one. The check of each
  // block (CRC32/CRC64/SHA-256) is verified by default.
  lzma_ret ret = lzma_stream_decoder(&s, kMaxXzDecoderMemory, LZMA_CONCATENATED);
  if (ret != LZMA_OK) return Error(ErrorCode::kInternal, XzErrorText(ret));
  std::vector<uint8_t> out;
  // A first guess from the usual ratio of symbol tables (about 4:1), grown by doubling.
  size_t capacity = std::min(max_bytes, std::max<size_t>(4096, input.size() * 4));
  out.resize(capacity);
  s.next_in = input.data();
  s.avail_in = input.size();
  s.next_out = out.data();
  s.avail_out = out.size();
  while (true) {
    // All input is given at once: LZMA_FINISH lets the decoder tell a truncated stream.
    ret = lzma_code(&s, LZMA_FINISH);
    if (ret == LZMA_STREAM_END) break;
    if (ret != LZMA_OK && !(ret == LZMA_BUF_ERROR && s.avail_out == 0)) {
      return Error(ErrorCode::kMalformed, std::string(XzErrorText(ret)) + " at input offset " +
                                              std::to_string(input.size() - s.avail_in) + " of " +
                                              std::to_string(input.size()));
    }
    if (s.avail_out > 0) continue;
    if (out.size() >= max_bytes) {
      return Error(ErrorCode::kMalformed,
                   "xz data decodes to more than the " + std::to_string(max_bytes) + "-byte limit");
    }
    size_t used = out.size();
    out.resize(std::min(max_bytes, used * 2));
    s.next_out = out.data() + used;
    s.avail_out = out.size() - used;
  }
  out.resize(out.size() - s.avail_out);
  return out;
}

Result<std::shared_ptr<ElfFile>> OpenMiniDebugInfo(const ElfFile& binary) {
  const ElfSection* section = binary.FindSection(".gnu_debugdata");
  if (section == nullptr) return std::shared_ptr<ElfFile>();
  Result<std::span<const uint8_t>> data = binary.SectionData(*section);
  if (!data) return std::move(data).error();
  Result<std::vector<uint8_t>> image = DecompressXz(*data, kMaxMiniDebugInfoBytes);
  if (!image) return std::move(image).error().WithFile(binary.path()).WithSection(".gnu_debugdata");
  Result<std::shared_ptr<ElfFile>> inner = ElfFile::FromMapped(
      MappedFile::FromOwned(std::move(*image), binary.path() + "[.gnu_debugdata]"));
  if (!inner) return std::move(inner).error().WithSection(".gnu_debugdata");
  return inner;
}

}  // namespace stacksym::elf

namespace stacksym {

const ElfFile* ElfFile::mini_debug_info() const {
  std::call_once(mini_once_, [this] {
    Result<std::shared_ptr<ElfFile>> inner = elf::OpenMiniDebugInfo(*this);
    if (!inner) {
      mini_problem_ = std::move(inner).error();
      return;
    }
    mini_ = std::move(*inner);
    mini_ready_.store(mini_.get(), std::memory_order_release);
  });
  return mini_.get();
}

const std::optional<Error>& ElfFile::mini_debug_info_problem() const {
  (void)mini_debug_info();
  return mini_problem_;
}

}  // namespace stacksym
