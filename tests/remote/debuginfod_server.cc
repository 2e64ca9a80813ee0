#include "debuginfod_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace stacksym::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A free port on 127.0.0.1 (nothing else runs in the private namespace).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

// A private network namespace with its loopback up; false (why in *why) when not allowed.
bool EnterPrivateNetwork(std::string* why) {
  if (::unshare(CLONE_NEWNET) != 0) {
    *why = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    return false;
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = fd >= 0 && ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) *why = "cannot bring the namespace's loopback up";
  return ok;
}

bool HaveDebuginfod() { return std::system("command -v debuginfod >/dev/null 2>&1") == 0; }

bool DebuginfodServer::Start(const std::string& dir, const std::string& work,
                             const std::string& build_id) {
  port_ = FreePort();
  std::string log = work + "/debuginfod.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(out, 2);
    std::string port = std::to_string(port_);
    std::string db = work + "/debuginfod.sqlite";
    ::execlp("debuginfod", "debuginfod", "-p", port.c_str(), "-d", db.c_str(), "-F", "-t", "0",
             "-g", "0", "-c", "1", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid_ < 0) return false;
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(std::chrono::seconds(1));
  auto start = Clock::now();
  while (SecondsSince(start) < 30) {
    httplib::Result res = client.Get("/buildid/" + build_id + "/debuginfo");
    if (res && res->status == 200) return true;
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void DebuginfodServer::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto start = Clock::now();
    int status;
    while (::waitpid(pid_, &status, WNOHANG) == 0 && SecondsSince(start) < 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
}

}  // namespace stacksym::testing
