#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture/sample_source.h"

namespace stacksym::capture {

Result<std::vector<int>> OnlineCpus() {
  FILE* f = fopen("/sys/devices/system/cpu/online", "re");
  if (f == nullptr) return ErrnoError(errno, "open /sys/devices/system/cpu/online");
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  // "0-3,5,7-8"
  std::vector<int> cpus;
  const char* p = buf;
  while (*p && *p != '\n') {
    char* end;
    long a = strtol(p, &end, 10);
    if (end == p || a < 0) return MakeError(ErrorCode::kMalformed, "bad online CPU list");
    long b = a;
    p = end;
    if (*p == '-') {
      b = strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a || b > 65535) {
        return MakeError(ErrorCode::kMalformed, "bad online CPU list");
      }
      p = end;
    }
    for (long c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
    if (*p == ',') ++p;
  }
  if (cpus.empty()) return MakeError(ErrorCode::kMalformed, "no online CPUs listed");
  return cpus;
}

}  // namespace stacksym::capture
