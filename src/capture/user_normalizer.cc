#include "capture/user_normalizer.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <set>
#include <utility>

#include "normalize/vma_sources.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"

namespace stacksym {

struct UserStackNormalizer::Impl {
  Normalizer normalizer{[] {
    NormalizerOptions o;
    o.build_ids = true;
    o.cache_vmas = true;  // per-process VMA cache: repeated stacks cost no /proc reads
    o.vma_cache_processes = 256;
    o.past_addresses = true;  // samples are read after they were taken
    return o;
  }()};
  // (pid, build ID) → module found by scanning the process's mappings (or nullopt).
  std::map<std::pair<pid_t, std::vector<uint8_t>>, std::optional<UserModule>> by_build_id;
};

UserStackNormalizer::UserStackNormalizer() : impl_(std::make_unique<Impl>()) {}
UserStackNormalizer::~UserStackNormalizer() = default;

static UserModuleKind ToUserKind(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::kElf:
      return UserModuleKind::kElf;
    case ModuleKind::kVdso:
      return UserModuleKind::kVdso;
    case ModuleKind::kAnonymous:
      return UserModuleKind::kAnonymous;
    default:
      return UserModuleKind::kUnknown;
  }
}

void UserStackNormalizer::Normalize(pid_t pid, std::span<const uint64_t> addrs,
                                    std::vector<UserFrame>* frames,
                                    std::vector<UserModule>* modules) {
  frames->assign(addrs.size(), UserFrame{});
  modules->clear();
  if (addrs.empty()) return;
  Result<NormalizedBatch> batch = impl_->normalizer.Normalize(pid, addrs);
  if (!batch) {
    for (UserFrame& f : *frames) f.reason = Reason::kInvalidAddress;
    return;
  }
  modules->reserve(batch->modules.size());
  for (NormalizedModule& m : batch->modules) {
    UserModule u;
    u.kind = ToUserKind(m.kind);
    u.path = std::move(m.path);
    u.build_id = std::move(m.build_id);
    u.deleted = m.deleted;
    u.map_start = m.map_start;
    u.map_end = m.map_end;
    modules->push_back(std::move(u));
  }
  for (size_t i = 0; i < addrs.size() && i < batch->addresses.size(); ++i) {
    const NormalizedAddress& a = batch->addresses[i];
    UserFrame& f = (*frames)[i];
    f.ok = a.ok();
    f.reason = a.reason;
    f.module = a.module;
    f.file_offset = a.file_offset;
  }
}

std::optional<UserModule> UserStackNormalizer::FindModuleByBuildId(
    pid_t pid, std::span<const uint8_t> build_id) {
  auto key = std::make_pair(pid, std::vector<uint8_t>(build_id.begin(), build_id.end()));
  if (auto it = impl_->by_build_id.find(key); it != impl_->by_build_id.end()) return it->second;
  std::optional<UserModule> found;
  VmaSourceOptions vopts;
  vopts.executable_only = true;
  Result<std::unique_ptr<VmaSource>> source = OpenVmaSource(pid, VmaSourceKind::kAuto, vopts);
  if (source) {
    std::set<std::pair<uint64_t, uint64_t>> checked;  // (dev, inode)
    uint64_t addr = 0;
    Vma vma;
    while (!found) {
      Result<bool> r = (*source)->FindCoveringOrNext(addr, &vma);
      if (!r || !*r) break;
      addr = vma.end;
      if (!vma.file_backed() || !checked.insert({vma.dev, vma.inode}).second) continue;
      int fd = open(MapFilesPath(pid, vma.start, vma.end).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) fd = open(ProcRootPath(pid, vma.name).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      Result<std::vector<uint8_t>> id = ReadBuildIdFromFd(fd);
      close(fd);
      if (id && *id == key.second) {
        UserModule m;
        m.kind = UserModuleKind::kElf;
        m.path = std::string(vma.name);
        m.build_id = key.second;
        m.deleted = vma.deleted;
        m.map_start = vma.start;
        m.map_end = vma.end;
        found = std::move(m);
      }
      if (addr == 0) break;  // wrapped
    }
  }
  impl_->by_build_id.emplace(std::move(key), found);
  return found;
}

void UserStackNormalizer::RevalidateAll() { impl_->normalizer.RevalidateAll(); }
void UserStackNormalizer::Forget(pid_t pid) { impl_->normalizer.Invalidate(pid); }

std::string UserStackNormalizer::MapFilesPath(pid_t pid, uint64_t start, uint64_t end) {
  return stacksym::MapFilesPath(pid, start, end);
}

}  // namespace stacksym
