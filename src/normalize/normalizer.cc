// Normalizer: the sorted VMA walk plus module resolution and the caches (range, same-file,
// negative, per-process VMAs, build IDs by file identity).
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include "base/flat_table.h"
#include "normalize/build_id_cache.h"
#include "normalize/process_files.h"
#include "normalize/vma_sources.h"
#include "normalize/vma_walk.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"

namespace stacksym {
namespace {

// What a batch says about one module, shared with the VMA cache so that a cache hit needs no
// build-ID work at all.
struct ModuleInfo {
  ModuleKind kind = ModuleKind::kUnknown;
  std::string path;
  bool deleted = false;
  uint64_t dev = 0;
  uint64_t inode = 0;
  std::vector<uint8_t> build_id;
  std::optional<Reason> build_id_reason;
  bool transient_failure = false;  // build ID unreadable for now: do not remember the VMA
};

struct CachedVma {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  uint64_t inode = 0;
  std::shared_ptr<const ModuleInfo> module;
  uint32_t epoch = 0;  // answers without a lookup only while it equals Impl::epoch
};

// The remembered VMA that covers `addr` in a sorted, disjoint list, or nullptr.
CachedVma* CoveringVma(std::vector<CachedVma>& vmas, uint64_t addr) {
  auto it = std::partition_point(vmas.begin(), vmas.end(),
                                 [addr](const CachedVma& c) { return c.end <= addr; });
  return it != vmas.end() && it->start <= addr ? &*it : nullptr;
}

// Whether a remembered VMA is still the kernel's (same range, offset and file).
bool SameVma(const CachedVma& c, const normalize::Vma& v) {
  return c.start == v.start && c.end == v.end && c.offset == v.offset && c.inode == v.inode;
}

constexpr size_t kMaxRememberedVmas = 16384;  // per process: 16384 × 48 B = 768 KiB

struct ProcessCache {
  std::unique_ptr<normalize::VmaSource> source;  // kept open across calls
  std::vector<CachedVma> vmas;                   // sorted by start, disjoint
  uint64_t last_used = 0;
  // past_addresses: the process is gone; its VMAs answer until the second revalidation.
  bool gone = false;
  uint32_t gone_epoch = 0;
  uint32_t snapshot_epoch = 0;  // past_addresses: epoch of the last whole-process snapshot
};

ModuleKind KindOf(const normalize::Vma& vma) {
  if (vma.file_backed()) return ModuleKind::kElf;
  std::string_view n = vma.name;
  if (n == "[vdso]") return ModuleKind::kVdso;
  if (n.empty() || n == "[heap]" || n.starts_with("[stack") || n.starts_with("[anon:") ||
      n.starts_with("[anon_shmem:")) {
    return ModuleKind::kAnonymous;
  }
  return ModuleKind::kUnknown;
}

uint64_t OffsetIn(ModuleKind kind, uint64_t addr, uint64_t vma_start, uint64_t vma_offset) {
  return kind == ModuleKind::kElf ? addr - vma_start + vma_offset : addr - vma_start;
}

// What makes VMAs one module within a call: the file (dev, inode) for file-backed ones, the
// name for the others ("[heap]", "[anon:NAME]", "" for unnamed anonymous memory).
struct ModuleKey {
  bool file = false;
  uint64_t dev = 0;
  uint64_t inode = 0;
  std::string_view name;

  static ModuleKey Of(const normalize::Vma& vma) {
    return vma.file_backed() ? ModuleKey{true, vma.dev, vma.inode, {}}
                             : ModuleKey{.name = vma.name};
  }
  static ModuleKey Of(const ModuleInfo& m) {
    return m.kind == ModuleKind::kElf ? ModuleKey{true, m.dev, m.inode, {}}
                                      : ModuleKey{.name = m.path};
  }
  uint64_t Hash() const { return file ? MixHash(inode ^ std::rotl(dev, 32)) : HashBytes(name); }
  bool Matches(const ModuleInfo& m) const {
    return file ? m.kind == ModuleKind::kElf && m.dev == dev && m.inode == inode
                : m.kind != ModuleKind::kElf && m.path == name;
  }
};

// A module of the call in its FlatTable; the key is the module's own (Call::infos). The table
// is consulted once per VMA, so it must cost far less than the lookup it saves.
struct ModuleSlot {
  uint64_t hash = 0;
  uint32_t module = 0;
  bool empty() const { return hash == 0; }
};

// An address answered from a trusted remembered VMA [start, end), before any lookup.
struct CacheHit {
  uint32_t idx;
  uint64_t start, end;
};

// Indices of `addrs` by ascending address (stable).
std::vector<uint32_t> AscendingOrder(std::span<const uint64_t> addrs) {
  std::vector<uint32_t> order = normalize::SortedOrder(addrs);
  if (order.empty()) {
    order.resize(addrs.size());
    std::iota(order.begin(), order.end(), 0u);
  }
  return order;
}

}  // namespace

struct Normalizer::Impl {
  explicit Impl(NormalizerOptions o)
      : options(o), build_ids(o.cache_build_ids ? o.build_id_cache_entries : 0) {}

