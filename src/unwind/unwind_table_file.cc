// Writer and checked reader of the persisted unwind table (docs/unwind-table-format.md), and
// the cache directory's listing and `cache build` of unwind tables.
#include "unwind/unwind_table_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "cache/cache_dir.h"
#include "cache/checksum.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::unwind {
namespace {

using cache::Crc32c;

// The fixed header; every field little-endian (x86_64 only, as the rows themselves).
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t file_size;
  uint64_t base_pc;
  uint64_t end_pc;
  uint32_t row_count;
  uint32_t meta_size;
  uint32_t meta_crc;
  uint32_t rows_crc;
  uint32_t header_crc;  // of bytes [0, offsetof(header_crc))
  uint32_t reserved;    // 0
};
static_assert(sizeof(Header) == kHeaderSize);
static_assert(offsetof(UnwindRow, pc) == 0 && offsetof(UnwindRow, cfa_rule) == 4 &&
              offsetof(UnwindRow, ra_rule) == 5 && offsetof(UnwindRow, rbp_rule) == 6 &&
              offsetof(UnwindRow, flags) == 7 && offsetof(UnwindRow, cfa_offset) == 8 &&
              offsetof(UnwindRow, ra_offset) == 12 && offsetof(UnwindRow, rbp_offset) == 14);

constexpr size_t kMaxBuildId = 255;
constexpr uint32_t kMaxText = 1u << 20;  // each string of the meta section

uint64_t RowsOffset(uint64_t meta_size) { return (kHeaderSize + meta_size + 15) & ~uint64_t{15}; }

uint32_t HeaderCrc(const Header& h) {
  return Crc32c({reinterpret_cast<const uint8_t*>(&h), offsetof(Header, header_crc)});
}

void PutU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutText(std::vector<uint8_t>& out, const std::string& s) {
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(s.size(), kMaxText));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), s.begin(), s.begin() + n);
}

// Reads the meta section; false when it is malformed.
class MetaReader {
 public:
  explicit MetaReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool U8(uint8_t* v) {
    if (bytes_.size() < 1) return false;
    *v = bytes_[0];
    bytes_ = bytes_.subspan(1);
    return true;
  }
  bool U64(uint64_t* v) {
    if (bytes_.size() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= uint64_t{bytes_[i]} << (8 * i);
    bytes_ = bytes_.subspan(8);
    return true;
  }
  bool Bytes(size_t n, std::span<const uint8_t>* out) {
    if (bytes_.size() < n) return false;
    *out = bytes_.first(n);
    bytes_ = bytes_.subspan(n);
    return true;
  }
  bool Text(std::string* s) {
    std::span<const uint8_t> len;
    if (!Bytes(4, &len)) return false;
    uint32_t n =
        uint32_t{len[0]} | uint32_t{len[1]} << 8 | uint32_t{len[2]} << 16 | uint32_t{len[3]} << 24;
    std::span<const uint8_t> text;
    if (n > kMaxText || !Bytes(n, &text)) return false;
    s->assign(text.begin(), text.end());
    return true;
  }
  bool done() const { return bytes_.empty(); }

 private:
  std::span<const uint8_t> bytes_;
};

Error Malformed(const std::string& what) {
  return MakeError(ErrorCode::kMalformed, "unwind table file: " + what);
}

std::string NoidLine(const ElfFile& elf) {
  const FileIdentity& f = elf.identity();
  return "noid " + std::to_string(f.dev) + " " + std::to_string(f.inode) + " " +
         std::to_string(f.size) + " " + std::to_string(f.mtime_ns);
}

std::string IdentityValue(const std::string& identity, std::string_view key) {
  size_t pos = 0;
  while (pos < identity.size()) {
    size_t end = identity.find('\n', pos);
    if (end == std::string::npos) end = identity.size();
    std::string_view line(identity.data() + pos, end - pos);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') {
      return std::string(line.substr(key.size() + 1));
    }
    pos = end + 1;
  }
  return {};
}

Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // No file to judge (missing, or the directory itself unusable: storing says so).
    return Error(ErrorCode::kNotFound, std::string("open: ") + std::strerror(errno)).WithFile(path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, "fstat " + path);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoError(err, "read " + path);
    }
    if (n == 0) break;  // shrank under us: the size check in Parse reports it
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace

std::string FileName(const ElfFile& elf) {
  std::string id = elf.build_id_hex();
  if (id.empty()) {
    // By file identity, not path (as the symbol index): one file for every
    // /proc/PID/map_files path of the same library.
    id = cache::NoBuildIdName(NoidLine(elf));
  }
  return id + "-v" + std::to_string(kVersion) + cache::kUnwindTableSuffix;
}

