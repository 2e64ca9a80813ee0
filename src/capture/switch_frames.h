// SwitchFrames — the tracing frames on top of an off-CPU kernel stack, found by address.
//
// The sched_switch program takes the kernel stack from inside itself; bpf_get_stack skips a
// fixed count of frames (the program and bpf_trace_run4), but whether __traceiter_sched_switch
// (the tracepoint's caller of its programs) shows as a frame of its own varies with the kernel
// and with the JIT's frame of the program. Its address range, read from kallsyms once, tells:
// a stack is cut after it, so that every off-CPU kernel stack starts at __schedule.
//
//   SwitchFrames frames = SwitchFrames::FromKallsyms();      // /proc/kallsyms
//   std::span<const uint64_t> ips = frames.Trim(kernel_ips);  // innermost first
//
// Where kallsyms hides addresses (kernel.kptr_restrict) nothing is cut.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace stacksym::capture {

class SwitchFrames {
 public:
  // Reads kallsyms up to the symbol after __traceiter_sched_switch.
  static SwitchFrames FromKallsyms(const std::string& path = "/proc/kallsyms");
  // The same from kallsyms text (tests).
  static SwitchFrames FromText(std::string_view text);

  // `ips` without its frames up to and including one in __traceiter_sched_switch, when one of
  // its first kMaxLookahead frames is; else `ips` itself.
  std::span<const uint64_t> Trim(std::span<const uint64_t> ips) const;

  bool known() const { return start_ < end_; }

  static constexpr size_t kMaxLookahead = 4;

 private:
  uint64_t start_ = 0, end_ = 0;  // [start, end) of __traceiter_sched_switch
};

}  // namespace stacksym::capture
