// Helpers of the Python tests: a Python program run with pipes (it prints what it knows of its
// own stacks, then waits), the interpreter found in a live process as the recorder finds it, and
// the stacks a program printed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dwarf/dwarf_options.h"
#include "interp/python/code_object.h"
#include "interp/python/interpreter.h"
#include "interp/python/layout.h"
#include "remote/json.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::interp::python {

inline const char* kPython311 = "/usr/bin/python3.11";
std::string ScriptPath(const std::string& name);  // tests/interp/scripts/NAME

// A program started with its stdin and stdout on pipes; killed and reaped at scope exit.
class Program {
 public:
  static std::unique_ptr<Program> Start(const std::vector<std::string>& argv);
  ~Program();
  pid_t pid() const { return pid_; }
  // The next line it prints, waiting up to `timeout_ms`; nullopt at end of output or timeout.
  std::optional<std::string> ReadLine(int timeout_ms = 20000);
  void Release();  // writes a line to its stdin
  int Wait();      // its exit status (-1: killed)

 private:
  pid_t pid_ = -1;
  int in_ = -1;   // its stdin
  int out_ = -1;  // its stdout
  std::string buffer_;
  bool reaped_ = false;
};

// A CPython interpreter mapped in a live process.
struct LiveInterpreter {
  std::shared_ptr<ElfFile> elf;
  Interpreter interpreter;
  uint64_t bias = 0;
  Layout layout;
  std::string notes;  // why sources before the layout's were passed over
  uint64_t runtime() const { return interpreter.runtime + bias; }
  TypeAddresses types() const;
};

// Looks through the process's file mappings for a CPython interpreter and loads its layout
// (debug info found through `search`).
Result<LiveInterpreter> FindLiveInterpreter(pid_t pid, const dwarf::DebugFileSearch& search = {});

// One frame as the program saw it (stacks.py's describe()).
struct SeenFrame {
  std::string qualname, name, file;
  int64_t line = 0, first_line = 0;
  uint64_t code = 0;
};
struct SeenStacks {
  uint64_t tid = 0;  // the thread that printed (and waits)
  std::vector<std::pair<uint64_t, std::vector<SeenFrame>>> threads;  // native id → frames
  const std::vector<SeenFrame>* Find(uint64_t tid) const;
};
Result<SeenStacks> ParseSeenStacks(const std::string& json_line);

}  // namespace stacksym::interp::python