std::string IdentityOf(const ElfFile& elf) {
  std::string identity = "binary " + elf.path() + "\n";
  if (elf.build_id().empty()) identity += NoidLine(elf) + "\n";
  return identity;
}

std::vector<uint8_t> Serialize(const UnwindTable& table, const std::string& identity) {
  std::vector<uint8_t> meta;
  std::span<const uint8_t> id = table.build_id();
  if (id.size() > kMaxBuildId) id = id.first(kMaxBuildId);
  meta.push_back(static_cast<uint8_t>(id.size()));
  meta.insert(meta.end(), id.begin(), id.end());
  const UnwindTableStats& s = table.stats();
  for (uint64_t v : {s.cies, s.fdes, s.fdes_skipped, s.unsupported_rows, s.fdes_overlapping,
                     s.fdes_outside_code, s.eh_frame_hdr_fdes, s.go_functions}) {
    PutU64(meta, v);
  }
  PutText(meta, s.first_problem);
  PutText(meta, s.eh_frame_hdr_problem);
  PutText(meta, identity);

  std::span<const UnwindRow> rows = table.rows();
  const uint64_t rows_offset = RowsOffset(meta.size());
  std::vector<uint8_t> out(rows_offset + rows.size_bytes(), 0);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.header_size = kHeaderSize;
  h.file_size = out.size();
  h.base_pc = table.base_pc();
  h.end_pc = table.end_pc();
  h.row_count = static_cast<uint32_t>(rows.size());
  h.meta_size = static_cast<uint32_t>(meta.size());
  h.meta_crc = Crc32c(meta);
  if (!rows.empty()) std::memcpy(out.data() + rows_offset, rows.data(), rows.size_bytes());
  h.rows_crc = Crc32c({out.data() + rows_offset, rows.size_bytes()});
  h.header_crc = HeaderCrc(h);
  std::memcpy(out.data(), &h, sizeof(h));
  std::memcpy(out.data() + kHeaderSize, meta.data(), meta.size());
  return out;
}

Result<Loaded> Parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) return Malformed("truncated header");
  Header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return Malformed("bad magic");
  if (h.version != kVersion) {
    return MakeError(ErrorCode::kUnsupported, "unwind table file: version " +
                                                  std::to_string(h.version) + ", expected " +
                                                  std::to_string(kVersion));
  }
  if (h.header_size != kHeaderSize || h.reserved != 0) return Malformed("bad header size");
  if (HeaderCrc(h) != h.header_crc) return Malformed("header checksum mismatch");
  const uint64_t rows_offset = RowsOffset(h.meta_size);
  const uint64_t rows_bytes = uint64_t{h.row_count} * sizeof(UnwindRow);
  if (h.file_size != bytes.size()) {
    return Malformed("file is " + std::to_string(bytes.size()) + " bytes, header says " +
                     std::to_string(h.file_size));
  }
  if (rows_offset + rows_bytes != h.file_size) return Malformed("section sizes disagree");
  std::span<const uint8_t> meta_bytes = bytes.subspan(kHeaderSize, h.meta_size);
  if (Crc32c(meta_bytes) != h.meta_crc) return Malformed("meta checksum mismatch");
  for (uint64_t i = kHeaderSize + h.meta_size; i < rows_offset; ++i) {
    if (bytes[i] != 0) return Malformed("padding is not zero");
  }
  std::span<const uint8_t> row_bytes = bytes.subspan(rows_offset, rows_bytes);
  if (Crc32c(row_bytes) != h.rows_crc) return Malformed("rows checksum mismatch");

  MetaReader meta(meta_bytes);
  uint8_t id_size = 0;
  std::span<const uint8_t> id;
  UnwindTableStats stats;
  Loaded loaded;
  bool ok = meta.U8(&id_size) && meta.Bytes(id_size, &id);
  for (uint64_t* v : {&stats.cies, &stats.fdes, &stats.fdes_skipped, &stats.unsupported_rows,
                      &stats.fdes_overlapping, &stats.fdes_outside_code, &stats.eh_frame_hdr_fdes,
                      &stats.go_functions}) {
    ok = ok && meta.U64(v);
  }
  ok = ok && meta.Text(&stats.first_problem) && meta.Text(&stats.eh_frame_hdr_problem) &&
       meta.Text(&loaded.identity) && meta.done();
  if (!ok) return Malformed("bad meta section");

  // The rows' invariants, as UnwindTable::Build makes them and Find() and the unwinders
  // assume them.
  if (h.end_pc < h.base_pc || h.end_pc - h.base_pc > uint64_t{UINT32_MAX} + 1) {
    return Malformed("bad pc range");
  }
  if (h.row_count == 0 && h.end_pc != h.base_pc) return Malformed("pc range without rows");
  std::vector<UnwindRow> rows(h.row_count);
  if (rows_bytes > 0) std::memcpy(rows.data(), row_bytes.data(), rows_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    const UnwindRow& r = rows[i];
    if (i > 0 && r.pc <= rows[i - 1].pc) return Malformed("rows out of order");
    if (uint64_t{r.pc} >= h.end_pc - h.base_pc) return Malformed("row past the table's end");
    if (static_cast<uint8_t>(r.cfa_rule) > static_cast<uint8_t>(CfaRule::kPlt) ||
        static_cast<uint8_t>(r.ra_rule) > static_cast<uint8_t>(RegRule::kUnsupported) ||
        static_cast<uint8_t>(r.rbp_rule) > static_cast<uint8_t>(RegRule::kUnsupported) ||
        (r.flags & ~(kUnwindRowSignalFrame | kUnwindRowUnsupportedCfa)) != 0) {
      return Malformed("row " + std::to_string(i) + " has an unknown rule");
    }
  }
  loaded.table =
      std::make_shared<const UnwindTable>(h.base_pc, h.end_pc, std::move(rows), std::move(stats),
                                          std::vector<uint8_t>(id.begin(), id.end()));
  return loaded;
}

