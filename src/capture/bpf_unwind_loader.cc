#include "capture/bpf_unwind_loader.h"

#include <bpf/bpf.h>
#include <linux/types.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/clock.h"
#include "capture/off_cpu_sums.h"
#include "normalize/process_files.h"
#include "normalize/vma_sources.h"

// clang-format off
#include "bpf/sample_event.h"
// clang-format on

namespace stacksym::capture {
namespace {

constexpr size_t kSegmentBytes = size_t{STACKSYM_ROWS_PER_SEGMENT} * sizeof(stacksym_unwind_row);

}  // namespace

BpfUnwindLoader::BpfUnwindLoader() = default;
BpfUnwindLoader::~BpfUnwindLoader() {
  for (const RowsSegment& segment : segments_) {
    if (segment.rows != nullptr) munmap(segment.rows, kSegmentBytes);
    if (segment.fd >= 0) close(segment.fd);
  }
}

int BpfUnwindLoader::CreateSegment(uint32_t rows) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
  return bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows_seg", sizeof(uint32_t),
                        sizeof(stacksym_unwind_row), rows, &opts);
}

void BpfUnwindLoader::Init(int rows_fd, uint32_t max_rows, int first_segment, int mappings_fd,
                           uint32_t max_processes, std::shared_ptr<UnwindTableCache> tables) {
  rows_fd_ = rows_fd;
  segments_.resize((uint64_t{max_rows} + STACKSYM_ROWS_PER_SEGMENT - 1) /
                   STACKSYM_ROWS_PER_SEGMENT);
  std::string why;
  AddSegment(0, first_segment, &why);  // on failure Segment() tries again and says why
  space_ = std::make_unique<BpfRowSpace>(max_rows);
  mappings_fd_ = mappings_fd;
  max_processes_ = max_processes;
  table_cache_ = tables ? std::move(tables) : std::make_shared<UnwindTableCache>();
}

void BpfUnwindLoader::Want(uint32_t pid, bool mapping_changed) {
  if (pid == 0 || !space_) return;
  auto [it, inserted] = attempts_.try_emplace(pid, 0.0);
  double now = MonotonicSeconds();
  if (!inserted && now - it->second < (mapping_changed ? 0.005 : 0.2)) return;
  it->second = now;
  Load(pid);
}

void BpfUnwindLoader::Touch(uint32_t pid) {
  if (auto it = loaded_.find(pid); it != loaded_.end()) it->second.last_use = ++clock_;
}

void BpfUnwindLoader::Forget(uint32_t pid) {
  Unload(pid);
  attempts_.erase(pid);
}

void BpfUnwindLoader::Sweep() {
  double now = MonotonicSeconds();
  if (now - last_sweep_ < 1.0) return;
  last_sweep_ = now;
  std::vector<uint32_t> gone;
  for (const auto& [pid, process] : loaded_) {
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) gone.push_back(pid);
  }
  for (uint32_t pid : gone) {
    Unload(pid);
    attempts_.erase(pid);
  }
}

void BpfUnwindLoader::AddCounters(SourceCounters* c) const {
  c->bpf_processes_loaded = processes_loaded_;
  c->bpf_processes_not_loaded = processes_not_loaded_;
  c->bpf_processes_evicted = processes_evicted_;
  c->bpf_tables_loaded = tables_loaded_;
  c->bpf_tables_evicted = tables_evicted_;
  c->bpf_rows_loaded = rows_loaded_;
  c->bpf_rows_in_use = space_ ? space_->used_rows() : 0;
  c->bpf_rows_map_bytes = kSegmentBytes * static_cast<uint64_t>(std::count_if(
                                              segments_.begin(), segments_.end(),
                                              [](const RowsSegment& s) { return s.fd >= 0; }));
  c->bpf_first_load_problem = first_problem_;
}

void BpfUnwindLoader::Fail(uint32_t pid, const std::string& why) {
  if (!failed_.insert(pid).second) return;  // counted once per process
  ++processes_not_loaded_;
  if (first_problem_.empty()) first_problem_ = "pid " + std::to_string(pid) + ": " + why;
}

// Waits until every walk of the BPF program that began before now has ended.
void BpfUnwindLoader::WaitForWalks() {
  WaitForBpfRuns();
  deleted_since_grace_ = false;
}

void BpfUnwindLoader::Release(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    if (auto it = tables_.find(key); it != tables_.end() && it->second.users > 0) {
      --it->second.users;
    }
  }
}

void BpfUnwindLoader::Unload(uint32_t pid) {
  auto it = loaded_.find(pid);
  if (it == loaded_.end()) return;
  bpf_map_delete_elem(mappings_fd_, &pid);
  deleted_since_grace_ = true;
  Release(it->second.tables);
  loaded_.erase(it);
}

