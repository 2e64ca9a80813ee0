#include "command.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace stacksym::cli {

namespace {

struct Registered {
  std::string path;
  std::string description;
  CommandSetup setup;
};

// Function-local so registration from other translation units' static initializers is safe.
std::vector<Registered>& Registry() {
  static std::vector<Registered> registry;
  return registry;
}

std::vector<std::string> SplitWords(const std::string& path) {
  std::istringstream in(path);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

const char* GroupDescription(const std::string& name) {
  if (name == "symbolize")
    return "Symbolize addresses (of an ELF file, a process, the kernel, a build ID)";
  if (name == "cache") return "Look at and manage the persisted symbol indexes and unwind tables";
  return "";
}

}  // namespace

CommandRegistrar::CommandRegistrar(std::string path, std::string description, CommandSetup setup) {
  Registry().push_back({std::move(path), std::move(description), std::move(setup)});
}

void KeepFreedMemoryForReuse() {
  // Blocks up to 32 MiB (glibc's largest threshold) come from the heap, and the heap is
  // never trimmed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

void KeepUntilExit(const void* object) {
  static auto* const kept = new std::vector<const void*>();  // never destroyed, on purpose
  kept->push_back(object);
}

namespace {

// Whether `words` are the first words of argv that are not options: only the command named
// on the command line needs its options (building every command's cost a few hundred
// microseconds of each run; `stacksym --help` lists commands without their options).
bool Named(const std::vector<std::string>& words, int argc, char** argv) {
  size_t matched = 0;
  for (int i = 1; i < argc && matched < words.size(); ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("-")) continue;
    if (arg != words[matched]) return false;
    ++matched;
  }
  return matched == words.size();
}

}  // namespace

CommandTree::CommandTree(CLI::App& app, int argc, char** argv) {
  std::vector<Registered> commands = Registry();
  std::sort(commands.begin(), commands.end(),
            [](const Registered& a, const Registered& b) { return a.path < b.path; });
  std::map<std::string, CLI::App*> groups;
  for (Registered& command : commands) {
    std::vector<std::string> words = SplitWords(command.path);
    if (words.empty()) continue;
    CLI::App* parent = &app;
    std::string prefix;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      prefix += words[i] + " ";
      auto it = groups.find(prefix);
      if (it == groups.end()) {
        CLI::App* group = parent->add_subcommand(words[i], GroupDescription(words[i]));
        group->require_subcommand(1);
        it = groups.emplace(prefix, group).first;
      }
      parent = it->second;
    }
    CLI::App* leaf = parent->add_subcommand(words.back(), command.description);
    if (Named(words, argc, argv)) leaves_.push_back({leaf, command.setup(*leaf)});
  }
}

CommandRun CommandTree::Selected() const {
  for (const Leaf& leaf : leaves_) {
    if (leaf.app->parsed()) return leaf.run;
  }
  return {};
}

}  // namespace stacksym::cli
