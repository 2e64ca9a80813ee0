#include "capture/off_cpu_sums.h"

#include <bpf/bpf.h>
#include <linux/membarrier.h>
#include <linux/types.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

// clang-format off
#include "bpf/sample_event.h"
// clang-format on

namespace stacksym::capture {

void WaitForBpfRuns() {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) {
    usleep(20000);  // nohz_full kernels refuse it; a run takes microseconds
  }
}

void OffCpuSums::Init(int control_fd, int sums0_fd, int sums1_fd) {
  control_fd_ = control_fd;
  fds_[0] = sums0_fd;
  fds_[1] = sums1_fd;
  active_ = 0;
  value_.resize(sizeof(stacksym_off_cpu_sum));
}

void OffCpuSums::Drain(const Deliver& deliver, bool detached) {
  if (!enabled()) return;
  const uint32_t old = active_;
  if (!detached) {
    uint32_t zero = 0;
    stacksym_off_cpu_control next = {1 - old};
    if (bpf_map_update_elem(control_fd_, &zero, &next, BPF_ANY) != 0) return;
    active_ = next.active;
    WaitForBpfRuns();
  }
  DrainMap(fds_[old], deliver);
  if (detached) DrainMap(fds_[1 - old], deliver);
}

// The first key each time: the one before it is deleted.
void OffCpuSums::DrainMap(int fd, const Deliver& deliver) {
  stacksym_off_cpu_key key;
  auto* v = reinterpret_cast<stacksym_off_cpu_sum*>(value_.data());
  while (bpf_map_get_next_key(fd, nullptr, &key) == 0) {
    if (bpf_map_lookup_elem(fd, &key, v) == 0 && v->len >= sizeof(stacksym_sample) &&
        v->len <= sizeof(v->record)) {
      deliver(v->record, v->len, v->ns, v->count);
    }
    if (bpf_map_delete_elem(fd, &key) != 0) break;
  }
}

}  // namespace stacksym::capture
