// The perf_event_open backend: one sampling event per CPU with PERF_SAMPLE_CALLCHAIN, read
// from its mmap ring. Used when BPF cannot load, or with --backend perf. Targets are filtered
// here in user space (cgroups by the kernel, through PERF_FLAG_PID_CGROUP); the command's
// descendants are followed through PERF_RECORD_FORK, thread names through PERF_RECORD_COMM.
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/perf_event_util.h"
#include "capture/sample_source.h"

namespace stacksym::capture {
namespace {

class PerfSource : public SampleSource {
 public:
  ~PerfSource() override { Close(); }

  Result<void> Open(const SourceConfig& config) {
    event_ = config.event;
    include_idle_ = config.options.include_idle;
    kernel_stacks_ = config.options.kernel_stacks;
    user_stacks_ = config.options.user_stacks;
    stack_copy_ = user_stacks_ && config.options.call_graph == CallGraph::kDwarf;
    requested_stack_ = config.options.stack_copy_bytes;
    follow_ = config.follow_forks;
    tgids_.insert(config.tgids.begin(), config.tgids.end());
    tids_.insert(config.tids.begin(), config.tids.end());
    filter_ = !tgids_.empty() || !tids_.empty();

    Result<std::vector<int>> cpus = OnlineCpus();
    if (!cpus) return cpus.error();
    long page = sysconf(_SC_PAGESIZE);
    // Share --ringbuf-size among the CPUs; each ring is a power of two of pages.
    uint64_t per_cpu = config.options.ringbuf_size / cpus->size();
    size_t pages = 8;
    while (pages * page < per_cpu && pages < 4096) pages <<= 1;
    data_size_ = pages * page;
    for (int cpu : *cpus) {
      perf_event_attr attr = SamplingAttr(event_, config.options.frequency_hz);
      attr.sample_type =
          PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
      attr.exclude_callchain_kernel = !kernel_stacks_;
      attr.exclude_callchain_user = !user_stacks_ || stack_copy_;
      if (stack_copy_) {
        // perf's --call-graph dwarf: the user RBP, RSP, RIP and the top of the user stack.
        attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        attr.sample_regs_user = kUserRegsMask;
        attr.sample_stack_user = config.options.stack_copy_bytes;
      }
      attr.disabled = 1;
      attr.comm = 1;
      attr.task = 1;  // PERF_RECORD_FORK / EXIT
      attr.sample_id_all = 1;
      attr.wakeup_events = 0;
      attr.watermark = 1;
      attr.wakeup_watermark = static_cast<uint32_t>(data_size_ / 4);
      int pid = -1;
      unsigned long flags = 0;
      if (config.filter_cgroup) {
        pid = config.cgroup_fd;
        flags = PERF_FLAG_PID_CGROUP;
      }
      Result<int> fd = PerfEventOpen(&attr, pid, cpu, -1, flags);
      if (!fd) return fd.error();
      Ring ring;
      ring.fd = *fd;
      rings_.push_back(ring);
      void* base = mmap(nullptr, data_size_ + page, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
      if (base == MAP_FAILED) return ErrnoError(errno, "mmap of the perf ring");
      rings_.back().base = static_cast<uint8_t*>(base);
      rings_.back().page = static_cast<size_t>(page);
    }
    for (Ring& r : rings_) {
      if (ioctl(r.fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        return ErrnoError(errno, "enabling the perf event");
      }
    }
    return {};
  }

  CaptureBackend backend() const override { return CaptureBackend::kPerf; }
  CaptureEvent event() const override { return event_; }

  Result<void> Poll(int timeout_ms, const SampleCallback& callback) override {
    std::vector<pollfd> fds;
    for (const Ring& r : rings_) fds.push_back({r.fd, POLLIN, 0});
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) return ErrnoError(errno, "poll on perf events");
    for (Ring& r : rings_) ReadRing(r, callback);
    return {};
  }

  Result<void> StopAndDrain(const SampleCallback& callback) override {
    for (Ring& r : rings_) ioctl(r.fd, PERF_EVENT_IOC_DISABLE, 0);
    for (Ring& r : rings_) ReadRing(r, callback);
    return {};
  }

  SourceCounters Counters() override {
    SourceCounters c;
    c.samples = samples_ + lost_;
    c.lost = lost_;
    c.stack_copy_bytes = stack_copy_bytes_;
    c.stack_copy_cut = stack_copy_cut_;
    return c;
  }

 private:
  // x86 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h): BP 6, SP 7, IP 8; the
  // kernel writes the selected registers in ascending number order.
  static constexpr uint64_t kUserRegsMask = (1ull << 6) | (1ull << 7) | (1ull << 8);

  struct Ring {
    int fd = -1;
    uint8_t* base = nullptr;  // metadata page, then data
    size_t page = 0;
  };

  bool IsTarget(uint32_t pid, uint32_t tid) {
    if (tid == 0 && !include_idle_) return false;
    if (!filter_) return true;
    if (tgids_.count(static_cast<pid_t>(pid)) || tids_.count(static_cast<pid_t>(tid))) return true;
    return follow_ && IsNewChild(pid);
  }

  // Each CPU has its own ring, so a child's first samples can be read before the
  // PERF_RECORD_FORK that announces it: ask /proc for the parent of a pid not seen yet.
  bool IsNewChild(uint32_t pid) {
    auto [it, inserted] = not_children_.insert(pid);
    if (!inserted) return false;
    std::string path = "/proc/" + std::to_string(pid) + "/status";
    FILE* f = fopen(path.c_str(), "re");
    if (f == nullptr) return false;
    char line[256];
    long ppid = -1;
    while (fgets(line, sizeof(line), f)) {
      if (sscanf(line, "PPid: %ld", &ppid) == 1) break;
    }
    fclose(f);
    if (ppid <= 0 || !tgids_.count(static_cast<pid_t>(ppid))) return false;
    not_children_.erase(it);
    tgids_.insert(static_cast<pid_t>(pid));
    return true;
  }

  void ReadRing(Ring& r, const SampleCallback& callback) {
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(r.base);
    uint8_t* data = r.base + r.page;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    while (tail + sizeof(perf_event_header) <= head) {
      perf_event_header hdr;
      CopyOut(data, tail, &hdr, sizeof(hdr));
      if (hdr.size < sizeof(hdr) || tail + hdr.size > head) break;
      record_.resize(hdr.size);
      CopyOut(data, tail, record_.data(), hdr.size);
      Handle(hdr, record_.data(), callback);
      tail += hdr.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  }

  void CopyOut(const uint8_t* data, uint64_t pos, void* out, size_t len) const {
    size_t off = pos & (data_size_ - 1);
    size_t first = std::min(len, data_size_ - off);
    std::memcpy(out, data + off, first);
    if (first < len) std::memcpy(static_cast<uint8_t*>(out) + first, data, len - first);
  }

  const std::string& Comm(uint32_t pid, uint32_t tid) {
    auto it = comms_.find(tid);
    if (it != comms_.end()) return it->second;
    std::string name;
    std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm";
    if (FILE* f = fopen(path.c_str(), "re")) {
      char buf[64];
      if (fgets(buf, sizeof(buf), f)) {
        name = buf;
        if (!name.empty() && name.back() == '\n') name.pop_back();
      }
      fclose(f);
    }
    if (tid == 0) name = "swapper";
    return comms_.emplace(tid, name).first->second;
  }

  void Handle(const perf_event_header& hdr, const uint8_t* rec, const SampleCallback& callback) {
    const uint8_t* p = rec + sizeof(hdr);
    const uint8_t* end = rec + hdr.size;
    auto u32_at = [&](const uint8_t* q) {
      uint32_t v;
      std::memcpy(&v, q, 4);
      return v;
    };
    auto u64_at = [&](const uint8_t* q) {
      uint64_t v;
      std::memcpy(&v, q, 8);
      return v;
    };
    switch (hdr.type) {
      case PERF_RECORD_SAMPLE: {
        // TID, TIME, CPU, CALLCHAIN in that order (the kernel's fixed order).
        if (end - p < 8 + 8 + 8 + 8) return;
        uint32_t pid = u32_at(p), tid = u32_at(p + 4);
        uint64_t time = u64_at(p + 8);
        uint32_t cpu = u32_at(p + 16);
        uint64_t nr = u64_at(p + 24);
        p += 32;
        if (nr > static_cast<uint64_t>(end - p) / 8) return;
        const uint8_t* after_chain = p + nr * 8;
        if (!IsTarget(pid, tid)) return;
        ++samples_;
        kips_.clear();
        uips_.clear();
        std::vector<uint64_t>* cur = &kips_;
        for (uint64_t i = 0; i < nr; ++i) {
          uint64_t ip = u64_at(p + 8 * i);
          if (ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) {
            if (ip == static_cast<uint64_t>(PERF_CONTEXT_USER)) {
              cur = &uips_;
            } else if (ip == static_cast<uint64_t>(PERF_CONTEXT_KERNEL)) {
              cur = &kips_;
            } else {
              cur = nullptr;  // hypervisor/guest contexts: not ours
            }
            continue;
          }
          if (cur != nullptr) cur->push_back(ip);
        }
        RawSample s;
        s.pid = pid;
        s.tid = tid;
        s.cpu = cpu;
        s.time_ns = time;
        s.comm = Comm(pid, tid);
        s.kernel_ips = kips_;
        s.user_ips = uips_;
        UserStackParse copy = UserStackParse::kMalformed;
        if (stack_copy_) copy = ParseUserStack(after_chain, end);
        if (copy == UserStackParse::kCopied) s.user_stack = &user_stack_;
        // Seen in user mode: not a kernel thread, even if it has exited when it is asked.
        // (Once per run of samples of one process: not a map lookup per sample.)
        if ((!uips_.empty() || s.user_stack != nullptr) && pid != last_user_pid_) {
          kthreads_.try_emplace(pid, false);
          last_user_pid_ = pid;
        }
        // Kernel threads have no user stack; PERF has no flag for them, so /proc tells.
        s.kernel_thread =
            pid == 0 || (uips_.empty() && s.user_stack == nullptr && IsKernelThread(pid));
        s.user_context_missing =
            copy == UserStackParse::kNoUserRegisters && !s.kernel_thread && uips_.empty();
        callback(s);
        return;
      }
      case PERF_RECORD_LOST: {
        if (end - p >= 16) lost_ += u64_at(p + 8);
        return;
      }
      case PERF_RECORD_COMM: {
        if (end - p < 8) return;
        uint32_t tid = u32_at(p + 4);
        const char* name = reinterpret_cast<const char*>(p + 8);
        comms_[tid] = std::string(name, strnlen(name, static_cast<size_t>(end - p - 8)));
        return;
      }
      case PERF_RECORD_FORK: {
        if (end - p < 16) return;
        uint32_t pid = u32_at(p), ppid = u32_at(p + 4), tid = u32_at(p + 8);
        comms_.erase(tid);
        if (follow_ && pid != ppid && tgids_.count(static_cast<pid_t>(ppid))) {
          tgids_.insert(static_cast<pid_t>(pid));
        }
        return;
      }
      default:
        return;
    }
  }

  // PERF_SAMPLE_REGS_USER (abi, then the registers when abi != NONE) and
  // PERF_SAMPLE_STACK_USER (size, bytes, then the dynamic size actually copied).
  enum class UserStackParse { kCopied, kNoUserRegisters, kMalformed };
  UserStackParse ParseUserStack(const uint8_t* p, const uint8_t* end) {
    auto u64_at = [](const uint8_t* q) {
      uint64_t v;
      std::memcpy(&v, q, 8);
      return v;
    };
    if (end - p < 8) return UserStackParse::kMalformed;
    uint64_t abi = u64_at(p);
    p += 8;
    // No user context: a kernel thread, a sample in entry code before the user registers were
    // saved, or a task past exit_mm.
    if (abi == PERF_SAMPLE_REGS_ABI_NONE) return UserStackParse::kNoUserRegisters;
    if (end - p < 3 * 8 + 8) return UserStackParse::kMalformed;
    user_stack_.bp = u64_at(p);
    user_stack_.sp = u64_at(p + 8);
    user_stack_.ip = u64_at(p + 16);
    p += 24;
    uint64_t size = u64_at(p);
    p += 8;
    if (size > static_cast<uint64_t>(end - p)) return UserStackParse::kMalformed;
    uint64_t dyn_size = 0;
    if (size != 0) {
      if (static_cast<uint64_t>(end - p) - size < 8) return UserStackParse::kMalformed;
      dyn_size = std::min(u64_at(p + size), size);
    }
    user_stack_.bytes = {p, static_cast<size_t>(dyn_size)};
    // The kernel copies what it can up to the requested size and stops at the first fault.
    user_stack_.cut_at_unreadable_page = dyn_size < requested_stack_;
    stack_copy_bytes_ += dyn_size;
    if (dyn_size < requested_stack_) ++stack_copy_cut_;
    return UserStackParse::kCopied;
  }

  // PF_KTHREAD in /proc/PID/stat's flags. (A missing exe link is not enough: an exiting user
  // process loses it at exit_mm, and its last samples would pass for a kernel thread's.)
  bool IsKernelThread(uint32_t pid) {
    auto it = kthreads_.find(pid);
    if (it != kthreads_.end()) return it->second;
    bool kthread = true;  // gone before it was looked at, never seen in user mode
    std::string path = "/proc/" + std::to_string(pid) + "/stat";
    if (FILE* f = fopen(path.c_str(), "re")) {
      char buf[512];
      size_t n = fread(buf, 1, sizeof(buf) - 1, f);
      fclose(f);
      buf[n] = 0;
      // "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold ')'.
      const char* p = strrchr(buf, ')');
      unsigned long long flags = 0;
      if (p != nullptr && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %llu", &flags) == 1) {
        constexpr unsigned long long kPfKthread = 0x00200000;
        kthread = (flags & kPfKthread) != 0;
      }
    }
    kthreads_[pid] = kthread;
    return kthread;
  }

  void Close() {
    for (Ring& r : rings_) {
      if (r.base != nullptr) munmap(r.base, data_size_ + r.page);
      if (r.fd >= 0) close(r.fd);
    }
    rings_.clear();
  }

  CaptureEvent event_ = CaptureEvent::kCpuClock;
  bool include_idle_ = false, kernel_stacks_ = true, user_stacks_ = true, follow_ = false;
  bool filter_ = false;
  bool stack_copy_ = false;
  uint64_t requested_stack_ = 0;
  uint64_t stack_copy_bytes_ = 0, stack_copy_cut_ = 0;
  RawUserStack user_stack_;
  std::unordered_set<pid_t> tgids_, tids_;
  std::unordered_set<uint32_t> not_children_;  // pids already found not to be followed
  std::vector<Ring> rings_;
  size_t data_size_ = 0;
  uint64_t samples_ = 0, lost_ = 0;
  std::vector<uint8_t> record_;
  std::vector<uint64_t> kips_, uips_;
  std::unordered_map<uint32_t, std::string> comms_;
  std::unordered_map<uint32_t, bool> kthreads_;
  uint32_t last_user_pid_ = 0;  // the last pid recorded in kthreads_ as seen in user mode
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenPerfSource(const SourceConfig& config,
                                                     std::vector<std::string>* notes) {
  (void)notes;
  auto source = std::make_unique<PerfSource>();
  if (auto r = source->Open(config); !r) return r.error();
  return std::unique_ptr<SampleSource>(std::move(source));
}

}  // namespace stacksym::capture
