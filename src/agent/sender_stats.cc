#include "agent/sender_stats.h"

namespace stacksym::agent {

void SenderStats::Sent(uint64_t bytes, uint64_t samples, bool partial) {
  std::lock_guard lock(mu_);
  ++counts_.sent;
  counts_.sent_bytes += bytes;
  counts_.sent_samples += samples;
  if (partial) ++counts_.partial;
}

void SenderStats::Retried(const std::string& reason) {
  std::lock_guard lock(mu_);
  ++counts_.retried[reason];
}

void SenderStats::Dropped(const std::string& reason) {
  std::lock_guard lock(mu_);
  ++counts_.dropped[reason];
}

void SenderStats::Attempt(double seconds) {
  std::lock_guard lock(mu_);
  ++counts_.attempts;
  counts_.attempt_seconds += seconds;
  counts_.last_attempt_seconds = seconds;
}

SenderCounts SenderStats::Snapshot() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace stacksym::agent
