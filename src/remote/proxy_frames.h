// The distinct frames of one proxied request (OTLP or Pyroscope, otlp_proxy.h and
// pyroscope_proxy.h), named through the server's one symbolization path: SymbolService, with
// one call per build ID holding every distinct address of that build ID once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "remote/symbol_service.h"
#include "stacksym/frame.h"
#include "stacksym/profile.h"

namespace stacksym::remote {

// What a proxy did with the locations of one request.
struct ProxyTally {
  uint64_t locations = 0;  // locations to name: a build ID, no lines, native code
  uint64_t distinct = 0;   // distinct (build ID, address) pairs among them, asked once each
  uint64_t named = 0;      // locations given lines
  uint64_t unnamed = 0;    // locations nothing names (no file for the build ID, no symbol)
  uint64_t timed_out = 0;  // locations left as they came: the time limit passed first
};

// A frame added to a FrameBatch.
struct FrameRef {
  uint32_t module = 0;
  uint32_t index = 0;  // within the module
  uint32_t id = 0;     // among all distinct frames: 0 to distinct() - 1, in the order added
};

class FrameBatch {
 public:
  // `kind`: what the addresses are (OTLP: ELF virtual addresses; pprof: file offsets).
  explicit FrameBatch(AddressKind kind) : kind_(kind) {}

  // The frame (build_id, address); the same pair gives the same FrameRef.
  FrameRef Add(std::span<const uint8_t> build_id, uint64_t address) {
    return Add(ModuleOf(build_id), address);
  }
  // The same in two steps, for callers with many addresses of one build ID: the build ID's
  // module number, then a frame of it.
  uint32_t ModuleOf(std::span<const uint8_t> build_id);
  FrameRef Add(uint32_t module, uint64_t address);

  // Names every frame added: one SymbolService::Symbolize per build ID, in the order they
  // were added, until `deadline`; the build IDs not reached by then stay unanswered.
  void Resolve(SymbolService& service, std::chrono::steady_clock::time_point deadline);

  // The lines of a resolved frame (innermost first), or null when it was not named.
  const FrameSymbols* Answer(FrameRef ref) const;
  // Whether the time limit left the frame's build ID unasked.
  bool TimedOut(FrameRef ref) const { return modules_[ref.module].timed_out; }

  // Counts one location of frame `ref` in `tally` (named, unnamed or timed out).
  void Count(FrameRef ref, ProxyTally* tally) const;
  size_t distinct() const { return distinct_; }

 private:
  struct Module {
    std::vector<uint8_t> build_id;
    std::vector<uint64_t> addresses;
    std::unordered_map<uint64_t, uint32_t> index;  // address → position
    std::vector<uint32_t> ids;                     // parallel to addresses
    std::vector<FrameSymbols> answers;             // parallel to addresses once resolved
    bool timed_out = false;
  };
  AddressKind kind_;
  std::map<std::vector<uint8_t>, uint32_t> by_build_id_;
  std::vector<Module> modules_;
  size_t distinct_ = 0;
};

}  // namespace stacksym::remote
