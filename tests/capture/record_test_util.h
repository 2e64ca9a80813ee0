// Helpers shared by the recording tests: a running fixture process, a symbolized view of a
// profile's stacks, and chain matching.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "stacksym/capture.h"
#include "stacksym/profile.h"

namespace stacksym {

bool Refused(const Error& e);

// Creates a Recorder into `var`, or skips the test when the kernel refuses the backend.
#define CREATE_RECORDER_OR_SKIP(var, opts)                                           \
  auto var##_result = Recorder::Create(opts);                                        \
  if (!var##_result) {                                                               \
    if (Refused(var##_result.error())) {                                             \
      GTEST_SKIP() << "kernel refused the capture backend (needs root with CAP_BPF/" \
                      "CAP_PERFMON): "                                               \
                   << var##_result.error().ToString();                               \
    }                                                                                \
    FAIL() << var##_result.error().ToString();                                       \
  }                                                                                  \
  std::unique_ptr<Recorder> var = std::move(*var##_result);

// A running fixture process, killed and reaped at scope exit.
class Fixture {
 public:
  Fixture(const std::string& path, double seconds, const std::string& mode = "") {
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      std::string secs = std::to_string(seconds);
      execl(path.c_str(), path.c_str(), secs.c_str(), mode.empty() ? nullptr : mode.c_str(),
            nullptr);
      _exit(127);
    }
    // Let it start its threads and name them.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  ~Fixture() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Waits for exit; true when it exited with status 0.
  bool Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Symbolized view of one stack: function names, leaf first ("" when unknown).
struct NamedStack {
  uint32_t pid, tid;
  std::string comm;
  uint64_t count;
  std::vector<std::string> kernel;  // kernel part, innermost first
  std::vector<std::string> user;    // user part, innermost first
  std::vector<std::string> user_modules;
  std::vector<std::string> user_unnamed_why;  // per user frame: why it has no name, or ""
};

std::vector<NamedStack> Named(const Profile& p);
// "kernel frames | user frames", innermost first, for failure messages.
std::string Describe(const NamedStack& s);
// Whether `chain` appears in `frames` as consecutive frames.
bool HasChain(const std::vector<std::string>& frames, const std::vector<std::string>& chain);
// Symbolizes the recorder's profile with the module files it kept.
void Symbolize(Recorder& rec);

}  // namespace stacksym
