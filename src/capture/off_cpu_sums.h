// --off-cpu: the intervals the BPF program adds up in the kernel, by record, in two hash maps
// used in turns (bpf/sample_event.h: stacksym_off_cpu_sum). Draining one flips the program to
// the other and waits for the program's runs that may still add to the first to end, so that
// no addition is lost and none lands in a sum already read.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace stacksym::capture {

// Waits until every run of a BPF program that began before now has ended: membarrier's global
// command is synchronize_rcu(), and the programs run inside RCU read sections.
void WaitForBpfRuns();

class OffCpuSums {
 public:
  // A sum: the record's bytes (bpf/sample_event.h's stacksym_sample and its stacks, with
  // time_ns and cpu 0), the nanoseconds and number of intervals added up.
  using Deliver =
      std::function<void(const uint8_t* record, uint32_t len, uint64_t ns, uint64_t count)>;

  // control_fd: the map whose `active` says which of the two sums maps the program adds to.
  void Init(int control_fd, int sums0_fd, int sums1_fd);
  bool enabled() const { return control_fd_ >= 0; }
  // Hands on and deletes the sums of the map the program used until now (flipped first);
  // `detached`: the program runs no more, so both maps, without a flip.
  void Drain(const Deliver& deliver, bool detached);

 private:
  void DrainMap(int fd, const Deliver& deliver);

  int control_fd_ = -1;
  int fds_[2] = {-1, -1};
  uint32_t active_ = 0;
  std::vector<uint8_t> value_;
};

}  // namespace stacksym::capture
