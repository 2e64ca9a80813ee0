// Code objects read once per process: the recorder meets the same few hundred code objects in
// thousands of samples, and reads each from the process's memory the first time only. A failure
// is kept too, so that a bad pointer is not read again on every sample, but only for
// kRetryFailedSeconds: the address may hold a code object later (a sample caught a frame whose
// object was being freed, and the same source compiled again landed at the same address with
// the same fingerprint — a sub-interpreter running one string over and over).
//
// A sample's frame names its code object by address and, when the BPF program could read it, by
// fingerprint (code_check.h). The object is read later: by then its address may hold another
// (the first freed: functions made at run time, exec). Entries are keyed by (pid, address,
// fingerprint): an object read with another fingerprint than the sample's is not the sample's,
// and the frame gets CodeError::kReplaced instead of the newcomer's name. An entry is also read
// again when a frame stands at an instruction past the cached object's code. A process's entries
// are dropped when it execs or its pid is reused (ForgetProcess), and when it holds more than
// its bound (they are read again as needed).
//
//   CodeCache cache;
//   const CodeCache::Entry& e = cache.Get(pid, address, memory, layout, types, instruction, check);
//   if (e.code) ... e.code->qualname ...
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/clock.h"
#include "interp/python/code_object.h"

namespace stacksym::interp::python {

class CodeCache {
 public:
  struct Entry {
    std::shared_ptr<const CodeObject> code;  // null when it could not be read
    CodeError error = CodeError::kNone;
    double failed_at = 0;  // the clock's reading when the read failed
  };
  using Clock = double (*)();
  static constexpr double kRetryFailedSeconds = 0.1;
  struct Stats {
    uint64_t lookups = 0;
    uint64_t reads = 0;    // code objects read from memory (misses, and rereads)
    uint64_t rereads = 0;  // of those, because a frame stood past the cached object's code,
                           // or a failure was older than kRetryFailedSeconds
    std::array<uint64_t, kCodeErrorCount> failures{};  // reads that failed, by CodeError
  };

  explicit CodeCache(size_t max_per_process = 1 << 16, Clock clock = MonotonicSeconds)
      : max_per_process_(max_per_process), clock_(clock) {}

  // The code object at `address` in process `pid`, from the cache or read through `memory`.
  // `instruction`: the code unit a frame stands at (-1: none); `check`, when the sample took it,
  // the object's fingerprint then.
  const Entry& Get(uint32_t pid, uint64_t address, MemoryReader& memory, const Layout& layout,
                   const TypeAddresses& types, int64_t instruction = -1,
                   std::optional<uint16_t> check = std::nullopt);
  void ForgetProcess(uint32_t pid) { processes_.erase(pid); }
  const Stats& stats() const { return stats_; }
  size_t size() const;  // entries held

 private:
  size_t max_per_process_;
  Clock clock_;
  // Per process, by (address, fingerprint or kUnchecked).
  struct Key {
    uint64_t address;
    uint32_t check;
    bool operator==(const Key&) const = default;
  };
  static constexpr uint32_t kUnchecked = 1u << 16;
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>{}(k.address ^ k.check); }
  };
  std::unordered_map<uint32_t, std::unordered_map<Key, Entry, KeyHash>> processes_;
  Stats stats_;
};

}  // namespace stacksym::interp::python
