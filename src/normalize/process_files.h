// The files a process maps, opened the one way every user opens them (the normalizer reading
// build IDs, the recorder keeping files and loading unwind tables, process symbolization): by
// /proc/PID/map_files/START-END (the very file mapped, even deleted, replaced or in another
// mount namespace), then /proc/PID/root/PATH (its own mount namespace), then PATH (the last
// resort once the process has exited); a path is taken only when it is the mapped inode. An
// ELF file's build ID is checked against the module's; the vDSO is read from process memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "stacksym/elf.h"
#include "stacksym/mapped_file.h"
#include "stacksym/module.h"
#include "stacksym/normalize.h"
#include "stacksym/result.h"

namespace stacksym::normalize {

// Where a process maps a file: one of its VMAs, and the path and inode it maps.
struct MappingRef {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string_view path;  // as the process sees it ("" for none)
  uint64_t inode = 0;     // 0: unknown (then any file at the path is taken)
  bool deleted = false;   // the path names another file now (or none)
};
MappingRef MappingOf(const Module& module);

struct MappedFileRef {
  std::string path;  // one of the paths above
  FileIdentity identity;
};

// The first path that reaches the mapped file, with the identity stat() gives it (the key of
// caches of parsed files). Errors: kNotFound when none does (process gone and the file too,
// or replaced), kPermission when map_files and the process's root are closed to us.
Result<MappedFileRef> FindMappedFile(pid_t pid, const MappingRef& mapping);

// The module's file as an ElfFile: the file FindMappedFile finds (or `found`, when the caller
// looked it up already), its build ID checked against module.build_id when that is known; for
// the vDSO, its image read from the process's memory, or this process's own once the process
// has gone (every process of a kernel maps the same image).
Result<std::shared_ptr<ElfFile>> OpenMappedFile(pid_t pid, const Module& module,
                                                const MappedFileRef* found = nullptr);

// ReadVdsoImage (the vDSO read from process memory) is public: stacksym/normalize.h.
// This process's own vDSO image (null if the kernel maps none).
std::shared_ptr<ElfFile> OpenOwnVdso();

}  // namespace stacksym::normalize
