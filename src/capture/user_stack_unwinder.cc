#include "capture/user_stack_unwinder.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

namespace stacksym::capture {
namespace {

// Bounds on what is remembered between revalidations (about once a second).
constexpr size_t kMaxMemoEntries = 1u << 16;
constexpr size_t kMaxMemoEntriesPerKey = 4;

bool Remembered(UnwindEnd end) {
  // Only walks whose end does not depend on how much stack was copied: a longer copy could
  // take a truncated walk further.
  return end == UnwindEnd::kOutermost || end == UnwindEnd::kDepthLimit;
}

bool SameWords(const std::vector<StackWord>& words, const RawUserStack& stack) {
  for (const StackWord& w : words) {
    uint64_t size = stack.bytes.size();
    if (w.address < stack.sp || size < 8 || w.address - stack.sp > size - 8) return false;
    uint64_t v;
    std::memcpy(&v, stack.bytes.data() + (w.address - stack.sp), 8);
    if (v != w.value) return false;
  }
  return true;
}

}  // namespace

size_t UserStackUnwinder::MemoKeyHash::operator()(const MemoKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.pid) * 0x9e3779b97f4a7c15ull;
  for (uint64_t v : {k.ip, k.sp, k.bp}) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return static_cast<size_t>(h);
}

UserStackUnwinder::UserStackUnwinder(Normalizer* normalizer, OpenModuleFile open_file,
                                     std::shared_ptr<UnwindTableCache> tables)
    : normalizer_(normalizer),
      open_file_(std::move(open_file)),
      tables_(tables ? std::move(tables) : std::make_shared<UnwindTableCache>()) {}

void UserStackUnwinder::Revalidate() {
  mappings_.clear();
  memo_.clear();
  memo_entries_ = 0;
}

void UserStackUnwinder::Forget(pid_t pid) {
  mappings_.erase(pid);
  for (auto it = memo_.begin(); it != memo_.end();) {
    if (it->first.pid == pid) {
      memo_entries_ -= it->second.size();
      it = memo_.erase(it);
    } else {
      ++it;
    }
  }
}

const UserStackUnwinder::Mapping* UserStackUnwinder::Resolve(pid_t pid, uint64_t pc) {
  std::vector<Mapping>& list = mappings_[pid];
  auto it = std::upper_bound(list.begin(), list.end(), pc,
                             [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it != list.begin() && pc < std::prev(it)->end) return &*std::prev(it);

  uint64_t addr = pc;
  Result<NormalizedBatch> batch = normalizer_->Normalize(pid, std::span<const uint64_t>(&addr, 1));
  if (!batch || batch->addresses.empty() || !batch->addresses[0].ok()) return nullptr;
  const NormalizedAddress& at = batch->addresses[0];
  const Module& module = batch->modules[at.module];
  std::vector<Mapping> found;
  std::shared_ptr<ElfFile> elf;
  if (module.kind == ModuleKind::kElf || module.kind == ModuleKind::kVdso) {
    elf = open_file_(pid, module);
  }
  std::optional<uint64_t> vaddr;
  if (elf) vaddr = elf->FileOffsetToVaddr(at.file_offset);
  if (elf && vaddr) {
    // Every executable segment of the file, placed with the load bias of this one.
    std::shared_ptr<const UnwindTable> table = tables_->Get(*elf);
    uint64_t bias = pc - *vaddr;
    for (const ElfSegment& seg : elf->segments()) {
      if (seg.type != PT_LOAD || !(seg.flags & PF_X) || seg.memsz == 0) continue;
      found.push_back({bias + seg.vaddr, bias + seg.vaddr + seg.memsz, table, bias});
    }
  }
  bool covered = false;
  for (const Mapping& m : found) covered |= pc >= m.start && pc < m.end;
  if (!covered) {
    // Executable memory without a usable file (JIT code, an unreadable binary): frame
    // pointers only, for the page the pc is in.
    found.assign(1, Mapping{pc & ~uint64_t{4095}, (pc & ~uint64_t{4095}) + 4096, nullptr, 0});
  }
  for (const Mapping& m : found) {
    auto pos = std::upper_bound(list.begin(), list.end(), m.start,
                                [](uint64_t a, const Mapping& x) { return a < x.start; });
    bool overlaps = (pos != list.end() && pos->start < m.end) ||
                    (pos != list.begin() && std::prev(pos)->end > m.start);
    if (!overlaps) list.insert(pos, m);
  }
  it = std::upper_bound(list.begin(), list.end(), pc,
                        [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it != list.begin() && pc < std::prev(it)->end) return &*std::prev(it);
  return nullptr;
}

bool UserStackUnwinder::Lookup(pid_t pid, uint64_t pc, UnwindModule* out) {
  const Mapping* m = Resolve(pid, pc);
  if (m == nullptr) return false;
  out->table = m->table.get();
  out->bias = m->bias;
  return true;
}

UnwindEnd UserStackUnwinder::Unwind(pid_t pid, const RawUserStack& stack,
                                    std::vector<uint64_t>* pcs, bool* from_memo) {
  *from_memo = false;
  MemoKey key{pid, stack.ip, stack.sp, stack.bp};
  if (auto it = memo_.find(key); it != memo_.end()) {
    for (const MemoEntry& e : it->second) {
      if (SameWords(e.words, stack)) {
        *pcs = e.pcs;
        *from_memo = true;
        return e.end;
      }
    }
  }
  StackCopy copy{stack.sp, stack.bytes, stack.cut_at_unreadable_page};
  UnwindStats stats;
  UnwindEnd end = UnwindStack(
      {stack.ip, stack.sp, stack.bp}, copy,
      [&](uint64_t pc, UnwindModule* out) { return Lookup(pid, pc, out); }, {}, pcs, &words_,
      &stats);
  fp_frames_ += stats.frames_by_fp;
  if (Remembered(end)) {
    if (memo_entries_ >= kMaxMemoEntries) {
      memo_.clear();
      memo_entries_ = 0;
    }
    std::vector<MemoEntry>& entries = memo_[key];
    if (entries.size() >= kMaxMemoEntriesPerKey) {
      entries.erase(entries.begin());
      --memo_entries_;
    }
    entries.push_back({words_, *pcs, end});
    ++memo_entries_;
  }
  return end;
}

}  // namespace stacksym::capture
