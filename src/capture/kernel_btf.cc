#include "capture/kernel_btf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "profile_min_btf.h"  // generated: kBuildKernelNotes, kBuildKernelMinBtf

namespace stacksym::capture {
namespace {

// Whether the ELF notes hold a GNU build ID (NT_GNU_BUILD_ID, type 3): without one, equal
// notes would not mean the same kernel.
bool HasBuildId(std::span<const uint8_t> notes) {
  auto word = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, notes.data() + at, 4);
    return v;
  };
  auto align4 = [](uint64_t n) { return (n + 3) & ~uint64_t{3}; };
  for (size_t at = 0; at + 12 <= notes.size();) {
    uint64_t name_size = word(at), desc_size = word(at + 4), type = word(at + 8);
    uint64_t name_at = at + 12, desc_at = name_at + align4(name_size);
    uint64_t next = desc_at + align4(desc_size);
    if (next > notes.size()) return false;
    if (type == 3 && name_size == 4 && std::memcmp(notes.data() + name_at, "GNU", 4) == 0 &&
        desc_size > 0) {
      return true;
    }
    at = next;
  }
  return false;
}

std::vector<uint8_t> ReadNotes() {
  std::vector<uint8_t> notes;
  int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return notes;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && notes.size() < (1u << 16)) {
    notes.insert(notes.end(), buf, buf + n);
  }
  close(fd);
  return notes;
}

}  // namespace

bool BtfHasName(const char* path, std::string_view name) {
  struct Header {  // struct btf_header
    uint16_t magic;
    uint8_t version, flags;
    uint32_t hdr_len, type_off, type_len, str_off, str_len;
  } h;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (pread(fd, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h)) || h.magic != 0xEB9F ||
      h.str_len > (64u << 20)) {
    close(fd);
    return false;
  }
  // Each string ends in a NUL and the first one is empty: a whole name is "\0name\0".
  std::string whole = '\0' + std::string(name) + '\0';
  size_t strings_at = size_t{h.hdr_len} + h.str_off;
  size_t end = strings_at + h.str_len;
  // A regular file shorter than its header says would fault where mapped past its end (sysfs
  // files report their size too).
  struct stat st;
  if (fstat(fd, &st) != 0 || (st.st_size > 0 && end > static_cast<size_t>(st.st_size))) {
    close(fd);
    return false;
  }
  bool found = false;
  // Mapped (Linux 6.16+): its pages are the kernel's, no copy (0.1 ms); else read a page at a
  // time, as sysfs hands them out (2 ms).
  if (void* map = mmap(nullptr, end, PROT_READ, MAP_PRIVATE, fd, 0); map != MAP_FAILED) {
    std::string_view strings(static_cast<const char*>(map) + strings_at, h.str_len);
    found = strings.find(whole) != std::string_view::npos;
    munmap(map, end);
  } else {
    std::vector<char> strings(h.str_len);
    size_t got = 0;
    while (got < h.str_len) {
      ssize_t n =
          pread(fd, strings.data() + got, h.str_len - got, static_cast<off_t>(strings_at + got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    found = got == h.str_len &&
            std::string_view(strings.data(), got).find(whole) != std::string_view::npos;
  }
  close(fd);
  return found;
}

std::span<const uint8_t> BuildKernelTypesFor(std::span<const uint8_t> notes) {
#if STACKSYM_MIN_BTF
  if (notes.size() == sizeof(kBuildKernelNotes) &&
      std::memcmp(notes.data(), kBuildKernelNotes, notes.size()) == 0 && HasBuildId(notes)) {
    return kBuildKernelMinBtf;
  }
#else
  (void)notes;
  (void)HasBuildId;
#endif
  return {};
}

KernelTypesFile::KernelTypesFile() {
  std::vector<uint8_t> notes = ReadNotes();
  std::span<const uint8_t> types = BuildKernelTypesFor(notes);
  if (types.empty()) return;
  fd_ = memfd_create("stacksym_kernel_types", MFD_CLOEXEC);
  if (fd_ < 0) return;
  if (write(fd_, types.data(), types.size()) != static_cast<ssize_t>(types.size())) {
    close(fd_);
    fd_ = -1;
    return;
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
  bytes_ = types.size();
}

KernelTypesFile::~KernelTypesFile() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace stacksym::capture
