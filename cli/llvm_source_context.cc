#include "llvm_source_context.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace stacksym::cli {
namespace {

// A regular file's bytes; nullopt when it cannot be opened or read (a directory, say).
std::optional<std::string> ReadRegularFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  std::optional<std::string> bytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    bytes.emplace();
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        bytes.reset();
        break;
      }
      if (n == 0) break;
      bytes->append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return bytes;
}

}  // namespace

std::string FormatSourceContext(std::string_view source, int64_t line, int lines) {
  if (lines <= 0) return {};
  const int64_t first = std::max<int64_t>(1, line - lines / 2);
  const int64_t last = first + lines - 1;
  // The bytes from the first line's start through the last line's newline (or the end).
  size_t first_pos = std::string_view::npos, pos = 0;
  for (int64_t l = 1; l <= last; ++l, ++pos) {
    if (l == first) first_pos = pos;
    pos = source.find('\n', pos);
    if (pos == std::string_view::npos) break;
  }
  if (first_pos == std::string_view::npos) return {};
  std::string_view shown = source.substr(
      first_pos, pos == std::string_view::npos ? std::string_view::npos : pos - first_pos);
  // LLVM's width: ceil(log10(last)), one short for powers of ten; the numbers still print
  // whole, only the padding of the others follows it.
  const size_t width = static_cast<size_t>(std::ceil(std::log10(static_cast<double>(last))));
  std::string out;
  int64_t l = first;
  for (size_t at = 0; at < shown.size(); ++l) {
    size_t end = shown.find('\n', at);
    std::string_view text =
        shown.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (text.ends_with('\r')) text.remove_suffix(1);
    std::string number = std::to_string(l);
    if (number.size() < width) out.append(width - number.size(), ' ');
    out += number;
    out += l == line ? " >: " : "  : ";
    out += text;
    out += '\n';
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return out;
}

std::string LlvmSourceContext::Around(const std::string& path, int64_t line) {
  if (lines_ <= 0) return {};
  auto it = files_.find(path);
  if (it == files_.end()) it = files_.emplace(path, ReadRegularFile(path)).first;
  if (!it->second) return {};
  return FormatSourceContext(*it->second, line, lines_);
}

}  // namespace stacksym::cli
