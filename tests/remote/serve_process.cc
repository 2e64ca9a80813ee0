#include "serve_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace stacksym::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The port of serve's first stdout line, "listening on http://127.0.0.1:PORT"; 0 when it
// did not come within 30 s or the line is something else.
int ReadPort(int fd) {
  std::string line;
  auto start = Clock::now();
  while (line.find('\n') == std::string::npos && SecondsSince(start) < 30) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  size_t colon = line.rfind(':');
  if (line.find("listening on http://127.0.0.1:") != 0 || colon == std::string::npos) return 0;
  return std::atoi(line.c_str() + colon + 1);
}

}  // namespace

bool ServeProcess::Start(const std::vector<std::string>& args, const std::vector<std::string>& env,
                         std::string* why, double exit_after_seconds) {
  std::vector<std::string> argv = {STACKSYM_CLI,   "serve",
                                   "--listen",     "127.0.0.1:0",
                                   "--exit-after", std::to_string(exit_after_seconds)};
  argv.insert(argv.end(), args.begin(), args.end());
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    *why = "pipe failed";
    return false;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> c_argv;
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  port_ = pid_ > 0 ? ReadPort(out[0]) : 0;
  ::close(out[0]);  // serve prints nothing more on stdout
  if (port_ <= 0) {
    *why = "stacksym serve did not print its address";
    Stop();
    return false;
  }
  return true;
}

void ServeProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  auto start = Clock::now();
  int status;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (SecondsSince(start) > 10) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

long ServeProcess::StatusKb(const std::string& field) const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

}  // namespace stacksym::testing
