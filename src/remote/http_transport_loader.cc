// Opens libstacksym-http.so (http_transport.h) once, on the first use of HTTP.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "remote/http_transport.h"

namespace stacksym::remote {
namespace {

// Next to the running executable (a build tree), where `cmake --install` puts it relative to
// the executable (bin/../lib/stacksym/: an installed tree may be moved), then where this
// build wrote it (tests run from other directories).
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    out.push_back(dir + "libstacksym-http.so");
#ifdef STACKSYM_HTTP_MODULE_INSTALLED
    out.push_back(dir + "../" + STACKSYM_HTTP_MODULE_INSTALLED);  // from bin/ to the prefix
#endif
  }
#ifdef STACKSYM_HTTP_MODULE
  out.emplace_back(STACKSYM_HTTP_MODULE);
#endif
  return out;
}

Result<const HttpTransport*> Open() {
  std::string tried;
  for (const std::string& path : Candidates()) {
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + (why != nullptr ? std::string(why) : path);
      continue;
    }
    auto entry = reinterpret_cast<HttpTransportEntry>(::dlsym(lib, "stacksym_http_transport"));
    const HttpTransport* transport = entry != nullptr ? entry() : nullptr;
    if (transport == nullptr || transport->abi != kHttpTransportAbi) {
      ::dlclose(lib);
      tried += "\n  " + path + ": not this stacksym's HTTP module";
      continue;
    }
    return transport;  // kept open for the life of the process
  }
  return MakeError(ErrorCode::kUnsupported,
                   "HTTP is unavailable: cannot load libstacksym-http.so" + tried);
}

}  // namespace

bool SameHeaderName(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

std::string FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (SameHeaderName(key, name)) return value;
  }
  return {};
}

std::string HttpPostResult::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

Result<const HttpTransport*> LoadHttpTransport() {
  static std::once_flag once;
  static Result<const HttpTransport*> loaded = MakeError(ErrorCode::kInternal, "not loaded");
  std::call_once(once, [] { loaded = Open(); });
  return loaded;
}

}  // namespace stacksym::remote
