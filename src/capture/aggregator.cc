#include "capture/aggregator.h"

#include <sys/auxv.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/clock.h"
#include "capture/process_info.h"
#include "normalize/process_files.h"

namespace stacksym::capture {

namespace {

// Return addresses point after the call instruction; the call itself is one byte earlier.
// Callers are stored as "return address - 1" so that every frame address lies inside the
// instruction that was executing (or calling), which is what symbolizers expect.
inline uint64_t CallerAddress(uint64_t return_address) {
  return return_address == 0 ? 0 : return_address - 1;
}

std::string ModuleKey(ModuleKind kind, const std::string& path,
                      const std::vector<uint8_t>& build_id, uint32_t pid = 0) {
  std::string key;
  key.reserve(path.size() + build_id.size() + 2 + (pid != 0 ? 11 : 0));
  key.push_back(static_cast<char>(kind));
  key.append(reinterpret_cast<const char*>(build_id.data()), build_id.size());
  key.push_back('|');
  key.append(path);
  if (pid != 0) key.append("|" + std::to_string(pid));
  return key;
}

// Processes whose JIT files are kept open (two or three descriptors each); the others' are
// opened when collected, which reaches them only while they live or in the host's /tmp.
constexpr size_t kMaxOpenJitProcesses = 128;

// The module's file, opened the one way (normalize/process_files.h); null when it cannot be had.
std::shared_ptr<ElfFile> OpenModuleFile(pid_t pid, const Module& m) {
  Result<std::shared_ptr<ElfFile>> elf = normalize::OpenMappedFile(pid, m);
  return elf ? *elf : nullptr;
}

}  // namespace

// The recorder's normalizer: samples are read a little after they were taken, and the same
// processes come back sample after sample.
NormalizerOptions RecorderNormalizerOptions() {
  NormalizerOptions o;
  o.build_ids = true;
  o.cache_vmas = true;  // per-process VMA cache: repeated stacks cost no /proc reads
  o.vma_cache_processes = 256;
  o.past_addresses = true;  // samples of processes that exited since still resolve
  return o;
}

SampleAggregator::SampleAggregator(std::shared_ptr<UnwindTableCache> unwind_tables,
                                   double off_cpu_sample, std::shared_ptr<PythonProcesses> python)
    : normalizer_(RecorderNormalizerOptions()),
      unwinder_(
          &normalizer_, [this](pid_t pid, const Module& m) { return ModuleFile(pid, m); },
          std::move(unwind_tables)),
      off_cpu_scale_(off_cpu_sample > 0 && off_cpu_sample < 1 ? 1 / off_cpu_sample : 1.0) {
  if (python) python_ = std::make_unique<PythonStacks>(std::move(python));
}

std::shared_ptr<ElfFile> SampleAggregator::ModuleFile(pid_t pid, const Module& m) {
  if (std::shared_ptr<ElfFile> kept = profile_.files.Find(m)) return kept;
  std::string key = ModuleKey(m.kind, m.path, m.build_id);
  auto [it, inserted] = unwind_files_.try_emplace(std::move(key));
  if (inserted || !it->second) it->second = OpenModuleFile(pid, m);
  return it->second;
}

uint32_t SampleAggregator::InternModule(pid_t pid, const Module& module) {
  // Anonymous memory is its process's own: its JIT code is named from that process's files.
  Module anonymous;
  if (module.kind == ModuleKind::kAnonymous && pid > 0) {
    anonymous = module;
    anonymous.pid = static_cast<uint32_t>(pid);
  }
  const Module& m = anonymous.pid != 0 ? anonymous : module;
  std::string key = ModuleKey(m.kind, m.path, m.build_id, m.pid);
  if (auto it = module_index_.find(key); it != module_index_.end()) {
    uint32_t index = it->second;
    if (m.kind == ModuleKind::kElf && !profile_.files.Find(profile_.modules[index])) {
      // Retry: the last open may have failed.
      profile_.files.Keep(profile_.modules[index], OpenModuleFile(pid, m));
    }
    return index;
  }
  uint32_t index = profile_.AddModule(m);
  if (m.pid != 0) NoteJitProcess(pid);
  if (auto opened = unwind_files_.find(key); opened != unwind_files_.end() && opened->second) {
    profile_.files.Keep(profile_.modules[index], std::move(opened->second));
    unwind_files_.erase(opened);
  } else if (auto carried = carried_files_.find(key);
             carried != carried_files_.end() && carried->second) {
    profile_.files.Keep(profile_.modules[index], carried->second);
  } else {
    profile_.files.Keep(profile_.modules[index], OpenModuleFile(pid, m));
  }
  module_index_.emplace(std::move(key), index);
  return index;
}

ProfileFrame SampleAggregator::UserFrame(uint32_t module, uint64_t file_offset,
                                         uint64_t vaddr) const {
  // A module with a pid is anonymous memory: its frames keep the process's address, which its
  // perf map names.
  return {FrameKind::kUser, module, profile_.modules[module].pid != 0 ? vaddr : file_offset};
}

void SampleAggregator::NoteJitProcess(pid_t pid) {
  auto [it, inserted] = jit_processes_.try_emplace(static_cast<uint32_t>(pid));
  if (!inserted || jit_processes_.size() > kMaxOpenJitProcesses) return;
  if (Result<normalize::ProcessJitFiles> files = normalize::ProcessJitFiles::Open(pid)) {
    it->second = std::make_unique<normalize::ProcessJitFiles>(std::move(*files));
  }
}

void SampleAggregator::CollectJitFiles() {
  for (auto it = jit_processes_.begin(); it != jit_processes_.end();) {
    const pid_t pid = static_cast<pid_t>(it->first);
    if (!it->second) {
      // Gone, or closed to us, before it could be opened: the host's /tmp may have its files.
      Result<normalize::ProcessJitFiles> opened = normalize::ProcessJitFiles::Open(pid);
      it->second = std::make_unique<normalize::ProcessJitFiles>(
          opened ? std::move(*opened) : normalize::ProcessJitFiles::HostOnly(pid));
    }
    JitFiles files = it->second->Read();
    if (!files.perf_map_path.empty() || !files.jitdump_path.empty()) {
      profile_.jit_files[it->first] = std::make_shared<const JitFiles>(std::move(files));
    }
    it = it->second->Alive() ? std::next(it) : jit_processes_.erase(it);
  }
}

uint32_t SampleAggregator::KernelModule() {
  if (kernel_module_ == UINT32_MAX) {
    kernel_module_ = profile_.AddModule({ModuleKind::kKernel, "[kernel.kallsyms]", {}});
  }
  return kernel_module_;
}

const NormalizedBatch& SampleAggregator::Normalize(pid_t pid) {
  batch_.addresses.clear();
  batch_.modules.clear();
  if (addrs_.empty()) return batch_;
  // Errors only for meaningless pids: then every frame stays raw.
  if (Result<NormalizedBatch> batch = normalizer_.Normalize(pid, addrs_); batch) {
    batch_ = std::move(*batch);
  }
  return batch_;
}

void SampleAggregator::AppendUserFrames(const RawSample& s, std::span<const uint64_t> ips,
                                        std::vector<uint32_t>* frames) {
  addrs_.assign(ips.begin(), ips.end());
  for (size_t i = 1; i < addrs_.size(); ++i) addrs_[i] = CallerAddress(addrs_[i]);
  const NormalizedBatch& batch = Normalize(static_cast<pid_t>(s.pid));
  std::vector<uint32_t> module_map(batch.modules.size(), UINT32_MAX);
  for (size_t i = 0; i < addrs_.size(); ++i) {
    ProfileFrame pf;
    if (i < batch.addresses.size() && batch.addresses[i].ok()) {
      const NormalizedAddress& f = batch.addresses[i];
      uint32_t& m = module_map[f.module];
      if (m == UINT32_MAX) m = InternModule(static_cast<pid_t>(s.pid), batch.modules[f.module]);
      pf = UserFrame(m, f.file_offset, addrs_[i]);
    } else {
      ++counters_.frames_not_normalized;
      pf = {FrameKind::kUserRaw, 0, addrs_[i]};
    }
    frames->push_back(profile_.InternFrame(pf));
  }
}

void SampleAggregator::AppendBuildIdFrames(const RawSample& s, std::vector<uint32_t>* frames) {
  // Frames the kernel could not normalize carry raw IPs: normalize those here, in one batch.
  addrs_.clear();
  for (size_t i = 0; i < s.user_build_id_frames.size(); ++i) {
    const BuildIdFrame& f = s.user_build_id_frames[i];
    if (f.status != kBuildIdFrameValid) {
      addrs_.push_back(i == 0 ? f.offset_or_ip : CallerAddress(f.offset_or_ip));
    }
  }
  const NormalizedBatch& batch = Normalize(static_cast<pid_t>(s.pid));
  size_t next_fallback = 0;
  for (size_t i = 0; i < s.user_build_id_frames.size(); ++i) {
    const BuildIdFrame& f = s.user_build_id_frames[i];
    ProfileFrame pf;
    if (f.status == kBuildIdFrameValid) {
      ++counters_.build_id_frames;
      // The kernel's offset is that of the return address for callers; step back into the
      // call instruction like for raw IPs.
      uint64_t offset = i == 0 ? f.offset_or_ip : CallerAddress(f.offset_or_ip);
      // BPF build IDs are padded to 20 bytes; the real length is unknown here, so trust it
      // as is except for trailing zero padding of shorter IDs.
      size_t len = sizeof(f.build_id);
      while (len > 0 && f.build_id[len - 1] == 0) --len;
      std::span<const uint8_t> id(f.build_id, len);
      std::optional<Module> module = normalizer_.FindModuleByBuildId(static_cast<pid_t>(s.pid), id);
      Module m;
      if (module) {
        m = std::move(*module);
      } else {
        m.kind = ModuleKind::kElf;
        m.build_id.assign(id.begin(), id.end());
      }
      pf = {FrameKind::kUser, InternModule(static_cast<pid_t>(s.pid), m), offset};
    } else {
      ++counters_.build_id_fallbacks;
      size_t k = next_fallback++;
      if (k < batch.addresses.size() && batch.addresses[k].ok()) {
        const NormalizedAddress& uf = batch.addresses[k];
        pf = UserFrame(InternModule(static_cast<pid_t>(s.pid), batch.modules[uf.module]),
                       uf.file_offset, addrs_[k]);
      } else {
        ++counters_.frames_not_normalized;
        pf = {FrameKind::kUserRaw, 0, addrs_[k]};
      }
    }
    frames->push_back(profile_.InternFrame(pf));
  }
}

// Verify mode: the chain the BPF program unwound against the one the stack copy gives here.
// A walk of the copy that ran out of copied stack agrees when the BPF chain starts with it.
void SampleAggregator::Verify(const RawSample& s, UnwindEnd end) {
  // The reference could not place even the sampled pc (the process had exited, or exec'd,
  // before a late reader got to it, and was never looked up while it lived): there is
  // nothing to compare the BPF chain with.
  if (end == UnwindEnd::kUnmappedPc && unwound_.size() <= 1) {
    ++counters_.verify_no_reference;
    return;
  }
  std::span<const uint64_t> bpf_ips = s.verify_bpf_ips;
  // Nor past a return address it cannot place while the BPF walk, with the mappings of the
  // moment of the sample, went on from the same frames: a reader that came after an exec sees
  // the new image's libraries at other addresses (a non-PIE python3 keeps its own, so the walk
  // gets that far). The frames both have agree; the rest has no reference.
  if (end == UnwindEnd::kUnmappedPc && bpf_ips.size() > unwound_.size() &&
      std::equal(unwound_.begin(), unwound_.end(), bpf_ips.begin())) {
    ++counters_.verify_no_reference;
    return;
  }
  ++counters_.verify_samples;
  std::span<const uint64_t> bpf = s.verify_bpf_ips;
  bool copy_short = end == UnwindEnd::kStackCopyTooShort || end == UnwindEnd::kPageNotReadable;
  bool same = bpf.size() == unwound_.size() && std::equal(bpf.begin(), bpf.end(), unwound_.begin());
  if (!same && copy_short && bpf.size() > unwound_.size()) {
    same = std::equal(unwound_.begin(), unwound_.end(), bpf.begin());
  }
  if (same) {
    ++counters_.verify_agreed;
    return;
  }
  if (verify_differences_.size() >= 1000) return;
  char buf[32];
  // How late the sample was read: a reader that falls behind a process's exit or exec can no
  // longer resolve its mappings from /proc, which is the usual cause of a difference.
  const double late_ms =
      (static_cast<double>(MonotonicNs()) - static_cast<double>(s.time_ns)) / 1e6;
  char late[48];
  snprintf(late, sizeof(late), " read %.0f ms late", late_ms);
  std::string d = "pid " + std::to_string(s.pid) + " tid " + std::to_string(s.tid) + " (" +
                  std::string(s.comm) + ")" + late + " copy[" + UnwindEndName(end) + "]:";
  for (uint64_t pc : unwound_) {
    snprintf(buf, sizeof(buf), " %llx", static_cast<unsigned long long>(pc));
    d += buf;
  }
  d += " | bpf:";
  for (uint64_t pc : bpf) {
    snprintf(buf, sizeof(buf), " %llx", static_cast<unsigned long long>(pc));
    d += buf;
  }
  verify_differences_.push_back(std::move(d));
}

// Sampled intervals stand for 1/p as many: their time is scaled so that totals stay right.
void SampleAggregator::AddOffCpu(const ProfileStack& stack, uint64_t ns, uint64_t intervals,
                                 uint64_t end_ns) {
  profile_.AddOffCpu(stack,
                     static_cast<uint64_t>(std::llround(static_cast<double>(ns) * off_cpu_scale_)),
                     WallTime(end_ns));
  counters_.off_cpu += intervals;
  counters_.off_cpu_ns += ns;
}

// The end of an interval whose stacks came when it began.
void SampleAggregator::CloseOffCpu(const RawSample& s) {
  auto it = open_off_cpu_.find(s.tid);
  if (it == open_off_cpu_.end() || it->second.start_ns != s.time_ns) {
    if (s.off_cpu == OffCpuPart::kClose) ++counters_.off_cpu_unmatched;
    return;
  }
  if (s.off_cpu == OffCpuPart::kClose) {
    AddOffCpu(it->second.stack, s.off_cpu_ns, 1, s.time_ns + s.off_cpu_ns);
  }
  open_off_cpu_.erase(it);
}

void SampleAggregator::Add(const RawSample& s) {
  if (s.off_cpu == OffCpuPart::kClose || s.off_cpu == OffCpuPart::kDiscard) {
    CloseOffCpu(s);
    return;
  }
  if (s.exec) {
    normalizer_.Invalidate(static_cast<pid_t>(s.pid));
    unwinder_.Forget(static_cast<pid_t>(s.pid));
    processes_.erase(s.pid);  // another executable now
    carried_processes_.erase(s.pid);
    if (profile_.FindProcess(s.pid))
      profile_.AddProcess(ReadProcessInfo(static_cast<pid_t>(s.pid)));
    return;
  }
  NoteProcess(s.pid);
  stack_.pid = s.pid;
  stack_.tid = s.tid;
  stack_.comm.assign(s.comm.data(), s.comm.size());
  stack_.frames.clear();
  stack_.state = s.off_cpu != OffCpuPart::kNone ? s.state : ThreadState::kRunning;
  if (!s.kernel_ips.empty()) {
    uint32_t km = KernelModule();
    for (size_t i = 0; i < s.kernel_ips.size(); ++i) {
      uint64_t addr = i == 0 ? s.kernel_ips[i] : CallerAddress(s.kernel_ips[i]);
      stack_.frames.push_back(profile_.InternFrame({FrameKind::kKernel, km, addr}));
    }
  }
  std::span<const uint64_t> user_ips = s.user_ips;
  if (s.bpf_unwind_end >= 0 && s.bpf_unwind_end < kUnwindEndCount) {
    counters_.bpf_unwind_ends[s.bpf_unwind_end] += s.count;
  }
  if (s.user_stack != nullptr) {
    bool from_memo = false;
    UnwindEnd end =
        unwinder_.Unwind(static_cast<pid_t>(s.pid), *s.user_stack, &unwound_, &from_memo);
    counters_.user_stacks_unwound += s.count;
    if (from_memo) counters_.unwind_cache_hits += s.count;
    counters_.unwind_ends[static_cast<int>(end)] += s.count;
    user_ips = unwound_;
    if (s.verify) Verify(s, end);
  }
  if (s.user_context_missing) counters_.user_context_missing += s.count;
  size_t user_frames = user_ips.size() + s.user_build_id_frames.size();
  if (!s.kernel_thread && !s.user_stack_dropped && s.pid != 0) {
    if (user_frames == 0) counters_.user_stacks_empty += s.count;
    if (user_frames >= kMaxStackFrames) counters_.user_stacks_truncated += s.count;
  }
  size_t user_begin = stack_.frames.size();
  if (!s.user_build_id_frames.empty()) {
    AppendBuildIdFrames(s, &stack_.frames);
  } else if (!user_ips.empty()) {
    AppendUserFrames(s, user_ips, &stack_.frames);
  }
  if (python_ && s.python) python_->Splice(s, user_begin, profile_, &stack_.frames);
  if (s.off_cpu == OffCpuPart::kInterval) {
    // A sum of count intervals (time 0: drained from the kernel's sums just now).
    AddOffCpu(stack_, s.off_cpu_ns, s.count, s.time_ns);
    return;
  }
  if (s.off_cpu == OffCpuPart::kOpen) {
    // Normalized now, while the process lives; kept until its end says how long it was.
    open_off_cpu_[s.tid] = {s.time_ns, stack_};
    return;
  }
  profile_.AddSample(stack_, s.count, WallTime(s.time_ns));
  counters_.aggregated += s.count;
}

// Monotonic sample time → wall clock; 0 (no time: a sum drained from the kernel) is now.
uint64_t SampleAggregator::WallTime(uint64_t monotonic_ns) {
  if (!profile_.keep_times) return 0;
  if (monotonic_ns == 0) monotonic_ns = MonotonicNs();
  if (monotonic_ns < not_before_ns_) {
    ++late_samples_;
    monotonic_ns = not_before_ns_;
  }
  return static_cast<uint64_t>(static_cast<int64_t>(monotonic_ns) + wall_minus_monotonic_ns_);
}

// The first sample of a process in this profile: what /proc says of it (read once while it
// lives; a window after the first takes it from the last window).
void SampleAggregator::NoteProcess(uint32_t pid) {
  if (pid == 0 || profile_.FindProcess(pid)) return;
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    auto carried = carried_processes_.find(pid);
    ProfileProcess info = carried != carried_processes_.end()
                              ? carried->second
                              : ReadProcessInfo(static_cast<pid_t>(pid));
    it = processes_.emplace(pid, std::move(info)).first;
  }
  profile_.AddProcess(it->second);
}

