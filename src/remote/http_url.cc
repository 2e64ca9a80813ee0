#include "remote/http_url.h"

namespace stacksym::remote {

Result<SplitUrl> SplitHttpUrl(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos || (url.compare(0, scheme, "http") != 0)) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        "receiver URL " + url + ": expected http://HOST[:PORT][/PATH]" +
            (url.compare(0, 8, "https://") == 0 ? " (https is not supported yet)" : ""));
  }
  size_t path = url.find('/', scheme + 3);
  SplitUrl out;
  out.origin = url.substr(0, path);
  if (out.origin.size() <= scheme + 3) {
    return MakeError(ErrorCode::kInvalidArgument, "receiver URL " + url + ": no host");
  }
  if (path != std::string::npos) out.prefix = url.substr(path);
  while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  return out;
}

}  // namespace stacksym::remote
