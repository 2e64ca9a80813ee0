// `stacksym serve` as a child process on 127.0.0.1 (an ephemeral port), for tests that look
// at the server from outside: its memory (/proc/PID/status), its own environment
// (DEBUGINFOD_URLS for its upstreams). It stops by itself after `exit_after_seconds` even if
// the test dies, and is stopped (SIGTERM, then SIGKILL) by the destructor.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace stacksym::testing {

class ServeProcess {
 public:
  // `args` after `serve --listen 127.0.0.1:0`; `env` ("NAME=value") added to the child's.
  // False (why in *why) when it did not print its address within 30 s.
  bool Start(const std::vector<std::string>& args, const std::vector<std::string>& env,
             std::string* why, double exit_after_seconds = 300);
  void Stop();
  ~ServeProcess() { Stop(); }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A line of /proc/PID/status in kB ("VmHWM", "VmRSS"); -1 when unreadable.
  long StatusKb(const std::string& field) const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace stacksym::testing
