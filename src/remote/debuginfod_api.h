// `stacksym serve` as a debuginfod server: GET and HEAD for /buildid/HEX/debuginfo,
// /executable and /section/NAME (debuginfod_path.h), answered as elfutils' debuginfod answers
// them, so that DEBUGINFOD_URLS clients (debuginfod-find, libdebuginfod, gdb, perf, Pyroscope,
// Parca) can use serve.
//
// Files are found by the lookup every command uses (stacksym/build_id.h: the debug dirs'
// .build-id trees, then the fetcher), so a serve whose fetcher has upstream debuginfod
// servers is a federating cache: what it fetched stays in libdebuginfod's cache and is served
// from there. A file goes out streamed from disk (http_transport.h's HttpFileBody), never
// read into memory whole.
//
// Answers: 200 with the file (Content-Type application/octet-stream, Content-Length,
// X-DEBUGINFOD-SIZE, X-DEBUGINFOD-FILE, Last-Modified); 404 when no source has it (and for
// source files, which serve does not hold); 400 for a malformed path; 500 when a file found
// cannot be read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/debuginfod_path.h"
#include "remote/http_transport.h"
#include "stacksym/build_id_fetcher.h"

namespace stacksym::remote {

struct DebuginfodApiOptions {
  std::vector<std::string> debug_dirs;
  std::shared_ptr<const BuildIdFetcher> fetcher;  // upstream debuginfod; null: local files only
};

// Answers the request for `path` (a /buildid/ path) into `response`. Returns the artifact
// asked for, or nullopt for a malformed path (the metrics' endpoint label).
std::optional<BuildIdArtifact> AnswerBuildIdRequest(std::string_view path,
                                                    const DebuginfodApiOptions& options,
                                                    HttpResponse& response);

}  // namespace stacksym::remote
