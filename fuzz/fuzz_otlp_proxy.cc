// libFuzzer target for serve's OTLP proxy (otlp_proxy.h): any bytes as the body of
// POST /v1development/profiles go through the proxy's decode, symbolize (SymbolService over an
// empty debug dir: nothing is found, every lookup is still made) and encode, and give the
// symbolized request or an Error with a message, never a crash; what it returns is a request
// it takes again, unchanged by a second pass.
#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "remote/otlp_proxy.h"
#include "remote/symbol_service.h"

using namespace stacksym::remote;

namespace {

SymbolService& Service() {
  static SymbolService* service = [] {
    static char dir[] = "/tmp/fuzz-otlp-proxy-XXXXXX";
    SymbolServiceOptions options;
    options.debug_dirs = {mkdtemp(dir) != nullptr ? dir : "/nonexistent"};
    options.symbolize_threads = 1;
    return new SymbolService(options);
  }();
  return *service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ProxyTally tally;
  stacksym::Result<std::string> out = SymbolizeOtlpRequest(body, Service(), deadline, &tally);
  if (!out) {
    if (out.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (tally.named != 0 || tally.named + tally.unnamed + tally.timed_out != tally.locations) {
    __builtin_trap();
  }
  ProxyTally again_tally;
  stacksym::Result<std::string> again =
      SymbolizeOtlpRequest(*out, Service(), deadline, &again_tally);
  if (!again || *again != *out) __builtin_trap();
  return 0;
}
