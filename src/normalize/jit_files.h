// The files JIT runtimes write for profilers about a process (V8/Node --perf-basic-prof, the
// JVM's -XX:+DumpPerfMapAtExit, CPython 3.12 -X perf, perf's jitdump agents): its perf map,
// /tmp/perf-PID.map, and its jitdump, jit-PID.dump (mapped by the process, which is how it is
// found; else /tmp/jit-PID.dump). Both are found in the process's own mount namespace and named
// with its namespaced pid, which only a live process tells: ProcessJitFiles keeps the process's
// /tmp directory open (and its jitdump, once it maps one), so that the files can be read later,
// also once the process has exited (a JVM writes its map only then) and its mount namespace
// with it (an open directory keeps a container's /tmp mount reachable).
//
//   Result<ProcessJitFiles> files = ProcessJitFiles::Open(pid);   // while the process lives
//   ...
//   JitFiles now = files->Read();                                // at the end of a window
#pragma once

#include <sys/types.h>

#include <string>

#include "stacksym/module.h"
#include "stacksym/result.h"

namespace stacksym::normalize {

// The pid a process has inside its own (innermost) pid namespace, from the NSpid line of
// /proc/PID/status; `pid` itself when the kernel has no NSpid line.
Result<pid_t> NamespacedPid(pid_t pid);

class ProcessJitFiles {
 public:
  // Opens the process's /tmp and the jitdump it maps, and reads its namespaced pid. kNotFound
  // when the process is gone, kPermission when its root is closed to us.
  static Result<ProcessJitFiles> Open(pid_t pid);

  // For a process that is gone, or closed to us: its files in the host's /tmp only.
  static ProcessJitFiles HostOnly(pid_t pid);

  ProcessJitFiles(ProcessJitFiles&& other) noexcept;
  ProcessJitFiles& operator=(ProcessJitFiles&& other) noexcept;
  ProcessJitFiles(const ProcessJitFiles&) = delete;
  ProcessJitFiles& operator=(const ProcessJitFiles&) = delete;
  ~ProcessJitFiles();

  // Reads both files as they are now (a file that is absent or unreadable stays empty). Tries,
  // in order, the process's /tmp with its namespaced pid, then with its host pid, then the
  // host's /tmp with the host pid; a jitdump the process maps comes first. A file beyond 1 GiB
  // is not read.
  JitFiles Read() const;
  // Whether the process still runs (this process: a reused pid is another).
  bool Alive() const;

  pid_t pid() const { return pid_; }
  pid_t namespaced_pid() const { return ns_pid_; }

 private:
  ProcessJitFiles() = default;
  // Opens the jitdump the process maps, if it maps one and it is not open yet.
  void OpenMappedJitdump() const;
  void Close();

  int proc_fd_ = -1;  // /proc/PID: refers to this process, not to whoever reuses its pid
  int tmp_fd_ = -1;   // O_PATH: the process's /tmp
  pid_t pid_ = 0;
  pid_t ns_pid_ = 0;
  mutable int jitdump_fd_ = -1;  // the jitdump the process maps
  mutable std::string jitdump_path_;
};

}  // namespace stacksym::normalize
