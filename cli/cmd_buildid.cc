// `stacksym buildid FILE...` — GNU build IDs as lowercase hex, one line per file; a Go
// binary's Go build ID follows the path ("go:<id>"), and stands alone ("-" for the GNU one)
// in a Go binary linked without a GNU note, as Go's own linker links them.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/elf.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_buildid {
namespace {

int RunBuildId(const std::vector<std::string>& files) {
  int rc = kExitOk;
  for (const std::string& path : files) {
    auto elf = ElfFile::Open(path);
    if (!elf) {
      std::fprintf(stderr, "stacksym buildid: %s\n", elf.error().ToString().c_str());
      rc = kExitBadInput;
      continue;
    }
    const std::string go_id = (*elf)->go_build_id();
    if ((*elf)->build_id().empty() && go_id.empty()) {
      std::fprintf(stderr, "stacksym buildid: %s: no GNU build ID note\n", path.c_str());
      rc = kExitBadInput;
      continue;
    }
    const std::string gnu_id = (*elf)->build_id().empty() ? "-" : (*elf)->build_id_hex();
    if (go_id.empty()) {
      std::printf("%s %s\n", gnu_id.c_str(), path.c_str());
    } else {
      std::printf("%s %s go:%s\n", gnu_id.c_str(), path.c_str(), go_id.c_str());
    }
  }
  return rc;
}

CommandRegistrar registrar("buildid",
                           "Print the GNU build ID of ELF files (lowercase hex), and Go's",
                           [](CLI::App& app) -> CommandRun {
                             auto files = std::make_shared<std::vector<std::string>>();
                             app.add_option("FILE", *files, "ELF files")->required();
                             return [files] { return RunBuildId(*files); };
                           });

}  // namespace
}  // namespace stacksym::cli::cmd_buildid
