#include "remote/http_url.h"

#include <optional>

namespace stacksym::remote {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Userinfo is percent-encoded (a password with '@' or ':' in it); nullopt on a bad escape.
std::optional<std::string> PercentDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int a = HexValue(s[i + 1]), b = HexValue(s[i + 2]);
    if (a < 0 || b < 0) return std::nullopt;
    out.push_back(static_cast<char>(a * 16 + b));
    i += 2;
  }
  return out;
}

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

Error BadUrl(const std::string& url, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, "receiver URL " + url + ": " + why);
}

}  // namespace

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16 |
                 uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8 |
                 static_cast<uint8_t>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<SplitUrl> SplitHttpUrl(const std::string& url) {
  size_t scheme = url.find("://");
  std::string_view name = std::string_view(url).substr(0, scheme);
  if (scheme == std::string::npos || (name != "http" && name != "https")) {
    return BadUrl(url, "expected http[s]://HOST[:PORT][/PATH]");
  }
  size_t path = url.find('/', scheme + 3);
  std::string_view authority = std::string_view(url).substr(
      scheme + 3, path == std::string::npos ? path : path - scheme - 3);
  SplitUrl out;
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::optional<std::string> userinfo = PercentDecoded(authority.substr(0, at));
    if (!userinfo) return BadUrl(url, "bad percent-escape in the credentials");
    out.headers.emplace_back("Authorization", "Basic " + Base64(*userinfo));
    authority.remove_prefix(at + 1);
  }
  if (authority.empty()) return BadUrl(url, "no host");
  out.origin = std::string(name) + "://" + std::string(authority);
  if (path != std::string::npos) out.prefix = url.substr(path);
  while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  return out;
}

Result<std::pair<std::string, std::string>> ParseHeaderArgument(std::string_view text) {
  size_t colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  if (colon == std::string_view::npos || name.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "header '" + std::string(text) + "': expected 'Name: value'");
  }
  for (char c : name) {
    if (!IsTokenChar(c)) {
      return Error(ErrorCode::kInvalidArgument,
                   "header '" + std::string(text) + "': the name is not an HTTP token");
    }
  }
  std::string_view value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.find_first_of("\r\n") != std::string_view::npos) {
    return Error(ErrorCode::kInvalidArgument, "header " + std::string(name) + ": a line break");
  }
  return std::pair<std::string, std::string>(std::string(name), std::string(value));
}

}  // namespace stacksym::remote