// The unused table with rows that was used least recently.
bool BpfUnwindLoader::EvictTable() {
  auto victim = tables_.end();
  for (auto it = tables_.begin(); it != tables_.end(); ++it) {
    if (it->second.users != 0 || it->second.row_count == 0) continue;
    if (victim == tables_.end() || it->second.last_use < victim->second.last_use) victim = it;
  }
  if (victim == tables_.end()) return false;
  space_->Release(victim->second.row_start, victim->second.row_count);
  tables_.erase(victim);
  ++tables_evicted_;
  return true;
}

// The loaded process sampled least recently, other than the one being loaded.
bool BpfUnwindLoader::EvictProcess(uint32_t except_pid) {
  auto victim = loaded_.end();
  for (auto it = loaded_.begin(); it != loaded_.end(); ++it) {
    if (it->first == except_pid) continue;
    if (victim == loaded_.end() || it->second.last_use < victim->second.last_use) victim = it;
  }
  if (victim == loaded_.end()) return false;
  Unload(victim->first);
  ++processes_evicted_;
  return true;
}

bool BpfUnwindLoader::MakeRoom(uint32_t rows, uint32_t pid, std::string* why, uint32_t* at) {
  if (rows > space_->capacity()) {
    *why = "unwind rows full (" + std::to_string(space_->capacity()) + "): a table of " +
           std::to_string(rows) + " rows";
    return false;
  }
  for (;;) {
    if (std::optional<uint32_t> start = space_->Allocate(rows)) {
      *at = *start;
      break;
    }
    if (EvictTable() || EvictProcess(pid)) continue;
    *why = "unwind rows full (" + std::to_string(space_->capacity()) + ", " +
           std::to_string(space_->free_rows()) + " free in " +
           std::to_string(space_->free_ranges()) + " ranges)";
    return false;
  }
  // The rows may have been read by a walk through mappings deleted or replaced moments ago.
  if (deleted_since_grace_) WaitForWalks();
  return true;
}

// Puts segment `fd` in its slot of the rows map and maps its rows; closes it on failure.
bool BpfUnwindLoader::AddSegment(uint32_t slot, int fd, std::string* why) {
  void* rows = mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (rows == MAP_FAILED) {
    *why = std::string("mapping unwind rows: ") + strerror(errno);
    close(fd);
    return false;
  }
  if (bpf_map_update_elem(rows_fd_, &slot, &fd, BPF_ANY) != 0) {
    *why = std::string("adding unwind rows: ") + strerror(errno);
    munmap(rows, kSegmentBytes);
    close(fd);
    return false;
  }
  segments_[slot] = {fd, static_cast<UnwindRow*>(rows)};
  return true;
}

// The rows of the segment holding row `index`, created (all zero) the first time.
UnwindRow* BpfUnwindLoader::Segment(uint32_t index, std::string* why) {
  uint32_t slot = index / STACKSYM_ROWS_PER_SEGMENT;
  if (slot >= segments_.size()) {
    *why = "unwind row " + std::to_string(index) + " past the rows map";
    return nullptr;
  }
  if (segments_[slot].rows != nullptr) return segments_[slot].rows;
  int fd = CreateSegment(STACKSYM_ROWS_PER_SEGMENT);
  if (fd < 0) {
    *why = std::string("creating unwind rows: ") + strerror(errno);
    return nullptr;
  }
  return AddSegment(slot, fd, why) ? segments_[slot].rows : nullptr;
}

// Rows [at, at + rows.size()), copied into the segments' mapped memory.
bool BpfUnwindLoader::WriteRows(uint32_t at, std::span<const UnwindRow> rows, std::string* why) {
  for (size_t done = 0; done < rows.size();) {
    uint32_t index = at + static_cast<uint32_t>(done);
    UnwindRow* segment = Segment(index, why);
    if (segment == nullptr) return false;
    uint32_t in_segment = index % STACKSYM_ROWS_PER_SEGMENT;
    size_t n = std::min<size_t>(rows.size() - done, STACKSYM_ROWS_PER_SEGMENT - in_segment);
    std::memcpy(segment + in_segment, rows.data() + done, n * sizeof(UnwindRow));
    done += n;
  }
  return true;
}

BpfUnwindLoader::LoadedTable* BpfUnwindLoader::Table(const ElfFile& elf,
                                                     const std::string& identity, uint32_t pid,
                                                     std::string* key, std::string* why) {
  *key = elf.build_id().empty() ? identity : elf.build_id_hex();
  if (auto it = tables_.find(*key); it != tables_.end()) return &it->second;
  std::shared_ptr<const UnwindTable> table = table_cache_->Get(elf);
  LoadedTable lt;
  if (!table->empty()) {
    std::span<const UnwindRow> rows = table->rows();
    if (rows.size() >= (1u << 24) || table->end_pc() - table->base_pc() > UINT32_MAX) {
      *why = elf.path() + ": table too large";
      return nullptr;
    }
    const auto count = static_cast<uint32_t>(rows.size());
    uint32_t at = 0;
    if (!MakeRoom(count, pid, why, &at)) {
      *why += " at " + elf.path();
      return nullptr;
    }
    if (!WriteRows(at, rows, why)) {
      space_->Release(at, count);
      return nullptr;
    }
    lt.row_start = at;
    lt.row_count = count;
    lt.base_pc = table->base_pc();
    lt.table_end = static_cast<uint32_t>(table->end_pc() - table->base_pc());
    ++tables_loaded_;
    rows_loaded_ += count;
  }
  return &tables_.emplace(*key, lt).first->second;
}