  NormalizerOptions options;
  mutable std::mutex mu;
  NormalizerStats stats;
  normalize::BuildIdCache build_ids;
  std::unordered_map<pid_t, ProcessCache> processes;
  uint64_t tick = 0;
  uint32_t epoch = 1;  // advanced by RevalidateAll

  // State of one Normalize call.
  struct Call {
    pid_t pid = 0;
    std::span<const uint64_t> addrs;
    NormalizedBatch* batch = nullptr;
    ProcessCache* process = nullptr;  // kept source, remembered VMAs; null without a VMA cache
    std::vector<std::shared_ptr<const ModuleInfo>> infos;  // parallel to batch->modules
    FlatTable<ModuleSlot> modules;                         // same-file cache, others by name
    std::vector<uint32_t> pending;     // to look up in the VMA source, by ascending address
    std::vector<CacheHit> cache_hits;  // answered from trusted remembered VMAs
    std::vector<CachedVma> dropped;    // a kept source's VMAs, dropped when it found them gone
    bool process_gone = false;         // a lookup found the process gone
  };

  Result<NormalizedBatch> Normalize(pid_t pid, std::span<const uint64_t> addrs);
  // The phases of a call, in order; each answers what it can and leaves the rest pending.
  Result<void> Walk(Call& call);
  void AnswerFromVmaCache(Call& call, std::span<const uint32_t> order);
  Result<bool> LookUpPending(Call& call);
  void WalkPending(Call& call, normalize::VmaSource& source);
  void AnswerFromVma(Call& call, const normalize::Vma& vma,
                     const std::shared_ptr<const ModuleInfo>& known,
                     std::span<const uint32_t> idxs);
  std::vector<uint32_t> TakeStaleCacheHits(Call& call);
  void AnswerFromMemory(Call& call);
  // The process is gone: forget it, or with past_addresses keep its VMAs (`vmas`, when the
  // cache entry was already dropped) to answer from.
  void ProcessGone(pid_t pid, std::vector<CachedVma>* vmas);
  // Modules: the call's module for a VMA or a remembered module, added when new.
  uint32_t ModuleForVma(Call& call, const normalize::Vma& vma);
  uint32_t ModuleForInfo(Call& call, const std::shared_ptr<const ModuleInfo>& info, uint64_t start,
                         uint64_t end, uint64_t offset);
  ModuleSlot& FindModule(Call& call, const ModuleKey& key, uint64_t hash);
  uint32_t AddModule(Call& call, ModuleSlot& slot, uint64_t hash,
                     std::shared_ptr<const ModuleInfo> info, uint64_t start, uint64_t end,
                     uint64_t offset);
  void ResolveBuildId(pid_t pid, const normalize::Vma& vma, ModuleInfo* info);
  std::optional<Module> ScanForBuildId(pid_t pid, std::span<const uint8_t> build_id);
  // FindModuleByBuildId's answers, per (pid, build ID).
  std::map<std::pair<pid_t, std::vector<uint8_t>>, std::optional<Module>> by_build_id;
  void CacheVma(ProcessCache& pc, const normalize::Vma& vma,
                std::shared_ptr<const ModuleInfo> info);
  void SnapshotExecutableVmas(pid_t pid, ProcessCache& pc);
  ProcessCache* CacheFor(pid_t pid);
  void DropProcess(pid_t pid);
  void CountWalk(const normalize::WalkStats& ws) {
    stats.vma_lookups += ws.lookups;
    stats.range_cache_hits += ws.range_cache_hits;
  }
};

// Keeps the lowest mapping; at an equal start the later one wins (lookups run after cache
// hits, so a fresh VMA replaces one the cache remembered).
static void NoteMapping(Module& m, uint64_t start, uint64_t end, uint64_t offset) {
  if (start <= m.map_start) {
    m.map_start = start;
    m.map_end = end;
    m.map_offset = offset;
  }
}

// The call's module for `key`, or the empty slot where it goes (for AddModule).
ModuleSlot& Normalizer::Impl::FindModule(Call& call, const ModuleKey& key, uint64_t hash) {
  return call.modules.Find(hash,
                           [&](const ModuleSlot& s) { return key.Matches(*call.infos[s.module]); });
}

uint32_t Normalizer::Impl::AddModule(Call& call, ModuleSlot& slot, uint64_t hash,
                                     std::shared_ptr<const ModuleInfo> info, uint64_t start,
                                     uint64_t end, uint64_t offset) {
  Module m;
  m.kind = info->kind;
  m.path = info->path;
  m.deleted = info->deleted;
  m.dev = info->dev;
  m.inode = info->inode;
  m.build_id = info->build_id;
  m.build_id_reason = info->build_id_reason;
  m.map_start = start;
  m.map_end = end;
  m.map_offset = offset;
  uint32_t index = static_cast<uint32_t>(call.batch->modules.size());
  call.batch->modules.push_back(std::move(m));
  call.infos.push_back(std::move(info));
  slot = ModuleSlot{hash, index};
  call.modules.Filled();  // `slot` may be stale from here on
  return index;
}

uint32_t Normalizer::Impl::ModuleForVma(Call& call, const normalize::Vma& vma) {
  const ModuleKey key = ModuleKey::Of(vma);
  const uint64_t hash = key.Hash();
  ModuleSlot& slot = FindModule(call, key, hash);
  if (!slot.empty()) {
    if (key.file) ++stats.same_file_hits;
    NoteMapping(call.batch->modules[slot.module], vma.start, vma.end, vma.offset);
    return slot.module;
  }
  auto info = std::make_shared<ModuleInfo>();
  info->kind = KindOf(vma);
  info->path = std::string(vma.name);
  info->deleted = vma.deleted;
  info->dev = vma.dev;
  info->inode = vma.inode;
  if (key.file && options.build_ids) ResolveBuildId(call.pid, vma, info.get());
  return AddModule(call, slot, hash, std::move(info), vma.start, vma.end, vma.offset);
}

uint32_t Normalizer::Impl::ModuleForInfo(Call& call, const std::shared_ptr<const ModuleInfo>& info,
                                         uint64_t start, uint64_t end, uint64_t offset) {
  const ModuleKey key = ModuleKey::Of(*info);
  const uint64_t hash = key.Hash();
  ModuleSlot& slot = FindModule(call, key, hash);
  if (!slot.empty()) {
    NoteMapping(call.batch->modules[slot.module], start, end, offset);
    return slot.module;
  }
  return AddModule(call, slot, hash, info, start, end, offset);
}

void Normalizer::Impl::ResolveBuildId(pid_t pid, const normalize::Vma& vma, ModuleInfo* info) {
  if (vma.has_kernel_build_id && !vma.kernel_build_id.empty()) {
    ++stats.kernel_build_ids;
    info->build_id.assign(vma.kernel_build_id.begin(), vma.kernel_build_id.end());
    return;
  }
  // The kernel gave no answer (text source, or it found none): read the file ourselves. An
  // empty kernel answer is not trusted as "no build ID" because the kernel also returns
  // nothing when it cannot read the page; the negative cache keeps the re-check cheap.
  Result<normalize::MappedFileRef> found = normalize::FindMappedFile(
      pid, normalize::MappingRef{vma.start, vma.end, vma.name, vma.inode, vma.deleted});
  if (found) {
    if (const normalize::BuildIdEntry* hit = build_ids.Find(found->identity)) {
      if (hit->build_id.empty()) {
        ++stats.negative_hits;
        info->build_id_reason = hit->reason;
      } else {
        ++stats.build_id_cache_hits;
        info->build_id = hit->build_id;
      }
      return;
    }
  }
  int fd = found ? open(found->path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) {
    info->transient_failure = true;
    int err = found ? errno : (found.error().code == ErrorCode::kPermission ? EACCES : ENOENT);
    if (err == EACCES || err == EPERM) {
      info->build_id_reason = Reason::kAccessDenied;
    } else if (!normalize::ProcessAlive(pid)) {
      info->build_id_reason = Reason::kProcessGone;
    } else {
      info->build_id_reason = Reason::kFileUnavailable;
    }
    return;
  }
  FileIdentity id = found->identity;
  struct stat fst;
  if (fstat(fd, &fst) == 0) id = FileIdentityOf(fst);  // the file actually read
  ++stats.build_id_reads;
  Result<std::vector<uint8_t>> read = ReadBuildIdFromFd(fd);
  close(fd);
  normalize::BuildIdEntry entry;
  if (!read) {
    entry.reason = read.error().code == ErrorCode::kPermission ? Reason::kAccessDenied
                                                               : Reason::kFileUnavailable;
    if (read.error().code == ErrorCode::kIo) {  // transient: do not remember
      info->build_id_reason = entry.reason;
      info->transient_failure = true;
      return;
    }
  } else if (read->empty()) {
    entry.reason = Reason::kNoBuildId;
  } else {
    entry.build_id = *read;
  }
  if (entry.build_id.empty()) {
    info->build_id_reason = entry.reason;
  } else {
    info->build_id = entry.build_id;
  }
  build_ids.Insert(id, std::move(entry));
}

void Normalizer::Impl::CacheVma(ProcessCache& pc, const normalize::Vma& vma,
                                std::shared_ptr<const ModuleInfo> info) {
  auto& v = pc.vmas;
  // First cached VMA that ends above vma.start: the first that may overlap.
  auto first = std::partition_point(v.begin(), v.end(),
                                    [&](const CachedVma& c) { return c.end <= vma.start; });
  auto last = first;
  while (last != v.end() && last->start < vma.end) ++last;
  if (last - first == 1 && SameVma(*first, vma)) {
    first->epoch = epoch;  // unchanged, and now checked
    return;
  }
  // Whatever overlapped no longer matches the process: drop it.
  stats.vma_cache_invalidations += static_cast<uint64_t>(last - first);
  auto pos = v.erase(first, last);
  // Bound memory: a process has at most vm.max_map_count (65530) VMAs; remembering more than
  // kMaxRememberedVmas of one process is not worth its memory, so start over.
  if (v.size() >= kMaxRememberedVmas) {
    stats.vma_cache_invalidations += v.size();
    v.clear();
    pos = v.end();
  }
  v.insert(pos, CachedVma{vma.start, vma.end, vma.offset, vma.inode, std::move(info), epoch});
}

// Remembers every executable VMA of a live process that is not remembered already (and
// re-checks those that are), so that its samples still resolve after it exited even at
// addresses never looked up while it lived (a vDSO call seen only in its last samples).
void Normalizer::Impl::SnapshotExecutableVmas(pid_t pid, ProcessCache& pc) {
  pc.snapshot_epoch = epoch;
  // A source of its own, filtered to executable VMAs (by the kernel, with PROCMAP_QUERY), so
  // that the kept source's position and a big process's data mappings cost nothing here.
  normalize::VmaSourceOptions source_options;
  source_options.executable_only = true;
  source_options.kernel_build_ids = options.build_ids && options.kernel_build_ids;
  Result<std::unique_ptr<normalize::VmaSource>> source =
      normalize::OpenVmaSource(pid, options.vma_source, source_options);
  if (!source) return;
  Call call;  // modules made here belong to no batch; only their shared ModuleInfo is kept
  NormalizedBatch scratch;
  call.pid = pid;
  call.batch = &scratch;
  uint64_t addr = 0;
  normalize::Vma vma;
  for (size_t n = 0; n < kMaxRememberedVmas; ++n) {
    Result<bool> found = (*source)->FindCoveringOrNext(addr, &vma);
    if (!found || !*found || vma.end <= addr) break;  // done, gone, or not advancing
    addr = vma.end;
    if (!(vma.perms & normalize::kVmaExec)) continue;
    if (CachedVma* c = CoveringVma(pc.vmas, vma.start); c != nullptr && SameVma(*c, vma)) {
      c->epoch = epoch;  // already remembered, and unchanged
      continue;
    }
    uint32_t module = ModuleForVma(call, vma);
    if (call.infos[module]->transient_failure) continue;
    CacheVma(pc, vma, call.infos[module]);
    ++stats.snapshot_vmas;
  }
}

ProcessCache* Normalizer::Impl::CacheFor(pid_t pid) {
  auto it = processes.find(pid);
  if (it != processes.end()) {
    it->second.last_used = ++tick;
    return &it->second;
  }
  if (options.vma_cache_processes == 0) return nullptr;
  while (processes.size() >= options.vma_cache_processes) {
    auto oldest = std::min_element(processes.begin(), processes.end(), [](auto& a, auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    stats.vma_cache_invalidations += oldest->second.vmas.size();
    processes.erase(oldest);
  }
  ProcessCache& pc = processes[pid];
  pc.last_used = ++tick;
  return &pc;
}

// Wraps the real source for one walk: an address inside a remembered VMA is checked with the
// cheapest query (PROCMAP_QUERY without name or build ID); if the kernel's VMA still matches
// (start, end, offset, inode), the remembered module — path and build ID — is reused, so
// neither the kernel nor we read the build ID again. Anything else gets the full query.
class RememberingSource final : public normalize::VmaSource {
 public:
  RememberingSource(normalize::VmaSource* inner, std::vector<CachedVma>* remembered, uint32_t epoch)
      : inner_(inner), remembered_(remembered), epoch_(epoch) {}
  VmaSourceKind kind() const override { return inner_->kind(); }
  uint64_t lookups() const override { return inner_->lookups(); }

  Result<bool> FindCoveringOrNext(uint64_t addr, normalize::Vma* out) override {
    matched_ = nullptr;
    CachedVma* known = Find(addr);
    if (known != nullptr && inner_->kind() == VmaSourceKind::kIoctl) {
      Result<bool> r =
          static_cast<normalize::IoctlVmaSource*>(inner_)->Query(addr, false, false, out);
      if (!r || !*r) return r;
      if (SameVma(*known, *out)) {
        out->name = known->module->path;
        out->deleted = known->module->deleted;
        matched_ = known->module;
        known->epoch = epoch_;
        return true;
      }
      return inner_->FindCoveringOrNext(addr, out);
    }
    Result<bool> r = inner_->FindCoveringOrNext(addr, out);
    if (r && *r && known != nullptr && SameVma(*known, *out)) {
      matched_ = known->module;
      known->epoch = epoch_;
    }
    return r;
  }

  // The remembered module of the VMA the last lookup returned, or nullptr.
  const std::shared_ptr<const ModuleInfo>& matched() const { return matched_; }

 private:
  CachedVma* Find(uint64_t addr) const {
    return remembered_ == nullptr ? nullptr : CoveringVma(*remembered_, addr);
  }

  normalize::VmaSource* inner_;
  std::vector<CachedVma>* remembered_;
  uint32_t epoch_;
  std::shared_ptr<const ModuleInfo> matched_;
};

Result<NormalizedBatch> Normalizer::Impl::Normalize(pid_t pid, std::span<const uint64_t> addrs) {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "pid must be a positive process ID");
  if (addrs.size() >= UINT32_MAX) return Error(ErrorCode::kInvalidArgument, "too many addresses");
  std::lock_guard<std::mutex> lock(mu);
  ++stats.calls;
  stats.addresses += addrs.size();

  NormalizedBatch batch;
  batch.pid = pid;
  batch.source = options.vma_source;
  batch.addresses.resize(addrs.size());
  if (addrs.empty()) return batch;
  batch.modules.reserve(16);

  Call call;
  call.pid = pid;
  call.addrs = addrs;
  call.batch = &batch;
  if (Result<void> walked = Walk(call); !walked) return walked.error();
  if (options.past_addresses) AnswerFromMemory(call);
  if (batch.source == VmaSourceKind::kAuto) {
    batch.source =
        normalize::ProcmapQuerySupported() ? VmaSourceKind::kIoctl : VmaSourceKind::kText;
  }
  return batch;
}

static void AnswerAll(NormalizedBatch& batch, std::span<const uint32_t> idxs, Reason reason) {
  for (uint32_t idx : idxs) batch.addresses[idx].reason = reason;
}

// Trusted remembered VMAs answer first; the VMA source then looks up the rest.
Result<void> Normalizer::Impl::Walk(Call& call) {
  call.process = CacheFor(call.pid);
  AnswerFromVmaCache(call, AscendingOrder(call.addrs));
  if (call.pending.empty()) return {};
  if (call.process != nullptr && call.process->gone) {  // known gone: nothing to look up
    AnswerAll(*call.batch, call.pending, Reason::kProcessGone);
    return {};
  }
  // A kept source pins the process it was opened for: if that process is gone (it exited, or
  // exec'd a new image, or the pid was reused), its state is dropped and the addresses it
  // could not answer are looked up once more on a fresh open.
  for (int attempt = 0; attempt < 2 && !call.pending.empty(); ++attempt) {
    Result<bool> retry = LookUpPending(call);
    if (!retry) return retry.error();
    if (!*retry) return {};
    call.process = CacheFor(call.pid);
    std::erase_if(call.pending, [&](uint32_t idx) {
      const NormalizedAddress& out = call.batch->addresses[idx];
      return out.ok() || out.reason != Reason::kProcessGone;
    });
    call.cache_hits.clear();
    call.process_gone = false;
  }
  return {};
}

// Address 0 is invalid. With cache_vmas, an address inside a remembered VMA checked in this
// epoch is answered from it without a lookup. The rest are left pending, in `order`.
void Normalizer::Impl::AnswerFromVmaCache(Call& call, std::span<const uint32_t> order) {
  NormalizedBatch& batch = *call.batch;
  ProcessCache* pc = options.cache_vmas ? call.process : nullptr;
  call.pending.reserve(order.size());
  if (pc != nullptr) call.cache_hits.reserve(order.size());
  size_t cursor = 0;  // into pc->vmas; addresses ascend, so it only moves forward
  size_t hit_cursor = SIZE_MAX;
  uint32_t hit_module = kNoModule;
  for (uint32_t idx : order) {
    uint64_t a = call.addrs[idx];
    if (a == 0) {
      batch.addresses[idx].reason = Reason::kInvalidAddress;
      continue;
    }
    if (pc != nullptr) {
      const std::vector<CachedVma>& v = pc->vmas;
      while (cursor < v.size() && v[cursor].end <= a) ++cursor;
      if (cursor < v.size() && v[cursor].start <= a && v[cursor].epoch == epoch) {
        const CachedVma& c = v[cursor];
        ++stats.vma_cache_hits;
        call.cache_hits.push_back({idx, c.start, c.end});
        if (cursor != hit_cursor) {  // module lookup once per VMA, not per address
          hit_cursor = cursor;
          hit_module = ModuleForInfo(call, c.module, c.start, c.end, c.offset);
        }
        NormalizedAddress& out = batch.addresses[idx];
        out.module = hit_module;
        out.file_offset = OffsetIn(c.module->kind, a, c.start, c.offset);
        continue;
      }
    }
    call.pending.push_back(idx);
  }
}

// Looks the pending addresses up through the process's kept source, or one opened now (kept
// for later calls). True: the kept source found its process gone; the process's state is
// dropped (its VMAs kept in call.dropped for past_addresses) and the caller retries.
Result<bool> Normalizer::Impl::LookUpPending(Call& call) {
  ProcessCache* pc = call.process;
  const bool kept = pc != nullptr && pc->source != nullptr;
  std::unique_ptr<normalize::VmaSource> opened;
  if (!kept) {
    normalize::VmaSourceOptions source_options;
    source_options.executable_only = options.executable_only;
    source_options.kernel_build_ids = options.build_ids && options.kernel_build_ids;
    Result<std::unique_ptr<normalize::VmaSource>> source =
        normalize::OpenVmaSource(call.pid, options.vma_source, source_options);
    if (!source) {
      if (source.error().code == ErrorCode::kUnsupported) return source.error();
      Reason reason = normalize::ReasonForError(source.error());
      AnswerAll(*call.batch, call.pending, reason);
      if (pc != nullptr && reason == Reason::kProcessGone) ProcessGone(call.pid, &call.dropped);
      return false;
    }
    opened = std::move(*source);
  } else if (pc->source->kind() == VmaSourceKind::kText) {
    static_cast<normalize::TextVmaSource*>(pc->source.get())->Rewind();
  }
  WalkPending(call, kept ? *pc->source : *opened);
  if (pc == nullptr) return false;
  if (!call.process_gone) {
    if (options.past_addresses && pc->snapshot_epoch != epoch) {
      SnapshotExecutableVmas(call.pid, *pc);
    }
    if (opened) pc->source = std::move(opened);
    return false;
  }
  if (!kept) {
    ProcessGone(call.pid, &call.dropped);
    return false;
  }
  if (options.past_addresses) call.dropped = std::move(pc->vmas);
  DropProcess(call.pid);
  return true;
}

// The sorted walk of the pending addresses against `source`, through the remembered VMAs so
// that a lookup that confirms one reuses its module. If a lookup contradicted remembered VMAs,
// the answers taken from them earlier in the call are walked again.
void Normalizer::Impl::WalkPending(Call& call, normalize::VmaSource& source) {
  call.batch->source = source.kind();
  const uint64_t reads_before = source.lookups();
  const uint64_t invalidations_before = stats.vma_cache_invalidations;
  RememberingSource remembering(&source, call.process != nullptr ? &call.process->vmas : nullptr,
                                epoch);
  const normalize::VmaVisitor visit = [&](const normalize::Vma* vma, Reason reason,
                                          std::span<const uint32_t> idxs) {
    if (vma != nullptr) return AnswerFromVma(call, *vma, remembering.matched(), idxs);
    if (reason == Reason::kProcessGone) call.process_gone = true;
    AnswerAll(*call.batch, idxs, reason);
  };
  CountWalk(normalize::WalkVmas(remembering, call.addrs, call.pending, visit));
  if (stats.vma_cache_invalidations != invalidations_before) {
    std::vector<uint32_t> stale = TakeStaleCacheHits(call);
    if (!stale.empty()) CountWalk(normalize::WalkVmas(remembering, call.addrs, stale, visit));
  }
  if (source.kind() == VmaSourceKind::kText) stats.maps_reads += source.lookups() - reads_before;
}

// A run of addresses inside one looked-up VMA: its module (the remembered one when the lookup
// matched it, else resolved now, build ID included, and remembered), then each offset.
void Normalizer::Impl::AnswerFromVma(Call& call, const normalize::Vma& vma,
                                     const std::shared_ptr<const ModuleInfo>& known,
                                     std::span<const uint32_t> idxs) {
  uint32_t module;
  if (known != nullptr) {
    ++stats.vma_matches;
    module = ModuleForInfo(call, known, vma.start, vma.end, vma.offset);
  } else {
    module = ModuleForVma(call, vma);
    const std::shared_ptr<const ModuleInfo>& info = call.infos[module];
    if (call.process != nullptr && !info->transient_failure) CacheVma(*call.process, vma, info);
  }
  const ModuleKind kind = call.batch->modules[module].kind;
  for (uint32_t idx : idxs) {
    NormalizedAddress& out = call.batch->addresses[idx];
    out.module = module;
    out.reason = Reason::kUnmapped;
    out.file_offset = OffsetIn(kind, call.addrs[idx], vma.start, vma.offset);
  }
}

// The addresses AnswerFromVmaCache answered from remembered VMAs that lookups have since
// dropped as contradicted, their answers and cache-hit counts taken back.
std::vector<uint32_t> Normalizer::Impl::TakeStaleCacheHits(Call& call) {
  std::vector<uint32_t> stale;
  if (call.process == nullptr || call.process_gone) return stale;
  const std::vector<CachedVma>& v = call.process->vmas;
  for (const CacheHit& h : call.cache_hits) {
    auto it = std::partition_point(v.begin(), v.end(),
                                   [&](const CachedVma& c) { return c.end <= h.start; });
    if (it == v.end() || it->start != h.start || it->end != h.end) {
      stale.push_back(h.idx);
      call.batch->addresses[h.idx] = NormalizedAddress{};
    }
  }
  stats.vma_cache_hits -= stale.size();
  return stale;
}

void Normalizer::Impl::ProcessGone(pid_t pid, std::vector<CachedVma>* vmas) {
  if (!options.past_addresses) {
    DropProcess(pid);
    return;
  }
  ProcessCache* pc = CacheFor(pid);
  if (pc == nullptr) return;
  pc->source.reset();
  if (pc->vmas.empty()) pc->vmas = std::move(*vmas);
  if (!pc->gone) {
    pc->gone = true;
    pc->gone_epoch = epoch;
  }
}

// past_addresses: an address the process no longer maps, or any of a process that is gone, is
// answered from the remembered VMA that covers it.
void Normalizer::Impl::AnswerFromMemory(Call& call) {
  auto it = processes.find(call.pid);
  if (it == processes.end()) return;
  for (size_t i = 0; i < call.addrs.size(); ++i) {
    NormalizedAddress& out = call.batch->addresses[i];
    if (out.ok() || call.addrs[i] == 0) continue;
    if (out.reason != Reason::kUnmapped && out.reason != Reason::kProcessGone) continue;
    const CachedVma* c = CoveringVma(it->second.vmas, call.addrs[i]);
    if (c == nullptr) continue;
    out.module = ModuleForInfo(call, c->module, c->start, c->end, c->offset);
    out.file_offset = OffsetIn(c->module->kind, call.addrs[i], c->start, c->offset);
    ++stats.remembered_answers;
  }
}

void Normalizer::Impl::DropProcess(pid_t pid) {
  auto it = processes.find(pid);
  if (it == processes.end()) return;
  stats.vma_cache_invalidations += it->second.vmas.size();
  processes.erase(it);
}

// ---------------------------------------------------------------------------------------------

Normalizer::Normalizer(NormalizerOptions options) : impl_(std::make_unique<Impl>(options)) {}
Normalizer::~Normalizer() = default;

Result<NormalizedBatch> Normalizer::Normalize(pid_t pid, std::span<const uint64_t> addrs) {
  return impl_->Normalize(pid, addrs);
}

std::optional<Module> Normalizer::FindModuleByBuildId(pid_t pid,
                                                      std::span<const uint8_t> build_id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto key = std::make_pair(pid, std::vector<uint8_t>(build_id.begin(), build_id.end()));
  auto [it, added] = impl_->by_build_id.try_emplace(std::move(key));
  if (added) it->second = impl_->ScanForBuildId(pid, build_id);
  return it->second;
}

// Every executable file mapping in address order, each file's build ID read once (through the
// build-ID cache), until one matches.
std::optional<Module> Normalizer::Impl::ScanForBuildId(pid_t pid,
                                                       std::span<const uint8_t> build_id) {
  normalize::VmaSourceOptions vopts;
  vopts.executable_only = true;
  Result<std::unique_ptr<normalize::VmaSource>> source =
      normalize::OpenVmaSource(pid, VmaSourceKind::kAuto, vopts);
  if (!source) return std::nullopt;
  std::vector<std::pair<uint64_t, uint64_t>> checked;  // (dev, inode)
  normalize::Vma vma;
  for (uint64_t addr = 0;;) {
    Result<bool> found = (*source)->FindCoveringOrNext(addr, &vma);
    if (!found || !*found) return std::nullopt;
    if (vma.end <= addr) return std::nullopt;  // no progress: a broken source
    addr = vma.end;
    std::pair<uint64_t, uint64_t> file{vma.dev, vma.inode};
    if (!vma.file_backed() || std::find(checked.begin(), checked.end(), file) != checked.end()) {
      continue;
    }
    checked.push_back(file);
    ModuleInfo info;
    ResolveBuildId(pid, vma, &info);
    if (!std::equal(info.build_id.begin(), info.build_id.end(), build_id.begin(), build_id.end())) {
      continue;
    }
    Module m{ModuleKind::kElf, std::string(vma.name), info.build_id};
    m.deleted = vma.deleted;
    m.dev = vma.dev;
    m.inode = vma.inode;
    m.map_start = vma.start;
    m.map_end = vma.end;
    m.map_offset = vma.offset;
    return m;
  }
}

void Normalizer::Invalidate(pid_t pid) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropProcess(pid);
  std::erase_if(impl_->by_build_id, [&](const auto& entry) { return entry.first.first == pid; });
}

void Normalizer::InvalidateAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [pid, pc] : impl_->processes) impl_->stats.vma_cache_invalidations += pc.vmas.size();
  impl_->processes.clear();
  impl_->by_build_id.clear();
}

