// The ring buffer's default size, from the run's sampling rate, CPUs and sample size.
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "capture/sample_source.h"

namespace stacksym::capture {

// A BPF ring buffer's pages are allocated, zeroed and mapped into the reader when it is
// created and unmapped at the end: 32 MiB cost a quarter of a short recording's CPU. The
// default holds a second of the largest samples the run can send from every CPU at its rate
// (with bpf, only a process's first samples are stack copies), within 1..32 MiB.
uint64_t DefaultRingbufSize(const RecordOptions& options) {
  constexpr uint64_t kMin = uint64_t{1} << 20, kMax = uint64_t{32} << 20;
  constexpr uint64_t kHeader = 8 + 64;  // ring record header + sample header
  uint64_t sample = kHeader + (options.kernel_stacks ? kMaxStackFrames * 8 : 0);
  if (options.user_stacks) {
    if (options.call_graph == CallGraph::kFramePointers) {
      sample += kMaxStackFrames * (options.kernel_build_ids ? sizeof(BuildIdFrame) : 8);
    } else {
      // Registers, the copy, and (verify mode) the unwound IPs before them.
      sample += 32 + options.stack_copy_bytes + kMaxStackFrames * 8;
    }
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t cpus = online > 0 ? static_cast<uint64_t>(online) : 1;
  uint64_t hz = std::clamp<uint64_t>(options.frequency_hz, 1, 100000);
  uint64_t want = std::min(hz * cpus * sample, kMax);
  // --off-cpu: switches are not paced by the rate. Until a process's unwind tables reach BPF
  // (milliseconds after its first record is read), each of its switch-outs sends a stack copy,
  // and a process switching 100 000 times a second fills 1 MiB with them before then: the agent
  // at 19 Hz lost 1179 of 250 000 ping-pong intervals with 1 MiB, 30 with 8 MiB.
  constexpr uint64_t kOffCpuCopies = uint64_t{8} << 20;
  if (options.off_cpu && options.user_stacks && options.call_graph != CallGraph::kFramePointers) {
    want = std::max(want, kOffCpuCopies);
  }
  uint64_t size = kMin;
  while (size < want) size <<= 1;
  return size;
}

}  // namespace stacksym::capture
