// libFuzzer target for serve's Pyroscope proxy (pyroscope_proxy.h): any bytes as the body of
// POST /push.v1.PusherService/Push go through the proxy's decode (the PushRequest, then each
// raw_profile, gzipped or not, as pprof), symbolize (SymbolService over an empty debug dir)
// and encode, and give the request or an Error with a message, never a crash; what it returns
// is a request it takes again.
#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "remote/pyroscope_proxy.h"
#include "remote/symbol_service.h"

using namespace stacksym::remote;

namespace {

SymbolService& Service() {
  static SymbolService* service = [] {
    static char dir[] = "/tmp/fuzz-pyroscope-push-XXXXXX";
    SymbolServiceOptions options;
    options.debug_dirs = {mkdtemp(dir) != nullptr ? dir : "/nonexistent"};
    options.symbolize_threads = 1;
    return new SymbolService(options);
  }();
  return *service;
}

// The raw_profiles may inflate to this much together (the fuzzer's RSS budget; serve's own
// limit is the request limit, 64 MiB).
constexpr size_t kMaxInflated = size_t{16} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ProxyTally tally;
  stacksym::Result<std::string> out =
      SymbolizePushRequest(body, Service(), deadline, kMaxInflated, &tally);
  if (!out) {
    if (out.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (tally.named != 0 || tally.named + tally.unnamed + tally.timed_out != tally.locations) {
    __builtin_trap();
  }
  ProxyTally again_tally;
  if (!SymbolizePushRequest(*out, Service(), deadline, kMaxInflated, &again_tally)) {
    __builtin_trap();
  }
  return 0;
}
