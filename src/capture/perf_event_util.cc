#include "capture/perf_event_util.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace stacksym::capture {

perf_event_attr SamplingAttr(CaptureEvent event, uint32_t frequency_hz) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  if (event == CaptureEvent::kCycles) {
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
  } else {
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
  }
  attr.freq = 1;
  attr.sample_freq = frequency_hz;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;  // same clock as bpf_ktime_get_ns
  return attr;
}

Result<int> PerfEventOpen(perf_event_attr* attr, int pid, int cpu, int group_fd,
                          unsigned long flags) {
  long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string what = "perf_event_open (cpu " + std::to_string(cpu) + ")";
    if (err == EACCES || err == EPERM) {
      what += " — needs CAP_PERFMON (or root), or a lower kernel.perf_event_paranoid";
    } else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
      what += " — the event is not supported here";
    }
    return ErrnoError(err, what);
  }
  return static_cast<int>(fd);
}

bool CyclesAvailable(int cpu) {
  perf_event_attr attr = SamplingAttr(CaptureEvent::kCycles, 99);
  attr.disabled = 1;
  Result<int> fd = PerfEventOpen(&attr, -1, cpu, -1, 0);
  if (!fd) return false;
  close(*fd);
  return true;
}

}  // namespace stacksym::capture
