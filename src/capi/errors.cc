// Status codes, reasons and the per-thread last error of the C API.
#include <string>

#include "capi_internal.h"

namespace stacksym::capi {
namespace {
thread_local std::string last_error;

// The C enums mirror the C++ ones shifted by one (0 is OK / NONE in C).
static_assert(static_cast<int>(ErrorCode::kIo) + 1 == STACKSYM_ERROR_IO);
static_assert(static_cast<int>(ErrorCode::kInternal) + 1 == STACKSYM_ERROR_INTERNAL);
static_assert(static_cast<int>(Reason::kNotInSegment) + 1 == STACKSYM_REASON_NOT_IN_SEGMENT);
static_assert(static_cast<int>(Reason::kKernelAddressesHidden) + 1 ==
              STACKSYM_REASON_KERNEL_ADDRESSES_HIDDEN);
}  // namespace

stacksym_status Fail(stacksym_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

stacksym_status Fail(const Error& error) {
  return Fail(static_cast<stacksym_status>(static_cast<int>(error.code) + 1), error.ToString());
}

stacksym_status MissingArgument(const char* what) {
  return Fail(STACKSYM_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

void ClearError() { last_error.clear(); }

stacksym_reason ToC(Reason reason) {
  return static_cast<stacksym_reason>(static_cast<int>(reason) + 1);
}

}  // namespace stacksym::capi

extern "C" {

const char* stacksym_version(void) { return "0.1.0"; }

const char* stacksym_status_name(stacksym_status status) {
  switch (status) {
    case STACKSYM_OK:
      return "ok";
    case STACKSYM_ERROR_IO:
      return "io";
    case STACKSYM_ERROR_NOT_FOUND:
      return "not_found";
    case STACKSYM_ERROR_PERMISSION:
      return "permission";
    case STACKSYM_ERROR_MALFORMED:
      return "malformed";
    case STACKSYM_ERROR_UNSUPPORTED:
      return "unsupported";
    case STACKSYM_ERROR_INVALID_ARGUMENT:
      return "invalid_argument";
    case STACKSYM_ERROR_INTERNAL:
      return "internal";
    case STACKSYM_STATUS_MAX_ENUM_:
      break;
  }
  return "unknown";
}

const char* stacksym_last_error(void) { return stacksym::capi::last_error.c_str(); }

const char* stacksym_reason_name(stacksym_reason reason) {
  if (reason == STACKSYM_REASON_NONE) return "none";
  if (reason < STACKSYM_REASON_NONE || reason > STACKSYM_REASON_KERNEL_ADDRESSES_HIDDEN)
    return "unknown";
  return stacksym::ReasonName(static_cast<stacksym::Reason>(reason - 1));
}

const char* stacksym_reason_text(stacksym_reason reason) {
  if (reason == STACKSYM_REASON_NONE) return "answered";
  if (reason < STACKSYM_REASON_NONE || reason > STACKSYM_REASON_KERNEL_ADDRESSES_HIDDEN)
    return "unknown reason";
  return stacksym::ReasonText(static_cast<stacksym::Reason>(reason - 1));
}

}  // extern "C"
