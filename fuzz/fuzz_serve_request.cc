// libFuzzer target for the symbolization server's untrusted inputs: the request body (and,
// with a leading 'R', a response body as a client reads it). Any bytes parse or give an
// Error, never crash; what parses is written back and re-read to the same thing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "remote/json.h"
#include "remote/symbolize_api.h"

using namespace stacksym::remote;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text.front() == 'R') {
    stacksym::Result<SymbolizeResponse> response = ParseSymbolizeResponse(text.substr(1));
    if (!response) return 0;
    std::string written = WriteSymbolizeResponse(*response);
    stacksym::Result<SymbolizeResponse> again = ParseSymbolizeResponse(written);
    if (!again || WriteSymbolizeResponse(*again) != written) __builtin_trap();
    return 0;
  }
  RequestLimits limits;
  limits.max_offsets = 10000;
  stacksym::Result<SymbolizeRequest> request = ParseSymbolizeRequest(text, limits);
  if (!request) {
    if (request.error().message.empty()) __builtin_trap();
    return 0;
  }
  std::string written = WriteSymbolizeRequest(*request);
  stacksym::Result<SymbolizeRequest> again = ParseSymbolizeRequest(written, limits);
  if (!again || WriteSymbolizeRequest(*again) != written) __builtin_trap();
  // The generic reader on the same bytes must agree that they are JSON.
  if (!ParseJson(text)) __builtin_trap();
  return 0;
}
