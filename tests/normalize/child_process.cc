#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stacksym::testing {

bool ChildProcess::Start(const std::vector<std::string>& argv, std::string* error) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return false;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    *error = std::string("fork: ") + strerror(errno);
    return false;
  }
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  return true;
}

ChildProcess::~ChildProcess() {
  KillAndWait();
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
}

bool ChildProcess::ReadLine(std::string* line, int timeout_ms) {
  while (true) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      *line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    pollfd p{from_child_, POLLIN, 0};
    int rc = poll(&p, 1, timeout_ms);
    if (rc <= 0) return false;
    char buf[4096];
    ssize_t n = read(from_child_, buf, sizeof(buf));
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

bool ChildProcess::ReadUntil(const std::string& marker, std::vector<std::string>* lines,
                             int timeout_ms) {
  std::string line;
  while (ReadLine(&line, timeout_ms)) {
    if (line == marker) return true;
    lines->push_back(line);
  }
  return false;
}

bool ChildProcess::Send(const std::string& text) {
  return write(to_child_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

int ChildProcess::KillAndWait() {
  if (pid_ <= 0 || reaped_) return status_;
  kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  reaped_ = true;
  return status_;
}

int ChildProcess::CloseAndWait() {
  if (pid_ <= 0 || reaped_) return status_;
  if (to_child_ >= 0) {
    close(to_child_);
    to_child_ = -1;
  }
  waitpid(pid_, &status_, 0);
  reaped_ = true;
  return status_;
}

}  // namespace stacksym::testing
