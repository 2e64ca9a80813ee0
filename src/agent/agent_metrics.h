// The agent's /metrics page in the Prometheus text format: what it sampled, what became of each
// window and request, the queue, and what the agent itself costs (CPU, RSS, BPF maps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/delivery_queue.h"
#include "agent/sender_stats.h"
#include "stacksym/agent.h"
#include "stacksym/capture.h"

namespace stacksym::agent {

struct ReceiverMetrics {
  std::string exporter;  // "otlp", "pyroscope"
  std::string url;
  SenderCounts counts;
};

struct AgentMetricsInput {
  RecordStats record;
  AgentStats agent;
  DeliveryQueueCounters queue;
  uint64_t queue_max_bytes = 0;
  std::vector<ReceiverMetrics> receivers;
  uint64_t encode_errors = 0;
  uint64_t output_files = 0;
  uint64_t output_errors = 0;
  uint64_t symbolizer_cached_bytes = 0;
  uint64_t symbolizer_peak_bytes = 0;  // the most they held while the last window was named
};

std::string RenderAgentMetrics(const AgentMetricsInput& in);

// This process's own figures: CPU seconds (user + system), resident bytes, and the kernel memory
// of the BPF maps it holds (the memlock of every BPF map descriptor in /proc/self/fdinfo).
double SelfCpuSeconds();
uint64_t SelfResidentBytes();
uint64_t SelfBpfMapBytes();

}  // namespace stacksym::agent