Result<std::shared_ptr<const UnwindTable>> Load(const std::string& path, const ElfFile& elf) {
  auto bytes = ReadFile(path);
  if (!bytes) return std::move(bytes).error();
  auto loaded = Parse(*bytes);
  if (!loaded) return std::move(loaded).error().WithFile(path);
  std::span<const uint8_t> want = elf.build_id();
  std::span<const uint8_t> have = loaded->table->build_id();
  if (!std::equal(want.begin(), want.end(), have.begin(), have.end())) {
    return Error(ErrorCode::kInvalidArgument, "unwind table file is of another build ID")
        .WithFile(path);
  }
  if (want.empty() && IdentityValue(loaded->identity, "noid") != NoidLine(elf).substr(5)) {
    return Error(ErrorCode::kInvalidArgument, "unwind table file is of another file")
        .WithFile(path);
  }
  return std::move(loaded->table);
}

}  // namespace stacksym::unwind

namespace stacksym {
namespace {

SymbolCacheEntry DescribeUnwindFile(const std::string& path) {
  SymbolCacheEntry e;
  e.kind = "unwind";
  e.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    e.bytes = static_cast<uint64_t>(st.st_size);
    e.used_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  auto bytes = unwind::ReadFile(path);
  if (!bytes) {
    e.problem = bytes.error().ToString();
    return e;
  }
  auto loaded = unwind::Parse(*bytes);
  if (!loaded) {
    e.problem = loaded.error().ToString();
    return e;
  }
  e.build_id = ToHex(loaded->table->build_id());
  e.binary = unwind::IdentityValue(loaded->identity, "binary");
  e.sections = {{"header", unwind::kHeaderSize}, {"rows", loaded->table->rows().size_bytes()}};
  return e;
}

}  // namespace

Result<std::vector<SymbolCacheEntry>> ListUnwindTableCache(const std::string& dir) {
  auto files = cache::ListFiles(dir, {cache::kUnwindTableSuffix});  // sorted by path
  if (!files) return std::move(files).error();
  std::vector<SymbolCacheEntry> out;
  for (const cache::DirFile& f : *files) {
    if (!f.temporary) out.push_back(DescribeUnwindFile(f.path));
  }
  return out;
}

Result<SymbolCacheEntry> BuildUnwindTableFile(const std::string& path, const std::string& dir,
                                              uint64_t max_bytes) {
  if (dir.empty()) return Error(ErrorCode::kInvalidArgument, "no cache directory");
  auto elf = ElfFile::Open(path);
  if (!elf) return std::move(elf).error();
  if (Result<void> r = cache::CheckWritable(dir); !r) return std::move(r).error();
  UnwindTableCache cache({.dir = dir, .dir_max_bytes = max_bytes});
  std::shared_ptr<const UnwindTable> table = cache.Get(**elf);
  std::string file = dir + "/" + unwind::FileName(**elf);
  if (cache.dir_stores() == 0 && cache.dir_loads() == 0) {
    return Error(ErrorCode::kIo, "could not store the unwind table of " + path);
  }
  return DescribeUnwindFile(file);
}

}  // namespace stacksym
