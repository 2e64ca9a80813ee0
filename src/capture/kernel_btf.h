// Where the BPF program's CO-RE relocations find the kernel's types. libbpf reads the whole
// kernel BTF for them (/sys/kernel/btf/vmlinux, 5 MB: about 10 ms of a 25 ms start); the
// build cuts out the few types the program uses (src/capture/bpf/min_btf.sh), and on the
// kernel it was cut from — the same build ID — libbpf reads that cut instead.
//
//   KernelTypesFile types;
//   open_opts.btf_custom_path = types.path();  // nullptr: libbpf reads the kernel's BTF
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace stacksym::capture {

// The cut of the build machine's kernel BTF when `notes` (a kernel's /sys/kernel/notes) are
// byte for byte that kernel's and hold a GNU build ID; else empty.
std::span<const uint8_t> BuildKernelTypesFor(std::span<const uint8_t> notes);

// Whether the BTF file at `path` (the kernel's: /sys/kernel/btf/vmlinux) has a type or member
// named `name`: its string section holds the name whole. Reads the header and strings only
// (about 2 of its 5 MB, well under a millisecond), not the types, which libbpf would parse.
bool BtfHasName(const char* path, std::string_view name);

// This kernel's cut in a memory file that libbpf can open by path, or none.
class KernelTypesFile {
 public:
  KernelTypesFile();
  ~KernelTypesFile();
  KernelTypesFile(const KernelTypesFile&) = delete;
  KernelTypesFile& operator=(const KernelTypesFile&) = delete;

  const char* path() const { return fd_ >= 0 ? path_.c_str() : nullptr; }
  size_t bytes() const { return bytes_; }

 private:
  int fd_ = -1;
  std::string path_;
  size_t bytes_ = 0;
};

}  // namespace stacksym::capture
