#include "remote/proxy_frames.h"

#include <utility>

namespace stacksym::remote {

uint32_t FrameBatch::ModuleOf(std::span<const uint8_t> build_id) {
  std::vector<uint8_t> key(build_id.begin(), build_id.end());
  auto [it, inserted] = by_build_id_.try_emplace(std::move(key), modules_.size());
  if (inserted) modules_.emplace_back().build_id = it->first;
  return it->second;
}

FrameRef FrameBatch::Add(uint32_t module, uint64_t address) {
  Module& m = modules_[module];
  auto [at, added] = m.index.try_emplace(address, static_cast<uint32_t>(m.addresses.size()));
  if (added) {
    m.addresses.push_back(address);
    m.ids.push_back(static_cast<uint32_t>(distinct_++));
  }
  return FrameRef{module, at->second, m.ids[at->second]};
}

void FrameBatch::Resolve(SymbolService& service, std::chrono::steady_clock::time_point deadline) {
  for (Module& m : modules_) {
    if (std::chrono::steady_clock::now() > deadline) {
      m.timed_out = true;
      continue;
    }
    SymbolizeRequest request;
    request.modules.push_back(ModuleQuery{m.build_id, m.addresses, kind_});
    Result<SymbolizeResponse> response = service.Symbolize(request, deadline);
    if (!response || response->modules.size() != 1 ||
        response->modules[0].answers.size() != m.addresses.size()) {
      m.timed_out = true;  // the service's only error: the deadline passed
      continue;
    }
    m.answers = std::move(response->modules[0].answers);
  }
}

const FrameSymbols* FrameBatch::Answer(FrameRef ref) const {
  const Module& m = modules_[ref.module];
  if (ref.index >= m.answers.size()) return nullptr;
  const FrameSymbols& a = m.answers[ref.index];
  return a.lines.empty() ? nullptr : &a;
}

void FrameBatch::Count(FrameRef ref, ProxyTally* tally) const {
  ++tally->locations;
  if (Answer(ref) != nullptr) {
    ++tally->named;
  } else if (TimedOut(ref)) {
    ++tally->timed_out;
  } else {
    ++tally->unnamed;
  }
}

}  // namespace stacksym::remote