void Normalizer::Revalidate(pid_t pid) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->processes.find(pid);
  if (it == impl_->processes.end()) return;
  for (CachedVma& c : it->second.vmas) c.epoch = impl_->epoch - 1;
}

void Normalizer::RevalidateAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  // Gone processes are kept for one whole period after the one they went in: long enough
  // for their last samples to drain, short enough that a reused pid is not confused with them.
  for (auto it = impl_->processes.begin(); it != impl_->processes.end();) {
    if (it->second.gone && it->second.gone_epoch != impl_->epoch) {
      impl_->stats.vma_cache_invalidations += it->second.vmas.size();
      it = impl_->processes.erase(it);
    } else {
      ++it;
    }
  }
  ++impl_->epoch;
}

void Normalizer::ClearBuildIdCache() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->build_ids.Clear();
  // Remembered VMAs carry build IDs too; forget them (the kept maps fds stay open).
  for (auto& [pid, pc] : impl_->processes) {
    impl_->stats.vma_cache_invalidations += pc.vmas.size();
    pc.vmas.clear();
  }
}

NormalizerStats Normalizer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

void Normalizer::ResetStats() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stats = NormalizerStats{};
}

const NormalizerOptions& Normalizer::options() const { return impl_->options; }

}  // namespace stacksym
