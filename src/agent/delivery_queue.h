// The delivery queue between closed windows and the senders: bounded in bytes, one FIFO per
// destination, the globally oldest request dropped (and counted) when a new one does not fit.
// A sender takes the front of its FIFO, tries it (perhaps many times, while the store is down)
// and then settles it; a request dropped while being tried is simply not counted as sent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "stacksym/export.h"

namespace stacksym::agent {

struct QueuedRequest {
  ExportRequest request;
  uint64_t sequence = 0;      // order of arrival, across destinations
  uint64_t window_start = 0;  // the window's start (wall clock ns), for logs and tests
  uint64_t bytes() const { return request.body.size() + request.path.size() + 64; }
};

struct DeliveryQueueCounters {
  uint64_t queued = 0;            // requests accepted
  uint64_t dropped_full = 0;      // dropped to make room (the oldest first)
  uint64_t dropped_too_big = 0;   // larger than the whole queue
  uint64_t dropped_shutdown = 0;  // still queued when Abort() ended the flush
  uint64_t bytes = 0;             // bytes held now (queued and being tried)
  uint64_t requests = 0;          // requests held now
};

class DeliveryQueue {
 public:
  DeliveryQueue(uint64_t max_bytes, size_t destinations);

  // Adds a request for `destination`, dropping the oldest requests (of any destination) until
  // it fits; false when it alone is larger than the queue (it is dropped and counted).
  bool Push(size_t destination, ExportRequest request, uint64_t window_start);
  // The front request of `destination`, waiting up to `timeout` for one; null on timeout or
  // once Close()d and empty. It stays counted in the queue until Settle.
  std::shared_ptr<const QueuedRequest> Front(size_t destination, std::chrono::milliseconds timeout);
  // The request is done with (sent, or given up): removed unless it was dropped meanwhile.
  // Returns false when it had been dropped to make room while it was being tried.
  bool Settle(size_t destination, const std::shared_ptr<const QueuedRequest>& request);
  // No more pushes: Front returns null once a destination's FIFO is empty.
  void Close();
  // Wakes senders waiting in Front (shutdown deadline passed); what is still queued is counted
  // as dropped at shutdown.
  void Abort();
  bool aborted() const;
  // Until every FIFO is empty or the deadline passes; true when empty.
  bool WaitEmpty(std::chrono::steady_clock::time_point deadline);
  DeliveryQueueCounters counters() const;

 private:
  void DropOldest();  // with mu_ held

  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::deque<std::shared_ptr<const QueuedRequest>>> fifos_;
  uint64_t next_sequence_ = 0;
  bool closed_ = false;
  bool aborted_ = false;
  DeliveryQueueCounters counters_;
};

}  // namespace stacksym::agent
