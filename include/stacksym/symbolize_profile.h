// stacksym/symbolize_profile.h — the one profile symbolizer: every distinct frame of a Profile
// symbolized exactly once, by every command (record, symbolize-profile, with or without a
// server) and the same way.
//
//   ProfileSymbolizeOptions opts;                       // demangling, DWARF, debug dirs...
//   opts.server = *ConnectSymbolServer("http://127.0.0.1:8000");   // optional (remote.h)
//   opts.kallsyms_path = "/proc/kallsyms";              // kernel frames (empty: left alone)
//   ProfileSymbolizeStats st = SymbolizeProfile(profile, opts);
//
// User frames go first to the server, when there is one; what it does not name is looked up in
// local files. A module's binary is found in one documented order (OpenModuleBinary in
// build_id.h): the file kept open from the recording (Profile::files), the recorded path, each
// debug dir's .build-id tree, then debuginfod — the build ID checked at every step. Its DWARF and,
// for a stripped binary, its symbol table come from the binary itself, then
// <debug dir>/.build-id/xx/rest.debug, then .gnu_debuglink, then debuginfod (ElfSymbolizer).
// Kernel frames go in one batch through KernelSymbolizer (kallsyms, and vmlinux when given).
// JIT code — frames in a recording's anonymous memory, whose module carries the process's pid
// and whose addresses are the process's — is named from that process's perf map and jitdump:
// those the recorder read (Profile::jit_files), else those in perf_map_dirs.
//
// Never fails as a whole: frames that cannot be resolved carry a Reason, and what went wrong
// per module (no file, server unreachable, no kallsyms) is in the stats' messages.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stacksym/frame.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym {

// One module's file offsets to answer, for a FrameSymbolBackend.
struct BuildIdQuery {
  std::vector<uint8_t> build_id;
  std::vector<uint64_t> offsets;      // distinct
  std::vector<FrameSymbols> answers;  // the backend's: one per offset
  std::string message;                // why the backend could not use this module, if it could not
};

// A symbolizer of (build ID, file offset) pairs that the profile symbolizer asks before it looks
// at local files: a symbolization server (remote.h: ConnectSymbolServer).
class FrameSymbolBackend {
 public:
  virtual ~FrameSymbolBackend() = default;
  // Fills every query's answers (one per offset), with `options`' demangling and inlines. An
  // error means nothing was answered (the server could not be reached, or answered something
  // else than asked): the frames then go to local files, and the error is reported.
  virtual Result<void> Symbolize(std::span<BuildIdQuery> queries,
                                 const SymbolizeOptions& options) = 0;
  virtual std::string name() const = 0;   // "http://host:port", for messages
  virtual uint64_t requests() const = 0;  // requests sent so far
};

struct ProfileSymbolizeOptions {
  SymbolizeOptions symbolize;  // demangling, DWARF, inline chains, debug dirs, cache, fetcher
  // Asked first for user frames with a build ID (null: local files only).
  std::shared_ptr<FrameSymbolBackend> server;
  // Kernel frames: from this kallsyms file (the running kernel's /proc/kallsyms, only right on
  // the machine and boot the profile was recorded on) and, when set, the DWARF of vmlinux. Both
  // empty: kernel frames are left as they are.
  std::string kallsyms_path = "/proc/kallsyms";
  std::string vmlinux_path;
  // JIT frames of a process the recorder read no perf map or jitdump of: from
  // DIR/perf-PID.map and DIR/jit-PID.dump, the first directory that has either (e.g. "/tmp"
  // on the machine and boot the profile was recorded on, or where the files were copied).
  std::vector<std::string> perf_map_dirs;
  // Redo frames that already have symbols (otherwise only frames without a function name are
  // looked up: a profile symbolized once keeps its names).
  bool resymbolize = false;
};

struct ProfileSymbolizeStats {
  uint64_t frames = 0;                // distinct frames looked at (user and kernel)
  uint64_t symbolized = 0;            // of those, frames that got a function name
  uint64_t failed = 0;                // frames that got a Reason
  uint64_t from_server = 0;           // user frames the server named
  uint64_t server_requests = 0;       // requests sent to the server
  uint64_t kernel_frames = 0;         // kernel frames looked at
  uint64_t jit_frames = 0;            // frames in recorded processes' anonymous memory
  uint64_t jit_named = 0;             // of those, frames a perf map or jitdump named
  uint64_t modules_found = 0;         // user modules with a usable local file
  uint64_t modules_missing = 0;       // user modules without one (their frames carry a Reason)
  std::vector<std::string> messages;  // one per module without a file, server or kernel trouble
  // Why the server could not be used at all (unreachable, or answered something else than
  // asked); its frames were then looked up locally. Empty when it answered, or there is none.
  std::string server_error;
};

ProfileSymbolizeStats SymbolizeProfile(Profile& profile,
                                       const ProfileSymbolizeOptions& options = {});

// The same pass for a run of profiles (the agent's windows): the kernel's symbols and each
// module's symbolizer are opened once and kept across calls (least recently used first out past
// `max_cached_bytes`, by ElfSymbolizer::memory_bytes), and every (build ID, offset) answered is
// remembered (the last two generations of `max_remembered_frames` each), so that a frame seen in
// window after window is looked up once. The answers are SymbolizeProfile's.
class ProfileSymbolizer {
 public:
  explicit ProfileSymbolizer(ProfileSymbolizeOptions options, uint64_t max_cached_bytes = 256 << 20,
                             size_t max_remembered_frames = 1 << 15);
  ~ProfileSymbolizer();
  ProfileSymbolizer(const ProfileSymbolizer&) = delete;
  ProfileSymbolizer& operator=(const ProfileSymbolizer&) = delete;

  ProfileSymbolizeStats Symbolize(Profile& profile);
  // What is kept now: symbolizers and their bytes, remembered frames.
  size_t cached_symbolizers() const;
  uint64_t cached_bytes() const;
  // The most the kept symbolizers held at once (their memory_bytes) during the last Symbolize:
  // the bound is kept module by module, so at most max_cached_bytes and the module at hand.
  // Each module's mapped file pages leave the resident set once its frames are answered.
  uint64_t peak_cached_bytes() const;
  size_t remembered_frames() const;

  struct Session;  // the caches (profile_symbolizer.cc)

 private:
  std::unique_ptr<Session> session_;
};

}  // namespace stacksym
