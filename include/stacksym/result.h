// stacksym/result.h — errors without exceptions.
//
// Every fallible library call returns Result<T>: either a value or an Error that says what
// went wrong (code + message) and where (file, section, offset). Check with `if (!r)`, read
// with `*r` / `r->`, and pass errors up with `return r.error();`.
//
//   Result<ElfFile> elf = ElfFile::Open("/usr/bin/bash");
//   if (!elf) { fprintf(stderr, "%s\n", elf.error().ToString().c_str()); return 1; }
//
// Expected per-address misses ("no symbol covers it") are not Errors: see reason.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace stacksym {

enum class ErrorCode : uint8_t {
  kIo,               // open/read/mmap failed
  kNotFound,         // a file or object that was asked for does not exist
  kPermission,       // EACCES / EPERM
  kMalformed,        // the bytes contradict their own format (truncated, out of range, ...)
  kUnsupported,      // well-formed but not handled (big-endian ELF, unknown compression)
  kInvalidArgument,  // the caller passed something meaningless
  kInternal,
};

const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string file;                // path the error is about, if any
  std::string section;             // ELF section or other sub-part, if any
  std::optional<uint64_t> offset;  // byte offset into file/section, if known

  Error() = default;
  Error(ErrorCode c, std::string msg) : code(c), message(std::move(msg)) {}

  Error&& WithFile(std::string f) && {
    if (file.empty()) file = std::move(f);
    return std::move(*this);
  }
  Error&& WithSection(std::string s) && {
    if (section.empty()) section = std::move(s);
    return std::move(*this);
  }
  Error&& WithOffset(uint64_t o) && {
    if (!offset) offset = o;
    return std::move(*this);
  }
  // "file: section .debug_info: offset 0x1c: message"
  std::string ToString() const;
};

inline Error MakeError(ErrorCode code, std::string message) {
  return Error(code, std::move(message));
}
// An Error from errno after a failed system call; `what` names the call and object.
Error ErrnoError(int err, std::string what);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT implicit
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT implicit

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT implicit
  bool ok() const { return !error_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

}  // namespace stacksym
