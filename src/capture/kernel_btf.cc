#include "capture/kernel_btf.h"

#include <fcntl.h>
#include <sys/mman.h>
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
