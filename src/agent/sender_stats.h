// What one destination's sender did, for the agent's metrics: requests sent, retried and
// dropped by reason, bytes and samples sent, and the time each attempt took.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace stacksym::agent {

struct SenderCounts {
  uint64_t sent = 0;
  uint64_t sent_bytes = 0;
  uint64_t sent_samples = 0;
  uint64_t partial = 0;  // accepted with some of it rejected (OTLP partial success)
  std::map<std::string, uint64_t> retried;  // by reason ("status_503", "connection", ...)
  std::map<std::string, uint64_t> dropped;  // by reason ("status_400", "shutdown", ...)
  uint64_t attempts = 0;
  double attempt_seconds = 0;  // summed over attempts
  double last_attempt_seconds = 0;
};

class SenderStats {
 public:
  void Sent(uint64_t bytes, uint64_t samples, bool partial);
  void Retried(const std::string& reason);
  void Dropped(const std::string& reason);
  void Attempt(double seconds);
  SenderCounts Snapshot() const;

 private:
  mutable std::mutex mu_;
  SenderCounts counts_;
};

}  // namespace stacksym::agent
