// stacksym/debug_dirs.h — where separate debug files are looked for when no one says.
//
// Every option struct with a `debug_dirs` list (SymbolizeOptions, OfflineSymbolizeOptions,
// SymbolServerOptions, ...) starts as {kDefaultDebugDir}: the root that Debian's and Fedora's
// -dbg/-debuginfo packages install into, and that gdb, perf and elfutils search too.
//
//   options.debug_dirs = {"/srv/symbols", kDefaultDebugDir};
#pragma once

namespace stacksym {

inline constexpr const char kDefaultDebugDir[] = "/usr/lib/debug";

}  // namespace stacksym
