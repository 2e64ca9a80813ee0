#include "stacksym/result.h"

#include <cerrno>
#include <cstring>

#include "base/hex.h"

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
  if (offset) out += "offset " + HexU64(*offset) + ": ";
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
