#include "agent/delivery_queue.h"

#include <utility>

namespace stacksym::agent {

DeliveryQueue::DeliveryQueue(uint64_t max_bytes, size_t destinations)
    : max_bytes_(max_bytes), fifos_(destinations) {}

bool DeliveryQueue::Push(size_t destination, ExportRequest request, uint64_t window_start) {
  auto item = std::make_shared<QueuedRequest>();
  item->request = std::move(request);
  item->window_start = window_start;
  std::lock_guard lock(mu_);
  if (destination >= fifos_.size() || item->bytes() > max_bytes_) {
    ++counters_.dropped_too_big;
    return false;
  }
  while (counters_.bytes + item->bytes() > max_bytes_ && counters_.requests > 0) DropOldest();
  item->sequence = next_sequence_++;
  counters_.bytes += item->bytes();
  ++counters_.requests;
  ++counters_.queued;
  fifos_[destination].push_back(std::move(item));
  changed_.notify_all();
  return true;
}

void DeliveryQueue::DropOldest() {
  std::deque<std::shared_ptr<const QueuedRequest>>* oldest = nullptr;
  for (auto& fifo : fifos_) {
    if (!fifo.empty() && (!oldest || fifo.front()->sequence < oldest->front()->sequence)) {
      oldest = &fifo;
    }
  }
  if (!oldest) return;
  counters_.bytes -= oldest->front()->bytes();
  --counters_.requests;
  ++counters_.dropped_full;
  oldest->pop_front();
}

std::shared_ptr<const QueuedRequest> DeliveryQueue::Front(size_t destination,
                                                          std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (destination >= fifos_.size()) return nullptr;
  auto& fifo = fifos_[destination];
  changed_.wait_for(lock, timeout, [&] { return !fifo.empty() || closed_ || aborted_; });
  if (fifo.empty() || aborted_) return nullptr;
  return fifo.front();
}

bool DeliveryQueue::Settle(size_t destination,
                           const std::shared_ptr<const QueuedRequest>& request) {
  std::lock_guard lock(mu_);
  if (destination >= fifos_.size()) return false;
  auto& fifo = fifos_[destination];
  if (fifo.empty() || fifo.front() != request) return false;  // dropped while being tried
  counters_.bytes -= request->bytes();
  --counters_.requests;
  fifo.pop_front();
  changed_.notify_all();
  return true;
}

void DeliveryQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  changed_.notify_all();
}

void DeliveryQueue::Abort() {
  std::lock_guard lock(mu_);
  if (!aborted_) counters_.dropped_shutdown = counters_.requests;
  aborted_ = true;
  changed_.notify_all();
}

bool DeliveryQueue::aborted() const {
  std::lock_guard lock(mu_);
  return aborted_;
}

bool DeliveryQueue::WaitEmpty(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return changed_.wait_until(lock, deadline, [&] { return counters_.requests == 0; });
}

DeliveryQueueCounters DeliveryQueue::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace stacksym::agent
