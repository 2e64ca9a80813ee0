// An http:// or https:// URL split the way the HTTP client (http_transport.h) wants it: the
// origin it connects to, a path prefix every request path goes under, and the headers the URL
// itself asks for (credentials given as https://USER:PASSWORD@HOST, sent as Basic
// authorization, as Pyroscope's and Grafana's clients take them). Shared by the agent's senders
// and serve's proxies (proxy_forwarder.h).
//
//   Result<SplitUrl> u = SplitHttpUrl("https://123:glc_x@profiles.example.com/prefix");
//   // u->origin "https://profiles.example.com", u->prefix "/prefix",
//   // u->headers {{"Authorization", "Basic MTIzOmdsY194"}}
#pragma once

#include <string>
#include <string_view>

#include "remote/http_transport.h"
#include "stacksym/result.h"

namespace stacksym::remote {

struct SplitUrl {
  std::string origin;   // scheme://host[:port], without credentials
  std::string prefix;   // "" or "/prefix", never a trailing slash
  HttpHeaders headers;  // Authorization when the URL carries USER[:PASSWORD]@
};
// kInvalidArgument when the URL is not http[s]://[USER[:PASSWORD]@]HOST[:PORT][/PATH].
Result<SplitUrl> SplitHttpUrl(const std::string& url);

// A header given on the command line as "Name: value" (curl's -H form): kInvalidArgument when
// the name is not an HTTP token or the value holds a line break.
Result<std::pair<std::string, std::string>> ParseHeaderArgument(std::string_view text);

// RFC 4648 base64 with padding.
std::string Base64(std::string_view bytes);

}  // namespace stacksym::remote
