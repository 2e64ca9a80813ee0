// Clock readings, in one place. MonotonicNs() is the clock the BPF program (bpf_ktime_get_ns)
// and perf events (clockid CLOCK_MONOTONIC) stamp samples with; MonotonicSeconds() is for
// timeouts and rates; WallNs()/WallSeconds() for what goes on the wire (Unix time).
//
//   double started = MonotonicSeconds();
//   ... if (MonotonicSeconds() - started > timeout) ...
#pragma once

#include <time.h>

#include <cstdint>

namespace stacksym {

inline uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
inline uint64_t WallNs() { return ClockNs(CLOCK_REALTIME); }
inline double MonotonicSeconds() { return static_cast<double>(MonotonicNs()) * 1e-9; }
inline double WallSeconds() { return static_cast<double>(WallNs()) * 1e-9; }

}  // namespace stacksym
