// Shared pieces of the C API implementation (src/capi): the per-thread last error, the
// conversions between the C and C++ types, and the guard that keeps C++ exceptions (only
// std::bad_alloc in practice) from crossing into C callers.
#pragma once

#include <string>
#include <vector>

#include "stacksym/reason.h"
#include "stacksym/result.h"
#include "stacksym/stacksym.h"
#include "stacksym/symbolize.h"

namespace stacksym::capi {

// Records `message` as this thread's last error and returns `status`.
stacksym_status Fail(stacksym_status status, std::string message);
stacksym_status Fail(const Error& error);
// Fail(STACKSYM_ERROR_INVALID_ARGUMENT, "<what> is NULL").
stacksym_status MissingArgument(const char* what);
void ClearError();

stacksym_reason ToC(Reason reason);
SymbolizeOptions FromC(const stacksym_options* options);

// Takes ownership of the answers and returns the C view of them (freed with
// stacksym_symbolized_list_free).
stacksym_symbolized_list* MakeList(std::vector<SymbolizedAddress> answers);

// Runs `body` (which returns a stacksym_status), turning an escaping exception into
// STACKSYM_ERROR_INTERNAL.
template <class Body>
stacksym_status Guard(Body&& body) {
  try {
    ClearError();
    return body();
  } catch (const std::exception& e) {
    return Fail(STACKSYM_ERROR_INTERNAL, e.what());
  } catch (...) {
    return Fail(STACKSYM_ERROR_INTERNAL, "unknown exception");
  }
}

}  // namespace stacksym::capi
