// A child process for tests: spawned with pipes on stdin/stdout, read line by line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace stacksym::testing {

class ChildProcess {
 public:
  // Starts argv[0] with argv; false + message on failure.
  bool Start(const std::vector<std::string>& argv, std::string* error);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Reads one line (without '\n'); false on EOF or after `timeout_ms`.
  bool ReadLine(std::string* line, int timeout_ms = 20000);
  // Reads lines until `marker`; all lines before it go to `lines`.
  bool ReadUntil(const std::string& marker, std::vector<std::string>* lines,
                 int timeout_ms = 20000);
  bool Send(const std::string& text);
  // Kills (SIGKILL) and reaps; returns the wait status. Idempotent.
  int KillAndWait();
  // Closes stdin (the fixture exits) and reaps without killing. Returns the wait status.
  int CloseAndWait();

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace stacksym::testing
