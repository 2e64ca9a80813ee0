#include "python_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace stacksym::interp::python {

std::string ScriptPath(const std::string& name) {
  return std::string(STACKSYM_SOURCE_DIR) + "/tests/interp/scripts/" + name;
}

std::unique_ptr<Program> Program::Start(const std::vector<std::string>& argv) {
  // Release() may write to a program that has exited already.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return nullptr;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return nullptr;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  auto p = std::unique_ptr<Program>(new Program());
  p->pid_ = pid;
  p->in_ = in[1];
  p->out_ = out[0];
  return p;
}

Program::~Program() {
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::optional<std::string> Program::ReadLine(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    ssize_t n = read(out_, chunk, sizeof(chunk));
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Program::Release() {
  if (in_ >= 0) (void)!write(in_, "\n", 1);
}

int Program::Wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TypeAddresses LiveInterpreter::types() const {
  auto at = [&](uint64_t vaddr) { return vaddr == 0 ? 0 : vaddr + bias; };
  return {at(interpreter.code_type), at(interpreter.unicode_type), at(interpreter.bytes_type)};
}

Result<LiveInterpreter> FindLiveInterpreter(pid_t pid, const dwarf::DebugFileSearch& search) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8] = {};
    int path_at = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
               &path_at) < 4 ||
        path_at <= 0) {
      continue;
    }
    std::string path = line.substr(static_cast<size_t>(path_at));
    if (path.empty() || path[0] != '/' || path.find("python") == std::string::npos) continue;
    auto elf = ElfFile::Open(path);
    if (!elf) continue;
    auto found = FindInterpreter(**elf);
    if (!found) return found.error();
    if (!*found) continue;
    LiveInterpreter live;
    live.elf = *elf;
    live.interpreter = **found;
    std::optional<uint64_t> bias = LoadBias(**elf, start, offset);
    if (!bias) return Error(ErrorCode::kMalformed, "no load bias for " + path);
    live.bias = *bias;
    auto layout = LoadLayout(live.elf, live.interpreter, search, &live.notes);
    if (!layout) return layout.error();
    live.layout = *layout;
    return live;
  }
  return Error(ErrorCode::kNotFound, "no CPython interpreter mapped");
}

const std::vector<SeenFrame>* SeenStacks::Find(uint64_t id) const {
  for (const auto& [t, frames] : threads) {
    if (t == id) return &frames;
  }
  return nullptr;
}

Result<SeenStacks> ParseSeenStacks(const std::string& json_line) {
  auto parsed = remote::ParseJson(json_line);
  if (!parsed) return parsed.error();
  SeenStacks out;
  const remote::JsonValue* tid = parsed->Find("tid");
  const remote::JsonValue* threads = parsed->Find("threads");
  if (tid == nullptr || !tid->is_uint64() || threads == nullptr || !threads->is_object()) {
    return Error(ErrorCode::kMalformed, "not a stacks report");
  }
  out.tid = tid->uint64();
  for (const auto& [id, frames] : threads->object()) {
    std::vector<SeenFrame> seen;
    for (const remote::JsonValue& f : frames.array()) {
      SeenFrame s;
      auto str = [&](const char* key) {
        const remote::JsonValue* v = f.Find(key);
        return v != nullptr && v->is_string() ? v->string() : std::string();
      };
      auto num = [&](const char* key) -> uint64_t {
        const remote::JsonValue* v = f.Find(key);
        return v != nullptr && v->is_uint64() ? v->uint64() : 0;
      };
      s.qualname = str("qualname");
      s.name = str("name");
      s.file = str("file");
      s.line = static_cast<int64_t>(num("line"));
      s.first_line = static_cast<int64_t>(num("first_line"));
      s.code = num("code");
      seen.push_back(std::move(s));
    }
    out.threads.emplace_back(std::stoull(id), std::move(seen));
  }
  return out;
}

}  // namespace stacksym::interp::python
