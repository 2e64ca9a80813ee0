// perf_event_open helpers shared by the BPF backends (which attach their program to one
// sampling event per CPU) and the perf backend.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "stacksym/capture.h"
#include "stacksym/result.h"

namespace stacksym::capture {

// attr for sampling `event` at `frequency_hz`.
perf_event_attr SamplingAttr(CaptureEvent event, uint32_t frequency_hz);
// perf_event_open(2); Error with a hint on EACCES/EPERM/ENOENT.
Result<int> PerfEventOpen(perf_event_attr* attr, int pid, int cpu, int group_fd,
                          unsigned long flags);
// Whether the hardware cycles event can be opened on `cpu` (false: no PMU, e.g. in a VM).
bool CyclesAvailable(int cpu);

}  // namespace stacksym::capture
