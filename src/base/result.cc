#include "stacksym/result.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace stacksym {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kPermission:
      return "permission denied";
    case ErrorCode::kMalformed:
      return "malformed data";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "error";
}

std::string Error::ToString() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!section.empty()) out += "section " + section + ": ";
  if (offset) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "offset 0x%llx: ", static_cast<unsigned long long>(*offset));
    out += buf;
  }
  out += message;
  return out;
}

Error ErrnoError(int err, std::string what) {
  ErrorCode code = ErrorCode::kIo;
  if (err == ENOENT || err == ESRCH) code = ErrorCode::kNotFound;
  if (err == EACCES || err == EPERM) code = ErrorCode::kPermission;
  return Error(code, std::move(what) + ": " + std::strerror(err));
}

}  // namespace stacksym