// The ELF file behind an executable VMA of `pid`, opened the one way (process_files.h); the
// vDSO from our own image (every process of this kernel maps the same one).
std::shared_ptr<ElfFile> BpfUnwindLoader::FileOf(uint32_t pid, const normalize::Vma& vma) {
  if (vma.name == "[vdso]") {
    if (!vdso_) vdso_ = normalize::OpenOwnVdso();
    return vdso_;
  }
  if (!vma.file_backed() || vma.name.empty() || vma.name.front() != '/') return nullptr;
  Module module{ModuleKind::kElf, std::string(vma.name), {}};
  module.deleted = vma.deleted;
  module.dev = vma.dev;
  module.inode = vma.inode;
  module.map_start = vma.start;
  module.map_end = vma.end;
  module.map_offset = vma.offset;
  Result<std::shared_ptr<ElfFile>> elf = normalize::OpenMappedFile(static_cast<pid_t>(pid), module);
  return elf ? *elf : nullptr;
}

void BpfUnwindLoader::Load(uint32_t pid) {
  normalize::VmaSourceOptions vma_options;
  vma_options.executable_only = true;
  Result<std::unique_ptr<normalize::VmaSource>> source =
      normalize::OpenVmaSource(static_cast<pid_t>(pid), VmaSourceKind::kAuto, vma_options);
  if (!source) return;  // gone: nothing to count
  auto value = std::make_unique<stacksym_proc_mappings>();
  std::memset(value.get(), 0, sizeof(*value));
  value->generation = ++mappings_generation_;
  if (value->generation == 0) value->generation = ++mappings_generation_;
  std::vector<std::string> keys;  // tables this load holds a use of
  std::string why;
  ++clock_;
  normalize::Vma vma;
  for (uint64_t addr = 0;;) {
    Result<bool> found = (*source)->FindCoveringOrNext(addr, &vma);
    if (!found || !*found || vma.end <= addr) break;
    addr = vma.end;
    if ((vma.perms & normalize::kVmaExec) == 0) continue;
    if (value->count >= STACKSYM_MAX_PROC_MAPPINGS) {
      why = "more than " + std::to_string(STACKSYM_MAX_PROC_MAPPINGS) + " executable mappings";
      break;
    }
    stacksym_mapping& m = value->m[value->count++];
    m.start = vma.start;
    m.end = vma.end;
    std::shared_ptr<ElfFile> elf = FileOf(pid, vma);
    if (!elf) continue;  // anonymous, not ELF, or unreadable: frame pointers
    std::optional<uint64_t> vaddr = elf->FileOffsetToVaddr(vma.offset);
    if (!vaddr) continue;
    std::string key;
    std::string file_key =
        std::string(vma.name) + ":" + std::to_string(vma.dev) + ":" + std::to_string(vma.inode);
    LoadedTable* t = Table(*elf, file_key, pid, &key, &why);
    if (t == nullptr) break;
    ++t->users;  // held from here, so that loading the next table cannot evict it
    t->last_use = clock_;
    keys.push_back(std::move(key));
    uint64_t bias = vma.start - *vaddr;
    m.table_base = bias + t->base_pc;
    m.row_start = t->row_start;
    m.row_count = t->row_count;
    m.table_end = t->table_end;
  }
  if (why.empty() && !loaded_.contains(pid) && loaded_.size() >= max_processes_ &&
      !EvictProcess(pid)) {
    why = "more than " + std::to_string(max_processes_) + " processes";
  }
  if (why.empty() && bpf_map_update_elem(mappings_fd_, &pid, value.get(), BPF_ANY) != 0) {
    why = std::string("writing the mappings: ") + strerror(errno);
  }
  if (!why.empty()) {
    Release(keys);
    Fail(pid, why);
    return;
  }
  auto [it, inserted] = loaded_.try_emplace(pid);
  if (ever_loaded_.insert(pid).second) ++processes_loaded_;  // not again after exec or eviction
  if (!inserted) {
    deleted_since_grace_ = true;  // the old mappings may still be read by a running walk
    Release(it->second.tables);
  }
  it->second.tables = std::move(keys);
  it->second.last_use = ++clock_;
}

}  // namespace stacksym::capture
