#include "normalize/process_files.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "normalize/vma_sources.h"

namespace stacksym::normalize {
namespace {

// A vDSO is one or two pages; anything much larger is not a vDSO image.
constexpr uint64_t kMaxVdsoBytes = uint64_t{16} << 20;

// Reads [start, start + size) of a process's memory through /proc/PID/mem.
Result<std::vector<uint8_t>> ReadProcessMemory(pid_t pid, uint64_t start, uint64_t size) {
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open").WithFile(path);
  std::vector<uint8_t> bytes(size);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ESRCH;  // a read of 0 bytes: the address space is gone
      ::close(fd);
      return ErrnoError(err == EIO ? ESRCH : err, "cannot read process memory").WithFile(path);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace

MappingRef MappingOf(const Module& module) {
  return {module.map_start, module.map_end, module.path, module.inode, module.deleted};
}

Result<MappedFileRef> FindMappedFile(pid_t pid, const MappingRef& mapping) {
  std::string paths[3];
  int count = 0;
  if (mapping.end > mapping.start) paths[count++] = MapFilesPath(pid, mapping.start, mapping.end);
  bool named = !mapping.deleted && !mapping.path.empty() && mapping.path.front() == '/';
  if (named) {
    paths[count++] = ProcRootPath(pid, mapping.path);
    paths[count++] = std::string(mapping.path);
  }
  int last_errno = ENOENT;
  for (int i = 0; i < count; ++i) {
    struct stat st;
    if (::stat(paths[i].c_str(), &st) != 0) {
      if (errno == EACCES || errno == EPERM || last_errno == ENOENT) last_errno = errno;
      continue;
    }
    // map_files is the mapped file itself; a path may name another file by now.
    bool is_map_files = i == 0 && mapping.end > mapping.start;
    if (!is_map_files && mapping.inode != 0 && st.st_ino != mapping.inode) continue;
    return MappedFileRef{paths[i], FileIdentityOf(st)};
  }
  return ErrnoError(last_errno, "the mapped file cannot be reached")
      .WithFile(mapping.path.empty() ? paths[0] : std::string(mapping.path));
}

Result<std::shared_ptr<ElfFile>> OpenMappedFile(pid_t pid, const Module& module,
                                                const MappedFileRef* found) {
  if (module.kind == ModuleKind::kVdso) {
    Result<std::shared_ptr<ElfFile>> image = ReadVdsoImage(pid, module.map_start, module.map_end);
    if (image) return image;
    std::shared_ptr<ElfFile> own = OpenOwnVdso();
    if (own == nullptr) return image;
    return own;
  }
  if (module.kind != ModuleKind::kElf) {
    return Error(ErrorCode::kInvalidArgument,
                 std::string("not a file: a ") + ModuleKindName(module.kind) + " module");
  }
  MappedFileRef where;
  if (found == nullptr) {
    Result<MappedFileRef> located = FindMappedFile(pid, MappingOf(module));
    if (!located) return std::move(located).error();
    where = std::move(*located);
    found = &where;
  }
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(found->path);
  if (!elf) return elf;
  std::span<const uint8_t> id = (*elf)->build_id();
  if (!module.build_id.empty() &&
      !std::equal(id.begin(), id.end(), module.build_id.begin(), module.build_id.end())) {
    return Error(ErrorCode::kNotFound,
                 "has build ID " + (*elf)->build_id_hex() + ", another file than the one mapped")
        .WithFile(found->path);
  }
  return elf;
}

std::shared_ptr<ElfFile> OpenOwnVdso() {
  auto base = reinterpret_cast<const uint8_t*>(getauxval(AT_SYSINFO_EHDR));
  if (base == nullptr) return nullptr;
  // The image ends with its section headers: e_shoff + e_shnum * e_shentsize (ELF64).
  uint64_t shoff;
  uint16_t shentsize, shnum;
  std::memcpy(&shoff, base + 0x28, 8);
  std::memcpy(&shentsize, base + 0x3a, 2);
  std::memcpy(&shnum, base + 0x3c, 2);
  uint64_t size = shoff + uint64_t{shentsize} * shnum;
  if (size == 0 || size > (1u << 20)) return nullptr;
  auto elf = ElfFile::FromBytes(std::span<const uint8_t>(base, size), "[vdso]");
  return elf ? *elf : nullptr;
}

}  // namespace stacksym::normalize

namespace stacksym {

// normalize.h's.
Result<std::shared_ptr<ElfFile>> ReadVdsoImage(pid_t pid, uint64_t vma_start, uint64_t vma_end) {
  if (vma_end <= vma_start || vma_end - vma_start > normalize::kMaxVdsoBytes) {
    return Error(ErrorCode::kInvalidArgument, "implausible vDSO range");
  }
  Result<std::vector<uint8_t>> bytes =
      normalize::ReadProcessMemory(pid, vma_start, vma_end - vma_start);
  if (!bytes) return std::move(bytes).error();
  return ElfFile::FromBytes(*bytes, "[vdso]");
}

}  // namespace stacksym
