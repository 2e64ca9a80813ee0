#include "remote_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../symbolize/test_util.h"
#include "stacksym/elf.h"

namespace stacksym::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  char tmpl[] = "/tmp/stacksym-remote-XXXXXX";
  char* made = mkdtemp(tmpl);
  path_ = made != nullptr ? made : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<uint8_t> BuildIdOf(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  if (!elf) return {};
  std::span<const uint8_t> id = (*elf)->build_id();
  return {id.begin(), id.end()};
}

void PlaceByBuildId(const std::string& dir, const std::string& file, const std::string& suffix) {
  std::string hex = ToHex(BuildIdOf(file));
  fs::path target = fs::path(dir) / ".build-id" / hex.substr(0, 2) / (hex.substr(2) + suffix);
  fs::create_directories(target.parent_path());
  fs::copy_file(file, target, fs::copy_options::overwrite_existing);
}

std::vector<uint64_t> RemoteProgOffsets() { return CodeOffsets(FixturePath("remote_prog")); }

std::vector<uint64_t> CodeOffsets(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  std::vector<uint64_t> out;
  if (!elf) return out;
  for (const NmSymbol& s : RunNm(path, "")) {
    if (s.type != 'T' && s.type != 't') continue;
    for (uint64_t delta : {uint64_t{0}, s.size / 3, s.size / 2, s.size - 1}) {
      if (std::optional<uint64_t> off = (*elf)->VaddrToFileOffset(s.address + delta)) {
        out.push_back(*off);
      }
    }
  }
  out.push_back(0x10);       // in the ELF header: not code
  out.push_back(0x7fffff0);  // beyond the file
  return out;
}

Profile MakeRemoteProgProfile() {
  Profile p;
  uint32_t prog = p.AddModule(
      {ModuleKind::kElf, "/nonexistent/remote_prog", BuildIdOf(FixturePath("remote_prog"))});
  uint32_t unknown =
      p.AddModule({ModuleKind::kElf, "/nonexistent/unknown.so", std::vector<uint8_t>(20, 0xab)});
  uint32_t kernel_frame = p.InternFrame({FrameKind::kKernel, 0, 0xffffffff81000000ull});
  std::vector<uint64_t> offsets = RemoteProgOffsets();
  for (size_t i = 0; i < offsets.size(); ++i) {
    uint32_t leaf = p.InternFrame({FrameKind::kUser, prog, offsets[i]});
    uint32_t caller =
        p.InternFrame({FrameKind::kUser, prog, offsets[(i * 7 + 3) % offsets.size()]});
    uint32_t lib = p.InternFrame({FrameKind::kUser, unknown, 0x1000 + i});
    ProfileStack stack{1, 1, "remote_prog", {leaf, caller, lib}};
    if (i % 5 == 0) stack.frames.insert(stack.frames.begin(), kernel_frame);
    p.AddSample(stack, 1 + i % 3);
  }
  p.period_ns = 10101010;
  p.event = "cpu-clock";
  return p;
}

std::string RawExchange(int port, const std::string& data, double hold_seconds,
                        double* closed_after) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    auto start = std::chrono::steady_clock::now();
    if (hold_seconds > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(hold_seconds));
    }
    char buf[4096];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    if (closed_after != nullptr) {
      *closed_after =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  ::close(fd);
  return out;
}

}  // namespace stacksym::testing