// A stack of `from` as the same frames in profile_ (modules, files and Python names with it).
ProfileStack SampleAggregator::CarryStack(const Profile& from, const ProfileStack& stack) {
  ProfileStack out = stack;
  for (uint32_t& frame : out.frames) {
    ProfileFrame f = from.frames[frame];
    if (f.kind != FrameKind::kUserRaw && f.module < from.modules.size()) {
      const Module& module = from.modules[f.module];
      f.module = profile_.AddModule(module);
      if (!profile_.files.Find(module)) profile_.files.Keep(module, from.files.Find(module));
    }
    uint32_t index = profile_.InternFrame(f);
    if (frame < from.symbols.size() && from.symbols[frame]) {
      profile_.symbols.resize(profile_.frames.size());
      if (!profile_.symbols[index]) profile_.symbols[index] = from.symbols[frame];
    }
    frame = index;
  }
  return out;
}

Profile SampleAggregator::TakeProfile() {
  CollectJitFiles();  // as they are at the window's end
  Profile next;
  next.period_ns = profile_.period_ns;
  next.event = profile_.event;
  next.off_cpu_recorded = profile_.off_cpu_recorded;
  next.keep_times = profile_.keep_times;
  std::swap(next, profile_);  // `next` is now the window handed over
  // What the modules interned refer to is the old profile's: start again, keeping the files.
  module_index_.clear();
  kernel_module_ = UINT32_MAX;
  if (python_) python_->StartProfile();
  carried_files_.clear();
  for (const Module& module : next.modules) {
    if (std::shared_ptr<ElfFile> file = next.files.Find(module)) {
      carried_files_.emplace(ModuleKey(module.kind, module.path, module.build_id), file);
    }
  }
  // The files stay open for the next window, their pages do not stay resident: on a build
  // host the pages of the big short-lived binaries read for unwinding and normalizing were
  // most of a long-lived agent's memory. They are read again from the page cache when needed
  // (the window handed over holds the same files: MADV_DONTNEED on a read-only file mapping
  // is safe while another thread reads it).
  for (const auto& [key, file] : carried_files_) file->ReleasePages();
  for (const auto& [key, file] : unwind_files_) {
    if (file) file->ReleasePages();
  }
  carried_processes_ = std::move(processes_);
  processes_.clear();
  for (auto& [tid, open] : open_off_cpu_) open.stack = CarryStack(next, open.stack);
  return next;
}

}  // namespace stacksym::capture
