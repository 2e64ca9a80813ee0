// Starts the process_target fixture as a live child for process/build-ID tests: a copy of the
// binary (so the test can delete it while it runs), the library it dlopen()s, and the
// addresses it prints.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

namespace stacksym::testing {

class TargetProcess {
 public:
  // nullptr (and *error set) when the child could not be started. With private_tmp the
  // child runs in its own mount namespace with a tmpfs on /tmp, from a copy of the binary
  // in that /tmp: like a container, its binary and perf map are invisible to the host's
  // paths (`unshare -m`, needs CAP_SYS_ADMIN). With debuglinked, the binary is the copy
  // stripped of DWARF whose .gnu_debuglink names process_target.debug, and that debug file
  // is put next to it (in a directory of its own, or in the private /tmp).
  static std::unique_ptr<TargetProcess> Start(std::string* error, bool private_tmp = false,
                                              bool debuglinked = false) {
    std::string dir = std::string(STACKSYM_FIXTURE_DIR);
    std::unique_ptr<TargetProcess> t(new TargetProcess);
    std::string tmp = ::testing::TempDir();
    if (!tmp.empty() && tmp.back() == '/') tmp.pop_back();
    std::string source = dir + (debuglinked ? "/process_target.stripped" : "/process_target");
    std::string debug_source = dir + "/process_target.debug";
    if (debuglinked) {
      t->own_dir_ = tmp + "/process_target_dir_" + std::to_string(getpid());
      std::system(("mkdir -p '" + t->own_dir_ + "'").c_str());
      t->debug_file_ = t->own_dir_ + "/process_target.debug";
      t->binary_ = t->own_dir_ + "/process_target_copy";
      std::string cp = "cp '" + debug_source + "' '" + t->debug_file_ + "'";
      if (std::system(cp.c_str()) != 0) {
        *error = "cannot copy the fixture: " + cp;
        return nullptr;
      }
    } else {
      t->binary_ = tmp + "/process_target_copy_" + std::to_string(getpid());
    }
    std::string cp = "cp '" + source + "' '" + t->binary_ + "'";
    if (std::system(cp.c_str()) != 0) {
      *error = "cannot copy the fixture: " + cp;
      return nullptr;
    }
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      *error = "pipe failed";
      return nullptr;
    }
    std::string lib = dir + "/libprocess_lib.so";
    pid_t pid = fork();
    if (pid < 0) {
      *error = "fork failed";
      return nullptr;
    }
    if (pid == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      if (private_tmp) {
        // Open both files first: the tmpfs hides everything under /tmp, the test's temp
        // dir included. The copies exist only inside the namespace.
        std::string script =
            "exec 3<'" + t->binary_ + "' 4<'" + lib + "' 5<'" + debug_source +
            "' && mount -t tmpfs tmpfs /tmp && cat <&3 >/tmp/process_target_in_ns"
            " && cat <&4 >/tmp/libprocess_lib_in_ns.so" +
            std::string(debuglinked ? " && cat <&5 >/tmp/process_target.debug" : "") +
            " && chmod +x /tmp/process_target_in_ns"
            " && exec /tmp/process_target_in_ns /tmp/libprocess_lib_in_ns.so";
        execlp("unshare", "unshare", "-m", "--propagation", "private", "sh", "-c", script.c_str(),
               static_cast<char*>(nullptr));
        _exit(127);
      }
      execl(t->binary_.c_str(), t->binary_.c_str(), lib.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    t->pid_ = pid;
    t->to_child_ = to_child[1];
    t->out_ = fdopen(from_child[0], "r");
    char line[256];
    while (fgets(line, sizeof line, t->out_) != nullptr) {
      std::string s(line);
      if (s.rfind("ready", 0) == 0) {
        t->ready_ = true;
        break;
      }
      size_t space = s.find(' ');
      if (space == std::string::npos) continue;
      t->addresses_[s.substr(0, space)] = std::strtoull(s.c_str() + space + 1, nullptr, 16);
    }
    if (!t->ready_) {
      *error = "the fixture did not start";
      return nullptr;
    }
    return t;
  }

  ~TargetProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) fclose(out_);
    if (to_child_ >= 0) close(to_child_);
    unlink(binary_.c_str());
    std::remove(("/tmp/perf-" + std::to_string(pid_) + ".map").c_str());
    if (!own_dir_.empty()) {
      unlink(debug_file_.c_str());
      rmdir(own_dir_.c_str());
    }
  }

  pid_t pid() const { return pid_; }
  uint64_t at(const std::string& name) const {
    auto it = addresses_.find(name);
    return it == addresses_.end() ? 0 : it->second;
  }
  const std::string& binary() const { return binary_; }
  const std::string& debug_file() const { return debug_file_; }  // debuglinked, host side
  bool DeleteBinary() { return unlink(binary_.c_str()) == 0; }

  // Asks the child to exit; with reap=false it stays a zombie until Reap().
  void RequestExit() {
    if (write(to_child_, "exit\n", 5) != 5) kill(pid_, SIGKILL);
  }
  // Waits until the child has exited (a zombie), without reaping it.
  void WaitUntilExited() {
    siginfo_t info;
    waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  }
  void Reap() {
    if (!reaped_) waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  TargetProcess() = default;
  pid_t pid_ = -1;
  int to_child_ = -1;
  FILE* out_ = nullptr;
  bool ready_ = false;
  bool reaped_ = false;
  std::string binary_;
  std::string own_dir_, debug_file_;
  std::map<std::string, uint64_t> addresses_;
};

}  // namespace stacksym::testing
