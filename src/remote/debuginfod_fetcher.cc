// BuildIdFetcher through elfutils' libdebuginfod: its server list ($DEBUGINFOD_URLS), cache
// ($DEBUGINFOD_CACHE_PATH), retries and negative caching are the ones perf and gdb use.
//
// The library is opened with dlopen the first time a fetch is wanted, as elfutils' own libdw
// does: linked directly, it and libcurl's ~30 dependencies cost every start-up of the command
// and of the llvm-symbolizer drop-in (most of a 5000-address run from a warm index), even when
// DEBUGINFOD_URLS is unset.
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "stacksym/elf.h"
#include "stacksym/remote.h"

namespace stacksym {
namespace {

using Clock = std::chrono::steady_clock;

// Progress shown after this long, so that cache hits and quick downloads stay silent.
constexpr double kProgressAfterSeconds = 0.5;

// One fetch: what the progress callback needs (libdebuginfod gives it the client only).
struct FetchState {
  Clock::time_point start = Clock::now();
  double timeout_seconds = 0;
  bool show_progress = false;
  bool shown = false;
  bool timed_out = false;
  std::string what;  // "debuginfo 5d0a..."
};

// The libdebuginfod functions used here, resolved once from libdebuginfod.so.1.
struct DebuginfodApi {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_find_executable) find_executable = nullptr;
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_set_user_data) set_user_data = nullptr;
  decltype(&debuginfod_get_user_data) get_user_data = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

const DebuginfodApi& LoadDebuginfod() {
  static const DebuginfodApi api = [] {
    DebuginfodApi a;
    // Never dlclose'd: libcurl registers process-wide state.
    void* lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      a.error = std::string("cannot load libdebuginfod.so.1 (apt install libdebuginfod1): ") +
                (why != nullptr ? why : "unknown error");
      return a;
    }
    bool ok = true;
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr) ok = false;
    };
    bind(a.begin, "debuginfod_begin");
    bind(a.end, "debuginfod_end");
    bind(a.find_debuginfo, "debuginfod_find_debuginfo");
    bind(a.find_executable, "debuginfod_find_executable");
    bind(a.set_progressfn, "debuginfod_set_progressfn");
    bind(a.set_user_data, "debuginfod_set_user_data");
    bind(a.get_user_data, "debuginfod_get_user_data");
    if (!ok) a.error = "libdebuginfod.so.1 lacks a function stacksym needs (elfutils too old)";
    return a;
  }();
  return api;
}

double Elapsed(const FetchState& s) {
  return std::chrono::duration<double>(Clock::now() - s.start).count();
}

// libdebuginfod calls this while a transfer runs (at least about once a second even when no
// byte arrives); a non-zero return abandons the transfer.
int OnProgress(debuginfod_client* client, long done, long total) {
  auto* state = static_cast<FetchState*>(LoadDebuginfod().get_user_data(client));
  if (state == nullptr) return 0;
  double elapsed = Elapsed(*state);
  if (state->timeout_seconds > 0 && elapsed > state->timeout_seconds) {
    state->timed_out = true;
    return 1;
  }
  if (state->show_progress && elapsed > kProgressAfterSeconds) {
    state->shown = true;
    if (total > 0) {
      std::fprintf(stderr, "\rstacksym: debuginfod: %s: %ld of %ld KiB (%.0f s)   ",
                   state->what.c_str(), done / 1024, total / 1024, elapsed);
    } else {
      std::fprintf(stderr, "\rstacksym: debuginfod: %s: %ld KiB (%.0f s)   ", state->what.c_str(),
                   done / 1024, elapsed);
    }
  }
  return 0;
}

class DebuginfodFetcher final : public BuildIdFetcher {
 public:
  DebuginfodFetcher(DebuginfodOptions options, std::string urls, DebuginfodCounters* counters)
      : options_(options), urls_(std::move(urls)), counters_(counters) {}

  Result<std::string> Fetch(std::span<const uint8_t> build_id, Kind kind) const override {
    if (counters_ != nullptr) ++counters_->fetches;
    Result<std::string> out = FetchOnce(build_id, kind);
    if (counters_ != nullptr) {
      if (out) {
        ++counters_->found;
      } else if (out.error().code == ErrorCode::kNotFound) {
        ++counters_->missing;
      } else {
        ++counters_->failures;
      }
    }
    return out;
  }

 private:
  Result<std::string> FetchOnce(std::span<const uint8_t> build_id, Kind kind) const {
    const char* kind_name = kind == Kind::kExecutable ? "executable" : "debuginfo";
    const DebuginfodApi& api = LoadDebuginfod();
    if (!api.error.empty()) return MakeError(ErrorCode::kUnsupported, "debuginfod: " + api.error);
    // A client is not thread-safe; one per fetch is cheap next to a lookup.
    debuginfod_client* client = api.begin();
    if (client == nullptr) {
      return MakeError(ErrorCode::kInternal, "debuginfod: cannot create a client");
    }
    FetchState state;
    state.timeout_seconds = options_.timeout_seconds;
    state.show_progress = options_.progress && isatty(STDERR_FILENO) == 1;
    state.what = std::string(kind_name) + " " + ToHex(build_id);
    api.set_user_data(client, &state);
    api.set_progressfn(client, &OnProgress);
    char* path = nullptr;
    int fd =
        kind == Kind::kExecutable
            ? api.find_executable(client, build_id.data(), static_cast<int>(build_id.size()), &path)
            : api.find_debuginfo(client, build_id.data(), static_cast<int>(build_id.size()), &path);
    api.end(client);
    if (state.shown) std::fprintf(stderr, "\n");
    if (fd >= 0) {
      ::close(fd);
      std::string out = path != nullptr ? path : "";
      std::free(path);
      if (out.empty()) return MakeError(ErrorCode::kInternal, "debuginfod: no path returned");
      return out;
    }
    std::free(path);
    std::string where = "debuginfod (" + urls_ + "): " + state.what + ": ";
    if (state.timed_out || fd == -ECANCELED) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "no answer within %.1f s", options_.timeout_seconds);
      return MakeError(ErrorCode::kIo, where + buf);
    }
    if (fd == -ENOENT) return MakeError(ErrorCode::kNotFound, where + "no server has it");
    return MakeError(ErrorCode::kIo, where + std::strerror(-fd));
  }

  DebuginfodOptions options_;
  std::string urls_;
  DebuginfodCounters* counters_;
};

}  // namespace

std::shared_ptr<const BuildIdFetcher> MakeDebuginfodFetcher(const DebuginfodOptions& options,
                                                            DebuginfodCounters* counters) {
  const char* urls = std::getenv(DEBUGINFOD_URLS_ENV_VAR);
  if (urls == nullptr || urls[0] == '\0') return nullptr;
  return std::make_shared<DebuginfodFetcher>(options, urls, counters);
}

}  // namespace stacksym
