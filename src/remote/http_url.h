// An http:// URL split the way the HTTP client (http_transport.h) wants it: the origin it
// connects to and a path prefix every request path goes under. Shared by the agent's senders
// and serve's proxies (proxy_forwarder.h).
#pragma once

#include <string>

#include "stacksym/result.h"

namespace stacksym::remote {

// "http://host:port/prefix" → origin "http://host:port" and prefix "/prefix" ("" when there is
// none; never a trailing slash).
struct SplitUrl {
  std::string origin;  // scheme://host[:port]
  std::string prefix;
};
// kInvalidArgument when the URL is not http://HOST[:PORT][/PATH] (https is not supported yet).
Result<SplitUrl> SplitHttpUrl(const std::string& url);

}  // namespace stacksym::remote
